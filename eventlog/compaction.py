"""Compaction's part that knows no files: passing records through a transform, retention's
transform, and what a compaction reports. Both logs use it; the disk log also picks the
segments and swaps the rewritten ones in (``Log.compact``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

import msgspec

from eventlog import codec
from eventlog.events import Event, FrameCaptured
from eventlog.segment import Record

Transform = Callable[[int, Event], Event | None]
"""Compaction: return the event unchanged, a replacement (same offset), or None to drop it."""


class Compacted(msgspec.Struct, frozen=True):
    """What a compaction did, counted in events (the same in every backend, whatever
    segments or files held them)."""

    dropped: list[tuple[int, Event]]
    """``(offset, event)`` of every event the transform dropped, in offset order."""
    rewritten: int
    """Events the transform replaced with another version at the same offset."""
    undecodable: int = 0
    """Records that did not decode, removed by a ``repair``."""


class Rewrite(NamedTuple):
    """One run of records through a transform."""

    kept: list[Record]
    dropped: list[tuple[int, Event]]
    rewritten: int
    undecodable: int
    """Records that did not decode and were left out (only with ``repair``)."""

    @property
    def changed(self) -> bool:
        return bool(self.dropped or self.rewritten or self.undecodable)


def rewrite(records: Iterable[Record], transform: Transform, repair: bool) -> Rewrite:
    """Pass ``records`` through ``transform``. One that does not decode passes through as it
    is (verify names it; the person decides), or with ``repair`` is left out."""
    kept: list[Record] = []
    dropped: list[tuple[int, Event]] = []
    rewritten = undecodable = 0
    for record in records:
        event = codec.decode_or_report(record, None)
        if event is None:
            if repair:
                undecodable += 1
            else:
                kept.append(record)
            continue
        result = transform(record.offset, event)
        if result is event:
            kept.append(record)
        elif result is None:
            dropped.append((record.offset, event))
        else:
            rewritten += 1
            kept.append(Record(record.offset, codec.type_code(result), codec.encode(result)))
    return Rewrite(kept, dropped, rewritten, undecodable)


def expired(cutoff_us: int) -> Transform:
    """Retention's transform: drop frames captured before ``cutoff_us``; control events
    never expire."""

    def transform(offset: int, event: Event) -> Event | None:
        old = isinstance(event, FrameCaptured) and event.captured_us < cutoff_us
        return None if old else event

    return transform
