"""Every event Backscroll records: frozen, tagged msgspec Structs in one union.

Rules that keep old logs readable forever:
- a wire tag (``tag``) and a record type code (``TYPE_CODES``) are never reused;
- a new field gets a default, so older records still decode;
- a breaking change bumps the struct's ``v`` default and registers an upcaster in
  ``eventlog.codec`` that turns the old map into the new one on read.

Times are UTC microseconds since the epoch (``*_us``). A frame's id is its log offset.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

TextSource = Literal["ax", "ocr", "none"]
CaptureReason = Literal["start", "app_change", "title_change", "interval", "import"]
Origin = Literal["cli", "tool", "file", "daemon", "api"]
DeleteReason = Literal["user", "retention", "storage_cap"]


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="k", gc=False):
    """Base of every event: ``ts_us`` is when the event was recorded. Events are immutable
    values that never reference one another, so they cannot be part of a reference cycle:
    the garbage collector does not track them (a rebuild decodes a million)."""

    ts_us: int
    v: int = 1


class FrameCaptured(Event, frozen=True, tag="frame"):
    frame_id: int
    captured_us: int
    app: str
    title: str
    pid: int | None = None
    text: str = ""
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
    thumb_bytes: int = 0
    """The thumbnail file's size, so ``status`` need not walk a folder per day."""
    reason: CaptureReason = "start"
    redactions: dict[str, int] = {}
    signature: bytes = b""
    """A small grayscale picture of the screen, for duplicate suppression."""
    monitor: tuple[int, int, int, int, int] | None = None
    """(index, left, top, width, height) of the monitor the frame was taken from."""


class ConfigChanged(Event, frozen=True, tag="config"):
    config: dict[str, Any]
    origin: Origin = "cli"


class CapturePaused(Event, frozen=True, tag="pause"):
    until_us: int | None = None
    origin: Origin = "cli"
    reason: str = ""
    """Why capture paused when it was not the user (e.g. "disk full", "keyring locked")."""


class CaptureResumed(Event, frozen=True, tag="resume"):
    origin: Origin = "cli"


class FramesDeleted(Event, frozen=True, tag="delete"):
    """A tombstone: frames matching the scope are gone from now on, through every rebuild.

    An empty scope means every frame up to ``upto_id`` (the last frame id when requested).
    """

    upto_id: int
    ids: tuple[int, ...] = ()
    since_us: int | None = None
    until_us: int | None = None
    app: str | None = None
    reason: DeleteReason = "user"
    origin: Origin = "cli"


class ReindexRequested(Event, frozen=True, tag="reindex"):
    views_only: bool = False
    origin: Origin = "cli"


class PurgeCompleted(Event, frozen=True, tag="purged"):
    """Appended by the executor when a deletion's compaction and view purge are complete."""

    request_id: int
    frames: int = 0
    thumbnails: int = 0


class FramesRewritten(Event, frozen=True, tag="rewritten"):
    """Appended when a reindex has rewritten the stored frames under the current config."""

    request_id: int
    frames: int = 0
    redacted: int = 0
    encrypted: int = 0
    decrypted: int = 0
    thumbnails_encrypted: int = 0
    thumbnails_decrypted: int = 0


class DaemonStarted(Event, frozen=True, tag="dstart"):
    pid: int
    version: str = ""


class DaemonStopped(Event, frozen=True, tag="dstop"):
    pid: int
    reason: str = "stopped"


class KeyCreated(Event, frozen=True, tag="key"):
    store: str
    fingerprint: str


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
}
FRAME_TYPE = TYPE_CODES[FrameCaptured]


def is_control(event: Event) -> bool:
    """Control events never expire: retention and the storage cap only remove frames."""
    return not isinstance(event, FrameCaptured)
