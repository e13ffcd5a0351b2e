"""An in-memory twin of ``eventlog.log.Log`` with the same contract, for fast tests.

The conformance suite in ``tests/test_eventlog_conformance.py`` runs against both.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path

from eventlog import codec
from eventlog.events import FrameCaptured
from eventlog.log import Batch, Compacted, LogReader, Transform
from eventlog.segment import Header, Problem, Record, scan_records


class InMemoryLog:
    def __init__(self) -> None:
        self._records: list[Record] = []
        self._next = 0
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)

    def records(
        self,
        start: int = 0,
        types: Collection[int] | None = None,
        problems: list[Problem] | None = None,
    ) -> Iterator[Record]:
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
    ) -> Iterator[tuple[int, codec.Event]]:
        for record in self.records(start, types):
            yield record.offset, codec.decode(record.payload)

    def next_offset(self) -> int:
        return self._next

    def mark(self) -> tuple[str, int] | None:
        return ("memory", self._next) if self._records else None

    def reader(self, start: int = 0) -> MemoryReader:
        return MemoryReader(self, start)  # type: ignore[arg-type]

    def append(self, event: codec.Event) -> int:
        with self.batch() as batch:
            return batch.append(event)

    @contextlib.contextmanager
    def batch(self) -> Iterator[Batch]:
        with self._lock:
            batch = Batch(self._next)
            yield batch
            data = b"".join(batch.parts)
            scan = scan_records(data, 0, "memory", self._next - 1)
            self._records.extend(record for _, record in scan.records)
            self._next = batch.next_offset
            self._changed.notify_all()

    def locked(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def compact(
        self,
        transform: Transform,
        select: Callable[[object, Header | None], bool] | None = None,
        *,
        repair: bool = False,
    ) -> Compacted:
        """No damage lives in memory: ``repair`` has nothing to do."""
        with self._lock:
            kept: list[Record] = []
            dropped = []
            rewritten = 0
            for record in self._records:
                event = codec.decode(record.payload)
                result = transform(record.offset, event)
                if result is event:
                    kept.append(record)
                elif result is None:
                    dropped.append((record.offset, event))
                else:
                    rewritten += 1
                    kept.append(
                        Record(record.offset, codec.type_code(result), codec.encode(result))
                    )
            self._records = kept
            return Compacted(dropped, rewritten, 0)

    def retain(self, cutoff_us: int) -> Compacted:
        def expired(offset: int, event: codec.Event) -> codec.Event | None:
            old = isinstance(event, FrameCaptured) and event.captured_us < cutoff_us
            return None if old else event

        return self.compact(expired)

    def verify(self) -> list[Problem]:
        offsets = [r.offset for r in self._records]
        if offsets != sorted(set(offsets)):
            return [Problem("memory", 0, None, "offsets out of order")]
        return []

    def disk_bytes(self) -> int:
        return 0


class MemoryReader(LogReader):
    """``LogReader``'s polling over the twin; waiting is a condition, not a file watcher."""

    log: InMemoryLog  # type: ignore[assignment]

    def wait(
        self, timeout: float, stop: threading.Event | None = None, also: Sequence[Path] = ()
    ) -> None:
        with self.log._changed:
            if self.log.next_offset() <= self.after + 1:
                self.log._changed.wait(timeout)
