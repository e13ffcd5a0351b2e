"""The answer contract: one request and one answer Struct per use case, for every surface.

The CLI, the MCP server, the agent tools, export and any later API take their arguments as
these requests and give these answers; ``backscroll/answer.py`` turns one into the other with
one call per use case. A request declares each argument's limits and its description once
(``msgspec.Meta``): the CLI's help, the MCP ``inputSchema`` and the checks come from here,
and ``parse`` refuses what does not fit with one line naming the argument. An answer is the
JSON every surface prints: ``search --json``, the MCP ``structuredContent``, ``frames.json``.

    request = parse(SearchRequest, {"query": "invoice", "limit": 5})
    answer = backscroll.answer.search(store, request).answer
    msgspec.json.encode(answer)  # {"action": "search", "query": "invoice", ...}

Every answer names its use case in ``action``, so a union of answers decodes to the right
Struct. Times are ISO 8601 in local time with its offset, to the second.

This module is imported at the CLI's start-up: msgspec and the bottom layers only.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, TypeVar

import msgspec
from msgspec import Meta

from backscroll.heartbeat import Heartbeat
from base.config import Config
from base.errors import UsageError

if TYPE_CHECKING:
    from query.moments import Moment
    from query.search import Hit

MAX_LIMIT = 1000
"""Search results (moments) at most."""
MAX_TIMELINE_LIMIT = 10_000
MAX_FRAME_ID = 2**63 - 1
"""A frame id is its log offset, a signed 64-bit integer on disk (eventlog's ``Offset``)."""
MAX_EXPORT = 100_000_000
"""Exported frames at most: far beyond a store's frames (a year of capture is ~1M)."""

# The descriptions every surface shows: the CLI's help and the MCP schemas read these.
SINCE = "Start of the window. Time phrase: 2h, yesterday, tuesday, last week, 2026-09-01, …"
UNTIL = "End of the window (same forms as since)."
BEFORE = "Everything before this (same forms as since)."
APP = "Only frames whose app name, window title or page address contains this."
QUERY = (
    'Words (all must match, else one letter off in OCR\'d text, else near misses), "phrases", '
    "prefix*."
)
SEARCH_LIMIT = f"Most matches (moments), 1 to {MAX_LIMIT}."
TIMELINE_LIMIT = f"Most frames, 1 to {MAX_TIMELINE_LIMIT}."
FRAME_ID = "Frame id (from search or timeline)."
DURATION = "Pause length: 30m, 2h, … (omit: until resumed)."
DENY = "A deny-list pattern: apps, titles or addresses that contain it are never recorded."
FOLDER = "A new or empty folder (default ~/Downloads/backscroll-memory-<time>)."
MATCHING = "Only the frames matching this search."
EXPORT_LIMIT = "At most this many frames."
FORMAT = "json (frames.json), csv (frames.csv) or html (a browsable index.html)."
THUMBNAILS = "Include decrypted JPEG thumbnails."
INCLUDE_IMAGE = "Attach the decrypted thumbnail."
CONFIRM = "Required (true) to delete: a deletion is never implied."
TRIGGER = "Capture trigger: events (on an app or window change) or interval."
INTERVAL = "Capture interval, and the idle fallback of events, in seconds."
POLL = "Probe period, seconds (at least 0.2)."
MIN_INTERVAL = "Minimum gap between captures, seconds."
STORAGE_CAP = "Storage cap, MB."
RETENTION = "Retention, days."
REDACT = "Scrub secrets from new frames."
ENCRYPT_TEXT = "Encrypt new frames' text."
ENCRYPT_THUMBNAILS = "Encrypt new thumbnails."
HOTKEY = "Pause hotkey, e.g. '<ctrl>+<alt>+m' ('' = off)."
BACKEND = "Capture backend: auto, x11, wlroots or gnome."
ANNOUNCE = "Tell apps to publish their text (AT-SPI IsEnabled)."

_NOT_BLANK = r"\S"
# What a range refusal calls each bounded argument.
_BOUNDED = {"limit": "a number of results", "id": "a frame id"}

# eventlog's own, written again here: importing ``eventlog.events`` loads the whole log
# package (60 ms of the CLI's start-up). A test keeps them equal.
TextSource = Literal["ax", "ocr", "none"]
CaptureReason = Literal["start", "app_change", "title_change", "interval", "import"]
Origin = Literal["cli", "tool", "file", "daemon", "api"]

Time = Annotated[datetime, msgspec.Meta(tz=True, description="ISO 8601, local time")]


Text = Annotated[str, msgspec.Meta(pattern=_NOT_BLANK)]
"""A string with something in it: a blank scope is a mistake, never "all"."""
Query = Annotated[Text, msgspec.Meta(description=QUERY)]
Since = Annotated[Text | None, msgspec.Meta(description=SINCE)]
Until = Annotated[Text | None, msgspec.Meta(description=UNTIL)]
Before = Annotated[Text | None, msgspec.Meta(description=BEFORE)]
AppText = Annotated[Text | None, msgspec.Meta(description=APP)]
Duration = Annotated[Text | None, msgspec.Meta(description=DURATION)]
Pattern = Annotated[Text | None, msgspec.Meta(description=DENY)]
Folder = Annotated[Text | None, msgspec.Meta(description=FOLDER)]
Matching = Annotated[Text | None, msgspec.Meta(description=MATCHING)]


class Request(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A use case's arguments. Beyond each field's own limits, every string is valid Unicode
    (a lone surrogate cannot be written as UTF-8, nor quoted in a JSON reply) and every
    number finite. ``parse`` checks both; a request built directly is not checked (a tool
    takes its parameters as given and parses them before it acts)."""

    file_names: ClassVar[frozenset[str]] = frozenset()
    """Arguments that name a file: any name the system takes, which may be bytes that are not
    UTF-8 (a command line gives them as lone surrogates, ``os.fsdecode``)."""

    def check(self) -> None:
        """Raise ``ValueError`` naming the first argument that does not fit."""
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if isinstance(value, str) and name not in self.file_names:
                _check_unicode(name, value)
            elif isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"{name}: must be a finite number, not {value}")


def _check_unicode(name: str, value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        where = f"U+{ord(value[exc.start]):04X} at position {exc.start}"
        raise ValueError(f"{name}: must be valid Unicode, not a lone surrogate ({where})") from None


# -- the reads --------------------------------------------------------------------------------


class SearchRequest(Request):
    query: Query
    since: Since = None
    until: Until = None
    app: AppText = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=MAX_LIMIT, description=SEARCH_LIMIT)] = 15


class TimelineRequest(Request):
    since: Since = None
    until: Until = None
    app: AppText = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=MAX_TIMELINE_LIMIT, description=TIMELINE_LIMIT)] = (
        50
    )


class ShowRequest(Request):
    id: Annotated[int, msgspec.Meta(ge=0, le=MAX_FRAME_ID, description=FRAME_ID)]
    include_image: Annotated[bool, Meta(description=INCLUDE_IMAGE)] = True


class StatusRequest(Request):
    pass


# -- the manage actions -----------------------------------------------------------------------


class PauseRequest(Request):
    duration: Duration = None


class ResumeRequest(Request):
    pass


class DenyRequest(Request):
    deny_add: Pattern = None
    deny_remove: Pattern = None


class ConfigRequest(Request):
    """The settings to change (none: show them). Their ranges are the config's own rules
    (``base.config.Config``), checked when it changes."""

    trigger: Annotated[Literal["events", "interval"] | None, Meta(description=TRIGGER)] = None
    interval_seconds: Annotated[float | None, Meta(description=INTERVAL)] = None
    poll_seconds: Annotated[float | None, Meta(description=POLL)] = None
    min_interval_seconds: Annotated[float | None, Meta(description=MIN_INTERVAL)] = None
    # whole numbers, as the config holds them
    storage_cap_mb: Annotated[int | None, Meta(description=STORAGE_CAP)] = None
    retention_days: Annotated[int | None, Meta(description=RETENTION)] = None
    redact: Annotated[bool | None, Meta(description=REDACT)] = None
    encrypt_text: Annotated[bool | None, Meta(description=ENCRYPT_TEXT)] = None
    encrypt_thumbnails: Annotated[bool | None, Meta(description=ENCRYPT_THUMBNAILS)] = None
    pause_hotkey: Annotated[str | None, Meta(description=HOTKEY)] = None
    capture_backend: Annotated[str | None, Meta(description=BACKEND)] = None
    announce_accessibility: Annotated[bool | None, Meta(description=ANNOUNCE)] = None

    def changes(self) -> dict[str, Any]:
        return {k: v for k, v in msgspec.structs.asdict(self).items() if v is not None}


class DeleteRequest(Request):
    """No scope at all means every frame."""

    since: Since = None
    until: Until = None
    before: Before = None
    app: AppText = None
    confirm: Annotated[bool, Meta(description=CONFIRM)] = False


class ExportRequest(Request):
    file_names = frozenset({"path"})
    since: Since = None
    until: Until = None
    app: AppText = None
    path: Folder = None
    format: Annotated[Literal["json", "csv", "html"], Meta(description=FORMAT)] = "json"
    query: Matching = None
    limit: Annotated[
        Annotated[int, msgspec.Meta(ge=1, le=MAX_EXPORT)] | None,
        msgspec.Meta(description=EXPORT_LIMIT),
    ] = None
    thumbnails: Annotated[bool, Meta(description=THUMBNAILS)] = True

    def check(self) -> None:
        super().check()
        if self.path is not None and "\x00" in self.path:
            raise ValueError("path: must not hold a NUL character (no folder name can)")


R = TypeVar("R", bound=Request)


def parse(kind: type[R], arguments: dict[str, Any]) -> R:
    """``arguments`` as a ``kind``, or a ``UsageError`` of one line naming the argument."""
    try:
        for name, value in arguments.items():
            # Before msgspec, which cannot compare such a string with a literal's values.
            if isinstance(value, str) and name not in kind.file_names:
                _check_unicode(name, value)
        request = msgspec.convert(arguments, kind)
    except msgspec.ValidationError as exc:
        raise UsageError(_refusal(kind, arguments, str(exc))) from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        request.check()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return request


def _refusal(kind: type, arguments: dict[str, Any], message: str) -> str:
    """msgspec's ``Expected `int` <= 1000 - at `$.limit``` in the house's words."""
    if " - at `$." not in message:
        return message  # an unknown field
    said, where = message.rsplit(" - at `$.", 1)
    name = where.rstrip("`").split(".", 1)[0].split("[", 1)[0]
    value = arguments.get(name)
    if isinstance(value, float) and not math.isfinite(value):
        return f"{name}: must be a finite number, not {value}"
    if "matching regex" in said:
        return f"{name}: must not be empty or blank"
    bounds = _bounds(kind, name)
    if bounds is not None and isinstance(value, int) and not isinstance(value, bool):
        what = _BOUNDED.get(name, "a number")
        return f"{name}: must be {what} from {bounds[0]} to {bounds[1]}, not {shown_number(value)}"
    return f"{name}: {said[:1].lower()}{said[1:]}"


def _bounds(kind: type, name: str) -> tuple[int, int] | None:
    """The range of the int argument ``name`` of ``kind``, when it has one."""
    from msgspec import inspect

    info = inspect.type_info(kind)
    assert isinstance(info, inspect.StructType)
    types = [f.type for f in info.fields if f.name == name]
    while types:
        each = types.pop()
        if isinstance(each, inspect.Metadata):
            types.append(each.type)
        elif isinstance(each, inspect.UnionType):
            types.extend(each.types)
        elif isinstance(each, inspect.IntType) and each.ge is not None and each.le is not None:
            return each.ge, each.le
    return None


def shown_number(value: float) -> str:
    """``value`` for a message, unless it is an int too long to read (or for ``str`` to
    convert: Python refuses ints of more than 4,300 digits)."""
    if not isinstance(value, int) or abs(value) < 10**20:
        return str(value)
    return f"a {'negative ' if value < 0 else ''}number of more than 20 digits"


# -- the answers ------------------------------------------------------------------------------


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

    @classmethod
    def of_moment(cls, moment: Moment) -> Match:
        return cls(
            **Frame.fields(moment.hit),
            frame_ids=moment.frame_ids,
            seen=[local(f.when) for f in moment.frames],
            first_seen=local(moment.first_seen),
            last_seen=local(moment.last_seen),
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


class TimelineAnswer(Scope, kw_only=True, tag="timeline"):
    ids: list[int]
    frames: list[Frame]
    groups: int
    """Runs of consecutive frames of one window, as the text groups them."""
    why_empty: str | None


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


class Status(Answer, kw_only=True, tag="status"):
    """What ``status`` shows, in this order: the spec's ``Stats`` fields among them, under
    the same names."""

    daemon: DaemonStatus
    capture: str
    """``active``, or ``paused until …`` with the pause's reason."""
    store: str
    frames: int
    oldest: str | None
    """Local time to the second, as printed; None without frames (so is ``newest``)."""
    newest: str | None
    apps: int
    thumb_bytes: int
    db_bytes: int
    """The spec's name for ``log_bytes`` + ``index_bytes``: there is no database."""
    log_bytes: int
    index_bytes: int
    """The views' bytes (the search index, the state, the frames' table)."""
    total_bytes: int
    storage_cap_mb: int
    retention_days: int
    trigger: str
    poll_seconds: float
    min_interval_seconds: float
    interval_seconds: float
    text_sources: dict[str, int]
    redact: bool
    encrypted_text_frames: int
    thumbnails: int
    encrypted_thumbnails: int
    encrypt_text: bool
    encrypt_thumbnails: bool
    key_store: str | None
    key_problem: str | None
    key_weak: bool
    encryption_available: bool
    deny_apps: list[str]
    pause_hotkey: str
    search: str
    views_lag: int
    views_behind_why: str
    config_problem: str | None
    config_weakened: str | None
    damage: list[str]
    skipped_events: list[str]
    backend: str | None
    """The running daemon's capture backend, else the one ``start`` would choose here
    (None: none; ``abilities`` says why)."""
    abilities: list[str]


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
    deleted: int


class ExportAnswer(Scope, kw_only=True, tag="export"):
    path: str
    format: Literal["json", "csv", "html"]
    frames: int
    thumbnails: int
    approved: Literal[True] = True


class Refusal(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Why a call was refused, on one line (not an ``Answer``: it has no ``action`` tag)."""

    error: str
    action: str | None = None
    approved: bool | None = None


READ_ANSWERS: tuple[type[Answer], ...] = (SearchAnswer, ShowAnswer, TimelineAnswer, Status)
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
