"""The CLI end to end against a temporary home: success paths and bad input."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from backscroll.cli import main

FRAMES = [
    {
        "ts": "2026-11-24T16:42:10+00:00",
        "app": "Terminal",
        "title": "zsh",
        "text": "npm ERR! code ELIFECYCLE Error: connect ECONNREFUSED 127.0.0.1:5432",
    },
    {
        "ts": "2026-11-24T16:50:00+00:00",
        "app": "Firefox",
        "title": "Invoice INV-20931 — Acme",
        "text": "Invoice number INV-20931 due 2026-12-01 total 1,250.00 EUR",
    },
    {
        "ts": "2026-11-25T09:00:00+00:00",
        "app": "Slack",
        "title": "general",
        "text": "lunch at the quokka cafe today",
    },
]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    argv = sys.argv
    sys.argv = ["backscroll", *args]
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        sys.argv = argv
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def imported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    source = tmp_path / "frames.jsonl"
    source.write_text("".join(json.dumps(f) + "\n" for f in FRAMES))
    code, out, _ = run(capsys, "import", str(source))
    assert code == 0 and "imported 3 frame(s)" in out
    return source


def test_imported_frames_are_found_by_search(
    imported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "search", "econnrefused")
    assert code == 0
    assert "1 match(es), best first:" in out and "[Terminal] — zsh" in out
    code, out, _ = run(capsys, "search", '"connect econnrefused"', "--app", "TERM", "--json")
    assert json.loads(out)["matches"][0]["app"] == "Terminal"


def test_prefix_phrase_and_app_filters_narrow_results(
    imported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = run(capsys, "search", "invo*", "--json")
    assert [m["app"] for m in json.loads(out)["matches"]] == ["Firefox"]
    _, out, _ = run(capsys, "search", "invoice", "--app", "slack", "--json")
    assert json.loads(out)["matches"] == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", '"unbalanced'], "unbalanced quote"),
        (["search", "*"], "no word before"),
        (["search", "x" * 5000], "too long"),
        (["search", "x", "--since", "next blursday"], "accepted forms"),
        (["show", "999"], "no frame #999"),
        (["config", "--poll", "0.1"], "poll_seconds must be at least 0.2"),
        (["config", "--trigger", "sometimes"], "trigger"),
        (["config", "--redact", "maybe"], "on or off"),
        (["pause", "soon"], "accepted forms"),
        (["pause", "yesterday"], "not a duration"),
    ],
)
def test_bad_input_is_one_clear_line_and_changes_nothing(
    imported: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    _, before, _ = run(capsys, "log", "--json")
    code, _, err = run(capsys, *args)
    assert code != 0
    assert message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    _, after, _ = run(capsys, "log", "--json")
    assert after == before


def test_malformed_import_line_names_its_number_and_skip_bad_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "bad.jsonl"
    good = json.dumps(FRAMES[0])
    source.write_text(f"{good}\nnot json\n{json.dumps({'ts': 1, 'app': 'a'})}\n{good}\n")
    code, _, err = run(capsys, "import", str(source))
    assert code == 1 and "line 2" in err
    code, out, err = run(capsys, "import", str(source), "--skip-bad")
    assert code == 0 and "imported 2 frame(s)" in out
    assert "line 2" in err and "line 3: missing 'title'" in err


def test_pause_and_resume_show_in_status_and_the_audit_log(
    imported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "pause", "30m")
    _, out, _ = run(capsys, "status", "--json")
    assert json.loads(out)["capture"].startswith("paused until")
    run(capsys, "resume")
    _, out, _ = run(capsys, "status")
    assert "capture:   active" in out
    _, out, _ = run(capsys, "log", "--kind", "pause", "--kind", "resume", "--json")
    assert [row["k"] for row in json.loads(out)] == ["resume", "pause"]


def test_deny_list_edits_are_config_events(
    imported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "deny", "add", "bank")
    _, out, _ = run(capsys, "deny", "list")
    assert "bank" in out.splitlines() and "1Password" in out
    run(capsys, "deny", "remove", "BANK")
    _, out, _ = run(capsys, "deny")
    assert "bank" not in out.splitlines()
    code, _, err = run(capsys, "deny", "remove", "nothing-like-this")
    assert code == 1 and "not on the deny list" in err


def test_clear_by_app_leaves_no_trace_of_the_frames(
    imported: Path, capsys: pytest.CaptureFixture[str], backscroll_home: Path
) -> None:
    code, out, _ = run(capsys, "clear", "--app", "slack", "-y")
    assert code == 0 and "deleted 1 frame(s)" in out
    _, out, _ = run(capsys, "search", "quokka", "--json")
    body = json.loads(out)
    assert body["matches"] == [] and "deleted" in body["why_empty"]
    for root, _, files in os.walk(backscroll_home):
        for name in files:
            data = Path(root, name).read_bytes()
            assert b"quokka" not in data, name
    _, out, _ = run(capsys, "log", "--kind", "delete", "--json")
    assert json.loads(out)[0]["app"] == "slack"
    code, out, _ = run(capsys, "reindex", "--views-only")
    _, out, _ = run(capsys, "search", "quokka", "--json")
    assert json.loads(out)["matches"] == []
    _, out, _ = run(capsys, "search", "econnrefused", "--json")
    assert len(json.loads(out)["matches"]) == 1


def test_verify_passes_on_a_healthy_store(
    imported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "verify")
    assert code == 0 and "healthy" in out


def test_every_file_is_private(imported: Path, backscroll_home: Path) -> None:
    for root, dirs, files in os.walk(backscroll_home):
        for name in dirs:
            assert os.stat(Path(root, name)).st_mode & 0o777 == 0o700, name
        for name in files:
            assert os.stat(Path(root, name)).st_mode & 0o777 == 0o600, name


def test_while_another_process_holds_the_views_a_search_says_how_far_behind(
    imported: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from backscroll.manage import import_frames
    from backscroll.store import MemoryStore

    with MemoryStore() as store, store.projector():  # as a running daemon would
        import_frames(store, [json.dumps(FRAMES[0])])
        code, _, err = run(capsys, "search", "econnrefused")
    assert code == 0 and "1 event(s) behind the log" in err
