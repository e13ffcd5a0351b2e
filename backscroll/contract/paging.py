"""Cursors: where the next page of a search or a timeline starts, as an opaque string.

A cursor pins what the first page saw, so that frames recorded between two pages neither
shift nor repeat what the next page shows:

- a search's: the span as the first page resolved it ("2h" means the same two hours on every
  page), the last frame id the views had committed then (``upto_id``: the snapshot; a frame
  recorded later has a larger id, and no page of this search sees it) and how many moments
  the pages before showed (a rank position in that snapshot). Not the last score: a frame
  added to a month changes the BM25 statistics of every score in it, so a score boundary
  would move under frames recorded since, where ranks in the snapshot move only between
  frames scored within a hair of each other;
- a timeline's: the span, and the capture time and id of the last frame shown (frames come
  in ``(time, id)`` order, so the next page starts strictly past it whatever was recorded
  meanwhile), and which way it reads (forward from the span's start, or back from the newest
  when the span has none).

Each also holds a checksum of the request it pages (its query, time expressions and app), so
a cursor given with another request is refused rather than paging something else. The string
is URL-safe base64 of the MessagePack array, then its CRC-32: a damaged or hand-made cursor
is refused in one line, never a traceback. A cursor is not a secret or a capability: it
opens nothing its holder could not ask for without it.
"""

from __future__ import annotations

import base64
import binascii
import zlib
from datetime import UTC, datetime, timedelta
from typing import Annotated, TypeVar

import msgspec

from backscroll.contract.words import MAX_FRAME_ID
from base.errors import UsageError

Id = Annotated[int, msgspec.Meta(ge=-1, le=MAX_FRAME_ID)]
Micros = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]
MAX_SHOWN = 100_000
"""Moments a search's pages may have shown before: far past what one search reaches (it
groups at most 3,000 frames)."""


class Cursor(msgspec.Struct, array_like=True, frozen=True, tag_field="k"):
    asked: Annotated[int, msgspec.Meta(ge=0, le=2**32 - 1)]
    """CRC-32 of the request it pages (``asked``)."""
    start_us: Micros | None
    end_us: Micros | None

    def span(self) -> tuple[datetime | None, datetime | None]:
        """The span as the first page resolved it."""
        return _at(self.start_us), _at(self.end_us)


class SearchCursor(Cursor, frozen=True, tag="s"):
    upto_id: Id
    shown: Annotated[int, msgspec.Meta(ge=1, le=MAX_SHOWN)]


class TimelineCursor(Cursor, frozen=True, tag="t"):
    newest_first: bool
    ts_us: Micros
    id: Id


C = TypeVar("C", bound=Cursor)
_decoder = msgspec.msgpack.Decoder(SearchCursor | TimelineCursor)


def _at(us: int | None) -> datetime | None:
    """Exactly (a float of seconds could be a microsecond off)."""
    return None if us is None else datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=us)


def spanned(start: datetime | None, end: datetime | None) -> dict[str, int | None]:
    """A span as a cursor holds it: rounded, not truncated (``base.clock.to_us``), so that
    the next page's span is the first page's to the microsecond."""
    return {"start_us": _us(start), "end_us": _us(end)}


def _us(when: datetime | None) -> int | None:
    return None if when is None else round(when.timestamp() * 1_000_000)


def asked(*arguments: str | None) -> int:
    """The checksum of a request's arguments that a cursor belongs to."""
    return zlib.crc32(msgspec.msgpack.encode(list(arguments)))


def encode(cursor: Cursor) -> str:
    data = msgspec.msgpack.encode(cursor)
    data += zlib.crc32(data).to_bytes(4, "little")
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def decode(kind: type[C], text: str, checksum: int, what: str) -> C:
    """The cursor ``text`` as a ``kind`` given for the request whose ``asked`` is
    ``checksum``, or a one-line ``UsageError``; ``what``: the use case, for the message."""
    refused = f"cursor: not one a {what} gave"
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise UsageError(f"{refused} (not base64)") from None
    body, check = data[:-4], data[-4:]
    if len(data) < 5 or zlib.crc32(body).to_bytes(4, "little") != check:
        raise UsageError(f"{refused} (damaged: it fails its checksum)")
    try:
        cursor = _decoder.decode(body)
    except msgspec.DecodeError as exc:
        raise UsageError(f"{refused} ({exc})") from None
    if not isinstance(cursor, kind):
        raise UsageError(f"{refused} (it pages a {_WHAT[type(cursor)]})")
    if isinstance(cursor, TimelineCursor) and cursor.newest_first != (cursor.start_us is None):
        raise UsageError(f"{refused} (its direction and span disagree)")
    if cursor.asked != checksum:
        raise UsageError(
            f"cursor: it pages another {what} (its query, time or app differ): ask again without it"
        )
    return cursor


_WHAT = {SearchCursor: "search", TimelineCursor: "timeline"}
