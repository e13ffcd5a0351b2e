"""Child processes for the crash and concurrency tests: they append to a log and report.

    python tests/_appender.py serve
    python tests/_appender.py LOG MODE SEGMENT_BYTES SEED COUNT

``serve`` is for the SIGKILL test: it imports the log once, then for each line
``LOG MODE SEGMENT_BYTES SEED`` on stdin forks an appender that runs until killed, prints
``started PID``, and once that appender has died, ``ended STATUS``. (A fork takes a
millisecond; starting Python and importing the log takes a tenth of a second, which fifty
runs would spend waiting.) The appender prints each offset on its own line, flushed, only
after the append that returned it: the parent may rely on every printed offset being durable.

With COUNT, the process appends COUNT frames tagged with its pid and exits; it prints
``ready`` first and waits for a line on stdin, so that two of them can start together.

MODE is ``single`` (one append, so one fsync, per event; in ``serve`` every 40th step also a
compaction of the recent segments that rewrites their control events in place, so no offset
goes away) or ``batch`` (batches of 1-20 events sharing one fsync).
"""

from __future__ import annotations

import os
import random
import sys
import traceback
from pathlib import Path

import msgspec

from eventlog import Log
from eventlog.batch import Batch
from eventlog.events import ConfigChanged, Event, FrameCaptured
from eventlog.folder import Segment
from eventlog.segment import Header

T0 = 1_700_000_000_000_000


def event(batch: Batch, rng: random.Random, i: int, controls: bool) -> Event:
    if controls and rng.random() < 0.1:
        return ConfigChanged(ts_us=T0 + i, config={"i": i, "pid": os.getpid()})
    return FrameCaptured(
        ts_us=T0 + i,
        frame_id=batch.next_offset,
        captured_us=T0 + i,
        app="term",
        title="child",
        pid=os.getpid(),
        text=f"{i} " + "x" * rng.randint(50, 500),
    )


def rewrite_controls(offset: int, event: Event) -> Event | None:
    # An equal copy is a change to compaction (it compares identity): the record is rewritten.
    return msgspec.structs.replace(event) if isinstance(event, ConfigChanged) else event


def append(log: Log, mode: str, rng: random.Random, count: int | None) -> None:
    i = 0
    while count is None or i < count:
        if mode == "single" and count is None and i % 40 == 39:
            recent = {segment.base for segment in log.segments()[-3:]}

            def select(segment: Segment, header: Header | None, recent: set[int] = recent) -> bool:
                return segment.base in recent

            log.compact(rewrite_controls, select)
        size = rng.randint(1, 20) if mode == "batch" else 1
        if count is not None:
            size = min(size, count - i)
        with log.batch() as batch:
            offsets = []
            for _ in range(size):
                offsets.append(batch.append(event(batch, rng, i, controls=count is None)))
                i += 1
        say("".join(f"{offset}\n" for offset in offsets))


def say(lines: str) -> None:
    """Write whole lines in one call: a pipe write that small is atomic, while ``print`` may
    write the text and its newline apart, letting the other process's line in between (or a
    kill cut the line)."""
    os.write(sys.stdout.fileno(), lines.encode())


def serve() -> None:
    for line in sys.stdin:
        path, mode, segment_bytes, seed = line.split()
        pid = os.fork()
        if pid == 0:
            try:
                log = Log(Path(path), segment_bytes=int(segment_bytes))
                append(log, mode, random.Random(int(seed)), None)
            except BaseException:
                traceback.print_exc()
                sys.stderr.flush()
            os._exit(1)  # never back into the parent's loop
        say(f"started {pid}\n")
        _, status = os.waitpid(pid, 0)
        say(f"ended {status}\n")


def main() -> None:
    if sys.argv[1:] == ["serve"]:
        serve()
        return
    path, mode, segment_bytes, seed, count = sys.argv[1:6]
    log = Log(Path(path), segment_bytes=int(segment_bytes))
    print("ready", flush=True)
    if sys.stdin.readline():  # else the parent went away before saying go
        append(log, mode, random.Random(int(seed)), int(count))


if __name__ == "__main__":
    main()
