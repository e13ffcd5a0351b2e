"""The daemon's meaning socket: a command's search asks the daemon for the frames by meaning,
gets the answer it would have found itself, and finds them itself where no daemon answers.

The server is ``MeaningServer`` in a process of its own (the daemon's part, without a
desktop), on a store embedded once for the module; the last test runs the real daemon."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from backscroll import answer, contract
from backscroll.contract import SearchRequest
from backscroll.importer import import_frames
from backscroll.meaning_socket import (
    LENGTH,
    MAX_ANSWER,
    SOCKET,
    TIMEOUT,
    MeaningAnswer,
    MeaningAsked,
    Near,
    read_message,
    socket_address,
)
from backscroll.store import MemoryStore
from bench.startup import SERVE
from headless import wait_for
from projector import embedder as model
from query import TimeSpan, utc_us
from tests.helpers import populate, run
from tests.test_meaning import FREIGHT, STORE, TRIP

pytestmark = [
    pytest.mark.meaning,
    pytest.mark.skipif(not model.available(), reason="the meaning model is not installed"),
]

MODULES = "-- the modules loaded --"
# A command's search in its own process: its output, then the modules it loaded, on stderr.
SEARCH = (
    f"MODULES = {MODULES!r}\n"
    "import sys\n"
    "from backscroll.cli import main\n"
    "sys.argv = ['backscroll', 'search', *sys.argv[1:]]\n"
    "try:\n"
    "    main()\n"
    "except SystemExit:\n"
    "    pass\n"
    "print(MODULES, *sys.modules, sep='\\n', file=sys.stderr)\n"
)
MODEL_MODULES = {"numpy", "onnxruntime", "onnxruntime_extensions"}
NOBODY = 65534
# Between the module's frames (300 and 200 minutes ago): the bill is before it, the flight after.
SINCE = (datetime.now() - timedelta(minutes=250)).strftime("%Y-%m-%d %H:%M")
QUESTIONS = [
    [TRIP],
    [FREIGHT],
    ["invoice 4471"],  # literal: found by both
    [TRIP, "--app", "Thunderbird"],  # the app filter on the meaning hits
    [FREIGHT, "--since", SINCE],
    [TRIP, "--until", SINCE],
    ["a recipe for chocolate cake"],  # no hit: the answer says why
]


class Served:
    """A home embedded for the module, and the server's process on it."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.process: subprocess.Popen[bytes] | None = None
        self.log = home.parent / "server.log"

    @property
    def socket(self) -> Path:
        return self.home / "run" / SOCKET

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-c", SERVE, str(self.home)],
                stdin=subprocess.PIPE,
                stderr=log,
            )
        wait_for(self.socket.exists, "the meaning socket", timeout=60)

    def stop(self) -> None:
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.close()
        assert self.process.wait(timeout=60) == 0, self.log.read_text()

    def ask(self, payload: bytes) -> MeaningAnswer:
        """Send raw bytes as a client would, and read the answer."""
        with connected(self.home) as sock:
            sock.sendall(payload)
            return read_message(sock, MeaningAnswer, MAX_ANSWER, deadline())


def deadline() -> float:
    import time

    return time.monotonic() + 30  # a loaded machine: the test waits, the command does not


class connected:
    """A client's connection to the socket of ``home``."""

    def __init__(self, home: Path) -> None:
        self.folder = os.open(home / "run", os.O_PATH | os.O_DIRECTORY)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)

    def __enter__(self) -> socket.socket:
        self.sock.connect(socket_address(self.folder))
        return self.sock

    def __exit__(self, *exc: object) -> None:
        self.sock.close()
        os.close(self.folder)


def raw(message: Any) -> bytes:
    body = msgspec.msgpack.encode(message)
    return LENGTH.pack(len(body)) + body


def embed(home: Path) -> None:
    with MemoryStore(home, write=True) as store:
        import_frames(store, [json.dumps(r) for r in STORE])
        assert store.embed() == len(STORE)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    server = Served(tmp_path_factory.mktemp("served") / "home")
    embed(server.home)
    server.start()
    yield server
    server.stop()


def in_process(home: Path, args: list[str]) -> str:
    """What ``search *args --json`` answers in this process, with no daemon asked."""
    given: dict[str, Any] = {"query": args[0]}
    for name, value in zip(args[1::2], args[2::2], strict=True):
        given[name.removeprefix("--")] = value
    with MemoryStore(home) as store:
        return contract.encode(answer.search(store, contract.parse(SearchRequest, given)).answer)


def searched(home: Path, *args: str) -> tuple[str, str, set[str]]:
    """``search *args --json --home home`` in its own process: its output, its notes (stderr
    without the module list) and the modules it loaded."""
    done = subprocess.run(
        [sys.executable, "-c", SEARCH, *args, "--json", "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    notes, _, modules = done.stderr.partition(f"{MODULES}\n")
    return done.stdout, notes, set(modules.split())


@pytest.mark.parametrize("args", QUESTIONS)
def test_a_search_answered_by_the_daemon_is_the_one_found_without_it_and_loads_no_model(
    served: Served, args: list[str]
) -> None:
    out, notes, modules = searched(served.home, *args)
    assert notes == ""
    assert "backscroll.meaning_socket" in modules  # the probe sees what was imported
    assert not MODEL_MODULES & modules  # the daemon answered: no model here
    assert out.strip() == in_process(served.home, args)


def test_an_encrypted_store_is_answered_by_the_daemon_as_without_it(backscroll_home: Path) -> None:
    with MemoryStore(backscroll_home, write=True) as store:
        store.set_config(encrypt_text=True)
    embed(backscroll_home)
    chunks = list((backscroll_home / "views" / "meaning").glob("*.vec"))
    assert chunks and all(c.read_bytes()[:1] == b"E" for c in chunks)  # sealed
    server = Served(backscroll_home)
    server.start()
    try:
        out, notes, modules = searched(backscroll_home, TRIP)
    finally:
        server.stop()
    assert notes == "" and not MODEL_MODULES & modules
    assert json.loads(out)["matches"][0]["app"] == "Firefox"
    assert out.strip() == in_process(backscroll_home, [TRIP])


def test_the_answer_holds_the_frames_by_meaning_with_their_passages(served: Served) -> None:
    found = json.loads(searched(served.home, TRIP)[0])
    assert found["matches"][0]["app"] == "Firefox"
    assert found["matches"][0]["matched_by"] == ["meaning"]
    assert found["matches"][0]["passage"]


@pytest.mark.parametrize("stale", [True, False], ids=["stale socket", "no socket"])
def test_with_no_daemon_listening_a_search_finds_meaning_itself_and_writes_nothing(
    backscroll_home: Path, stale: bool
) -> None:
    embed(backscroll_home)
    run_folder = backscroll_home / "run"
    if stale:  # a daemon killed before it could remove its socket
        run_folder.mkdir(mode=0o700)
        folder = os.open(run_folder, os.O_PATH | os.O_DIRECTORY)
        with socket.socket(socket.AF_UNIX) as dead:
            dead.bind(socket_address(folder))
        os.close(folder)
    before = sorted(str(p) for p in backscroll_home.rglob("*"))
    out, notes, modules = searched(backscroll_home, TRIP)
    assert notes == ""
    assert modules >= MODEL_MODULES  # found here
    assert json.loads(out)["matches"][0]["app"] == "Firefox"
    assert out.strip() == in_process(backscroll_home, [TRIP])
    assert sorted(str(p) for p in backscroll_home.rglob("*")) == before  # the stale one stays


def stranger(folder: Path, uid: int, request: bytes) -> int:
    """Fork a child that becomes ``uid``, connects to the socket in ``folder`` and sends
    ``request``: its exit code is 0 where it was hung up on, 1 where it got an answer."""
    pid = os.fork()
    if pid == 0:
        code = 2
        try:
            os.chdir(folder)  # the path to it is root's alone
            os.setgid(uid)
            os.setuid(uid)
            with socket.socket(socket.AF_UNIX) as sock:
                sock.settimeout(30)
                sock.connect(SOCKET)
                try:
                    sock.sendall(request)
                    code = 1 if sock.recv(LENGTH.size) else 0
                except (BrokenPipeError, ConnectionResetError):  # hung up before, or after
                    code = 0
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to be another uid")
def test_a_client_of_another_uid_is_hung_up_on(served: Served) -> None:
    request = raw(MeaningAsked(TRIP))
    folder = served.home / "run"
    # Only the uid check is left in the way: the folder and the socket open to anyone.
    os.chmod(folder, 0o711)
    os.chmod(served.socket, 0o666)
    try:
        codes = {uid: stranger(folder, uid, request) for uid in (os.getuid(), NOBODY)}
    finally:
        os.chmod(folder, 0o700)
        os.chmod(served.socket, 0o600)
    assert codes == {os.getuid(): 1, NOBODY: 0}
    assert f"hung up on uid {NOBODY}" in served.log.read_text()


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        (LENGTH.pack(4) + b"\xc1\xc1\xc1\xc1", "did not read"),
        (raw(MeaningAnswer()), "unknown field `hits`"),
        (raw({"type": "meaning/0", "query": TRIP}), "meaning/0"),
        (raw(MeaningAsked("x" * 1001)), "length <= 1000"),
        (raw(MeaningAsked("   ")), "matching regex"),
        (raw(MeaningAsked(TRIP, start_us=-1)), ">= 0"),
        (raw(MeaningAsked(TRIP, limit=0)), ">= 1"),
        (LENGTH.pack(2**31), "2,147,483,648 bytes"),
    ],
    ids=[
        "not msgpack",
        "an answer",
        "another version",
        "too long",
        "blank",
        "negative",
        "zero",
        "huge",
    ],
)
def test_a_request_that_does_not_read_is_one_error_and_the_server_answers_the_next(
    served: Served, payload: bytes, why: str
) -> None:
    refused = served.ask(payload)
    assert refused.error is not None and why in refused.error
    assert refused.hits == []
    assert served.ask(raw(MeaningAsked(TRIP))).hits


def test_a_client_that_hangs_up_or_says_nothing_does_not_stop_the_server(served: Served) -> None:
    with connected(served.home) as sock:
        sock.sendall(LENGTH.pack(100) + b"abc")  # and hangs up mid-message
    with connected(served.home):
        pass  # connects and hangs up
    with connected(served.home) as silent:
        silent.recv(1)  # says nothing: the server gives up on it (TIMEOUT) and hangs up
        assert served.ask(raw(MeaningAsked(TRIP))).hits
    assert "did not read" in served.log.read_text()
    assert "Traceback" not in served.log.read_text()


def test_the_span_crosses_the_wire_to_the_same_microsecond() -> None:
    @given(st.datetimes(timezones=st.just(UTC)), st.datetimes(timezones=st.just(UTC)))
    def crosses(start: datetime, end: datetime) -> None:
        span = MeaningAsked.of(TRIP, TimeSpan(start, end)).span()
        assert span.start is not None and span.end is not None
        assert (utc_us(span.start), utc_us(span.end)) == (utc_us(start), utc_us(end))

    crosses()
    assert MeaningAsked.of(TRIP, TimeSpan()).span() == TimeSpan()


class FakeDaemon:
    """A listener on a home's socket that answers each connection with ``reply`` (None:
    never answers), as a broken or hung daemon would."""

    def __init__(self, home: Path, reply: bytes | None) -> None:
        (home / "run").mkdir(mode=0o700)
        self.folder = os.open(home / "run", os.O_PATH | os.O_DIRECTORY)
        self.listener = socket.socket(socket.AF_UNIX)
        self.listener.bind(socket_address(self.folder))
        self.listener.listen()
        self.reply = reply
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            conn.recv(65536)
            if self.reply is None:
                self.held.append(conn)
                continue
            conn.sendall(self.reply)
            conn.close()

    def close(self) -> None:
        self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self.thread.join()
        for conn in self.held:
            conn.close()
        os.close(self.folder)


@pytest.mark.parametrize(
    ("reply", "note"),
    [
        (LENGTH.pack(3) + b"\xc1\xc1\xc1", "the daemon's answer did not read"),
        (raw(MeaningAsked(TRIP)), "the daemon's answer did not read"),
        (LENGTH.pack(2**31), "the daemon's answer did not read (a message of 2,147,483,648"),
        (LENGTH.pack(50) + b"abc", "the daemon's answer did not read (the message ended"),
        (raw(MeaningAnswer([Near(2, 7.0, 0, 1)])), "the daemon's answer did not read"),
        (
            raw(MeaningAnswer(error="search by meaning is off")),
            "the daemon did not answer: search by meaning is off",
        ),
        (None, f"the daemon did not answer within {TIMEOUT} s"),
    ],
    ids=["not msgpack", "a request", "huge", "cut short", "a score of 7", "an error", "hung"],
)
def test_a_daemon_that_answers_wrong_or_not_at_all_costs_a_note_and_the_search_answers(
    backscroll_home: Path, capsys: pytest.CaptureFixture[str], reply: bytes | None, note: str
) -> None:
    populate(STORE)
    with MemoryStore(write=True) as store:
        store.embed()
    fake = FakeDaemon(backscroll_home, reply)
    try:
        code, out, err = run(capsys, "search", TRIP, "--json")
    finally:
        fake.close()
    assert code == 0, err
    assert json.loads(out)["matches"][0]["app"] == "Firefox"
    assert err.startswith(f"note: {note}") and err.endswith("; the model was loaded here instead\n")
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.desktop
def test_the_real_daemon_answers_a_search_by_meaning_and_removes_its_socket(
    daemon: Any, backscroll_home: Path
) -> None:
    embed(backscroll_home)
    daemon.start()
    where = backscroll_home / "run" / SOCKET
    wait_for(where.exists, "the daemon's meaning socket", timeout=60)
    assert (where.stat().st_mode & 0o777, where.parent.stat().st_mode & 0o777) == (0o600, 0o700)
    out, notes, modules = searched(backscroll_home, TRIP)
    assert notes == "" and not MODEL_MODULES & modules
    assert json.loads(out)["matches"][0]["app"] == "Firefox"
    daemon.stop()
    assert not where.exists()
