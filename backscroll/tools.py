"""The agent tools: ``MemoryTool`` (read-only recall) and ``MemoryManageTool`` (settings,
deletion, export), with the spec's parameters.

    tool = MemoryTool()
    r = await tool.execute(ctx, MemoryTool.Params(action="search", query="error"))
    r.output, r.metadata["ids"], r.attachments

Each action parses its request of the answer contract (``backscroll.contract``) from the
parameters and makes one call of ``backscroll.answer``; ``r.metadata`` is the answer's JSON,
the same as the CLI's ``--json`` and the MCP ``structuredContent``.

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
import os
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, TypeVar

import msgspec
from msgspec import Meta

from backscroll import answer, contract
from backscroll.contract import (
    MAX_FRAME_ID,
    MAX_LIMIT,
    MAX_SUMMARY_LIMIT,
    MAX_TIMELINE_LIMIT,
    AppText,
    Cursor,
    Duration,
    Folder,
    Matching,
    Pattern,
    Since,
    Text,
    Until,
)
from base.errors import BackscrollError, UsageError

if TYPE_CHECKING:
    from backscroll.store import MemoryStore

T = TypeVar("T")
R = TypeVar("R", bound=contract.Request)

ReadAction = Literal["search", "show", "timeline", "status", "summary"]
ManageAction = Literal["pause", "resume", "deny", "config", "delete", "export"]


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


def error(message: str, action: str | None = None, approved: bool | None = None) -> ToolResult:
    """A refusal (``contract.Refusal``): ``message`` made one line, as every error is (see
    ``one_line``)."""
    refusal = contract.Refusal(error=one_line(message), action=action, approved=approved)
    return ToolResult(output=refusal.error, metadata=contract.to_json(refusal), is_error=True)


def answered(result: msgspec.Struct, output: str, **kwargs: Any) -> ToolResult:
    """An answer of the contract, its JSON as the metadata."""
    return ToolResult(output=output, metadata=contract.to_json(result), **kwargs)


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
    """Read-only recall over the screen memory: search, show, timeline, status, summary."""

    name = "memory"

    class Params(contract.Request, kw_only=True):
        """The spec's parameters; each action reads its own (``contract.SearchRequest``, …),
        which hold the exact limits."""

        action: Annotated[ReadAction, Meta(description="What to do")]
        query: Annotated[
            Text | None,
            Meta(
                description="Search terms (search). All terms must match (else matches with a "
                "word one letter off in OCR'd text, marked fuzzy; else near misses with some, "
                "marked near_miss); quote phrases; invoice* for prefix"
            ),
        ] = None
        since: Since = None
        until: Until = None
        app: AppText = None
        # Its range depends on the action: ``SearchRequest`` and ``TimelineRequest`` hold it.
        limit: Annotated[
            int,
            Meta(
                description=f"Max results: search 1..{MAX_LIMIT}, timeline 1..{MAX_TIMELINE_LIMIT}"
                f", summary (apps, and windows or sites) 1..{MAX_SUMMARY_LIMIT}"
            ),
        ] = 15
        id: Annotated[
            Annotated[int, Meta(ge=0, le=MAX_FRAME_ID)] | None,
            Meta(description=f"Frame id (show), 0..{MAX_FRAME_ID}, from search or timeline"),
        ] = None
        include_image: Annotated[bool, Meta(description=f"show: {contract.INCLUDE_IMAGE}")] = True
        cursor: Cursor = None
        by: Annotated[
            Literal["both", "words", "meaning"], Meta(description=f"search: {contract.SEARCH_BY}")
        ] = "both"

    async def execute(self, ctx: object, params: MemoryTool.Params) -> ToolResult:
        handlers = {
            "search": self._search,
            "show": self._show,
            "timeline": self._timeline,
            "status": self._status,
            "summary": self._summary,
        }
        handler = handlers.get(params.action)
        if handler is None:
            return error(
                f"unknown action {params.action!r}: use search, show, timeline, status or summary"
            )
        try:
            checked = recheck(params)
            return await self._run(lambda: handler(checked))
        except BackscrollError as exc:
            return error(str(exc), action=params.action)

    def _search(self, p: Params) -> ToolResult:
        if p.query is None:
            raise UsageError("search needs a query")
        request = taken(contract.SearchRequest, p)
        with self._store() as store:
            reply = answer.search(store, request)
        return answered(reply.answer, reply.text)

    def _show(self, p: Params) -> ToolResult:
        if p.id is None:
            raise UsageError("show needs an id (a frame id from search or timeline)")
        with self._store() as store:
            shown = answer.show(store, taken(contract.ShowRequest, p))
        name = f"frame-{shown.answer.id}.jpg"
        attachments = [Attachment("image/jpeg", shown.jpeg, name)] if shown.jpeg else []
        return answered(shown.answer, shown.text, attachments=attachments)

    def _timeline(self, p: Params) -> ToolResult:
        request = taken(contract.TimelineRequest, p)
        with self._store() as store:
            reply = answer.timeline(store, request)
        return answered(reply.answer, reply.text)

    def _status(self, p: Params) -> ToolResult:
        with self._store() as store:
            reply = answer.status(store)
        return answered(reply.answer, reply.text)

    def _summary(self, p: Params) -> ToolResult:
        from backscroll.contract.summary import SummaryRequest

        request = taken(SummaryRequest, p)
        with self._store() as store:
            reply = answer.summary(store, request)
        return answered(reply.answer, reply.text)


class MemoryManageTool(_Tool):
    """Changes capture settings, deletes or exports history."""

    name = "memory_manage"

    class Params(contract.Request, kw_only=True):
        """The spec's parameters; each action reads its own (``contract.PauseRequest``, …)."""

        action: Annotated[ManageAction, Meta(description="What to do")]
        duration: Duration = None
        deny_add: Pattern = None
        deny_remove: Pattern = None
        interval_seconds: Annotated[float | None, Meta(description=contract.INTERVAL)] = None
        storage_cap_mb: Annotated[int | None, Meta(description=contract.STORAGE_CAP)] = None
        retention_days: Annotated[int | None, Meta(description=contract.RETENTION)] = None
        trigger: Annotated[
            Literal["events", "interval"] | None, Meta(description=contract.TRIGGER)
        ] = None
        redact: Annotated[bool | None, Meta(description=contract.REDACT)] = None
        encrypt_text: Annotated[bool | None, Meta(description=contract.ENCRYPT_TEXT)] = None
        encrypt_thumbnails: Annotated[
            bool | None, Meta(description=contract.ENCRYPT_THUMBNAILS)
        ] = None
        since: Since = None
        until: Until = None
        app: AppText = None
        confirm: Annotated[bool, Meta(description=contract.CONFIRM)] = False
        path: Folder = None
        format: Annotated[
            Literal["json", "csv", "html"], Meta(description=f"export: {contract.FORMAT}")
        ] = "json"
        query: Matching = None
        thumbnails: Annotated[bool, Meta(description=f"export: {contract.THUMBNAILS}")] = True
        forget_citing: Annotated[bool, Meta(description=f"delete: {contract.FORGET_CITING}")] = (
            False
        )

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
            checked = recheck(params)
            return await self._run(lambda: handler(checked))
        except BackscrollError as exc:
            return error(str(exc), action=params.action)

    def _pause(self, p: Params) -> ToolResult:
        with self._store(write=True) as store:
            result = answer.pause(store, taken(contract.PauseRequest, p), "tool")
        until = result.until
        shown = f"until {until:%Y-%m-%d %H:%M}" if until else "until resumed"
        return answered(result, f"Screen memory capture paused {shown}.")

    def _resume(self, p: Params) -> ToolResult:
        with self._store(write=True) as store:
            result = answer.resume(store, "tool")
        return answered(result, "Screen memory capture resumed.")

    def _deny(self, p: Params) -> ToolResult:
        with self._store(write=True) as store:
            result = answer.deny(store, taken(contract.DenyRequest, p), "tool")
        changes = [f"added '{p.deny_add}'"] if p.deny_add else []
        changes += [f"removed '{p.deny_remove}'"] if p.deny_remove else []
        head = f"Deny list: {', '.join(changes)}." if changes else "Deny list unchanged."
        return answered(result, f"{head}\nNever recorded: {', '.join(result.deny_apps)}")

    def _config(self, p: Params) -> ToolResult:
        with self._store(write=True) as store:
            result = answer.configure(store, taken(contract.ConfigRequest, p), "tool")
        data = result.config.to_dict()
        lines = [f"{k}: {_shown(v)}" for k, v in data.items()]
        changed = result.changed
        head = "Changed " + ", ".join(changed) + "." if changed else "Current configuration:"
        if result.reindex_needed:
            head += " New frames follow it now; `backscroll reindex` converts stored ones."
        return answered(result, "\n".join([head, *lines]))

    def _delete(self, p: Params) -> ToolResult:
        # An agent names what it deletes: no scope is refused here, never read as everything.
        if not (p.since or p.until or p.app):
            return error("delete needs a scope (since, until or app); nothing was deleted")
        request = taken(contract.DeleteRequest, p)
        with self._store(write=True) as store:
            result = answer.delete(store, request, "tool")
        scope = answer.scope_text(result.start, result.end, result.app)
        lines = [f"Deleted {result.deleted} frame(s) in {scope}."]
        if result.memories_forgotten:
            lines.append(
                f"Forgot the kept memories citing them: {', '.join(result.memories_forgotten)}."
            )
        if result.cited_by:
            lines.append(
                f"Kept memories citing a deleted frame, their source now pointing at nothing: "
                f"{', '.join(result.cited_by)} (forget_citing forgets them with the frames)."
            )
        return answered(result, "\n".join(lines))

    async def _export(self, ctx: object, p: Params) -> ToolResult:
        request = check_export(p)
        detail = describe_export(p)
        if not await ask_approval(ctx, "export", detail):
            return error(f"export refused: not approved ({detail})", approved=False)

        def work() -> ToolResult:
            with self._store() as store:
                result = answer.export(store, request)
            output = (
                f"Exported {result.frames} frame(s) and {result.thumbnails} thumbnail(s), "
                f"decrypted, to {result.path}."
            )
            if result.incomplete:
                output += f"\nincomplete: {result.incomplete}"
            return answered(result, output)

        return await self._run(work)


def recheck(params: R) -> R:
    """A tool's parameters, as given (a host may skip their types), parsed and checked."""
    return contract.parse(type(params), msgspec.structs.asdict(params))


def taken(kind: type[R], params: contract.Request) -> R:
    """The request of one action: the parameters it takes."""
    given = msgspec.structs.asdict(params)
    return contract.parse(kind, {k: v for k, v in given.items() if k in kind.__struct_fields__})


def check_export(p: MemoryManageTool.Params) -> contract.ExportRequest:
    """Validate an export's parameters before anyone is asked; returns its request, with its
    folder made absolute."""
    from backscroll.export import check_folder, default_folder

    request = taken(contract.ExportRequest, recheck(p))
    answer.time_span(request.since, request.until)
    folder = check_folder(Path(request.path) if request.path else default_folder())
    return msgspec.structs.replace(request, path=str(folder))


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
    said = approve(action, detail)
    if inspect.isawaitable(said):
        said = await said
    return said is True


def _shown(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)
