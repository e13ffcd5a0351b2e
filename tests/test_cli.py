"""The CLI end to end against a temporary home: success paths and bad input."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import run

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
    assert [entry["kind"] for entry in json.loads(out)["events"]] == ["resume", "pause"]


def test_pause_toggle_pauses_then_resumes_for_a_compositor_key_binding(
    imported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "pause", "--toggle")[1].strip() == "capture paused until resumed"
    assert json.loads(run(capsys, "status", "--json")[1])["capture"] == "paused until resumed"
    assert run(capsys, "pause", "--toggle")[1].strip() == "capture resumed"
    assert json.loads(run(capsys, "status", "--json")[1])["capture"] == "active"


def test_the_capture_backend_is_a_checked_config_key(
    imported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "config", "--backend", "kde")
    assert code != 0 and "capture_backend" in err and "Traceback" not in err
    code, out, _ = run(capsys, "config", "--backend", "wlroots")
    assert code == 0 and "capture_backend: wlroots" in out


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
    assert json.loads(out)["events"][0]["detail"]["app"] == "slack"
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
    from backscroll.importer import import_frames
    from backscroll.store import MemoryStore

    with MemoryStore(write=True) as store, store.projector():  # as a running daemon would
        import_frames(store, [json.dumps(FRAMES[0])])
        code, _, err = run(capsys, "search", "econnrefused")
    assert code == 0 and "1 event(s) behind the log" in err


@pytest.mark.parametrize(
    ("args", "error", "command"),
    [
        (["search", "--limit", "abc", "x"], "invalid value for '--limit': 'abc' is not", "search"),
        (["show", "abc"], "invalid value for 'ID': 'abc' is not a valid int", "show"),
        (["search"], "missing argument 'query'", "search"),
        (["deny", "add"], "missing argument 'pattern'", "deny add"),
        (["search", "x", "--nope"], "no such option: --nope", "search"),
        (["search", "x", "--limit"], "option '--limit' requires an argument", "search"),
        (["show", "1", "2"], "got unexpected extra argument(s) (2)", "show"),
        (["nosuch"], "no such command 'nosuch'", ""),
    ],
)
def test_a_usage_error_is_one_line_and_exit_2(
    imported: Path, capsys: pytest.CaptureFixture[str], args: list[str], error: str, command: str
) -> None:
    _, before, _ = run(capsys, "log", "--json")
    code, out, err = run(capsys, *args)
    assert (code, out) == (2, "")
    assert err.startswith(f"backscroll: {error}")
    assert err.endswith(f" (see {f'backscroll {command}'.strip()} --help)\n")
    assert len(err.splitlines()) == 1
    _, after, _ = run(capsys, "log", "--json")
    assert after == before


def test_a_query_that_starts_with_a_dash_goes_after_double_dash(
    imported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "search", "-econnrefused")
    assert code == 2
    assert err.startswith("backscroll: no such option: -e (a value that starts with - goes after")
    code, out, _ = run(capsys, "search", "--json", "--limit", "5", "--", "-econnrefused")
    assert code == 0 and json.loads(out)["query"] == "-econnrefused"
    code, out, _ = run(capsys, "search", "--help")
    assert code == 0 and "backscroll search -- -word" in out


def test_help_prints_and_a_bare_command_shows_it_with_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "--help")
    assert (code, err) == (0, "") and "search" in out
    code, out, err = run(capsys)
    assert (code, err) == (2, "backscroll: missing command\n") and "search" in out


def test_a_declined_confirmation_is_one_line_and_deletes_nothing(
    imported: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for answer in ("n\n", ""):  # no, and the end of stdin
        monkeypatch.setattr(sys, "stdin", io.StringIO(answer))
        code, _, err = run(capsys, "clear", "--app", "slack")
        assert (code, err) == (1, "backscroll: aborted\n")
    _, out, _ = run(capsys, "search", "quokka", "--json")
    assert len(json.loads(out)["matches"]) == 1


def test_a_command_exit_code_passes_through(
    imported: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("backscroll.verify.verify_store", lambda store: ["segment 0: torn"])
    code, out, err = run(capsys, "verify")
    assert (code, err) == (1, "") and "1 problem(s)" in out


def test_ctrl_c_exits_130_without_a_traceback(
    imported: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(store: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("backscroll.status.collect", interrupted)
    code, _, err = run(capsys, "status")
    assert code == 130 and "Traceback" not in err


def test_an_error_message_never_breaks_its_line(
    imported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "import", "no\nsuch\u2028file\x1b[2J")
    assert code == 1
    assert err == "backscroll: no such file: no\\nsuch\\u2028file\\x1b[2J\n"


def test_text_the_terminal_cannot_encode_is_escaped_not_a_crash(
    imported: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / os.fsdecode(b"caf\xe9")  # a Latin-1 name on the command line
    code, out, _ = run(capsys, "export", "--out", str(folder))
    assert code == 0 and out.endswith("caf\\udce9\n")  # capsys' stdout is strict UTF-8


def test_an_unexpected_error_shows_no_local_variables() -> None:
    """A bug still gets a traceback (without locals: they hold screen text and keys)."""
    script = """if True:
        import sys
        import backscroll.status

        def collect(store):
            screen_text = "".join(["hunter", "2"])
            raise RuntimeError("a bug")

        backscroll.status.collect = collect
        sys.argv = ["backscroll", "status"]
        from backscroll.cli import main

        main()
    """
    env = {k: v for k, v in os.environ.items() if "TYPER" not in k} | {"COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 1 and "RuntimeError: a bug" in done.stderr
    assert "hunter2" not in done.stdout + done.stderr
