"""A deletion whose purge cannot complete (issue 24, case 1's general rule).

A segment this version cannot read, a file it may not open, an I/O error while the log is
rewritten: each made the ``clear`` fail with its delete request pending, and then every later
command that writes (``pause``, ``resume``, ``import``, even ``clear --damaged``) failed on
it. Now the tombstone hides the frames at once, the command that asked exits 1 with one line
saying so, every other writer carries on, ``status`` and ``verify`` say it in one line, and
``clear --damaged`` finishes it once what stopped it is fixed (or is what fixes it).
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import tests.faultfs
from backscroll.housekeeping import housekeep
from backscroll.importer import import_frames
from backscroll.manage import delete
from backscroll.reindex import reindex, run_requested
from backscroll.store import MemoryStore
from base.errors import StoreError
from base.fs import FILE_MODE, FileSystem, WritableFile
from eventlog.events import FrameCaptured
from eventlog.folder import NEW_SUFFIX
from eventlog.format import HEADER
from eventlog.log import Log
from eventlog.segment import crc32c
from tests.helpers import run

T = 1_764_600_000  # 2025-12-01, epoch seconds
APPS = ["Terminal", "Browser", "Slack", "Editor"]
FINISH = "backscroll clear --damaged -y"
PYTHON = (sys.executable, "-m", "backscroll")


def line(i: int) -> str:
    app = APPS[i % 4]
    body = f"word{i:05d} " + " ".join(f"filler{j}" for j in range(40))
    return json.dumps({"ts": T + i, "app": app, "title": f"{app} window", "text": body})


def sealed_store(home: Path, frames: int = 200) -> Path:
    """Frames of four apps in several sealed segments; returns the second sealed one."""
    store = MemoryStore(home, write=True)
    store.log.segment_bytes = 16 * 1024  # seal often: several sealed segments
    for start in range(0, frames, 25):
        import_frames(store, [line(i) for i in range(start, min(frames, start + 25))])
    return [s for s in store.log.segments() if s.sealed][1].path


def frames_by_app(home: Path) -> dict[int, str]:
    log = Log(home / "log")
    return {e.frame_id: e.app for _, e in log.read() if isinstance(e, FrameCaptured)}


def searched(capsys: pytest.CaptureFixture[str]) -> set[int]:
    code, out, err = run(capsys, "search", "filler7", "--limit", "500", "--json")
    assert code == 0, err
    return {m["id"] for m in json.loads(out)["matches"]}


def assert_stuck_and_every_other_writer_goes_on(
    capsys: pytest.CaptureFixture[str], home: Path, kept: dict[int, str], why: str
) -> None:
    """The deletion of Browser frames could not complete, for ``why``."""
    assert searched(capsys) == set(kept)  # hidden at once: no Browser frame answers
    for args in (["pause", "10m"], ["resume"], ["deny", "add", "Vault"], ["timeline"]):
        code, _, err = run(capsys, *args)
        assert code == 0, (args, err)
    code, out, _ = run(capsys, "status")
    [said] = [x for x in out.splitlines() if x.startswith("  deletion:")]
    assert "frames are hidden" in said and FINISH in said and why in said, said
    code, out, _ = run(capsys, "verify")
    assert code == 1 and sum(FINISH in x and why in x for x in out.splitlines()) == 1, out
    assert "Browser" in frames_by_app(home).values()  # not purged: the bytes are still there


def newer_format(segment: Path) -> None:
    data = bytearray(segment.read_bytes())
    data[8] = 2  # the format version; the header's checksum still holds
    crc = crc32c(bytes(data[: HEADER.size - 4]))
    data[HEADER.size - 4 : HEADER.size] = crc.to_bytes(4, "little")
    segment.write_bytes(bytes(data))


def test_a_segment_of_a_newer_format_stops_the_purge_not_the_store(
    backscroll_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    newer_format(sealed_store(backscroll_home))
    kept = {i: a for i, a in frames_by_app(backscroll_home).items() if a != "Browser"}

    code, _, err = run(capsys, "clear", "--app", "Browser", "-y")
    [said] = [x for x in err.splitlines() if x.startswith("backscroll:")]
    assert code == 1 and "frames are hidden" in said and "version 2" in said, err
    assert_stuck_and_every_other_writer_goes_on(capsys, backscroll_home, kept, "version 2")

    code, _, err = run(capsys, "clear", "--damaged", "-y")  # rewrites it, then finishes it
    assert code == 0, err
    assert run(capsys, "verify")[:2] == (0, "healthy\n")
    assert frames_by_app(backscroll_home) == kept  # its blocks read: no frame lost
    assert "deletion:" not in run(capsys, "status")[1]


class Failing(FileSystem):
    """Creating a compaction's staged segment fails with EIO while ``failing``: a disk's
    read or write error, which cannot be staged for real on the test's disk."""

    failing = True

    def create(self, path: Path, *, exclusive: bool = False, mode: int = FILE_MODE) -> WritableFile:
        if self.failing and path.name.endswith(NEW_SUFFIX):
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(path))
        return super().create(path, exclusive=exclusive, mode=mode)


def test_an_io_error_while_the_log_is_rewritten_stops_the_purge_not_the_store(
    backscroll_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sealed_store(backscroll_home)
    kept = {i: a for i, a in frames_by_app(backscroll_home).items() if a != "Browser"}
    with tests.faultfs.installed(Failing()) as fs:
        code, _, err = run(capsys, "clear", "--app", "Browser", "-y")
        [said] = [x for x in err.splitlines() if x.startswith("backscroll:")]
        assert code == 1 and "frames are hidden" in said and "Input/output error" in said, err
        assert_stuck_and_every_other_writer_goes_on(
            capsys, backscroll_home, kept, "Input/output error"
        )
        fs.failing = False  # the disk is replaced, or comes back
        code, _, err = run(capsys, "clear", "--damaged", "-y")
    assert code == 0, err
    assert run(capsys, "verify")[:2] == (0, "healthy\n")
    assert frames_by_app(backscroll_home) == kept


def unprivileged(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``backscroll *args`` without the capabilities that let root read any file: a mode
    binds it as it binds anyone else (tests run as root)."""
    drop = "-dac_override,-dac_read_search"
    return subprocess.run(
        ["setpriv", f"--bounding-set={drop}", f"--inh-caps={drop}", *PYTHON, *args],
        env=os.environ | {"BACKSCROLL_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_segment_the_purge_may_not_read_stops_the_purge_not_the_store(
    backscroll_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    segment = sealed_store(backscroll_home)
    kept = {i: a for i, a in frames_by_app(backscroll_home).items() if a != "Browser"}
    segment.chmod(0)
    if os.geteuid() == 0 and unprivileged(backscroll_home, "--help").returncode:
        pytest.skip("setpriv cannot drop root's capabilities here")

    done = unprivileged(backscroll_home, "clear", "--app", "Browser", "-y")
    said = [x for x in done.stderr.splitlines() if x.startswith("backscroll:")]
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert len(said) == 1 and "frames are hidden" in said[0], done.stderr
    assert "Permission denied" in said[0] and segment.name in said[0]
    for args in (["pause", "10m"], ["resume"], ["deny", "add", "Vault"]):
        done = unprivileged(backscroll_home, *args)
        assert done.returncode == 0, (args, done.stderr)
    done = unprivileged(backscroll_home, "status")
    assert done.stdout.count("  deletion:") == 1 and FINISH in done.stdout, done.stdout

    segment.chmod(0o600)  # what stopped it, fixed
    done = unprivileged(backscroll_home, "clear", "--damaged", "-y")
    assert done.returncode == 0, done.stderr
    assert unprivileged(backscroll_home, "verify").stdout == "healthy\n"
    assert frames_by_app(backscroll_home) == kept


def test_a_damaged_block_in_a_segment_a_deletion_reaches_goes_with_the_deletion(
    backscroll_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The segment's only block fails its checksum, so no readable frame of it is in scope:
    the compaction skipped the segment, and the deletion was complete with the block (and
    whatever Browser text it held) still in the log."""
    segment = sealed_store(backscroll_home)
    data = bytearray(segment.read_bytes())
    data[HEADER.size + 40] ^= 0xFF  # inside the first block's data: its checksum fails
    segment.write_bytes(bytes(data))
    block = bytes(data[HEADER.size :])

    code, out, err = run(capsys, "clear", "--app", "Browser", "-y")
    assert code == 0 and out.startswith("deleted "), err
    assert "Browser" not in frames_by_app(backscroll_home).values()
    log = backscroll_home / "log"
    assert not any(block in p.read_bytes() for p in log.rglob("*") if p.is_file())
    code, out, _ = run(capsys, "verify")  # the loss is named until the person discards it
    assert code == 1 and "removed by a deletion" in out and out.count("\n") == 2, out
    assert run(capsys, "clear", "--damaged", "-y")[0] == 0
    assert run(capsys, "verify")[:2] == (0, "healthy\n")


def test_a_clear_waiting_on_the_views_writer_is_told_when_its_purge_cannot_complete(
    backscroll_home: Path,
) -> None:
    """With the daemon holding the views, ``clear`` waits for its projector: a purge that
    failed there stopped that projector, and the clear waited forever."""
    newer_format(sealed_store(backscroll_home))
    with MemoryStore(backscroll_home, write=True) as store:
        views = store.projector()  # as the daemon's projector thread holds them
    asked: list[BaseException] = []

    def clear() -> None:
        with MemoryStore(backscroll_home, write=True) as store:
            try:
                delete(store, app="Browser", wait=lambda: None)
            except StoreError as exc:
                asked.append(exc)

    waiting = threading.Thread(target=clear, daemon=True)
    with views:
        waiting.start()
        while waiting.is_alive():
            views.catch_up()  # the daemon's loop; it must not raise
            waiting.join(0.1)
    [said] = asked
    assert "frames are hidden" in str(said) and "version 2" in str(said), said


def test_housekeeping_adds_no_deletion_while_one_is_stuck(backscroll_home: Path) -> None:
    """Retention's deletion stops on a segment of a newer format; the next hourly pass
    appended another, stuck the same way, and so on every hour."""
    newer_format(sealed_store(backscroll_home))  # frames from 2025-12: past any retention
    with MemoryStore(backscroll_home, write=True) as store, store.projector() as projector:
        for _ in range(3):
            housekeep(store, projector, store.config.replace(retention_days=30))
        deletions = projector.state.deletions
    assert [d.reason for d in deletions] == ["retention"]
    assert "version 2" in deletions[0].problem and deletions[0].completed_us is None


def test_a_reindex_the_views_writer_cannot_carry_out_stops_neither_it_nor_the_asker(
    backscroll_home: Path,
) -> None:
    """The same class: a reindex that failed in the daemon's projector stopped it at every
    pass (``run_requested`` raised), and the ``reindex`` waiting on it waited forever."""
    newer_format(sealed_store(backscroll_home))
    with MemoryStore(backscroll_home, write=True) as store:
        views = store.projector()  # as the daemon's projector thread holds them
    asked: list[BaseException] = []

    def ask() -> None:
        with MemoryStore(backscroll_home, write=True, catch_up=False) as store:
            try:
                reindex(store)
            except StoreError as exc:
                asked.append(exc)

    waiting = threading.Thread(target=ask, daemon=True)
    with views, MemoryStore(backscroll_home, write=True, catch_up=False) as daemon:
        waiting.start()
        while waiting.is_alive():
            views.catch_up()  # the daemon's loop, then its idle step; neither may raise
            run_requested(daemon, views)
            waiting.join(0.1)
        [request] = views.state.reindexes
    [said] = asked
    assert "could not complete" in str(said) and "version 2" in str(said), said
    assert "version 2" in request.problem and request.completed_us is None
