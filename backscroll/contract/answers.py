"""The answers: the JSON every surface gives, one Struct per use case. Every answer names
its use case in ``action``, so a union of answers decodes to the right Struct; a frame, a
match and the status have one shape wherever they appear. Times are ISO 8601 in local time
with its offset, to the second."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

import msgspec

from backscroll.heartbeat import Heartbeat
from base.config import Config

if TYPE_CHECKING:
    from query.moments import Moment
    from query.search import Hit

# eventlog's own, written again here: importing ``eventlog.events`` loads the whole log
# package (60 ms of the CLI's start-up). A test keeps them equal.
TextSource = Literal["ax", "ocr", "none"]
CaptureReason = Literal["start", "app_change", "title_change", "interval", "import"]
Origin = Literal["cli", "tool", "file", "daemon", "api"]

Time = Annotated[datetime, msgspec.Meta(tz=True, description="ISO 8601, local time")]


class Answer(msgspec.Struct, kw_only=True, tag_field="action"):
    """Every answer: its ``action`` names the use case."""


class Frame(msgspec.Struct, kw_only=True):
    """A frame as every answer shows it; ``snippet`` and ``score`` for a search hit."""

    id: int
    time: Time
    app: str
    title: str
    url: str
    """The address of the page a browser showed ("" for other windows)."""
    text_source: TextSource
    encrypted: bool
    """Its text is stored encrypted."""
    reason: CaptureReason
    thumbnail: bool
    """A thumbnail was stored with it."""
    thumbnail_encrypted: bool
    snippet: str = ""
    score: float = 0.0
    near_miss: bool = False
    """Found by the retry with any of the query's terms: no frame had them all."""
    fuzzy: bool = False
    """Found with a word one edit away in OCR'd text: no frame had every term exactly."""

    @staticmethod
    def fields(hit: Hit) -> dict[str, Any]:
        """A search hit's fields, for ``Frame`` or any Struct built on it."""
        return {
            "id": hit.id,
            "time": local(hit.when),
            "app": hit.app,
            "title": hit.title,
            "url": hit.url,
            "text_source": hit.text_source,
            "encrypted": hit.encrypted,
            "reason": hit.reason,
            "thumbnail": bool(hit.thumb),
            "thumbnail_encrypted": hit.thumb_encrypted,
            "snippet": hit.snippet,
            "score": round(hit.score, 4),
            "near_miss": hit.near_miss,
            "fuzzy": hit.fuzzy,
        }

    @classmethod
    def of(cls, hit: Hit) -> Frame:
        return cls(**cls.fields(hit))


class Match(Frame, kw_only=True):
    """A search match (a moment): its best frame, then every frame of it, oldest first."""

    frame_ids: list[int]
    seen: list[Time]
    first_seen: Time
    last_seen: Time
    matched_by: list[Literal["words", "meaning"]] = []
    """How it was found: by every word of the query, by meaning, or both; empty for a near
    miss or a match one letter off."""
    passage: str | None = None
    """The passage of its text that matched by meaning; None when it did not."""

    @classmethod
    def of_moment(cls, moment: Moment) -> Match:
        return cls(
            **Frame.fields(moment.hit),
            frame_ids=moment.frame_ids,
            seen=[local(f.when) for f in moment.frames],
            first_seen=local(moment.first_seen),
            last_seen=local(moment.last_seen),
            matched_by=list(moment.hit.matched_by),  # type: ignore[arg-type]
            passage=moment.hit.passage,
        )


class Scope(Answer, kw_only=True):
    """The window and app an answer covers (None: unbounded)."""

    start: Time | None
    end: Time | None
    app: str | None


class SearchAnswer(Scope, kw_only=True, tag="search"):
    query: str
    ids: list[int]
    """Each match's best frame id, best first."""
    matches: list[Match]
    why_empty: str | None
    """Why nothing (or only near misses) was found; None when something was."""
    incomplete: str | None = None
    """Why the answer may lack matches (a damaged view it could not read, and the command
    that rebuilds it); None when it is whole."""
    next_cursor: str | None = None
    """More matches rank below these: the ``cursor`` that asks for them (None: no more)."""
    meaning_behind: str | None = None
    """Why some frames could be found by their words alone (the meaning view is still
    embedding them); None when every frame was searched by meaning too."""


class TimelineAnswer(Scope, kw_only=True, tag="timeline"):
    ids: list[int]
    frames: list[Frame]
    groups: int
    """Runs of consecutive frames of one window, as the text groups them."""
    why_empty: str | None
    incomplete: str | None = None
    """Why the answer may lack frames; None when it is whole."""
    next_cursor: str | None = None
    """More frames lie past these (later from a start, else earlier): the ``cursor`` that
    asks for them (None: no more)."""


class ShowAnswer(Frame, Answer, kw_only=True, tag="show"):
    text: str | None
    """Its full text; None when it could not be read (``problem`` says why)."""
    problem: str | None


DaemonState = Literal["running", "not responding", "died", "not running"]


class DaemonStatus(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The daemon: its state, and its last heartbeat's fields (``Heartbeat``) when there is
    one (a test keeps the two lists of fields equal). Fields it does not know are left out."""

    pid: int | None = None
    started_us: int | None = None
    last_tick_us: int | None = None
    last_outcome: str | None = None
    last_capture_us: int | None = None
    problem: str | None = None
    trigger: str | None = None
    poll_seconds: float | None = None
    min_interval_seconds: float | None = None
    interval_seconds: float | None = None
    last_reason: str | None = None
    last_text_source: str | None = None
    text_sources: dict[str, int] | None = None
    reasons: dict[str, int] | None = None
    redactions: dict[str, int] | None = None
    hotkey_problem: str | None = None
    config_problem: str | None = None
    backend: str | None = None
    abilities: list[str] | None = None
    state: DaemonState
    tick_age_seconds: float | None = None
    """Seconds since its heartbeat; only for a daemon whose process is alive."""

    @classmethod
    def of(cls, state: DaemonState, beat: Heartbeat | None, age: float | None) -> DaemonStatus:
        fields = msgspec.structs.asdict(beat) if beat is not None else {}
        return cls(state=state, tick_age_seconds=age, **fields)


class Counts(msgspec.Struct, kw_only=True):
    """The spec's status fields that count the store: ``MemoryStore.stats()`` (``Stats``) and
    ``status`` (``Status``) both hold them."""

    frames: int
    apps: int
    thumb_bytes: int
    db_bytes: int
    """The spec's name for ``log_bytes`` + ``index_bytes``: there is no database."""
    total_bytes: int
    text_sources: dict[str, int]
    encrypted_text_frames: int
    thumbnails: int
    encrypted_thumbnails: int
    encrypt_text: bool
    encrypt_thumbnails: bool
    key_store: str | None
    """``keyring`` or ``file``; None before the first encrypted write."""
    encryption_available: bool


class Status(Counts, Answer, kw_only=True, tag="status"):
    """What ``status`` shows: the spec's counts (``Counts``), then the rest."""

    daemon: DaemonStatus
    capture: str
    """``active``, or ``paused until …`` with the pause's reason."""
    store: str
    oldest: str | None
    """Local time to the second, as printed; None without frames (so is ``newest``)."""
    newest: str | None
    log_bytes: int
    index_bytes: int
    """The views' bytes (the search index, the state, the frames' table)."""
    storage_cap_mb: int
    retention_days: int
    trigger: str
    poll_seconds: float
    min_interval_seconds: float
    interval_seconds: float
    redact: bool
    key_problem: str | None
    key_weak: bool
    deny_apps: list[str]
    pause_hotkey: str
    search: str
    views_lag: int
    views_behind_why: str
    views_damaged: str | None = None
    """The views found damaged, and the command that rebuilds them; None when none is."""
    config_problem: str | None
    config_weakened: str | None
    damage: list[str]
    skipped_events: list[str]
    backend: str | None
    """The running daemon's capture backend, else the one ``start`` would choose here
    (None: none; ``abilities`` says why)."""
    abilities: list[str]
    deletions_stuck: list[str] = []
    """A line for each deletion whose purge could not complete: its frames hidden, what
    stops it and the command that finishes it."""
    memories: int = 0
    """Kept memories served (``backscroll keep``): neither proposed nor past idle expiry."""
    memories_proposed: int = 0
    """Kept memories waiting for review (``backscroll keep review``)."""
    intentions_due: int = 0
    meaning_frames: int = 0
    """Frames the meaning view has embedded (of ``frames``)."""
    meaning: str = ""
    """Search by meaning as a line: its backlog ("41,200 of 120,000 frames embedded …"), or
    why it is off."""


class AuditEntry(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A control event of the audit trail: where it is in the log, its kind and time, and its
    own fields (scopes, never content), which differ by kind."""

    offset: int
    kind: str
    time: Time
    crashed: bool = False
    """A daemon start with no stop before the next start: killed or crashed."""
    detail: dict[str, Any]


class LogAnswer(Answer, kw_only=True, tag="log"):
    since: Time | None
    kinds: list[str] | None
    """The kinds asked for; None: every kind."""
    events: list[AuditEntry]
    """Newest first."""


class VerifyAnswer(Answer, kw_only=True, tag="verify"):
    healthy: bool
    problems: list[str]
    """One line each, with the command that mends it where there is one."""


class PauseAnswer(Answer, kw_only=True, tag="pause"):
    until: Time | None
    """None: until resumed."""


class ResumeAnswer(Answer, kw_only=True, tag="resume"):
    pass


class DenyAnswer(Answer, kw_only=True, tag="deny"):
    deny_apps: list[str]
    added: str | None = None
    removed: str | None = None


class ConfigAnswer(Answer, kw_only=True, tag="config"):
    changed: list[str]
    config: Config
    reindex_needed: bool = False
    """A privacy setting changed: new frames follow it, ``reindex`` converts stored ones."""


class DeleteAnswer(Scope, kw_only=True, tag="delete"):
    ids: list[int] = []
    """The frames it was limited to (none: every frame in the scope)."""
    deleted: int
    cited_by: list[str] = []
    """Kept memories whose source is a deleted frame, kept (their source now points at a
    deleted frame): forget them, or delete with ``forget_citing``."""
    memories_forgotten: list[str] = []
    """Kept memories citing a deleted frame, forgotten with it (``forget_citing``)."""


class ExportAnswer(Scope, kw_only=True, tag="export"):
    path: str
    format: Literal["json", "csv", "html"]
    frames: int
    thumbnails: int
    approved: Literal[True] = True
    incomplete: str | None = None
    """Why the export may lack frames (a damaged view it could not read, and the command
    that rebuilds it); None when it is whole."""


class Refusal(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Why a call was refused, on one line (not an ``Answer``: it has no ``action`` tag)."""

    error: str
    action: str | None = None
    approved: bool | None = None


READ_ANSWERS: tuple[type[Answer], ...] = (
    SearchAnswer,
    ShowAnswer,
    TimelineAnswer,
    Status,
    LogAnswer,
    VerifyAnswer,
)
MANAGE_ANSWERS: tuple[type[Answer], ...] = (
    PauseAnswer,
    ResumeAnswer,
    DenyAnswer,
    ConfigAnswer,
    DeleteAnswer,
    ExportAnswer,
)


# -- the export file --------------------------------------------------------------------------


class ExportedFrame(Frame, kw_only=True):
    """A frame of ``frames.json``: with its text, and its thumbnail's file when written."""

    text: str
    thumbnail_file: str | None
    """Relative to the export folder (``thumbs/<id>.jpg``)."""


class ExportFile(msgspec.Struct, kw_only=True):
    """``frames.json``: what was exported and the frames."""

    exported_at: Time
    store: str
    start: Time | None
    end: Time | None
    app: str | None
    query: str | None
    frames: list[ExportedFrame]


def local(when: datetime) -> datetime:
    """``when`` in local time, to the second, as every answer gives a time."""
    return when.astimezone().replace(microsecond=0)


def encode(answer: msgspec.Struct) -> str:
    """An answer as JSON text, indented (NaN and infinities as null, as strict JSON needs)."""
    return msgspec.json.format(msgspec.json.encode(answer), indent=2).decode()


def to_json(answer: msgspec.Struct) -> dict[str, Any]:
    """An answer as JSON-ready builtins (for MCP's ``structuredContent``)."""
    data: dict[str, Any] = msgspec.to_builtins(answer)
    return data
