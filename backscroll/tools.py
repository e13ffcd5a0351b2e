"""The agent tools: ``MemoryTool`` (read-only recall) and ``MemoryManageTool`` (settings,
deletion, export), with the spec's parameters.

    tool = MemoryTool()
    r = await tool.execute(ctx, MemoryTool.Params(action="search", query="error"))
    r.output, r.metadata["ids"], r.attachments

Every failure the caller can fix (a bad phrase, an unknown id, a missing scope) comes back
as a ``ToolResult`` with ``is_error=True`` and one line of ``output``, never as an exception.
Arguments are checked before the store is opened, and a refusal names the argument and why:
an id or limit out of its range, a blank string (a blank scope is a mistake, never "all"),
a number that is not finite, text that is not valid Unicode. Store work is blocking, so it
runs in a worker thread.

``export`` writes decrypted history to disk, so it runs only when the caller's context
approves it: ``ctx.approve(action, detail)`` returning (or resolving to) ``True``. Without
such a context, or without approval, it is refused.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import os
import re
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

import msgspec

from base.errors import BackscrollError, UsageError

if TYPE_CHECKING:
    from backscroll.store import MemoryStore
    from query.moments import Moment
    from query.search import Hit

T = TypeVar("T")

ReadAction = Literal["search", "show", "timeline", "status"]
ManageAction = Literal["pause", "resume", "deny", "config", "delete", "export"]
MAX_LIMIT = 1000  # search results, as `backscroll search --limit`
MAX_TIMELINE_LIMIT = 10_000  # timeline frames, as `backscroll timeline --limit`
# A frame id is its log offset, a signed 64-bit integer on disk (eventlog's ``Offset``).
MAX_FRAME_ID = 2**63 - 1


class Approver(Protocol):
    """What a context offers to approve a high-risk action (``export``)."""

    def approve(self, action: str, detail: str) -> bool | Awaitable[bool]: ...


class Attachment(msgspec.Struct, frozen=True):
    media_type: str
    data: bytes
    name: str


class ToolResult(msgspec.Struct, kw_only=True):
    output: str
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    attachments: list[Attachment] = msgspec.field(default_factory=list)
    is_error: bool = False


def error(message: str, **metadata: Any) -> ToolResult:
    """A refusal: ``message`` made one line, as every error is (see ``one_line``)."""
    message = one_line(message)
    return ToolResult(output=message, metadata={"error": message, **metadata}, is_error=True)


# What ``str.splitlines`` breaks on, the other control characters, and lone surrogates (which
# cannot be written as UTF-8, so a JSON-RPC reply quoting one would fail to encode).
_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def one_line(text: str) -> str:
    """``text`` with line breaks, control characters and lone surrogates written as Python
    escapes (``\\n``, ``\\x00``, ``\\ud800``): a message that quotes the caller's input stays
    one line whatever the input held."""
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class _Tool:
    def __init__(self, home: str | os.PathLike[str] | None = None) -> None:
        self.home = home

    async def _run(self, work: Callable[[], T]) -> T:
        return await asyncio.to_thread(work)

    def _store(self, *, write: bool = False) -> MemoryStore:
        from backscroll.store import MemoryStore

        return MemoryStore(self.home, write=write)


class MemoryTool(_Tool):
    """Read-only recall over the screen memory: search, show, timeline, status."""

    name = "memory"

    class Params(msgspec.Struct, kw_only=True):
        action: ReadAction
        query: str | None = None
        since: str | None = None
        until: str | None = None
        app: str | None = None
        limit: int = 15
        id: int | None = None
        include_image: bool = True

    async def execute(self, ctx: object, params: MemoryTool.Params) -> ToolResult:
        handlers = {
            "search": self._search,
            "show": self._show,
            "timeline": self._timeline,
            "status": self._status,
        }
        handler = handlers.get(params.action)
        if handler is None:
            return error(f"unknown action {params.action!r}: use search, show, timeline or status")
        try:
            check_read(params)
            return await self._run(lambda: handler(params))
        except BackscrollError as exc:
            return error(str(exc), action=params.action)

    def _search(self, p: Params) -> ToolResult:
        from query.phrases import resolve_window
        from query.render import search_text

        if p.query is None:
            raise UsageError("search needs a query")
        start, end = resolve_window(p.since, p.until)
        with self._store() as store:
            moments = store.moments(p.query, start=start, end=end, app=p.app, limit=p.limit)
            exact = bool(moments) and not (moments[0].hit.near_miss or moments[0].hit.fuzzy)
            why = None if exact else store.why_empty(start, end, p.app)
        meta = _scope(start, end, p.app) | {
            "action": "search",
            "query": p.query,
            "ids": [m.hit.id for m in moments],
            "matches": [moment_dict(m) for m in moments],
            "why_empty": why,
        }
        output = search_text(p.query, moments, start, end, p.app, why)
        return ToolResult(output=output, metadata=meta)

    def _show(self, p: Params) -> ToolResult:
        from query.render import show_text

        if p.id is None:
            raise UsageError("show needs an id (a frame id from search or timeline)")
        with self._store() as store:
            hit = store.get(p.id)
            jpeg = store.thumbnail(hit) if p.include_image else None
        attachments = [Attachment("image/jpeg", jpeg, f"frame-{hit.id}.jpg")] if jpeg else []
        meta = hit_dict(hit) | {"action": "show", "ids": [hit.id], "image": bool(attachments)}
        return ToolResult(output=show_text(hit), metadata=meta, attachments=attachments)

    def _timeline(self, p: Params) -> ToolResult:
        from query.phrases import resolve_window
        from query.render import group_hits, timeline_text

        start, end = resolve_window(p.since, p.until)
        with self._store() as store:
            hits = store.timeline(start=start, end=end, app=p.app, limit=p.limit)
            why = None if hits else store.why_empty(start, end, p.app)
        meta = _scope(start, end, p.app) | {
            "action": "timeline",
            "ids": [h.id for h in hits],
            "frames": [hit_dict(h) for h in hits],
            "groups": len(group_hits(hits)),
            "why_empty": why,
        }
        return ToolResult(output=timeline_text(hits, start, end, p.app, why), metadata=meta)

    def _status(self, p: Params) -> ToolResult:
        from backscroll.status import collect, render

        with self._store() as store:
            info = collect(store)
        return ToolResult(output=render(info), metadata={"action": "status", **info.to_dict()})


class MemoryManageTool(_Tool):
    """Changes capture settings, deletes or exports history."""

    name = "memory_manage"

    class Params(msgspec.Struct, kw_only=True):
        action: ManageAction
        duration: str | None = None
        deny_add: str | None = None
        deny_remove: str | None = None
        interval_seconds: float | None = None
        storage_cap_mb: int | None = None  # whole numbers, as the config holds them
        retention_days: int | None = None
        trigger: Literal["events", "interval"] | None = None
        redact: bool | None = None
        encrypt_text: bool | None = None
        encrypt_thumbnails: bool | None = None
        since: str | None = None
        until: str | None = None
        app: str | None = None
        confirm: bool = False
        path: str | None = None
        format: Literal["json", "csv", "html"] = "json"
        query: str | None = None
        thumbnails: bool = True

    async def execute(self, ctx: object, params: MemoryManageTool.Params) -> ToolResult:
        handlers: dict[str, Callable[[MemoryManageTool.Params], ToolResult]] = {
            "pause": self._pause,
            "resume": self._resume,
            "deny": self._deny,
            "config": self._config,
            "delete": self._delete,
        }
        try:
            check_manage(params)
            if params.action == "export":
                return await self._export(ctx, params)
            handler = handlers.get(params.action)
            if handler is None:
                return error(
                    f"unknown action {params.action!r}: "
                    "use pause, resume, deny, config, delete or export"
                )
            return await self._run(lambda: handler(params))
        except BackscrollError as exc:
            return error(str(exc), action=params.action)

    def _pause(self, p: Params) -> ToolResult:
        from backscroll.actions import pause, pause_until

        until = pause_until(p.duration)
        with self._store(write=True) as store:
            pause(store, until, origin="tool")
        shown = f"until {until.astimezone():%Y-%m-%d %H:%M}" if until else "until resumed"
        meta = {"action": "pause", "until": until.isoformat() if until else None}
        return ToolResult(output=f"Screen memory capture paused {shown}.", metadata=meta)

    def _resume(self, p: Params) -> ToolResult:
        from backscroll.actions import resume

        with self._store(write=True) as store:
            resume(store, origin="tool")
        return ToolResult(output="Screen memory capture resumed.", metadata={"action": "resume"})

    def _deny(self, p: Params) -> ToolResult:
        from backscroll.actions import deny

        with self._store(write=True) as store:
            if p.deny_add or p.deny_remove:
                deny(store, p.deny_add, p.deny_remove, origin="tool")
            patterns = list(store.config.deny_apps)
        changes = [f"added '{p.deny_add}'"] if p.deny_add else []
        changes += [f"removed '{p.deny_remove}'"] if p.deny_remove else []
        head = f"Deny list: {', '.join(changes)}." if changes else "Deny list unchanged."
        meta = {"action": "deny", "deny_apps": patterns}
        return ToolResult(output=f"{head}\nNever recorded: {', '.join(patterns)}", metadata=meta)

    def _config(self, p: Params) -> ToolResult:
        keys = (
            "interval_seconds",
            "storage_cap_mb",
            "retention_days",
            "trigger",
            "redact",
            "encrypt_text",
            "encrypt_thumbnails",
        )
        changes = {k: getattr(p, k) for k in keys if getattr(p, k) is not None}
        with self._store(write=True) as store:
            config = store.set_config("tool", **changes) if changes else store.config
        data = config.to_dict()
        lines = [f"{k}: {_shown(v)}" for k, v in data.items()]
        head = "Changed " + ", ".join(changes) + "." if changes else "Current configuration:"
        if {"redact", "encrypt_text", "encrypt_thumbnails"} & changes.keys():
            head += " New frames follow it now; `backscroll reindex` converts stored ones."
        meta = {"action": "config", "changed": sorted(changes), "config": data}
        return ToolResult(output="\n".join([head, *lines]), metadata=meta)

    def _delete(self, p: Params) -> ToolResult:
        from backscroll.actions import delete
        from query.phrases import resolve_window
        from query.render import window_text

        if not (p.since or p.until or p.app):
            return error("delete needs a scope (since, until or app); nothing was deleted")
        start, end = resolve_window(p.since, p.until)
        scope = window_text(start, end) + (f", app~'{p.app}'" if p.app else "")
        if not p.confirm:
            return error(f"delete needs confirm=true; nothing was deleted (scope: {scope})")
        with self._store(write=True) as store:
            removed = delete(store, start=start, end=end, app=p.app, origin="tool")
        meta = _scope(start, end, p.app) | {"action": "delete", "deleted": removed}
        return ToolResult(output=f"Deleted {removed} frame(s) in {scope}.", metadata=meta)

    async def _export(self, ctx: object, p: Params) -> ToolResult:
        folder = check_export(p)
        detail = describe_export(p)
        if not await ask_approval(ctx, "export", detail):
            return error(f"export refused: not approved ({detail})", approved=False)

        def work() -> ToolResult:
            from backscroll.export import export
            from query.phrases import resolve_window

            start, end = resolve_window(p.since, p.until)
            with self._store() as store:
                result = export(
                    store,
                    folder,
                    p.format,
                    start=start,
                    end=end,
                    app=p.app,
                    query=p.query,
                    thumbnails=p.thumbnails,
                )
            meta = _scope(start, end, p.app) | {
                "action": "export",
                "path": str(result.path),
                "format": p.format,
                "frames": result.frames,
                "thumbnails": result.thumbnails,
                "approved": True,
            }
            output = (
                f"Exported {result.frames} frame(s) and {result.thumbnails} thumbnail(s), "
                f"decrypted, to {result.path}."
            )
            return ToolResult(output=output, metadata=meta)

        return await self._run(work)


def check_export(p: MemoryManageTool.Params) -> Path:
    """Validate an export's parameters before anyone is asked; returns its folder."""
    from backscroll.export import check_folder, check_format, default_folder
    from query.phrases import resolve_window

    check_manage(p)
    check_format(p.format)
    resolve_window(p.since, p.until)
    return check_folder(Path(p.path) if p.path else default_folder())


def describe_export(p: MemoryManageTool.Params) -> str:
    """An export in words, for an approval prompt. It quotes the phrases as given rather than
    resolving them, so asking twice (MCP retries a tool call after each answer) reads the same.
    """
    parts = [f"matching '{p.query}'" if p.query else "every frame"]
    if p.since:
        parts.append(f"since '{p.since}'")
    if p.until:
        parts.append(f"until '{p.until}'")
    if p.app:
        parts.append(f"app~'{p.app}'")
    where = p.path or "a new folder in ~/Downloads"
    images = " with thumbnails" if p.thumbnails else ""
    # One line: a path or scope holding a line break must not add lines to the prompt.
    return one_line(f"write a decrypted copy of {' '.join(parts)} as {p.format}{images} to {where}")


async def ask_approval(ctx: object, action: str, detail: str) -> bool:
    """True only when ``ctx.approve(action, detail)`` says (or resolves to) exactly True."""
    approve = getattr(ctx, "approve", None)
    if not callable(approve):
        return False
    answer = approve(action, detail)
    if inspect.isawaitable(answer):
        answer = await answer
    return answer is True


def hit_dict(hit: Hit) -> dict[str, Any]:
    """A frame's metadata for a result, JSON-safe; the text only when it was read in full."""
    data: dict[str, Any] = {
        "id": hit.id,
        "time": _time(hit.when),
        "app": hit.app,
        "title": hit.title,
        "url": hit.url,
        "text_source": hit.text_source,
        "encrypted": hit.encrypted,
        "reason": hit.reason,
        "thumbnail": bool(hit.thumb),
        "thumbnail_encrypted": hit.thumb_encrypted,
    }
    if hit.snippet:
        data["snippet"] = hit.snippet
        data["score"] = round(hit.score, 4)
    if hit.near_miss:
        data["near_miss"] = True
    if hit.fuzzy:
        data["fuzzy"] = True
    return data


def moment_dict(moment: Moment) -> dict[str, Any]:
    """A search match: its best frame's metadata, and every frame of the moment (ids and
    times, in time order)."""
    return hit_dict(moment.hit) | {
        "frame_ids": moment.frame_ids,
        "seen": [_time(f.when) for f in moment.frames],
        "first_seen": _time(moment.first_seen),
        "last_seen": _time(moment.last_seen),
    }


def _time(when: datetime) -> str:
    return when.astimezone().isoformat(timespec="seconds")


def _scope(start: datetime | None, end: datetime | None, app: str | None) -> dict[str, Any]:
    return {
        "start": start.isoformat() if start else None,
        "end": end.isoformat() if end else None,
        "app": app,
    }


def check_read(p: MemoryTool.Params) -> None:
    """Refuse, naming the argument, what no read can use. Every given string is checked,
    whatever the action, since a blank or broken one is the caller's mistake either way."""
    _check_texts(p, ("query", "since", "until", "app"))
    if p.action == "show" and p.id is not None:
        _check_range("id", p.id, 0, MAX_FRAME_ID, "a frame id")
    most = {"search": MAX_LIMIT, "timeline": MAX_TIMELINE_LIMIT}.get(p.action)
    if most is not None:
        _check_range("limit", p.limit, 1, most, "a number of results")


def check_manage(p: MemoryManageTool.Params) -> None:
    """Refuse, naming the argument, a blank string or a number that is not finite (a float
    can reach an int field from a host that skips the types). Ranges of config values are
    the config's own rules (``Config``), checked when it changes."""
    texts = ("duration", "deny_add", "deny_remove", "since", "until", "app", "path", "query")
    _check_texts(p, texts)
    for name in ("interval_seconds", "storage_cap_mb", "retention_days"):
        value = getattr(p, name)
        if value is not None and not _finite(value):
            raise UsageError(f"{name}: must be a finite number, not {shown_number(value)}")
    if p.path is not None and "\x00" in p.path:
        raise UsageError("path: must not hold a NUL character (no folder name can)")


def _finite(value: float) -> bool:
    return isinstance(value, int) or math.isfinite(value)  # an int may be too big for a float


def _check_texts(p: msgspec.Struct, names: tuple[str, ...]) -> None:
    """Each named string, when given, holds something and is valid Unicode. A blank scope
    (``app=""``) would otherwise read as no scope at all: everything."""
    for name in names:
        value = getattr(p, name)
        if value is None:
            continue
        if not value.strip():
            raise UsageError(f"{name}: must not be empty or blank")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            where = f"U+{ord(value[exc.start]):04X} at position {exc.start}"
            raise UsageError(
                f"{name}: must be valid Unicode, not a lone surrogate ({where})"
            ) from None


def _check_range(name: str, value: int, lo: int, hi: int, what: str) -> None:
    if not lo <= value <= hi:
        raise UsageError(f"{name}: must be {what} from {lo} to {hi}, not {shown_number(value)}")


def shown_number(value: float) -> str:
    """``value`` for a message, unless it is an int too long to read (or for ``str`` to
    convert: Python refuses ints of more than 4,300 digits)."""
    if not isinstance(value, int) or abs(value) < 10**20:
        return str(value)
    return f"a {'negative ' if value < 0 else ''}number of more than 20 digits"


def _shown(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)
