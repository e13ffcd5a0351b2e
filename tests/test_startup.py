"""A command starts with what it needs: the CLI's entry module loads nothing heavy, and a
command line builds only the command it runs. (How fast is ``bench/startup.py``'s to say.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from backscroll.cli.app import app, app_for
from eventlog.active import ActiveIndex
from tests.conftest import REPO
from tests.helpers import ago, import_line, populate, run

# Libraries and project layers that a command imports in its body when it needs them.
HEAVY = (
    "PIL",
    "capture",
    "crc32c",
    "cryptography",
    "eventlog",
    "importlib.metadata",
    "keyring",
    "logging",
    "mcp",
    "msgspec",
    "mss",
    "numpy",
    "onnxruntime",
    "onnxruntime_extensions",
    "projector",
    "query",
    "rich",
    "tantivy",
    "typer",
    "zstandard",
)


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    probe = f"{code}\nimport sys\nprint('\\n'.join(sys.modules), file=sys.stderr)"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO
    )
    return set(done.stderr.split())


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m in HEAVY or m.startswith(tuple(f"{h}." for h in HEAVY)))


def test_importing_the_cli_loads_no_store_index_cipher_picture_or_capture_module() -> None:
    modules = loaded_after("import backscroll.cli")
    assert "backscroll.cli.quick" in modules  # the probe sees what was imported
    assert heavy(modules) == []
    assert not {"backscroll.store", "backscroll.status", "backscroll.daemon"} & modules


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["status", "--json"], ["status"]),
        (["search", "invoice", "--limit", "3"], ["search"]),
        (["log"], ["log"]),
        (["import", "-"], ["import"]),
        (["deny", "add", "x"], ["deny"]),
    ],
)
def test_a_command_line_builds_only_the_command_it_runs(args: list[str], names: list[str]) -> None:
    group = typer.main.get_command(app_for(args))
    assert list(group.commands) == names  # type: ignore[attr-defined]


@pytest.mark.parametrize("args", [[], ["--help"], ["nope"], ["--json", "status"]])
def test_anything_but_a_command_gets_the_whole_tree(args: list[str]) -> None:
    assert app_for(args) is app


def test_each_command_built_alone_answers_as_it_does_in_the_whole_tree() -> None:
    """The same help (options, epilog) and the same usage errors, to the character."""
    runner = CliRunner()
    tree = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    lines = [[name, extra] for name in tree for extra in ("--help", "--bogus")]
    for args in [*lines, ["deny", "add", "--help"], ["search"], ["show", "x"]]:
        whole = runner.invoke(app, args, prog_name="backscroll")
        alone = runner.invoke(app_for(args), args, prog_name="backscroll")
        assert (alone.output, alone.exit_code) == (whole.output, whole.exit_code), args


def test_a_search_loads_nothing_for_pictures_capture_agents_or_help() -> None:
    modules = loaded_after(
        "import sys\n"
        "from backscroll.cli import main\n"
        "sys.argv = ['backscroll', 'search', 'invoice']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass"
    )
    assert "backscroll.store" in modules  # it did search
    unwanted = (
        "PIL",
        "mss",
        "rich",
        "capture",
        "keyring",
        "backscroll.daemon",
        "backscroll.mcp_server",
        "importlib.metadata",  # the crc32c package's __init__ asks it for its version
        "typer",  # backscroll.cli.quick reads the line
        "query.when",  # no time phrase to resolve
        # msgspec is imported as where typing_extensions is not installed (which imports
        # inspect, with ast, dis and tokenize)
        "typing_extensions",
        "inspect",
    )
    assert sorted(m for m in modules if m.startswith(tuple(f"{u}." for u in unwanted))) == []
    assert not set(unwanted) & modules


def test_a_search_over_months_loads_no_logging_thread_pool_or_tempfile() -> None:
    """Months are searched on bare threads (``concurrent.futures`` imports ``logging``) and
    opened through folders made without ``tempfile`` (which imports ``shutil`` and
    ``random``)."""
    populate(
        [
            {"ts": ago(60 * 24 * days), "app": "Terminal", "title": "zsh", "text": "invoice"}
            for days in (1, 40, 80)  # three months
        ]
    )
    modules = loaded_after(
        "import sys\n"
        "from backscroll.cli import main\n"
        "sys.argv = ['backscroll', 'search', 'invoice']\n"
        "main()"
    )
    assert "tantivy" in modules  # it did open the months
    assert sorted({"logging", "concurrent.futures", "tempfile", "shutil"} & modules) == []


def test_a_status_loads_no_writer_search_engine_logging_or_cipher() -> None:
    """A reader imports no writer module (the views' writer, the indexer), and a status no
    search engine or cipher; the log imports ``logging`` only to warn of damage."""
    modules = loaded_after(
        "import sys\n"
        "from backscroll.cli import main\n"
        "sys.argv = ['backscroll', 'status']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass"
    )
    assert "backscroll.store" in modules  # it did read the store
    unwanted = {
        "projector.runner",
        "projector.indexer",
        "query.search",
        "tantivy",
        "logging",
        "tempfile",
        "typer",  # backscroll.cli.quick reads the line
        # Whether it is installed is found without importing it (its packages above the
        # compiled core are imported to find it).
        "cryptography.hazmat.bindings._rust",
        "onnxruntime",  # the meaning view's backlog is read without its model
        "onnxruntime_extensions",
        "numpy",
        # inspect (with ast, dis, tokenize), by typing_extensions for msgspec, or by
        # dataclasses for the capture backend's session
        "inspect",
        "dataclasses",
        "typing_extensions",
    }
    assert sorted(unwanted & modules) == []


def test_status_reads_none_of_the_log_the_views_have_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether offsets were lost at the log's end is read from the end of the active
    segment: scanning it from its start, up to 64 MB, was most of a status's time."""
    source = tmp_path / "frames.jsonl"
    source.write_text(
        "".join(import_line(d, "Terminal", "zsh", f"line {d}") + "\n" for d in range(3))
    )
    assert run(capsys, "import", str(source))[0] == 0
    monkeypatch.setattr(ActiveIndex, "refresh", lambda self: pytest.fail("the log was scanned"))
    code, out, _ = run(capsys, "status", "--json")
    assert code == 0
    shown = json.loads(out)
    assert (shown["frames"], shown["damage"], shown["views_lag"]) == (3, [], 0)


def test_the_logs_checksum_is_crc32c_from_the_packages_compiled_module() -> None:
    import crc32c

    from eventlog.segment import crc32c as checksum

    assert checksum(b"123456789") == 0xE3069283  # CRC-32C's check value
    assert checksum is crc32c.crc32c


def test_a_search_of_frames_whose_text_is_plaintext_asks_no_key_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default config encrypts thumbnails only: a key exists, and searching needs none of
    it (the keyring's import alone is ~50 ms, before its call to the Secret Service)."""
    from backscroll import keys
    from backscroll.store import MemoryStore

    source = tmp_path / "frames.jsonl"
    source.write_text(import_line(1, "Terminal", "zsh", "psql connection refused") + "\n")
    assert run(capsys, "import", str(source))[0] == 0
    with MemoryStore(write=True) as store:
        assert store.ensure_crypto() is not None  # the key a first thumbnail would make
    monkeypatch.setattr(keys, "load_key", lambda *_, **__: pytest.fail("the key store was asked"))
    code, out, _ = run(capsys, "search", "refused")
    assert code == 0 and "1 match(es)" in out


@pytest.mark.parametrize(("args", "collecting"), [(["status"], False), (["--help"], True)])
def test_only_a_quick_command_runs_without_the_cycle_collector(
    args: list[str], collecting: bool
) -> None:
    """A quick command exits within a tenth of a second; any other (the daemon, the view's
    server) runs for as long as it likes and needs its cycles collected, and so does the
    process that called ``main`` once it returns."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import gc, sys\n"
            "import backscroll.cli._run as run\n"
            "import backscroll.cli as cli\n"
            "from backscroll.cli import main\n"
            "run.status = lambda home, json: print(gc.isenabled(), file=sys.stderr)\n"
            "cli._typer_main = lambda: print(gc.isenabled(), file=sys.stderr)\n"
            f"sys.argv = ['backscroll', *{args!r}]\n"
            "try:\n"
            "    main()\n"
            "except SystemExit:\n"
            "    pass\n"
            "print(gc.isenabled(), file=sys.stderr)",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    *during, after = done.stderr.splitlines()
    assert during[-1:] == [str(collecting)]
    assert after == "True"


def test_typing_extensions_imports_after_a_quick_command() -> None:
    """msgspec is imported without it, and whatever wants it later still gets it."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from backscroll.cli import main\n"
            "sys.argv = ['backscroll', 'status']\n"
            "main()\n"
            "import msgspec._utils, typing, typing_extensions\n"
            "assert msgspec._utils._get_type_hints is typing.get_type_hints\n"
            "print(typing_extensions.__name__, file=sys.stderr)",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    assert done.stderr.splitlines()[-1] == "typing_extensions"


@pytest.mark.parametrize(
    ("args", "finalized"), [(["status", "--json"], False), (["timeline", "--json"], True)]
)
def test_the_console_script_ends_a_quick_command_at_once_with_its_output_written(
    args: list[str], finalized: bool
) -> None:
    """``console`` ends a quick command's process without Python's finalization (an atexit
    hook is one of its steps), its whole answer written; any other command exits as usual."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import atexit, sys\n"
            "from backscroll.cli import console\n"
            "atexit.register(lambda: print('finalized', file=sys.stderr))\n"
            f"sys.argv = ['backscroll', *{args!r}]\n"
            "console()",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["action"] == args[0]
    assert ("finalized" in done.stderr) == finalized


def test_the_console_script_keeps_a_quick_commands_exit_code() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from backscroll.cli import console\n"
            "sys.argv = ['backscroll', 'search', 'x', '--since', 'not a time']\n"
            "console()",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("backscroll: ")
