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

No ``from __future__ import annotations`` here: msgspec resolves the annotations of every
event type when it first decodes one, and a string annotation costs a ``compile`` of it
(~0.1 M instructions each: 0.2x Python's own start for a reader whose views trail the log).
"""

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

# -- kept memories (what a person or an agent decides to keep) --------------------------------

MAX_MEMORY_TEXT = 4_000
"""One or a few sentences: 4,000 characters is a long paragraph, and a memory longer than that
is a document, which belongs in a file the memory cites as its source."""
MAX_CLAIM = 200
MAX_SOURCE = 4_096
MAX_SPACES = 20
"""The most spaces one read's precedence list may name."""
MemoryKind = Literal["preference", "fact", "decision", "episode", "intention"]
MemoryId = Annotated[str, msgspec.Meta(pattern=r"^m_[0-9a-f]{16}$")]
"""``m_`` and 16 random hex digits: not the event's offset, which an archive moved to another
store would change."""
SpaceName = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9._-]{0,63}$")]
"""Lowercase, like a repository's folder name: one per project, ``default`` unless named."""
MemoryText = Annotated[str, msgspec.Meta(max_length=MAX_MEMORY_TEXT)]
ClaimPart = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_CLAIM)]
Predicate = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9_]{0,63}$")]
"""snake_case, as 003 writes them (``preferred_language``)."""
RequestKey = Annotated[str, msgspec.Meta(pattern=r"^[\x21-\x7e]{1,128}$")]
"""Printable ASCII without spaces: what a caller generates (a UUID, a hash)."""
Version = Annotated[int, msgspec.Meta(ge=1, le=MAX_OFFSET)]


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


class MemoryKept(Event, frozen=True, tag="kept"):
    """A memory kept: its first version. ``text`` is empty when ``encrypted``: then
    ``ciphertext`` seals the text and the claim's value together (``backscroll.keep``)."""

    memory_id: MemoryId
    space: SpaceName = "default"
    kind: MemoryKind = "fact"
    text: MemoryText = ""
    value: Annotated[str, msgspec.Meta(max_length=MAX_CLAIM)] = ""
    ciphertext: bytes = b""
    encrypted: bool = False
    blind_tokens: tuple[bytes, ...] = ()
    """The blind tokens of the text's words (encrypted text only), as frames have."""
    subject: ClaimPart | None = None
    predicate: Predicate | None = None
    context: Annotated[str, msgspec.Meta(max_length=MAX_CLAIM)] = ""
    source: Annotated[str, msgspec.Meta(max_length=MAX_SOURCE)] = ""
    valid_from_us: Micros | None = None
    valid_until_us: Micros | None = None
    due_us: Micros | None = None
    proposed: bool = False
    """Written into a space that requires review: served by no read until approved."""
    request_key: RequestKey | None = None
    request_hash: bytes = b""
    """A keyed digest of the write, so a retry with its key is told from another write."""
    origin: Origin = "cli"


class MemoryRevised(Event, frozen=True, tag="revised"):
    """A new version of a memory: its whole content as it now stands (a restore too)."""

    memory_id: MemoryId
    version: Version
    text: MemoryText = ""
    value: Annotated[str, msgspec.Meta(max_length=MAX_CLAIM)] = ""
    ciphertext: bytes = b""
    encrypted: bool = False
    blind_tokens: tuple[bytes, ...] = ()
    source: Annotated[str, msgspec.Meta(max_length=MAX_SOURCE)] = ""
    valid_from_us: Micros | None = None
    valid_until_us: Micros | None = None
    due_us: Micros | None = None
    restored_from: Version | None = None
    request_key: RequestKey | None = None
    request_hash: bytes = b""
    origin: Origin = "cli"


class MemoryForgotten(Event, frozen=True, tag="forgotten"):
    """A tombstone: the memory's text is compacted out of the log, and it is never served
    or brought back (by a retry of its keys, or an import of its kept event)."""

    memory_id: MemoryId
    version: Version
    space: SpaceName = "default"
    request_keys: tuple[RequestKey, ...] = ()
    """The keys of its writes, retired: a retry with one is refused, never written again."""
    do_not_keep: bool = False
    """Its claim may not be kept again in its space."""
    subject: ClaimPart | None = None
    predicate: Predicate | None = None
    context: Annotated[str, msgspec.Meta(max_length=MAX_CLAIM)] = ""
    reason: Literal["user", "idle", "source_deleted"] = "user"
    origin: Origin = "cli"


class MemoryReviewed(Event, frozen=True, tag="reviewed"):
    """The person approved a proposed memory: from now on it is served."""

    memory_id: MemoryId
    version: Version
    origin: Origin = "cli"


class SpaceConfigured(Event, frozen=True, tag="space"):
    """A space's rules: whether writes there wait for review, and idle expiry."""

    space: SpaceName
    require_review: bool = False
    idle_days: Annotated[int, msgspec.Meta(ge=1, le=36_500)] | None = None
    """Forgotten after this many days without a write; None keeps until forgotten."""
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
    | MemoryKept
    | MemoryRevised
    | MemoryForgotten
    | MemoryReviewed
    | SpaceConfigured
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
    MemoryKept,
    MemoryRevised,
    MemoryForgotten,
    MemoryReviewed,
    SpaceConfigured,
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
    MemoryKept: 14,
    MemoryRevised: 15,
    MemoryForgotten: 16,
    MemoryReviewed: 17,
    SpaceConfigured: 18,
}
FRAME_TYPE = TYPE_CODES[FrameCaptured]
MEMORY_TYPES = frozenset(
    TYPE_CODES[cls]
    for cls in (MemoryKept, MemoryRevised, MemoryForgotten, MemoryReviewed, SpaceConfigured)
)


def is_control(event: Event) -> bool:
    """Control events never expire: retention and the storage cap only remove frames."""
    return not isinstance(event, FrameCaptured)
