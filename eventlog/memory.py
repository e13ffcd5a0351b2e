"""An in-memory twin of ``eventlog.log.Log`` that keeps the same contract, for fast tests.

The conformance suite in ``tests/test_eventlog_conformance.py`` runs against both. Records go
through the same ``Batch`` (so the same checks and framing) and the same record scanner, but
there are no segments: nothing is torn, damaged, kept aside or lost.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from eventlog.batch import Batch
from eventlog.codec import decode_or_report
from eventlog.compaction import Compacted, Transform, expired, rewrite
from eventlog.events import Event
from eventlog.reader import Cursor
from eventlog.segment import Problem, Record, scan_records

if TYPE_CHECKING:
    from eventlog.contract import EventLog

STOP_CHECK_S = 0.05
"""How often a waiting reader looks at its ``stop`` event (the disk watcher's step, too)."""


class InMemoryLog:
    def __init__(self) -> None:
        self._records: list[Record] = []
        self._next = 0
        self._lock = threading.RLock()
        self._appended = threading.Condition(self._lock)

    # -- reading ----------------------------------------------------------------------------

    def records(
        self,
        start: int = 0,
        types: Collection[int] | None = None,
        problems: list[Problem] | None = None,
    ) -> Iterator[Record]:
        """Nothing here can be damaged, so ``problems`` stays as it is."""
        with self._lock:
            snapshot = list(self._records)
        for record in snapshot:
            if record.offset >= start and (types is None or record.type in types):
                yield record

    def read(
        self,
        start: int = 0,
        types: Collection[int] | None = None,
        problems: list[Problem] | None = None,
    ) -> Iterator[tuple[int, Event]]:
        for record in self.records(start, types, problems):
            event = decode_or_report(record, problems)
            if event is not None:
                yield record.offset, event

    def next_offset(self) -> int:
        return self._next

    def mark(self) -> tuple[str, int] | None:
        return ("memory", self._next) if self._next else None

    def reader(self, start: int = 0) -> MemoryReader:
        return MemoryReader(self, start)

    def wait_past(self, offset: int, timeout: float, stop: threading.Event | None = None) -> None:
        """Block until a record above ``offset`` has been appended, ``timeout`` passes or
        ``stop`` is set."""
        deadline = time.monotonic() + timeout
        with self._appended:
            while self._next <= offset + 1 and not (stop is not None and stop.is_set()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._appended.wait(min(left, STOP_CHECK_S))

    # -- appending --------------------------------------------------------------------------

    def append(self, event: Event) -> int:
        with self.batch() as batch:
            return batch.append(event)

    @contextlib.contextmanager
    def batch(self) -> Iterator[Batch]:
        with self._lock:
            batch = Batch(self._next)
            yield batch
            if not batch.parts:
                return
            scan = scan_records(b"".join(batch.parts), 0, "memory", self._next - 1)
            self._records.extend(record for _, record in scan.records)
            self._next = batch.next_offset
            self._appended.notify_all()

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        with self._lock:
            yield

    # -- rewriting --------------------------------------------------------------------------

    def compact(self, transform: Transform, *, repair: bool = False) -> Compacted:
        """With nothing damaged here, ``repair`` only leaves out what does not decode."""
        with self._lock:
            run = rewrite(self._records, transform, repair)
            self._records = run.kept
            return Compacted(run.dropped, run.rewritten, run.undecodable)

    def retain(self, cutoff_us: int) -> Compacted:
        return self.compact(expired(cutoff_us))

    # -- checking ---------------------------------------------------------------------------

    def verify(self) -> list[Problem]:
        problems: list[Problem] = []
        previous = -1
        for record in self._records:
            if record.offset <= previous:
                problems.append(Problem("memory", 0, record.offset, "offset out of order"))
            previous = max(previous, record.offset)
            decode_or_report(record, problems)
        return problems

    def lost_tail(self) -> tuple[int, int] | None:
        return None  # no segment can vanish from memory

    def kept_aside(self) -> list[Path]:
        return []  # nothing unreadable to keep

    def remove_aside(self, wanted: Callable[[Event], bool]) -> list[str]:
        return []


class MemoryReader(Cursor[InMemoryLog]):
    """Follows the twin: polls as the disk reader does, and waits for an append (there is no
    folder to watch, so a change to a file in ``also`` does not wake it)."""

    def wait(
        self, timeout: float, stop: threading.Event | None = None, also: Sequence[Path] = ()
    ) -> None:
        self.log.wait_past(self.after, timeout, stop)


if TYPE_CHECKING:
    _conforms: EventLog = InMemoryLog()  # mypy holds the twin to the contract here
