"""Every event Backscroll records: frozen, tagged msgspec Structs in one union.

Rules that keep old logs readable forever:
- a wire tag (``tag``) and a record type code (``TYPE_CODES``) are never reused;
- a new field gets a default, so older records still decode;
- a breaking change bumps the struct's ``v`` default and registers an upcaster in
  ``eventlog.codec`` that turns the old map into the new one on read.

Times are UTC microseconds since the epoch (``*_us``). A frame's id is its log offset.

Every field declares what the views can hold (``Micros``, ``Offset``, lengths, Literals), and
an append decodes what it is about to write under these types: an event that could not be
projected is never written.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

MAX_US = 253_402_300_799_999_999
"""The last microsecond of 9999-12-31 UTC: Python's dates (and a month partition) end there."""
MAX_OFFSET = 2**63 - 1
MAX_NAME = 1_024
MAX_TITLE = 4_096
MAX_URL = 4_096
"""A page address is cut to this before it is recorded (a ``data:`` URL can hold megabytes)."""
MAX_TEXT = 4_000_000

Micros = Annotated[int, msgspec.Meta(ge=0, le=MAX_US)]
Offset = Annotated[int, msgspec.Meta(ge=0, le=MAX_OFFSET)]
Count = Annotated[int, msgspec.Meta(ge=0, le=MAX_OFFSET)]

TextSource = Literal["ax", "ocr", "none"]
CaptureReason = Literal["start", "app_change", "title_change", "interval", "import"]
Origin = Literal["cli", "tool", "file", "daemon", "api"]
DeleteReason = Literal["user", "retention", "storage_cap"]


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="k", gc=False):
    """Base of every event: ``ts_us`` is when the event was recorded. Events are immutable
    values that never reference one another, so they cannot be part of a reference cycle:
    the garbage collector does not track them (a rebuild decodes a million)."""

    ts_us: Micros
    v: int = 1


class FrameCaptured(Event, frozen=True, tag="frame"):
    frame_id: Offset
    captured_us: Micros
    app: Annotated[str, msgspec.Meta(max_length=MAX_NAME)]
    title: Annotated[str, msgspec.Meta(max_length=MAX_TITLE)]
    pid: Count | None = None
    text: Annotated[str, msgspec.Meta(max_length=MAX_TEXT)] = ""
    """The (redacted) plaintext; empty when ``encrypted``."""
    ciphertext: bytes = b""
    """AES-GCM ciphertext of the zstd-compressed text when ``encrypted``."""
    text_source: TextSource = "none"
    encrypted: bool = False
    blind_tokens: tuple[bytes, ...] = ()
    """Sorted, de-duplicated, truncated HMACs of the text's words (encrypted text only)."""
    thumb: str | None = None
    """Path of the thumbnail relative to the home (``thumbs/YYYY-MM-DD/<id>.jpg[.enc]``)."""
    thumb_encrypted: bool = False
    thumb_bytes: Count = 0
    """The thumbnail file's size, so ``status`` need not walk a folder per day."""
    reason: CaptureReason = "start"
    redactions: dict[str, int] = {}
    signature: bytes = b""
    """A small grayscale picture of the screen, for duplicate suppression."""
    monitor: tuple[int, int, int, int, int] | None = None
    """(index, left, top, width, height) of the monitor the frame was taken from; index 0:
    the rectangle holding the several monitors a window spanned."""
    url: Annotated[str, msgspec.Meta(max_length=MAX_URL)] = ""
    """The address of the page a browser showed (redacted like the title); "" elsewhere."""


class ConfigChanged(Event, frozen=True, tag="config"):
    config: dict[str, Any]
    origin: Origin = "cli"
    weakened: tuple[str, ...] = ()
    """What this change does to privacy that a person should hear of (a hand edit that turns
    redaction or encryption off, or takes entries off the deny list), one line each."""


class CapturePaused(Event, frozen=True, tag="pause"):
    until_us: Micros | None = None
    origin: Origin = "cli"
    reason: str = ""
    """Why capture paused when it was not the user (e.g. "disk full", "keyring locked")."""


class CaptureResumed(Event, frozen=True, tag="resume"):
    origin: Origin = "cli"


class FramesDeleted(Event, frozen=True, tag="delete"):
    """A tombstone: frames matching the scope are gone from now on, through every rebuild.

    An empty scope means every frame up to ``upto_id`` (the last frame id when requested).
    """

    upto_id: Annotated[int, msgspec.Meta(ge=-1, le=MAX_OFFSET)]
    ids: tuple[Offset, ...] = ()
    since_us: Micros | None = None
    until_us: Micros | None = None
    app: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TITLE)] | None = None
    reason: DeleteReason = "user"
    origin: Origin = "cli"


class ReindexRequested(Event, frozen=True, tag="reindex"):
    views_only: bool = False
    origin: Origin = "cli"


class PurgeCompleted(Event, frozen=True, tag="purged"):
    """Appended by the executor when a deletion's compaction and view purge are complete."""

    request_id: Offset
    frames: Count = 0
    thumbnails: Count = 0
    aside: tuple[Annotated[str, msgspec.Meta(max_length=MAX_NAME)], ...] = ()
    """The copies of unreadable bytes kept aside (relative to the log folder) that it removed:
    they may have held its frames (``EventLog.remove_aside``)."""


class FramesRewritten(Event, frozen=True, tag="rewritten"):
    """Appended when a reindex has rewritten the stored frames under the current config."""

    request_id: Offset
    frames: Count = 0
    redacted: Count = 0
    encrypted: Count = 0
    decrypted: Count = 0
    thumbnails_encrypted: Count = 0
    thumbnails_decrypted: Count = 0


class DaemonStarted(Event, frozen=True, tag="dstart"):
    pid: Count
    version: str = ""


class DaemonStopped(Event, frozen=True, tag="dstop"):
    pid: Count
    reason: str = "stopped"


class KeyCreated(Event, frozen=True, tag="key"):
    store: str
    fingerprint: str


class DamageFound(Event, frozen=True, tag="damage"):
    """Bytes of the log that could not be read, found by a rewrite (compaction, sealing) and
    copied aside byte for byte before the rewritten segment left them out, or (``aside``
    empty) offsets whose segment vanished behind the log's back. Reported by ``verify``,
    ``status`` and ``log`` until a ``DamageDiscarded`` covers it."""

    segment: str
    first_offset: Offset
    """The lowest offset the bytes may have held."""
    last_offset: Annotated[int, msgspec.Meta(ge=-1, le=MAX_OFFSET)]
    """The highest (below ``first_offset`` when they held none)."""
    position: Count = 0
    length: Count = 0
    aside: str = ""
    """The copy, relative to the log folder; empty when the bytes are gone."""
    rewrite: str = ""


class DamageDiscarded(Event, frozen=True, tag="discard"):
    """The person removed the damage kept aside (and the events that do not decode) up to
    ``upto_id``: ``backscroll clear --damaged``."""

    upto_id: Offset
    files: Count = 0
    events: Count = 0
    origin: Origin = "cli"


AnyEvent = (
    FrameCaptured
    | ConfigChanged
    | CapturePaused
    | CaptureResumed
    | FramesDeleted
    | ReindexRequested
    | PurgeCompleted
    | FramesRewritten
    | DaemonStarted
    | DaemonStopped
    | KeyCreated
    | DamageFound
    | DamageDiscarded
)

EVENT_TYPES: tuple[type[Event], ...] = (
    FrameCaptured,
    ConfigChanged,
    CapturePaused,
    CaptureResumed,
    FramesDeleted,
    ReindexRequested,
    PurgeCompleted,
    FramesRewritten,
    DaemonStarted,
    DaemonStopped,
    KeyCreated,
    DamageFound,
    DamageDiscarded,
)

TYPE_CODES: dict[type[Event], int] = {
    FrameCaptured: 1,
    ConfigChanged: 2,
    CapturePaused: 3,
    CaptureResumed: 4,
    FramesDeleted: 5,
    ReindexRequested: 6,
    PurgeCompleted: 7,
    FramesRewritten: 8,
    DaemonStarted: 9,
    DaemonStopped: 10,
    KeyCreated: 11,
    DamageFound: 12,
    DamageDiscarded: 13,
}
FRAME_TYPE = TYPE_CODES[FrameCaptured]


def is_control(event: Event) -> bool:
    """Control events never expire: retention and the storage cap only remove frames."""
    return not isinstance(event, FrameCaptured)
