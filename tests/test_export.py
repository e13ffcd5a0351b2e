"""Export: a decrypted, owner-only copy as JSON, CSV or a browsable HTML page (checked in
headless Chromium, as a person would see it)."""

from __future__ import annotations

import csv
import html
import io
import json
import re
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from backscroll.cli.recall import register
from backscroll.export import ExportResult, export
from backscroll.importer import import_frames
from backscroll.store import MemoryStore
from base.errors import BackscrollError, UsageError

FRAMES = [
    {
        "ts": "2026-11-24T16:42:10",
        "app": "Terminal",
        "title": "zsh — deploy",
        "text": "npm ERR! code ELIFECYCLE\nError: connect ECONNREFUSED 127.0.0.1:5432",
    },
    {
        "ts": "2026-11-24T16:50:00",
        "app": "Firefox",
        "title": "Invoice INV-20931 <b>Acme</b>",
        "text": "=HYPERLINK(\"http://evil\") <script>alert('x')</script> total 1,250.00 EUR",
    },
    {
        "ts": "2026-11-25T09:00:00",
        "app": "Slack",
        "title": "general",
        "text": "lunch at the quokka cafe today",
    },
]


@pytest.fixture
def store(png: Path) -> Any:
    """Three frames with thumbnails, the Slack one with encrypted text."""
    with MemoryStore(write=True) as s:
        import_frames(s, [json.dumps(dict(f, image=str(png))) for f in FRAMES[:2]])
        s.set_config("cli", encrypt_text=True)
        import_frames(s, [json.dumps(dict(FRAMES[2], image=str(png)))])
        yield s


def modes(folder: Path) -> dict[str, int]:
    found = {".": stat.S_IMODE(folder.stat().st_mode)}
    for path in folder.rglob("*"):
        found[str(path.relative_to(folder))] = stat.S_IMODE(path.stat().st_mode)
    return found


def test_json_export_holds_decrypted_text_and_thumbnails_owner_only(
    store: Any, tmp_path: Path
) -> None:
    out = tmp_path / "exp"
    result = export(store, out, "json")
    assert result == ExportResult(out, 3, 3)
    data = json.loads((out / "frames.json").read_text())
    by_app = {f["app"]: f for f in data["frames"]}
    assert by_app["Slack"]["text"] == "lunch at the quokka cafe today"
    assert by_app["Slack"]["encrypted"] is True
    assert by_app["Terminal"]["text"] == FRAMES[0]["text"]
    assert [f["time"][:19] for f in data["frames"]] == [
        "2026-11-24T16:42:10",
        "2026-11-24T16:50:00",
        "2026-11-25T09:00:00",
    ]
    for frame in data["frames"]:
        assert frame["thumbnail_file"] == f"thumbs/{frame['id']}.jpg" and frame["thumbnail"]
        assert (out / frame["thumbnail_file"]).read_bytes()[:3] == b"\xff\xd8\xff"
    found = modes(out)
    assert found.pop(".") == 0o700 and found.pop("thumbs") == 0o700
    assert set(found.values()) == {0o600} and len(found) == 4


def test_csv_export_has_a_row_per_frame_and_defuses_formulas(store: Any, tmp_path: Path) -> None:
    out = tmp_path / "exp"
    export(store, out, "csv", thumbnails=False)
    rows = list(csv.DictReader(io.StringIO((out / "frames.csv").read_text())))
    assert [r["app"] for r in rows] == ["Terminal", "Firefox", "Slack"]
    assert rows[0]["text"] == FRAMES[0]["text"]  # newlines survive, quoted
    assert rows[1]["text"].startswith("'=HYPERLINK(")  # a spreadsheet shows it, never runs it
    assert rows[2]["thumbnail_file"] == "" and not (out / "thumbs").exists()


def test_query_and_scope_choose_the_frames(store: Any, tmp_path: Path) -> None:
    matched = export(store, tmp_path / "q", "json", query="quokka", thumbnails=False)
    assert matched.frames == 1
    [frame] = json.loads((tmp_path / "q" / "frames.json").read_text())["frames"]
    assert frame["app"] == "Slack" and frame["snippet"]
    assert export(store, tmp_path / "a", "json", app="Firefox").frames == 1
    assert export(store, tmp_path / "l", "json", limit=2).frames == 2


def test_a_non_empty_folder_is_refused_with_one_line(store: Any, tmp_path: Path) -> None:
    full = tmp_path / "full"
    full.mkdir()
    (full / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="not empty") as caught:
        export(store, full, "json")
    assert "\n" not in str(caught.value)
    assert [p.name for p in full.iterdir()] == ["notes.txt"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="not a folder"):
        export(store, tmp_path / "file", "json")
    with pytest.raises(UsageError, match="json, csv or html"):
        export(store, tmp_path / "new", "pdf")
    empty = tmp_path / "empty"
    empty.mkdir(mode=0o755)
    assert export(store, empty, "json").frames == 3
    assert stat.S_IMODE(empty.stat().st_mode) == 0o700


def test_an_unwritable_place_is_one_line(store: Any, tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("x")
    with pytest.raises(BackscrollError, match="cannot write the export"):
        export(store, tmp_path / "plain" / "inside", "json")


def test_default_folder_is_in_downloads(
    store: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "person"))
    result = export(store, None, "json", thumbnails=False)
    assert result.path.parent == tmp_path / "person" / "Downloads"
    assert re.fullmatch(r"backscroll-memory-\d{8}-\d{6}", result.path.name)


def test_cli_export_writes_the_folder_and_reports_bad_input(store: Any, tmp_path: Path) -> None:
    app = typer.Typer()
    register(app)
    runner = CliRunner()
    out = tmp_path / "cli"
    ok = runner.invoke(app, ["export", "--out", str(out), "--format", "csv", "--no-thumbnails"])
    assert ok.exit_code == 0, ok.output
    assert ok.output.strip() == f"exported 3 frame(s) and 0 thumbnail(s) to {out}"
    bad = runner.invoke(app, ["export", "--out", str(tmp_path / "b"), "--format", "pdf"])
    assert isinstance(bad.exception, UsageError) and not (tmp_path / "b").exists()
    phrase = runner.invoke(app, ["export", "--out", str(tmp_path / "c"), "--since", "someday"])
    assert isinstance(phrase.exception, UsageError)
    help_ = runner.invoke(app, ["export", "--help"])
    assert "--no-thumbnails" in help_.output and "--query" in help_.output


# -- the HTML page in a real browser ------------------------------------------------------------


def chromium(profile: Path, url: str) -> str:
    """The DOM after scripts ran, as headless Chromium rendered it."""
    exe = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(exe).exists():
        pytest.fail("chromium is missing: apt-get install chromium (the Makefile installs it)")
    command = [
        exe,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--run-all-compositor-stages-before-draw",
        "--virtual-time-budget=5000",
        "--dump-dom",
        url,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def visible_articles(dom: str) -> list[str]:
    return re.findall(r'<article class="frame" id="(frame-\d+)">', dom)


@pytest.fixture
def page(store: Any, tmp_path: Path) -> Path:
    export(store, tmp_path / "html", "html")
    return tmp_path / "html" / "index.html"


def test_html_export_is_self_contained_and_escapes_screen_text(page: Path) -> None:
    source = page.read_text()
    [csp] = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]*)"', source)
    assert html.unescape(csp).startswith("default-src 'none'; img-src 'self' file:;")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", source)
    assert "<script>alert" not in source and "&lt;script&gt;alert" in source
    assert "Invoice INV-20931 &lt;b&gt;Acme&lt;/b&gt;" in source


@pytest.mark.browser
def test_html_export_shows_titles_and_thumbnails_in_chromium(page: Path, tmp_path: Path) -> None:
    dom = chromium(tmp_path / "profile", page.as_uri())
    for title in ("zsh — deploy", "Invoice INV-20931 &lt;b&gt;Acme&lt;/b&gt;", "general"):
        assert f'<span class="title">{title}</span>' in dom
    images = re.findall(r'<img src="(thumbs/\d+\.jpg)"', dom)
    assert len(images) == 3 and all((page.parent / src).is_file() for src in images)
    assert 'data-thumbs-loaded="3"' in dom  # decoded by the browser, not just linked
    assert len(visible_articles(dom)) == 3 and "3 of 3 shown" in dom
    assert 'data-shown="3"' in dom and "<script>alert" not in dom


@pytest.mark.browser
def test_html_filter_box_hides_frames_that_do_not_match(page: Path, tmp_path: Path) -> None:
    dom = chromium(tmp_path / "profile", page.as_uri() + "?filter=QUOKKA%20cafe")
    assert len(visible_articles(dom)) == 1 and "1 of 3 shown" in dom
    assert dom.count('class="frame" id="frame-') == 3  # the others are hidden, not removed
    [shown] = re.findall(r'<article class="frame" id="frame-\d+">.*?</article>', dom, re.S)
    assert "[Slack]" in shown
    nothing = chromium(tmp_path / "profile2", page.as_uri() + "?filter=zebra")
    assert visible_articles(nothing) == [] and '<p id="none">' in nothing
