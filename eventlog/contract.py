"""The log's contract: what the projector and the store ask of a log, and nothing more.

``eventlog.log.Log`` (on disk) and ``eventlog.memory.InMemoryLog`` (the twin for fast tests)
both keep it; ``tests/test_eventlog_conformance.py`` runs the same tests against each. What
only the disk log has (segments, damage kept aside, picking segments to compact, its size on
disk) is not part of it.

The promises, which the conformance suite pins:

- offsets are handed out consecutively from 0, never renumbered and never reused, even
  when compaction drops every event; a frame's id is its offset;
- a batch is appended whole or not at all; ``Batch.next_offset`` is known before each event
  is built;
- while one holder is inside ``locked()`` (or a batch), no other appends;
- ``records`` and ``read`` give offsets in increasing order, from ``start``, of the types
  asked for;
- compaction keeps every offset it does not drop, and reports in events (``Compacted``);
- ``mark()`` unchanged means nothing was appended.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from eventlog.batch import Batch
from eventlog.compaction import Compacted, Transform
from eventlog.events import Event
from eventlog.segment import Problem, Record


class Follower(Protocol):
    """Reads a log's new records as they are appended."""

    def poll(self, limit: int | None = None) -> list[Record]:
        """The records appended since the last poll (at most ``limit``)."""
        ...

    def wait(
        self, timeout: float, stop: threading.Event | None = None, also: Sequence[Path] = ()
    ) -> None:
        """Block until something may have been appended, ``timeout`` passes or ``stop`` is
        set; a change to a file in ``also`` may wake it too. Waking early is allowed: the
        caller polls to find out."""
        ...


class EventLog(Protocol):
    # -- reading ----------------------------------------------------------------------------

    def records(
        self,
        start: int = 0,
        types: Collection[int] | None = None,
        problems: list[Problem] | None = None,
    ) -> Iterator[Record]:
        """Every record with an offset >= ``start`` (of ``types``, if given), in order; what
        is damaged on the way is named in ``problems``."""
        ...

    def read(
        self,
        start: int = 0,
        types: Collection[int] | None = None,
        problems: list[Problem] | None = None,
    ) -> Iterator[tuple[int, Event]]:
        """``records`` decoded; one that does not decode is skipped and named in
        ``problems``."""
        ...

    def next_offset(self) -> int:
        """The offset the next append will get."""
        ...

    def mark(self) -> tuple[str, int] | None:
        """A token for how far the log reaches: unchanged means nothing was appended."""
        ...

    def reader(self, start: int = 0) -> Follower: ...

    # -- appending --------------------------------------------------------------------------

    def append(self, event: Event) -> int:
        """Append one event durably; returns its offset."""
        ...

    def batch(self) -> AbstractContextManager[Batch]:
        """Hold the append lock; what the batch collected is appended on exit, all together.
        An exception inside discards all of it."""
        ...

    def locked(self) -> AbstractContextManager[None]:
        """Hold the append lock (re-entrant: appends and batches inside it go ahead)."""
        ...

    # -- rewriting --------------------------------------------------------------------------

    def compact(self, transform: Transform, *, repair: bool = False) -> Compacted:
        """Rewrite the log through ``transform``, keeping every offset it does not drop.
        With ``repair``, what does not decode (or read) is left out instead of kept."""
        ...

    def retain(self, cutoff_us: int) -> Compacted:
        """Drop frames captured before ``cutoff_us``; control events never expire."""
        ...

    # -- checking ---------------------------------------------------------------------------

    def verify(self) -> list[Problem]:
        """Everything wrong with the log; empty when it is whole."""
        ...

    def lost_tail(self) -> tuple[int, int] | None:
        """Offsets handed out that the log no longer holds (first, last), if any."""
        ...

    def kept_aside(self) -> list[Path]:
        """Copies of unreadable bytes kept for the person to discard."""
        ...

    def remove_aside(self, wanted: Callable[[Event], bool]) -> list[str]:
        """Remove the copies kept aside that may hold an event ``wanted`` picks (a deletion's
        frames), named relative to the log: a copy that does not decode may hold any."""
        ...
