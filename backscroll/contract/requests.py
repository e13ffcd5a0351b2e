"""The requests: one Struct per use case, each argument's limits and description declared
once (``msgspec.Meta``), and ``parse``, which refuses what does not fit with one line naming
the argument (``limit: must be a number of results from 1 to 1000, not 5000``)."""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar, Literal, TypeVar

import msgspec
from msgspec import Meta

from backscroll.contract.words import (
    ANNOUNCE,
    APP,
    BACKEND,
    BEFORE,
    CONFIRM,
    CURSOR,
    DENY,
    DURATION,
    ENCRYPT_TEXT,
    ENCRYPT_THUMBNAILS,
    EXPORT_LIMIT,
    FOLDER,
    FORGET_CITING,
    FORMAT,
    FRAME_ID,
    FRAME_IDS,
    HOTKEY,
    INCLUDE_IMAGE,
    INTERVAL,
    KIND,
    MATCHING,
    MAX_CURSOR,
    MAX_EXPORT,
    MAX_FRAME_ID,
    MAX_LIMIT,
    MAX_TIMELINE_LIMIT,
    MIN_INTERVAL,
    NO_MEANING,
    POLL,
    QUERY,
    REDACT,
    RETENTION,
    SEARCH_BY,
    SEARCH_LIMIT,
    SINCE,
    SKIP_BAD,
    SOURCE,
    STORAGE_CAP,
    THUMBNAILS,
    TIMELINE_LIMIT,
    TRIGGER,
    UNTIL,
    VIEWS_ONLY,
)
from base.errors import UsageError

_NOT_BLANK = r"\S"
# What a range refusal calls each bounded argument.
_BOUNDED = {"limit": "a number of results", "id": "a frame id"}

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
Cursor = Annotated[
    Annotated[Text, msgspec.Meta(max_length=MAX_CURSOR)] | None, msgspec.Meta(description=CURSOR)
]


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
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, str):
                        _check_unicode(name, item)
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
    cursor: Cursor = None
    by: Annotated[Literal["both", "words", "meaning"], Meta(description=SEARCH_BY)] = "both"


class TimelineRequest(Request):
    since: Since = None
    until: Until = None
    app: AppText = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=MAX_TIMELINE_LIMIT, description=TIMELINE_LIMIT)] = (
        50
    )
    cursor: Cursor = None


class ShowRequest(Request):
    id: Annotated[int, msgspec.Meta(ge=0, le=MAX_FRAME_ID, description=FRAME_ID)]
    include_image: Annotated[bool, Meta(description=INCLUDE_IMAGE)] = True


class StatusRequest(Request):
    pass


class LogRequest(Request):
    since: Since = None
    # 32: more than there are kinds of control event, each asked for once
    kind: Annotated[Annotated[list[Text], Meta(max_length=32)] | None, Meta(description=KIND)] = (
        None
    )


class VerifyRequest(Request):
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
    # A moment holds at most MAX_TIMELINE_LIMIT frames as the view shows them.
    ids: Annotated[
        list[Annotated[int, Meta(ge=0, le=MAX_FRAME_ID)]],
        Meta(max_length=MAX_TIMELINE_LIMIT, description=FRAME_IDS),
    ] = []
    confirm: Annotated[bool, Meta(description=CONFIRM)] = False
    forget_citing: Annotated[bool, Meta(description=FORGET_CITING)] = False


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


class ImportRequest(Request):
    file_names = frozenset({"source"})
    source: Annotated[Text, Meta(description=SOURCE)]
    skip_bad: Annotated[bool, Meta(description=SKIP_BAD)] = False
    no_meaning: Annotated[bool, Meta(description=NO_MEANING)] = False

    def check(self) -> None:
        super().check()
        if "\x00" in self.source:
            raise ValueError("source: must not hold a NUL character (no file name can)")


class ReindexRequest(Request):
    views_only: Annotated[bool, Meta(description=VIEWS_ONLY)] = False
    no_meaning: Annotated[bool, Meta(description=NO_MEANING)] = False


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
    if "matching regex" in said and said.endswith(f"{_NOT_BLANK}'"):
        return f"{name}: must not be empty or blank"
    bounds = _bounds(kind, name)
    if bounds is not None and isinstance(value, int) and not isinstance(value, bool):
        lo, hi = bounds
        if hi is None:
            return f"{name}: must be at least {lo}, not {shown_number(value)}"
        what = _BOUNDED.get(name, "a number")
        return f"{name}: must be {what} from {lo} to {hi}, not {shown_number(value)}"
    return f"{name}: {said[:1].lower()}{said[1:]}"


def _bounds(kind: type, name: str) -> tuple[int, int | None] | None:
    """The range of the int argument ``name`` of ``kind`` (None: no upper bound), when it has
    a lower bound."""
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
        elif isinstance(each, inspect.IntType) and each.ge is not None:
            return each.ge, each.le
    return None


def shown_number(value: float) -> str:
    """``value`` for a message, unless it is an int too long to read (or for ``str`` to
    convert: Python refuses ints of more than 4,300 digits)."""
    if not isinstance(value, int) or abs(value) < 10**20:
        return str(value)
    return f"a {'negative ' if value < 0 else ''}number of more than 20 digits"
