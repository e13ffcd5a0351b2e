"""The agent tools: ``MemoryTool`` (read-only recall) and ``MemoryManageTool`` (settings,
deletion, export), with the spec's parameters.

    tool = MemoryTool()
    r = await tool.execute(ctx, MemoryTool.Params(action="search", query="error"))
    r.output, r.metadata["ids"], r.attachments

Every failure the caller can fix (a bad phrase, an unknown id, a missing scope) comes back
as a ``ToolResult`` with ``is_error=True`` and one line of ``output``, never as an exception.
Store work is blocking, so it runs in a worker thread.

``export`` writes decrypted history to disk, so it runs only when the caller's context
approves it: ``ctx.approve(action, detail)`` returning (or resolving to) ``True``. Without
such a context, or without approval, it is refused.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

import msgspec

from backscroll.errors import BackscrollError, UsageError

T = TypeVar("T")

ReadAction = Literal["search", "show", "timeline", "status"]
ManageAction = Literal["pause", "resume", "deny", "config", "delete", "export"]
MAX_LIMIT = 1000


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
    return ToolResult(output=message, metadata={"error": message, **metadata}, is_error=True)


class _Tool:
    def __init__(self, home: str | os.PathLike[str] | None = None) -> None:
        self.home = home

    async def _run(self, work: Callable[[], T]) -> T:
        return await asyncio.to_thread(work)

    def _store(self) -> Any:
        from backscroll.store import MemoryStore

        return MemoryStore(self.home)


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
            return await self._run(lambda: handler(params))
        except BackscrollError as exc:
            return error(str(exc), action=params.action)

    def _search(self, p: Params) -> ToolResult:
        from query.format import search_text
        from query.phrases import resolve_window

        if not p.query or not p.query.strip():
            raise UsageError("search needs a query")
        limit = _limit(p.limit)
        start, end = resolve_window(p.since, p.until)
        with self._store() as store:
            hits = store.search(p.query, start=start, end=end, app=p.app, limit=limit)
            exact = bool(hits) and not hits[0].near_miss
            why = None if exact else store.why_empty(start, end, p.app)
        meta = _scope(start, end, p.app) | {
            "action": "search",
            "query": p.query,
            "ids": [h.id for h in hits],
            "matches": [hit_dict(h) for h in hits],
            "why_empty": why,
        }
        return ToolResult(output=search_text(p.query, hits, start, end, p.app, why), metadata=meta)

    def _show(self, p: Params) -> ToolResult:
        from query.format import show_text

        if p.id is None:
            raise UsageError("show needs an id (a frame id from search or timeline)")
        with self._store() as store:
            hit = store.get(p.id)
            jpeg = store.thumbnail(hit) if p.include_image else None
        attachments = [Attachment("image/jpeg", jpeg, f"frame-{hit.id}.jpg")] if jpeg else []
        meta = hit_dict(hit) | {"action": "show", "ids": [hit.id], "image": bool(attachments)}
        return ToolResult(output=show_text(hit), metadata=meta, attachments=attachments)

    def _timeline(self, p: Params) -> ToolResult:
        from query.format import group_hits, timeline_text
        from query.phrases import resolve_window

        limit = _limit(p.limit)
        start, end = resolve_window(p.since, p.until)
        with self._store() as store:
            hits = store.timeline(start=start, end=end, app=p.app, limit=limit)
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
        return ToolResult(output=render(info), metadata={"action": "status", **info})


class MemoryManageTool(_Tool):
    """Changes capture settings, deletes or exports history."""

    name = "memory_manage"

    class Params(msgspec.Struct, kw_only=True):
        action: ManageAction
        duration: str | None = None
        deny_add: str | None = None
        deny_remove: str | None = None
        interval_seconds: float | None = None
        storage_cap_mb: float | None = None
        retention_days: float | None = None
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
        from backscroll.manage import pause, pause_until

        until = pause_until(p.duration)
        with self._store() as store:
            pause(store, until, origin="tool")
        shown = f"until {until.astimezone():%Y-%m-%d %H:%M}" if until else "until resumed"
        meta = {"action": "pause", "until": until.isoformat() if until else None}
        return ToolResult(output=f"Screen memory capture paused {shown}.", metadata=meta)

    def _resume(self, p: Params) -> ToolResult:
        from backscroll.manage import resume

        with self._store() as store:
            resume(store, origin="tool")
        return ToolResult(output="Screen memory capture resumed.", metadata={"action": "resume"})

    def _deny(self, p: Params) -> ToolResult:
        from backscroll.manage import deny

        with self._store() as store:
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
        with self._store() as store:
            config = store.set_config("tool", **changes) if changes else store.config
        data = config.to_dict()
        lines = [f"{k}: {_shown(v)}" for k, v in data.items()]
        head = "Changed " + ", ".join(changes) + "." if changes else "Current configuration:"
        if {"redact", "encrypt_text", "encrypt_thumbnails"} & changes.keys():
            head += " New frames follow it now; `backscroll reindex` converts stored ones."
        meta = {"action": "config", "changed": sorted(changes), "config": data}
        return ToolResult(output="\n".join([head, *lines]), metadata=meta)

    def _delete(self, p: Params) -> ToolResult:
        from backscroll.manage import delete
        from query.format import window_text
        from query.phrases import resolve_window

        if not (p.since or p.until or p.app):
            return error("delete needs a scope (since, until or app); nothing was deleted")
        start, end = resolve_window(p.since, p.until)
        scope = window_text(start, end) + (f", app~'{p.app}'" if p.app else "")
        if not p.confirm:
            return error(f"delete needs confirm=true; nothing was deleted (scope: {scope})")
        with self._store() as store:
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

    check_format(p.format)
    resolve_window(p.since, p.until)
    if p.query is not None and not p.query.strip():
        raise UsageError("export query is empty")
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
    return f"write a decrypted copy of {' '.join(parts)} as {p.format}{images} to {where}"


async def ask_approval(ctx: object, action: str, detail: str) -> bool:
    """True only when ``ctx.approve(action, detail)`` says (or resolves to) exactly True."""
    approve = getattr(ctx, "approve", None)
    if not callable(approve):
        return False
    answer = approve(action, detail)
    if inspect.isawaitable(answer):
        answer = await answer
    return answer is True


def hit_dict(hit: Any) -> dict[str, Any]:
    """A frame's metadata for a result, JSON-safe; the text only when it was read in full."""
    data: dict[str, Any] = {
        "id": hit.id,
        "time": hit.when.astimezone().isoformat(timespec="seconds"),
        "app": hit.app,
        "title": hit.title,
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
    return data


def _scope(start: datetime | None, end: datetime | None, app: str | None) -> dict[str, Any]:
    return {
        "start": start.isoformat() if start else None,
        "end": end.isoformat() if end else None,
        "app": app,
    }


def _limit(limit: int) -> int:
    if not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"limit must be 1..{MAX_LIMIT}, not {limit}")
    return limit


def _shown(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)
