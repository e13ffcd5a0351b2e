"""Every command, driven through ``main()`` with generated arguments and import files.

Each example starts from a copy of a home seeded once per test (frames imported through
``backscroll import``, one with a thumbnail) and runs one to three generated calls, each a
``main()`` in a process of its own (forked by ``Zygote``), as the console script runs.
After every call:

- the exit code is 0, 1 or 2, and no traceback shows;
- a failed call printed exactly one line on stderr, ``backscroll: …``, and left every byte
  of ``<home>/log`` as it was; a successful ``--json`` call printed strict JSON; ``export``
  never touched a file that was already where it was told to write;
- ``verify`` exits 0.

After the last call, ``status --json`` answers, and so does a hybrid ``search``, run by
``main()`` in the test's own process: there the model is loaded once for the module, where
each call's process loads it afresh (0.6 s; this search after every example was two thirds
of the file's time). Generated searches, imports and reindexes still run in their own
process, model and all. After every call too would make the file half again as slow.

Arguments are what an argv can hold: any Unicode but NUL (the kernel cannot pass one), and
bytes that are not UTF-8, which Python decodes to lone surrogates (``os.fsdecode``); huge
and negative numbers, NaN and infinities, empty values, option-looking words; paths that
are new, empty or full folders, files, or under a file. Import files hold any JSON value in
any field, non-JSON lines and binary bytes.

A longer run: ``BACKSCROLL_FUZZ_EXAMPLES=1000 .venv/bin/python -m pytest tests/test_fuzz_cli.py``
(add ``BACKSCROLL_FUZZ_SHRINK=1`` to have a failure shrunk).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import typer.main
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from backscroll.cli import main
from backscroll.cli.app import app
from tests import helpers
from tests.conftest import REPO

pytestmark = [
    pytest.mark.slow,  # each test runs hundreds of CLI calls: 11-15 s here
    pytest.mark.meaning,  # the search after each example loads the model in this process
    pytest.mark.skipif(not hasattr(os, "fork"), reason="each call runs in a fork"),
]

EXAMPLES = int(os.environ.get("BACKSCROLL_FUZZ_EXAMPLES", "40"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    # A failure names its one call, arguments and output already; shrinking it runs a
    # thousand more at a third of a second each (five minutes). BACKSCROLL_FUZZ_SHRINK=1 does.
    phases=[p for p in Phase if p is not Phase.shrink or os.environ.get("BACKSCROLL_FUZZ_SHRINK")],
    # One home per test, restored before every example (the fixtures are meant to be shared).
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Placeholders, resolved per call; NUL never occurs in a generated argument.
FILE = "\0file"  # the import file, holding the call's payload
JSON = "\0json"  # --json as the flag, never as another option's value
# Where a command may be told to write (or read): each kind made afresh under the test's tmp.
PATH_KINDS = ("new", "empty-dir", "full-dir", "file", "under-a-file", "missing-parents")
PATH = st.sampled_from([f"\0path:{kind}" for kind in PATH_KINDS])
KEPT = "a file someone keeps here"
HUNG = 60

COVERED: Counter[str] = Counter()
CALLS = 0
RUNS = 0

# --- what a command line can hold ----------------------------------------------------------

_unicode = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\0"), max_size=24)
# Bytes that are not UTF-8 (a Latin-1 file name, a binary paste) reach Python as lone
# surrogates, exactly as os.fsdecode makes them.
_high = st.binary(min_size=1, max_size=4).map(lambda b: bytes(byte | 0x80 for byte in b))
_raw = st.tuples(_unicode, _high, _unicode).map(
    lambda t: os.fsdecode(t[0].encode() + t[1] + t[2].encode())
)
_words = st.sampled_from(
    ["", " ", "-", "--", "-x", "-y", "--help", "--json", "--nope", "*", '"', "a*", "\n", "é"]
)
_numbers = st.one_of(
    st.integers().map(str),
    st.integers(min_value=-(10**40), max_value=10**40).map(str),
    st.floats().map(repr),
    st.sampled_from(["nan", "NaN", "inf", "-inf", "1e309", "-0", "0", "-1", "0x10", "1_000"]),
)
# --home would point a call at a real folder; the home is the test's.
TEXT = st.one_of(_unicode, _raw, _words, _numbers).filter(lambda t: not t.startswith("--home"))
NUMBER = st.one_of(_numbers, TEXT)


def _or_odd(*usual: str) -> st.SearchStrategy[str]:
    """A usual value half the time, else anything: a call that gets past the parser reaches
    the library, where the rarer failures are."""
    return st.one_of(st.sampled_from(usual), TEXT)


WHEN = st.one_of(
    st.sampled_from(["2h", "30m", "3d", "today", "yesterday", "tuesday", "last week", "now"]),
    st.sampled_from(["1970-01-01", "0001-01-01", "9999-12-31", "2026-11-24", "-5", "1e300"]),
    st.sampled_from(["10000000000000d", "99999999999999999999h", "next blursday", "2 hours"]),
    NUMBER,
)
APP = _or_odd("Terminal", "term", "SLACK", "firefox", "zsh", "Invoice", "1Password")
LIMIT = st.one_of(st.integers(1, 100).map(str), NUMBER)
SECONDS = st.one_of(st.floats(0.2, 3600).map(str), st.integers(1, 86400).map(str), NUMBER)
COUNT = st.one_of(st.integers(1, 100_000).map(str), NUMBER)
FRAME_ID = st.one_of(st.sampled_from(["1", "2", "3"]), NUMBER)
ON_OFF = _or_odd("on", "off", "yes", "0", "maybe")
KINDS = _or_odd("config", "pause", "resume", "delete", "purged", "reindex", "key", "nope")
HOTKEY = _or_odd("<ctrl>+<alt>+m", "<ctrl>+<shift>+<alt>+p", "", "garbage", "<ctrl>+", "+")
# Words added at the end of one call in four: what a person mistypes, or a value that looks
# like an option.
NOISE = st.integers(0, 3).flatmap(
    lambda n: st.lists(st.one_of(_words, TEXT), min_size=1, max_size=2) if n == 0 else st.just([])
)


def _options(*choices: tuple[str, st.SearchStrategy[str] | None]) -> st.SearchStrategy[list[str]]:
    """A few of ``choices`` in any order: each an option and a value (None: a flag)."""

    def flatten(picked: list[tuple[str, str | None]]) -> list[str]:
        return [part for option, value in picked for part in (option, value) if part is not None]

    pairs = [
        st.tuples(st.just(option), st.none() if value is None else value)
        for option, value in choices
    ]
    return st.lists(st.one_of(pairs), max_size=4).map(flatten)


@dataclass(frozen=True)
class Call:
    label: str
    args: tuple[str, ...]
    payload: bytes | None = None  # the import file's bytes, written at FILE


def _call(label: str, *parts: st.SearchStrategy[list[str]] | list[str]) -> st.SearchStrategy[Call]:
    """A call of ``label``: the parts in order, then maybe a few words of noise."""
    chunks = [st.just(p) if isinstance(p, list) else p for p in parts]
    return st.tuples(*chunks, NOISE).map(
        lambda lists: Call(label, tuple(part for chunk in lists for part in chunk))
    )


WINDOW = (("--since", WHEN), ("--until", WHEN), ("--app", APP))
QUERY = st.one_of(
    _or_odd("econnrefused", "invo*", '"connect econnrefused"', "quokka cafe").map(lambda q: [q]),
    TEXT.map(lambda q: ["--", q]),
)

READ = st.one_of(
    _call("search", ["search"], _options(*WINDOW, ("--limit", LIMIT), (JSON, None)), QUERY),
    _call("timeline", ["timeline"], _options(*WINDOW, ("--limit", LIMIT), (JSON, None))),
    _call("show", ["show"], st.lists(FRAME_ID, min_size=0, max_size=2), _options((JSON, None))),
    _call(
        "show --save",
        ["show", "--save"],
        PATH.map(lambda p: [p]),
        st.one_of(st.just("2"), FRAME_ID).map(lambda n: [n]),  # frame 2 has a thumbnail
    ),
    _call("status", ["status"], _options((JSON, None))),
    _call("log", ["log"], _options(("--since", WHEN), ("--kind", KINDS), (JSON, None))),
    _call("verify", ["verify"], _options((JSON, None))),
)
MANAGE = st.one_of(
    _call("pause", ["pause"], st.lists(WHEN, max_size=1)),
    _call("resume", ["resume"]),
    _call("deny", ["deny"]),
    _call("deny list", ["deny", "list"]),
    _call("deny add", ["deny", "add"], st.lists(APP, max_size=1)),
    _call("deny remove", ["deny", "remove"], st.lists(APP, max_size=1)),
    _call(
        "config",
        ["config"],
        _options(
            ("--trigger", _or_odd("events", "interval")),
            ("--interval", SECONDS),
            ("--poll", SECONDS),
            ("--min-interval", SECONDS),
            ("--redact", ON_OFF),
            ("--encrypt-text", ON_OFF),
            ("--encrypt-thumbnails", ON_OFF),
            ("--cap", COUNT),
            ("--retention", COUNT),
            ("--hotkey", HOTKEY),
            ("--announce-accessibility", ON_OFF),
            (JSON, None),
        ),
    ),
)
# A scope always, and -y always: a generated call never waits at a confirmation prompt.
_SCOPE = st.lists(
    st.one_of(
        st.tuples(st.just("--before"), WHEN),
        st.tuples(st.just("--since"), WHEN),
        st.tuples(st.just("--app"), APP),
    ),
    min_size=1,
    max_size=3,
).map(lambda pairs: [part for pair in pairs for part in pair])
DESTROY = st.one_of(
    _call("clear", ["clear", "-y"], _SCOPE),
    _call("reindex --views-only", ["reindex", "--views-only", "-y"]),
    _call("reindex", ["reindex", "-y"]),
)
EXPORT = _call(
    "export",
    ["export", "--out"],
    PATH.map(lambda p: [p]),
    _options(
        ("--format", _or_odd("json", "csv", "html", "text")),
        *WINDOW,
        ("--query", _or_odd("econnrefused", "invo*", '"unbalanced')),
        ("--limit", LIMIT),
        ("--thumbnails", None),
        ("--no-thumbnails", None),
    ),
)

# --- what an import file can hold ----------------------------------------------------------

_any_text = st.text(st.characters(exclude_categories=[]), max_size=12)  # lone surrogates too
JSON_VALUE = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), _any_text),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_any_text, inner, max_size=3),
    max_leaves=6,
)
TS = st.one_of(
    st.sampled_from([-5, 0, 1e300, -1e300, 2**63, 10**30, 1.5, "2026-11-30T10:00:00+00:00"]),
    st.sampled_from(["2026-11-30", "0001-01-01T00:00:00", "9999-12-31T23:59:59+14:00", "x"]),
    st.floats(),
    st.integers(),
    JSON_VALUE,
)
FIELD_TEXT = st.one_of(st.sampled_from(["Terminal", "zsh", "", " ", "1Password"]), _any_text)
FRAME = st.fixed_dictionaries(
    {},
    optional={
        "ts": TS,
        "app": st.one_of(FIELD_TEXT, JSON_VALUE),
        "title": st.one_of(FIELD_TEXT, JSON_VALUE),
        "text": st.one_of(FIELD_TEXT, JSON_VALUE),
        "text_source": st.one_of(st.sampled_from(["ax", "ocr", "none", "OCR"]), JSON_VALUE),
        "image": st.one_of(st.sampled_from(["IMAGE", "FILE", "/nonexistent.png"]), JSON_VALUE),
        "url": st.one_of(
            st.sampled_from(["https://ex.com/?token=Zx8kQ2mP9vLr4TbN", "file:///tmp/a", "a b"]),
            FIELD_TEXT,
            JSON_VALUE,
        ),
        "extra": JSON_VALUE,
    },
)
GOOD = st.builds(
    lambda app, text, days: {
        "ts": (datetime.now(UTC) - timedelta(days=days)).isoformat(),
        "app": app,
        "title": "t",
        "text": text,
    },
    st.sampled_from(["Terminal", "Firefox"]),
    st.text(st.characters(codec="utf-8"), max_size=20),
    st.floats(0, 60),
)


def _frame_line(frame: dict[str, Any], ascii_only: bool) -> bytes:
    text = json.dumps(frame, ensure_ascii=ascii_only)  # NaN and Infinity as Python writes them
    return text.encode("utf-8", "surrogatepass")  # a lone surrogate as its (invalid) bytes


LINE = st.one_of(
    st.builds(_frame_line, FRAME, st.booleans()),
    st.builds(_frame_line, GOOD, st.booleans()),
    JSON_VALUE.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=24),
    st.sampled_from([b"", b"not json", b"{", b"[]", b"null", b'{"ts": NaN}', b"\xff\xfe", b"\r"]),
)
IMPORT = st.tuples(
    st.lists(LINE, max_size=5),
    st.sampled_from([b"\n", b"\r\n"]),
    st.one_of(st.just(FILE), PATH, st.just("-")),  # "-": stdin, at its end
    st.sampled_from([[], ["--skip-bad"]]),
    NOISE,
).map(lambda t: Call("import", ("import", t[2], *t[3], *t[4]), t[1].join(t[0])))

EVERYTHING = st.one_of(READ, MANAGE, DESTROY, EXPORT, IMPORT)

# --- running main() as the console script runs it ------------------------------------------


@dataclass(frozen=True)
class Ran:
    args: tuple[str, ...]
    code: int  # negative: killed by that signal (-9: it did not end in HUNG seconds)
    out: str
    err: str

    def shown(self) -> str:
        return (
            f"\nbackscroll {' '.join(map(repr, self.args))}\n--- exit {self.code}"
            f"\n--- stdout\n{self.out}\n--- stderr\n{self.err}"
        )


def run(*args: str) -> Ran:
    """``main()`` with this argv in a process of its own, as the console script runs it: its
    own stdout (strict UTF-8, as on a UTF-8 terminal), stderr (backslashreplace) and an
    empty stdin (a prompt reads EOF), this process's environment and folder. What a call
    leaves behind (threads, caches) goes with it, and a crash in native code (a Rust abort,
    a segfault) fails the example rather than the test run."""
    with tempfile.TemporaryDirectory() as folder:
        out, err = Path(folder, "out"), Path(folder, "err")
        code = Zygote.running().call(
            {
                "args": args,
                "out": str(out),
                "err": str(err),
                "env": dict(os.environ),
                "cwd": os.getcwd(),
            }
        )
        return Ran(args, code, out.read_bytes().decode("utf-8", "replace"), err.read_text())


class Zygote:
    """A clean process that forks one child per call. The test process cannot fork: other
    tests' in-process calls leave threads in it (the search pool, Tantivy's), and a lock one
    of them held stays held in a forked child, which hangs. The zygote runs no command
    itself, so it has one thread; it imports what its children imported, so that the next
    ones start with the libraries the commands import lazily (a third of a second each)."""

    _one: Zygote | None = None

    def __init__(self) -> None:
        self.log = tempfile.TemporaryFile()  # noqa: SIM115  (its stderr, for as long as it runs)
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from tests.test_fuzz_cli import Zygote; Zygote.serve()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            cwd=REPO,
            text=True,
        )

    @classmethod
    def running(cls) -> Zygote:
        if cls._one is None:
            cls._one = Zygote()
        return cls._one

    @classmethod
    def stop(cls) -> None:
        if cls._one is not None:
            zygote, cls._one = cls._one, None
            assert zygote.process.stdin is not None and zygote.process.stdout is not None
            zygote.process.stdin.close()  # its loop ends
            zygote.process.wait(timeout=HUNG)
            zygote.process.stdout.close()
            zygote.log.close()

    def call(self, request: dict[str, Any]) -> int:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")  # lone surrogates as \udcxx
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            self.log.seek(0)
            raise AssertionError(f"the zygote died:\n{self.log.read().decode()}")
        code: int = json.loads(answer)
        return code

    @staticmethod
    def serve() -> None:
        # Built once here rather than in every child (30 ms, a third of a short call).
        typer.main.get_command = functools.cache(typer.main.get_command)
        typer.main.get_command(app)
        for line in sys.stdin:
            request = json.loads(line)
            with tempfile.TemporaryFile() as imported:
                loaded = set(sys.modules)
                _single_threaded()
                pid = os.fork()
                if pid == 0:  # the child
                    code = 1
                    try:
                        os.environ.clear()
                        os.environ.update(request["env"])
                        os.chdir(request["cwd"])
                        _standard_streams(request["out"], request["err"])
                        sys.argv = ["backscroll", *request["args"]]
                        code = _as_a_process()
                        imported.write("\n".join(set(sys.modules) - loaded).encode())
                        imported.flush()
                    finally:
                        os._exit(code)
                code = _wait(pid)
                imported.seek(0)
                _warm(imported.read().decode().split())
            print(json.dumps(code), flush=True)


def _single_threaded() -> None:
    tasks = Path("/proc/self/task")
    native = len(list(tasks.iterdir())) if tasks.exists() else 1
    assert threading.active_count() == 1 and native == 1, (
        f"threads before a fork: {threading.enumerate()}, {native} native"
    )


# Their import starts native threads (OpenBLAS's, ONNX Runtime's and numkong's pools), after
# which the zygote could not fork: a child that searches by meaning imports them afresh.
THREADED = ("numpy", "onnxruntime", "onnxruntime_extensions", "numkong")


def _warm(modules: list[str]) -> None:
    for name in modules:
        if name not in sys.modules and name.partition(".")[0] not in THREADED:
            with contextlib.suppress(Exception):
                importlib.import_module(name)


def _standard_streams(out: str, err: str) -> None:
    """The streams a process on a UTF-8 terminal starts with, on these files."""
    os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT, 0o600), 1)
    os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT, 0o600), 2)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    sys.stdin = os.fdopen(0, "r", encoding="utf-8", closefd=False)
    sys.stdout = os.fdopen(1, "w", encoding="utf-8", closefd=False)
    sys.stderr = os.fdopen(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)


def _as_a_process() -> int:
    """What the interpreter does around the console script's ``main()``."""
    try:
        main()
        code = 0
    except SystemExit as exc:
        if isinstance(exc.code, int) or exc.code is None:
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        sys.excepthook(*sys.exc_info())  # typer's hook, as the process would show it
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            traceback.print_exc()  # as the interpreter reports a failed flush at exit
            code = 120
    return code


def _wait(pid: int) -> int:
    """The child's exit code; a call that has not ended in ``HUNG`` seconds (a few frames take
    well under one) is killed, and shows as killed by SIGKILL."""
    deadline = time.monotonic() + HUNG
    while not (ended := os.waitpid(pid, os.WNOHANG))[0]:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            ended = os.waitpid(pid, 0)
            break
        time.sleep(0.002)
    return os.waitstatus_to_exitcode(ended[1])


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


class Store:
    """The test's home, seeded once; every example starts from a fresh copy of it (a new
    folder: threads of the call before may still be tidying the old one's views)."""

    def __init__(
        self,
        home: Path,
        tmp: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        self.home, self.tmp, self.monkeypatch, self.capsys = home, tmp, monkeypatch, capsys
        self.seed = tmp / "seed"
        self.made = 0
        self.kept: list[Path] = []  # files someone keeps where a call was told to write
        from PIL import Image

        self.image = tmp / "image.png"
        Image.new("RGB", (8, 8), "red").save(self.image)
        frames = tmp / "frames.jsonl"
        now = datetime.now(UTC)
        rows = [
            ("Terminal", "zsh", "npm ERR! connect ECONNREFUSED 127.0.0.1:5432", 2),
            ("Firefox", "Invoice INV-20931 — Acme", "Invoice INV-20931 total 1,250.00 EUR", 1),
            ("Slack", "general", "lunch at the quokka cafe today", 0.5),
        ]
        lines = [
            {"ts": (now - timedelta(days=d)).isoformat(), "app": a, "title": t, "text": x}
            for a, t, x, d in rows
        ]
        lines[1]["image"] = str(self.image)  # one frame with a thumbnail, for --save and export
        frames.write_text("".join(json.dumps(line) + "\n" for line in lines))
        seeded = run("import", str(frames))
        assert seeded.code == 0 and "imported 3 frame(s)" in seeded.out, seeded.shown()
        shutil.copytree(home, self.seed)

    def restore(self) -> None:
        done = self.home
        self.home = self.fresh("home")
        shutil.copytree(self.seed, self.home)
        self.monkeypatch.setenv("BACKSCROLL_HOME", str(self.home))
        shutil.rmtree(done, ignore_errors=True)

    def fresh(self, name: str) -> Path:
        self.made += 1
        (self.tmp / "made").mkdir(exist_ok=True)
        return self.tmp / "made" / f"{self.made}-{name}"

    def argv(self, call: Call) -> list[str]:
        args = []
        for part in call.args:
            if part == FILE:
                path = self.fresh("import.jsonl")
                payload = (call.payload or b"").replace(b"IMAGE", str(self.image).encode())
                path.write_bytes(payload.replace(b"FILE", str(path).encode()))
                part = str(path)
            elif part.startswith("\0path:"):
                part = str(self.path(part.removeprefix("\0path:")))
            elif part == JSON:
                part = "--json"
            args.append(part)
        return args

    def path(self, kind: str) -> Path:
        path = self.fresh(kind)
        if kind in ("empty-dir", "full-dir"):
            path.mkdir()
        kept = path / "keep.txt" if kind == "full-dir" else path
        if kind in ("full-dir", "file", "under-a-file"):
            kept.write_text(KEPT)
            self.kept.append(kept)
        if kind == "under-a-file":
            return path / "child"
        if kind == "missing-parents":
            return path / "a" / "b"
        return path


def check(store: Store, call: Call) -> Ran:
    """One call, and what must hold after it."""
    global CALLS
    store.kept.clear()
    args = store.argv(call)
    log = store.home / "log"
    before = snapshot(log)
    ran = run(*args)
    CALLS += 1
    COVERED[call.label] += 1
    assert "Traceback" not in ran.out + ran.err, ran.shown()
    assert ran.code in (0, 1, 2), ran.shown()
    if ran.code:
        lines = ran.err.splitlines()
        assert len(lines) == 1, ran.shown()
        assert lines[0].startswith("backscroll: "), ran.shown()
        assert snapshot(log) == before, ran.shown() + "\n--- and it changed the log"
    elif JSON in call.args and "--help" not in args:
        strict_json(ran)
    if call.label == "export":  # "a new or empty folder": never one that holds files
        for kept in store.kept:
            assert kept.read_text() == KEPT, ran.shown() + f"\n--- and it changed {kept}"
    verify = run("verify")
    assert verify.code == 0, f"after:{ran.shown()}\nthen:{verify.shown()}"
    return ran


def answers(store: Store, after: Ran) -> None:
    """The store still answers, with a config a daemon can run under."""
    status = run("status", "--json")
    assert status.code == 0, f"after:{after.shown()}\nthen:{status.shown()}"
    shown = strict_json(status)
    for key in ("interval_seconds", "poll_seconds", "min_interval_seconds", "retention_days"):
        # the contract's encode writes a NaN or an infinity as null
        assert isinstance(shown[key], int | float), f"after:{after.shown()}\nthen:{status.shown()}"
    search = in_this_process(store.capsys, "search", "econnrefused")
    assert search.code == 0 and "Traceback" not in search.err, (
        f"after:{after.shown()}\nthen:{search.shown()}"
    )


def in_this_process(capsys: pytest.CaptureFixture[str], *args: str) -> Ran:
    """``main()`` with this argv in the test's process, where the model stays loaded."""
    code, out, err = helpers.run(capsys, *args)
    return Ran(args, code, out, err)


def strict_json(ran: Ran) -> Any:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON:{ran.shown()}")

    try:
        return json.loads(ran.out, parse_constant=refuse)
    except json.JSONDecodeError as exc:
        raise AssertionError(f"not JSON ({exc}):{ran.shown()}") from None


@pytest.fixture
def store(
    backscroll_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Store:
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)  # a relative path in a generated call lands here
    return Store(backscroll_home, tmp_path, monkeypatch, capsys)


@pytest.fixture(scope="module", autouse=True)
def zygote() -> Iterator[None]:
    yield
    Zygote.stop()


@pytest.fixture(scope="module", autouse=True)
def report(request: pytest.FixtureRequest) -> Iterator[None]:
    """How much ran, and which commands: on the terminal, whatever pytest captures."""
    started = time.monotonic()
    yield
    took = time.monotonic() - started
    covered = ", ".join(f"{label} {n}" for label, n in sorted(COVERED.items()))
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print(f"\nfuzz: {RUNS} examples, {CALLS} generated calls in {took:.0f} s: {covered}")


def _run_all(store: Store, calls: list[Call]) -> None:
    global RUNS
    RUNS += 1
    store.restore()
    for call in calls:
        ran = check(store, call)
    answers(store, ran)


# Calls the generated ones found failing once: each property runs its own every time.
_AN_HOUR_AGO = json.dumps(
    {"ts": time.time() - 3600, "app": "Terminal", "title": "t", "text": "hello"}
).encode()


def _found(label: str, *args: str, payload: bytes | None = None) -> Any:
    return example(calls=[Call(label, args, payload)])


@FUZZ
@_found("show --save", "show", "--save", "\0path:empty-dir", "2")
@_found("show --save", "show", "--save", "\0path:missing-parents", "2")
@_found("search", "search", "x", "--app", "\udc80")
@_found("timeline", "timeline", "--app", "a\udcff")
@given(calls=st.lists(READ, min_size=1, max_size=2))
def test_reading_commands_answer_or_fail_in_one_line(store: Store, calls: list[Call]) -> None:
    _run_all(store, calls)


@FUZZ
@_found("config", "config", "--trigger", "\udc80")
@_found("deny add", "deny", "add", "\udc80")
@given(calls=st.lists(MANAGE, min_size=1, max_size=2))
def test_managing_commands_change_the_log_only_when_they_succeed(
    store: Store, calls: list[Call]
) -> None:
    _run_all(store, calls)


@FUZZ
@_found("clear", "clear", "-y", "--app", "\udc80")
@given(calls=st.lists(st.one_of(DESTROY, READ), min_size=1, max_size=2))
def test_clear_and_reindex_leave_a_whole_store(store: Store, calls: list[Call]) -> None:
    _run_all(store, calls)


@FUZZ
@_found("import", "import", FILE, payload=_AN_HOUR_AGO + b"\n{}")
@_found("import", "import", FILE, payload=_AN_HOUR_AGO + b"\n\xe9v")
@given(calls=st.lists(IMPORT, min_size=1, max_size=2))
def test_any_import_file_is_imported_or_refused_in_one_line(
    store: Store, calls: list[Call]
) -> None:
    _run_all(store, calls)


@FUZZ
@_found("export", "export", "--out", "\0path:new", "--app", "\udc80")
@given(calls=st.lists(EXPORT, min_size=1, max_size=2))
def test_export_writes_a_copy_or_refuses_in_one_line(store: Store, calls: list[Call]) -> None:
    _run_all(store, calls)


@FUZZ
@given(calls=st.lists(EVERYTHING, min_size=2, max_size=3))
def test_any_sequence_of_commands_keeps_the_store_whole(store: Store, calls: list[Call]) -> None:
    _run_all(store, calls)
