"""The agent tools of kept memories: ``KeptMemoryTool`` (reads, served by default) and
``KeptMemoryWriteTool`` (keep, revise, forget: only when the person grants them,
``backscroll mcp --allow-keep``).

Named apart from ``memory`` (what was on screen) and ``memory_manage`` (capture settings) at a
glance: ``kept_`` says these are memories someone chose to keep, ``_write`` that the tool
changes them. Approving a proposed memory and a space's rules are the person's, in the CLI:
no tool offers them (003: only the user approves or changes policies).

Each action parses its request of ``backscroll.contract.keep`` and makes one call of
``backscroll.keep.Keeper``; the metadata is the answer's JSON, as ``--json`` prints it. A
refusal is one line, ``<code>: <why>``, with the contract's ``KeepRefusal`` as its metadata
(the same codes the CLI gives). One keeper per tool, kept between calls: each call reads only
what the log gained since the last.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

import msgspec
from msgspec import Meta

from backscroll import contract
from backscroll.contract import keep_words as w
from backscroll.contract.keep import (
    ClaimText,
    Cursor,
    Expected,
    KeepRefusal,
    Limit,
    MemoriesAnswer,
    Memory,
    MemoryId,
    MemoryText,
    Predicate,
    RequestKey,
    Space,
    Spaces,
    Subject,
    Valid,
    When,
)
from backscroll.tools import ToolResult, one_line
from base.errors import BackscrollError
from eventlog.events import MAX_SOURCE, MemoryKind

if TYPE_CHECKING:
    from backscroll.keep import Keeper

ReadAction = Literal["resolve", "search", "due", "get", "list", "history", "status"]
WriteAction = Literal["keep", "revise", "forget"]

Source = Annotated[str, Meta(max_length=MAX_SOURCE, description=w.SOURCE)]


class _KeptTool:
    write = False

    def __init__(self, home: str | os.PathLike[str] | None = None) -> None:
        self.home = home
        self._keeper: Keeper | None = None
        self._lock = threading.Lock()  # one keeper, calls in worker threads

    async def execute(self, ctx: object, params: contract.Request) -> ToolResult:
        return await asyncio.to_thread(self._answer, params)

    def _answer(self, params: contract.Request) -> ToolResult:
        from backscroll.keep import Refused

        try:
            checked = contract.parse(type(params), msgspec.structs.asdict(params))
            with self._lock:
                return self._do(checked)
        except Refused as refused:
            return refusal(refused.refusal)
        except BackscrollError as exc:
            return refusal(KeepRefusal(error="invalid", message=str(exc)))

    def _do(self, params: Any) -> ToolResult:
        raise NotImplementedError

    def keeper(self) -> Keeper:
        if self._keeper is None:
            from backscroll.keep import Keeper
            from backscroll.store import MemoryStore

            self._keeper = Keeper(MemoryStore(self.home, write=self.write))
        return self._keeper


class KeptMemoryTool(_KeptTool):
    """Reads of kept memories: resolve, search, due, get, list, history, status."""

    name = "kept_memory"

    class Params(contract.Request, kw_only=True):
        action: Annotated[ReadAction, Meta(description="What to do")]
        subject: Annotated[Subject, Meta(description=f"resolve: {w.SUBJECT}")] | None = None
        predicate: Predicate | None = None
        context: Annotated[ClaimText, Meta(description=f"resolve: {w.CONTEXT}")] | None = None
        spaces: Spaces | None = None
        query: Annotated[str, Meta(max_length=1_000, description=f"search: {w.KEPT_QUERY}")] | (
            None
        ) = None
        min_score: Annotated[float, Meta(ge=0, le=1, description=w.MIN_SCORE)] | None = None
        limit: Limit | None = None
        cursor: Cursor | None = None
        id: MemoryId | None = None
        space: Annotated[Space, Meta(description=f"list: {w.SPACE}")] | None = None

    def _do(self, p: KeptMemoryTool.Params) -> ToolResult:
        from backscroll.contract import keep as k

        keeper = self.keeper()
        if p.action == "resolve":
            found = keeper.resolve(request(k.ResolveRequest, p))
            where = ", ".join(p.spaces or ["default"])
            text = found.memory.line if found.memory else f"not found in {where}: never guessed"
            return answered(found, text)
        if p.action == "search":
            hits = keeper.search(request(k.KeptSearchRequest, p))
            lines = [f"{h.id} v{h.version} ({h.score:.2f}) {h.line}" for h in hits.memories]
            lines += [f"near miss {h.id} ({h.score:.2f}) {h.line}" for h in hits.near_misses]
            return answered(hits, "\n".join(lines) or "no kept memory holds these words")
        if p.action == "due":
            return page(keeper.due(request(k.DueRequest, p)), "nothing is due")
        if p.action == "get":
            memory = keeper.get(request(k.GetRequest, p))
            return answered(memory, shown(memory))
        if p.action == "list":
            return page(keeper.memories(request(k.ListRequest, p)), "no kept memories")
        if p.action == "status":
            status = keeper.status()
            spaces = ", ".join(
                f"{s.name} ({s.memories}{', review' if s.require_review else ''})"
                for s in status.spaces
            )
            text = (
                f"{status.memories} kept memories, {status.proposed} waiting for review, "
                f"{status.intentions_due} intentions due; spaces: {spaces or 'none'}. "
                f"{status.rules}"
            )
            return answered(status, text)
        history = keeper.history(request(k.HistoryRequest, p))
        text = "\n".join(f"v{v.version} {v.time:%Y-%m-%d %H:%M} {v.text}" for v in history.versions)
        return answered(history, text)


class KeptMemoryWriteTool(_KeptTool):
    """Writes of kept memories: keep, revise, forget."""

    name = "kept_memory_write"
    write = True

    class Params(contract.Request, kw_only=True):
        action: Annotated[WriteAction, Meta(description="What to do")]
        text: Annotated[MemoryText, Meta(description=f"keep, revise: {w.TEXT}")] | None = None
        kind: Annotated[MemoryKind, Meta(description=f"keep: {w.KIND}")] | None = None
        space: Annotated[Space, Meta(description=f"keep: {w.SPACE}")] | None = None
        subject: Annotated[Subject, Meta(description=f"keep: {w.SUBJECT}")] | None = None
        predicate: Predicate | None = None
        context: Annotated[ClaimText, Meta(description=f"keep: {w.CONTEXT}")] | None = None
        value: Annotated[ClaimText, Meta(description=w.VALUE)] | None = None
        due: When | None = None
        source: Source | None = None
        valid_from: Annotated[Valid, Meta(description=w.VALID_FROM)] | None = None
        valid_until: Annotated[Valid, Meta(description=w.VALID_UNTIL)] | None = None
        id: MemoryId | None = None
        expected_version: Expected | None = None
        restore: Annotated[int, Meta(ge=1, le=2**63 - 1, description=w.RESTORE)] | None = None
        do_not_keep: Annotated[bool, Meta(description=f"forget: {w.DO_NOT_KEEP}")] = False
        request_key: RequestKey | None = None

    def _do(self, p: KeptMemoryWriteTool.Params) -> ToolResult:
        from backscroll.contract import keep as k

        keeper = self.keeper()
        if p.action == "keep":
            kept = keeper.keep(request(k.KeepRequest, p), "tool")
            lines = [shown(kept.memory)]
            lines += [f"similar: {s.id} v{s.version} {s.line}" for s in kept.similar]
            return answered(kept, "\n".join(lines))
        if p.action == "revise":
            revised = keeper.revise(request(k.ReviseRequest, p), "tool")
            return answered(revised, shown(revised.memory))
        gone = keeper.forget(request(k.ForgetRequest, p), "tool")
        return answered(gone, f"forgot {gone.id} (version {gone.version})")


def request(kind: Callable[..., Any], params: contract.Request) -> Any:
    """The action's request: the parameters it takes that were given (the rest default)."""
    fields = kind.__struct_fields__  # type: ignore[attr-defined]
    given = {
        name: value
        for name, value in msgspec.structs.asdict(params).items()
        if name in fields and value is not None
    }
    return contract.parse(kind, given)  # type: ignore[arg-type]


def answered(answer: msgspec.Struct, text: str) -> ToolResult:
    return ToolResult(output=text, metadata=contract.to_json(answer))


def refusal(refused: KeepRefusal) -> ToolResult:
    message = one_line(refused.message)
    shown_refusal = msgspec.structs.replace(refused, message=message)
    return ToolResult(
        output=f"{refused.error}: {message}",
        metadata=contract.to_json(shown_refusal),
        is_error=True,
    )


def shown(memory: Memory) -> str:
    return f"{memory.id} v{memory.version} {memory.line}"


def page(answer: MemoriesAnswer, empty: str) -> ToolResult:
    lines = [shown(m) for m in answer.memories]
    if answer.next_cursor:
        lines.append(f"more: cursor {answer.next_cursor}")
    return answered(answer, "\n".join(lines) or empty)
