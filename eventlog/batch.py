"""A batch of appends: events checked and framed, written by whoever holds the log."""

from __future__ import annotations

import msgspec

from base.errors import UsageError
from eventlog import codec
from eventlog.events import Event, FrameCaptured
from eventlog.segment import record_header


class Batch:
    """Appends collected under the lock and made durable together by one fsync."""

    def __init__(self, next_offset: int) -> None:
        self.next_offset = next_offset
        self.parts: list[bytes] = []

    def append(self, event: Event) -> int:
        """Raises ``UsageError`` (nothing appended) for an event that does not decode under
        the current types: one the views could not project is never written."""
        offset = self.next_offset
        if isinstance(event, FrameCaptured) and event.frame_id != offset:
            raise ValueError(f"frame id {event.frame_id} is not its offset {offset}")
        tag = event.__struct_config__.tag
        try:
            payload = codec.encode(event)
            codec.check(payload)
        except UnicodeEncodeError as exc:
            raise UsageError(f"{tag} event refused: a string holds {exc.reason}") from None
        except msgspec.ValidationError as exc:
            raise UsageError(f"{tag} event refused: {exc}") from None
        self.parts += (record_header(codec.type_code(event), offset, payload), payload)
        self.next_offset += 1
        return offset

    def skip_to(self, offset: int) -> None:
        """Give the next event ``offset``, past the offsets between: a log may have gaps
        (compaction leaves them) but never repeats one. An archive restored into a new store
        keeps each event at its offset, so every frame keeps its id."""
        if offset < self.next_offset:
            raise ValueError(f"offset {offset} is before the next one, {self.next_offset}")
        self.next_offset = offset
