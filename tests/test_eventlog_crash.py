"""The log's promise under crashes: an append that returned is there after any crash, a
compaction leaves the old set or the new one, and the log verifies clean after the next writer.

- SIGKILL of a real appending process (``tests/_appender.py``) at random moments. SIGKILL
  keeps the page cache, so it cannot catch a missing fsync; hence also
- a simulated power cut (``tests/faultfs.py``) after every single file-system call of a
  scenario of appends, batches, rolls, retention and compaction, dropping whatever was not
  made durable (and, in a second pass, keeping a random part of it, as a real disk may);
- a crash at each step of compaction and retention, as a process crash and as a power cut;
- two processes appending at once.

Every random choice is seeded; the seed, run and call number are in each failure message.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import pytest

from eventlog import (
    CaptureResumed,
    ConfigChanged,
    DaemonStarted,
    Event,
    FrameCaptured,
    FramesDeleted,
    Log,
)
from eventlog.folder import MANIFEST_NAME, NEW_SUFFIX
from eventlog.format import parse_segment_name
from tests.faultfs import FaultFS, PowerCut
from tests.helpers import T0, besides_torn_tails, frame_event

REPO = Path(__file__).resolve().parent.parent
APPENDER = Path(__file__).with_name("_appender.py")
KILLS = 50
DAY_US = 86_400_000_000


def config(n: int, origin: str = "cli") -> ConfigChanged:
    return ConfigChanged(ts_us=T0 + n, config={"interval_s": n}, origin=origin)  # type: ignore[arg-type]


def leftovers(path: Path) -> list[str]:
    """What an unfinished compaction leaves behind."""
    return [
        p.name for p in path.iterdir() if p.name.endswith(NEW_SUFFIX) or p.name == MANIFEST_NAME
    ]


def segment_files(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in path.iterdir() if parse_segment_name(p.name)}


# -- SIGKILL -----------------------------------------------------------------------------------


def python(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(APPENDER), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        start_new_session=True,  # its own process group: close() kills every appender it forked
    )


class Appenders:
    """A helper process that forks a fresh appender for each run (see ``_appender.py``)."""

    def __init__(self) -> None:
        self.helper = python("serve")

    def run_and_kill(
        self, path: Path, mode: str, segment_bytes: int, seed: int, delay: float
    ) -> list[int]:
        """Start an appender, SIGKILL it after ``delay`` seconds; the offsets it printed."""
        assert self.helper.stdin is not None and self.helper.stdout is not None
        self.helper.stdin.write(f"{path} {mode} {segment_bytes} {seed}\n")
        self.helper.stdin.flush()
        printed: list[int] = []
        while (pid := self._offsets_until("started ", printed)) is None:
            pass
        time.sleep(delay)
        with contextlib.suppress(ProcessLookupError):  # if it died by itself, see below
            os.kill(pid, signal.SIGKILL)
        while (status := self._offsets_until("ended ", printed)) is None:
            pass
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (
            f"the appender died by itself: {self.close()}"
        )
        return printed

    def _offsets_until(self, word: str, printed: list[int]) -> int | None:
        """Read a line: an offset goes to ``printed``; ``word N`` from the helper gives N."""
        line = self._line()  # whole lines: both processes write each in one call
        if line.startswith(word):
            return int(line.removeprefix(word))
        printed.append(int(line))
        return None

    def _line(self) -> str:
        assert self.helper.stdout is not None
        line = self.helper.stdout.readline()
        if not line.endswith("\n"):  # the appender prints whole lines, the helper is gone
            raise AssertionError(f"the appender helper failed: {line!r} {self.close()}")
        return line.rstrip("\n")

    def close(self) -> str:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.helper.pid, signal.SIGKILL)
        return self.helper.communicate()[1]


def ready(child: subprocess.Popen[str]) -> None:
    """Wait until the child has started (imported everything and opened the log)."""
    assert child.stdout is not None
    line = child.stdout.readline()
    if line != "ready\n":
        child.kill()
        raise AssertionError(f"the appender did not start: {line!r} {child.communicate()[1]}")


def go(child: subprocess.Popen[str]) -> None:
    assert child.stdin is not None
    child.stdin.write("go\n")
    child.stdin.flush()


@pytest.mark.parametrize("mode", ["single", "batch"])
@pytest.mark.slow
def test_every_append_that_returned_survives_sigkill(tmp_path: Path, mode: str) -> None:
    segment_bytes = 16 * 1024  # rolls (seal and swap) every few dozen appends
    rng = random.Random(f"sigkill {mode}")
    promised: set[int] = set()
    appended = 0
    appenders = Appenders()
    try:
        for run in range(KILLS):
            path = tmp_path / f"log{run // 10}"  # a fresh log every ten runs keeps checks short
            if run % 10 == 0:
                appended += len(promised)
                promised = set()
            delay = rng.uniform(0.02, 0.2)
            where = f"mode={mode} run={run} delay={delay:.3f}s"

            promised.update(appenders.run_and_kill(path, mode, segment_bytes, run, delay))

            log = Log(path)
            before = list(log.read())
            offsets = [offset for offset, _ in before]
            missing = sorted(promised - set(offsets))
            assert not missing, f"{where}: appends that returned are gone: {missing[:10]}"
            assert all(e.frame_id == o for o, e in before if isinstance(e, FrameCaptured)), where

            marker = config(run, origin="tool")
            offset = log.append(marker)  # the next writer repairs whatever the kill left

            assert offset == (offsets[-1] + 1 if offsets else 0), where
            promised.add(offset)
            assert besides_torn_tails(log.verify()) == [], where
            assert leftovers(path) == [], where
            assert list(log.read()) == [*before, (offset, marker)], where
    finally:
        appenders.close()
    assert appended + len(promised) > 5 * KILLS  # the kills really landed among appends


# -- two processes -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["single", "batch"])
@pytest.mark.slow
def test_two_processes_appending_at_once_interleave_without_loss(tmp_path: Path, mode: str) -> None:
    path, count = tmp_path / "log", 300
    children = [python(str(path), mode, "4096", str(seed), str(count)) for seed in range(2)]
    for child in children:
        ready(child)
    for child in children:
        go(child)  # both start together
    printed: dict[int, list[int]] = {}
    for child in children:
        out, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
        printed[child.pid] = [int(line) for line in out.split()]

    log = Log(path)
    records = list(log.read())
    offsets = [offset for offset, _ in records]
    assert len(records) == 2 * count
    assert offsets == sorted(set(offsets))
    assert sorted(offsets) == sorted(printed[children[0].pid] + printed[children[1].pid])
    by_pid: dict[int, list[tuple[int, int]]] = {}
    for offset, event in records:
        assert isinstance(event, FrameCaptured) and event.frame_id == offset
        assert event.pid is not None
        by_pid.setdefault(event.pid, []).append((offset, int(event.text.split()[0])))
    for pid, seen in by_pid.items():
        assert [offset for offset, _ in seen] == printed[pid]
        assert [i for _, i in seen] == list(range(count))  # each child's own order kept
    pids = [event.pid for _, event in records if isinstance(event, FrameCaptured)]
    switches = sum(a != b for a, b in itertools.pairwise(pids))
    assert switches >= 2, "the children did not append at the same time"
    assert len(log.segments()) > 2  # they rolled segments under each other too
    assert log.verify() == []


# -- power cut at every file-system call ------------------------------------------------------


OLD, NEW = T0, T0 + 30 * DAY_US
CUTOFF = T0 + DAY_US


@dataclass
class Progress:
    """What the scenario has been told so far: only returned appends are promised."""

    returned: dict[int, Event] = field(default_factory=dict)
    retention: str = "not started"
    rewrite: str = "not started"
    rewritten_offset: int = -1


def rewritten(event: Event) -> Event:
    return msgspec.structs.replace(event, origin="daemon")


def scenario(log: Log, progress: Progress) -> None:
    """Single appends, batches, rolls, retention, a rewrite: every write path of the log."""

    def one(make: Callable[[int], Event]) -> int:
        with log.batch() as batch:
            event = make(batch.next_offset)
            offset = batch.append(event)
        progress.returned[offset] = event
        return offset

    for i in range(6):
        one(lambda offset, i=i: frame_event(offset, OLD + i))  # type: ignore[misc]
    progress.rewritten_offset = one(lambda offset: config(1))
    with log.batch() as batch:
        started = DaemonStarted(ts_us=NEW, pid=7)
        events: list[tuple[int, Event]] = [(batch.append(started), started)]
        for j in range(8):  # half of them old: imported late, retention still drops them
            event = frame_event(batch.next_offset, (OLD if j % 2 else NEW) + j)
            events.append((batch.append(event), event))
    progress.returned.update(events)
    for i in range(10):
        one(lambda offset, i=i: frame_event(offset, NEW + i))  # type: ignore[misc]
    one(lambda offset: FramesDeleted(ts_us=NEW, upto_id=offset - 1, ids=(3,)))

    progress.retention = "started"
    log.retain(CUTOFF)
    progress.retention = "done"
    progress.rewrite = "started"
    target = progress.rewritten_offset
    log.compact(lambda offset, event: rewritten(event) if offset == target else event)
    progress.rewrite = "done"

    for i in range(4):
        one(lambda offset, i=i: frame_event(offset, NEW + 100 + i))  # type: ignore[misc]
    with log.batch() as batch:
        resumed = CaptureResumed(ts_us=NEW)
        events = [(batch.append(resumed), resumed)]
        for j in range(5):
            event = frame_event(batch.next_offset, NEW + 200 + j)
            events.append((batch.append(event), event))
    progress.returned.update(events)


def expired(event: Event) -> bool:
    return isinstance(event, FrameCaptured) and event.captured_us < CUTOFF


def check_after_power_cut(path: Path, progress: Progress, where: str) -> None:
    reader = Log(path)
    before = dict(reader.read())  # a reader, before any writer has repaired anything
    for offset, event in progress.returned.items():
        if not expired(event) and offset != progress.rewritten_offset:
            assert before.get(offset) == event, f"{where}: returned append {offset} is gone"
    next_offset = reader.next_offset()

    marker = config(99)
    # The next writer repairs; a tear holding a whole record costs one offset (it may have
    # been an acknowledged record damaged since, and offsets never repeat).
    marker_offset = reader.append(marker)
    assert marker_offset in (next_offset, next_offset + 1), where
    after = dict(reader.read())
    assert besides_torn_tails(reader.verify()) == [], where
    assert leftovers(path) == [], where

    old = {o for o, e in progress.returned.items() if expired(e)}
    if progress.retention == "done":
        assert not old & set(after), where
    elif progress.retention == "started":
        assert old & set(after) in (set(), old), f"{where}: retention half done"
    else:
        assert old <= set(after), where
    original = progress.returned.get(progress.rewritten_offset)
    if original is not None:
        allowed = {
            "not started": [original],
            "started": [original, rewritten(original)],
            "done": [rewritten(original)],
        }[progress.rewrite]
        assert after[progress.rewritten_offset] in allowed, where
    for offset, event in progress.returned.items():
        if not expired(event) and offset != progress.rewritten_offset:
            assert after[offset] == event, f"{where}: returned append {offset} is gone"
    assert after[marker_offset] == marker


def test_the_fault_fs_keeps_only_what_was_made_durable(tmp_path: Path) -> None:
    (tmp_path / "old").write_bytes(b"there before")  # counts as durable
    (tmp_path / "gone").write_bytes(b"removed, not synced")
    fs = FaultFS()

    def write(name: str, data: bytes, sync: bool) -> None:
        f = fs.create(tmp_path / name)
        f.write(data)
        if sync:
            f.fsync()
        f.close()

    write("synced", b"durable", sync=True)
    write("unsynced", b"lost", sync=False)
    fs.fsync_dir(tmp_path)
    f = fs.append(tmp_path / "synced")
    f.write(b" + not synced")
    f.close()
    write("created later", b"entry not synced", sync=True)
    fs.rename(tmp_path / "old", tmp_path / "renamed")
    fs.remove(tmp_path / "gone")

    fs.power_cut()

    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == {
        "old": b"there before",
        "gone": b"removed, not synced",
        "synced": b"durable",
        "unsynced": b"",
    }
    with pytest.raises(PowerCut):
        fs.create(tmp_path / "after")


def test_the_power_cut_scenario_covers_every_write_path(tmp_path: Path) -> None:
    fs = FaultFS()
    progress = Progress()
    scenario(Log(tmp_path / "log", fs=fs, segment_bytes=1024), progress)
    ops = {entry.split()[0] for entry in fs.trace}
    assert ops == {"create", "append", "write", "fsync", "rename", "remove", "fsync_dir"}
    assert sum(entry.startswith("create 0") and ".zst" in entry for entry in fs.trace) > 3
    assert progress.retention == progress.rewrite == "done"
    fs.power_cut()  # after the last fsync nothing is lost
    check_after_power_cut(tmp_path / "log", progress, "no cut")


@pytest.mark.parametrize("torn", [False, True], ids=["unsynced-dropped", "unsynced-partly-kept"])
@pytest.mark.slow
def test_every_append_that_returned_survives_a_power_cut_at_any_call(
    tmp_path: Path, torn: bool
) -> None:
    counting = FaultFS()
    scenario(Log(tmp_path / "count", fs=counting, segment_bytes=1024), Progress())
    for n in range(1, counting.calls + 1):
        path = tmp_path / f"cut{n}"
        fs = FaultFS(crash_at=n)
        progress = Progress()
        with pytest.raises(PowerCut):
            scenario(Log(path, fs=fs, segment_bytes=1024), progress)
        rng = random.Random(n) if torn else None
        fs.power_cut(rng)
        check_after_power_cut(path, progress, f"power cut at call {n} ({fs.trace[-1]})")
        shutil.rmtree(path)


# -- a crash at each step of compaction -------------------------------------------------------


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six days of frames and control events: sealed segments and an active one."""
    path = tmp_path_factory.mktemp("history") / "log"
    log = Log(path, segment_bytes=1024)
    for day in range(6):
        log.append(DaemonStarted(ts_us=T0 + day * DAY_US, pid=day))
        for minute in range(5):
            with log.batch() as batch:
                batch.append(
                    frame_event(batch.next_offset, T0 + day * DAY_US + minute * 60_000_000)
                )
        log.append(config(day))
    log.append(FramesDeleted(ts_us=T0 + 6 * DAY_US, upto_id=3))
    assert len(log.segments()) > 5 and not log.segments()[-1].sealed
    return path


def redact(offset: int, event: Event) -> Event | None:
    if not isinstance(event, FrameCaptured):
        return event
    if offset % 3 == 0:
        return None
    return msgspec.structs.replace(event, text="[redacted]") if offset % 4 == 0 else event


COMPACTIONS: dict[str, Callable[[Log], object]] = {
    "retain": lambda log: log.retain(T0 + 3 * DAY_US),
    "retain-everything": lambda log: log.retain(T0 + 10 * DAY_US),
    "drop-and-rewrite": lambda log: log.compact(redact),
    "drop-everything": lambda log: log.compact(lambda offset, event: None),
}


@pytest.mark.parametrize("crash", ["process", "power", "power-torn"])
@pytest.mark.parametrize("name", list(COMPACTIONS))
@pytest.mark.slow
def test_a_crash_at_each_step_of_compaction_leaves_the_old_set_or_the_new(
    history: Path, tmp_path: Path, name: str, crash: str
) -> None:
    compaction = COMPACTIONS[name]
    old_files, old_read = segment_files(history), list(Log(history).read())
    reference = tmp_path / "reference"
    shutil.copytree(history, reference)
    counting = FaultFS()
    compaction(Log(reference, fs=counting))
    new_files, new_read = segment_files(reference), list(Log(reference).read())
    assert new_read != old_read and counting.calls > 10

    for n in range(1, counting.calls + 1):
        path = tmp_path / f"crash{n}"
        shutil.copytree(history, path)
        fs = FaultFS(crash_at=n)
        with pytest.raises(PowerCut):
            compaction(Log(path, fs=fs))
        where = f"{name}: {crash} at call {n} of {counting.calls} ({fs.trace[-1]})"
        if crash != "process":
            fs.power_cut(random.Random(n) if crash == "power-torn" else None)

        log = Log(path)
        list(log.read())  # a reader before the repair: may see either, must not fail
        with log.locked():  # the next lock holder finishes or undoes the swap
            pass

        assert leftovers(path) == [], where
        files, read = segment_files(path), list(log.read())
        assert (files, read) in [(old_files, old_read), (new_files, new_read)], where
        assert log.verify() == [], where
        shutil.rmtree(path)


@pytest.mark.parametrize("torn", [False, True], ids=["unsynced-dropped", "unsynced-partly-kept"])
def test_torn_bytes_survive_a_power_cut_while_they_are_repaired(tmp_path: Path, torn: bool) -> None:
    template = tmp_path / "template"
    log = Log(template)
    for i in range(3):
        log.append(config(i))
    garbage = b"\x07" * 40  # the start of a record whose append was cut off
    active = log.segments()[-1].path
    with open(active, "ab") as f:
        f.write(garbage)

    shutil.copytree(template, tmp_path / "count")
    counting = FaultFS()
    Log(tmp_path / "count", fs=counting).append(config(3))
    assert any(p.name.endswith(".torn") for p in (tmp_path / "count").iterdir())
    for n in range(1, counting.calls + 1):
        path = tmp_path / f"cut{n}"
        shutil.copytree(template, path)
        fs = FaultFS(crash_at=n)
        with pytest.raises(PowerCut):
            Log(path, fs=fs).append(config(3))
        fs.power_cut(random.Random(n) if torn else None)
        where = f"power cut at call {n} ({fs.trace[-1]})"

        kept = [p.read_bytes() for p in path.glob("*.torn")]
        in_place = (path / active.name).read_bytes().endswith(garbage)
        assert in_place or garbage in kept, f"{where}: the torn bytes are gone"
        log = Log(path)
        # Cut after the append's fsync (at the note of the next offset), offset 3 was made.
        assert log.append(config(3)) == 3 + ("NEXT" in where), where
        assert besides_torn_tails(log.verify()) == [], where
        shutil.rmtree(path)
