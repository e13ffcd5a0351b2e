"""The kept memories' requests and answers: what ``backscroll keep``, the MCP tools
``kept_memory`` and ``kept_memory_write`` and the library calls in ``backscroll.keep`` take
and give. The limits are the log's own (``eventlog.events``): a value that fits a request
fits its event."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from backscroll.contract import keep_words as w
from backscroll.contract.answers import Time
from backscroll.contract.requests import Request, Text
from eventlog.events import (
    MAX_CLAIM,
    MAX_MEMORY_TEXT,
    MAX_SOURCE,
    MAX_SPACES,
    MemoryKind,
)

MemoryId = Annotated[str, Meta(pattern=r"^m_[0-9a-f]{16}$", description=w.MEMORY_ID)]
Space = Annotated[str, Meta(pattern=r"^[a-z0-9][a-z0-9._-]{0,63}$", description=w.SPACE)]
Spaces = Annotated[
    list[Annotated[str, Meta(pattern=r"^[a-z0-9][a-z0-9._-]{0,63}$")]],
    Meta(max_length=MAX_SPACES, description=w.SPACES),
]
MemoryText = Annotated[str, Meta(min_length=1, max_length=MAX_MEMORY_TEXT, pattern=r"\S")]
Subject = Annotated[str, Meta(min_length=1, max_length=MAX_CLAIM, pattern=r"\S")]
Predicate = Annotated[str, Meta(pattern=r"^[a-z][a-z0-9_]{0,63}$", description=w.PREDICATE)]
ClaimText = Annotated[str, Meta(max_length=MAX_CLAIM)]
RequestKey = Annotated[str, Meta(pattern=r"^[\x21-\x7e]{1,128}$", description=w.REQUEST_KEY)]
Limit = Annotated[int, Meta(ge=1, le=w.MAX_KEPT_PAGE, description=w.KEPT_LIMIT)]
Cursor = Annotated[str, Meta(pattern=r"^[0-9]{1,9}$", description=w.CURSOR)]
Expected = Annotated[int, Meta(ge=1, le=2**63 - 1, description=w.EXPECTED_VERSION)]
When = Annotated[Text, Meta(max_length=100, description=w.DUE)]
Valid = Annotated[Text, Meta(max_length=100)]

# -- the writes -------------------------------------------------------------------------------


class KeepRequest(Request):
    text: Annotated[MemoryText, Meta(description=w.TEXT)]
    kind: Annotated[MemoryKind, Meta(description=w.KIND)] = "fact"
    space: Space = "default"
    subject: Annotated[Subject, Meta(description=w.SUBJECT)] | None = None
    predicate: Predicate | None = None
    context: Annotated[ClaimText, Meta(description=w.CONTEXT)] = ""
    value: Annotated[ClaimText, Meta(description=w.VALUE)] = ""
    due: When | None = None
    source: Annotated[str, Meta(max_length=MAX_SOURCE, description=w.SOURCE)] = ""
    valid_from: Annotated[Valid, Meta(description=w.VALID_FROM)] | None = None
    valid_until: Annotated[Valid, Meta(description=w.VALID_UNTIL)] | None = None
    request_key: RequestKey | None = None


class ReviseRequest(Request):
    id: MemoryId
    expected_version: Expected
    text: Annotated[MemoryText, Meta(description=w.TEXT)] | None = None
    value: Annotated[ClaimText, Meta(description=w.VALUE)] | None = None
    due: When | None = None
    source: Annotated[str, Meta(max_length=MAX_SOURCE, description=w.SOURCE)] | None = None
    restore: Annotated[int, Meta(ge=1, le=2**63 - 1, description=w.RESTORE)] | None = None
    valid_from: Annotated[Valid, Meta(description=w.VALID_FROM)] | None = None
    valid_until: Annotated[Valid, Meta(description=w.VALID_UNTIL)] | None = None
    request_key: RequestKey | None = None


class ForgetRequest(Request):
    id: MemoryId
    expected_version: Expected | None = None
    do_not_keep: Annotated[bool, Meta(description=w.DO_NOT_KEEP)] = False
    request_key: RequestKey | None = None


class SpaceRequest(Request):
    name: Space
    require_review: Annotated[bool, Meta(description=w.REQUIRE_REVIEW)] | None = None
    idle_days: Annotated[int, Meta(ge=1, le=36_500, description=w.IDLE_DAYS)] | None = None
    keep_forever: bool = False
    """Idle expiry off (the default rule): kept until forgotten."""


class ApproveRequest(Request):
    id: MemoryId


# -- the reads --------------------------------------------------------------------------------


class ResolveRequest(Request):
    subject: Annotated[Subject, Meta(description=w.SUBJECT)]
    predicate: Predicate
    context: Annotated[ClaimText, Meta(description=w.CONTEXT)] = ""
    spaces: Spaces = msgspec.field(default_factory=lambda: ["default"])


class KeptSearchRequest(Request):
    query: Annotated[Text, Meta(max_length=1_000, description=w.KEPT_QUERY)]
    spaces: Spaces = msgspec.field(default_factory=list)
    min_score: Annotated[float, Meta(ge=0, le=1, description=w.MIN_SCORE)] = 0.5
    limit: Limit = 8


class DueRequest(Request):
    spaces: Spaces = msgspec.field(default_factory=list)
    limit: Limit = 20
    cursor: Cursor | None = None


class GetRequest(Request):
    id: MemoryId


class ListRequest(Request):
    space: Space | None = None
    limit: Limit = 20
    cursor: Cursor | None = None


class HistoryRequest(Request):
    id: MemoryId


class KeptStatusRequest(Request):
    pass


class ReviewRequest(Request):
    space: Space | None = None
    limit: Limit = 20
    cursor: Cursor | None = None


# -- the answers ------------------------------------------------------------------------------

Status = Literal["current", "proposed"]


class Memory(msgspec.Struct, kw_only=True):
    """A kept memory as every answer shows it. ``line`` is the one an agent reads: the text
    with its dates and source ("kept 2026-11-02, revised 2026-11-20, valid until …")."""

    id: str
    version: int
    text: str
    kind: MemoryKind
    space: str
    status: Status
    subject: str | None
    predicate: str | None
    context: str
    value: str
    source: str
    created: Time
    updated: Time
    valid_from: Time | None
    valid_until: Time | None
    due_at: Time | None
    kept_until: Time | None
    """When idle expiry forgets it unless written to before; null: kept until forgotten."""
    line: str


class Similar(msgspec.Struct, kw_only=True):
    id: str
    version: int
    score: float
    line: str


class KeepAnswer(msgspec.Struct, kw_only=True):
    """A write's answer: the memory as it stands after it. ``replayed``: a retry with the
    same key and the same write, answered as the first time, with nothing written."""

    memory: Memory
    replayed: bool = False
    similar: list[Similar] = []
    """Memories in its space sharing most of its words: revise one instead of keeping both."""


class ForgetAnswer(msgspec.Struct, kw_only=True):
    id: str
    version: int
    forgotten: Time
    replayed: bool = False
    do_not_keep: bool = False


class SpaceAnswer(msgspec.Struct, kw_only=True):
    name: str
    require_review: bool
    idle_days: int | None


class ResolveAnswer(msgspec.Struct, kw_only=True):
    found: bool
    memory: Memory | None = None


class Hit(Memory, kw_only=True):
    score: float
    matched_by: Literal["words"]


class KeptSearchAnswer(msgspec.Struct, kw_only=True):
    memories: list[Hit]
    near_misses: list[Hit]
    """When nothing passes min_score: the closest below it, possibly unrelated."""


class MemoriesAnswer(msgspec.Struct, kw_only=True):
    memories: list[Memory]
    next_cursor: str | None = None


class MemoryVersion(msgspec.Struct, kw_only=True):
    version: int
    text: str
    value: str
    source: str
    time: Time
    due_at: Time | None
    restored_from: int | None


class HistoryAnswer(msgspec.Struct, kw_only=True):
    id: str
    versions: list[MemoryVersion]
    """Oldest first."""


class SpaceStatus(msgspec.Struct, kw_only=True):
    name: str
    memories: int
    proposed: int
    require_review: bool
    idle_days: int | None


class KeptStatus(msgspec.Struct, kw_only=True):
    """Counts, spaces and limits, and the rules: what ``status`` says of kept memories."""

    memories: int
    proposed: int
    intentions_due: int
    spaces: list[SpaceStatus]
    max_text: int
    max_page: int
    rules: str


class KeepRefusal(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A refused write or read: ``error`` is its code, ``message`` one line for a person."""

    error: Literal[
        "secret_detected",
        "version_conflict",
        "claim_exists",
        "key_reused",
        "key_retired",
        "not_found",
        "do_not_keep",
        "invalid",
    ]
    message: str
    kind: list[str] = []
    """secret_detected: the kinds of secret found (never the value)."""
    current_version: int | None = None
    memory_id: str | None = None


__all__ = [
    "ApproveRequest",
    "DueRequest",
    "ForgetAnswer",
    "ForgetRequest",
    "GetRequest",
    "HistoryAnswer",
    "HistoryRequest",
    "Hit",
    "KeepAnswer",
    "KeepRefusal",
    "KeepRequest",
    "KeptSearchAnswer",
    "KeptSearchRequest",
    "KeptStatus",
    "KeptStatusRequest",
    "ListRequest",
    "MemoriesAnswer",
    "Memory",
    "MemoryVersion",
    "ResolveAnswer",
    "ResolveRequest",
    "ReviewRequest",
    "ReviseRequest",
    "Similar",
    "SpaceAnswer",
    "SpaceRequest",
    "SpaceStatus",
    "Status",
]
