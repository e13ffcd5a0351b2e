"""The view's kept memories (issue 27 §4): their pages' JSON is the keep contract's, each
route one call of ``backscroll.keep.Keeper``, as ``backscroll keep --json`` prints it.

Reads share the view's one reader of the store, through one keeper kept with it (each call
reads only what the log gained since the last); a proposed memory is served by the review
queue alone, as every other read leaves it out. A change (approve, restore, forget) opens a
writer for its call, as the CLI does, so the audit trail records it (origin ``api``).
Approving is the person's act: the view may, as the CLI may, and no agent's tool can.

A refusal is the contract's ``KeepRefusal`` (its code and one line); a store that cannot be
written answers the view's ``Refusal`` in one line, as the other control actions do.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from backscroll import contract
from backscroll.contract.keep import (
    ApproveRequest,
    ForgetRequest,
    GetRequest,
    HistoryRequest,
    KeepRefusal,
    KeptStatusRequest,
    ListRequest,
    ReviewRequest,
    ReviseRequest,
)
from backscroll.view._http import JSON, change, from_body, from_query, refusal, reply
from base.errors import BackscrollError, UsageError

if TYPE_CHECKING:
    from backscroll.keep import Keeper
    from backscroll.store import MemoryStore

PAGES = ["/memories", "/memories/{id}"]
# A refusal's status: a memory gone or never served is not found; a write that lost a race
# (a stale version, a claim kept meanwhile) is a conflict; the rest does not fit.
STATUS = {"not_found": 404, "version_conflict": 409, "claim_exists": 409}


class Kept:
    """One keeper on the view's reader of the store (``reader``: its one read at a time),
    made at its first use."""

    def __init__(self, reader: Callable[[], AbstractContextManager[MemoryStore]]) -> None:
        self.reader = reader
        self.keeper: Keeper | None = None

    @contextmanager
    def open(self) -> Iterator[Keeper]:
        from backscroll.keep import Keeper

        with self.reader() as store:
            if self.keeper is None:
                self.keeper = Keeper(store)
            yield self.keeper


def routes(
    reader: Callable[[], AbstractContextManager[MemoryStore]], home: Path | None
) -> list[Route]:
    """The kept memories' JSON routes (their pages are the view's one page: ``PAGES``)."""
    kept = Kept(reader)

    def memories(request: Request) -> Response:
        asked = from_query(request, ListRequest)
        with kept.open() as keeper:
            return reply(keeper.memories(asked))

    def review(request: Request) -> Response:
        asked = from_query(request, ReviewRequest)
        with kept.open() as keeper:
            return reply(keeper.review(asked))

    def status(request: Request) -> Response:
        from_query(request, KeptStatusRequest)
        with kept.open() as keeper:
            return reply(keeper.status())

    def memory(request: Request) -> Response:
        asked = contract.parse(GetRequest, {"id": request.path_params["id"]})
        with kept.open() as keeper:
            return reply(keeper.get(asked))

    def history(request: Request) -> Response:
        asked = contract.parse(HistoryRequest, {"id": request.path_params["id"]})
        with kept.open() as keeper:
            return reply(keeper.history(asked))

    async def approve(request: Request) -> Response:
        asked = await from_body(request, ApproveRequest)
        return await _change(lambda keeper: keeper.approve(asked, "api"), home)

    async def revise(request: Request) -> Response:
        asked = await from_body(request, ReviseRequest)
        return await _change(lambda keeper: keeper.revise(asked, "api"), home)

    async def forget(request: Request) -> Response:
        asked = await from_body(request, ForgetRequest)
        return await _change(lambda keeper: keeper.forget(asked, "api"), home)

    def reads(handler: Callable[[Request], Response]) -> Callable[[Request], Response]:
        def answered(request: Request) -> Response:
            try:
                return handler(request)
            except BackscrollError as exc:
                return _refusal(exc)

        return answered

    def changes(handler: Callable[[Request], Awaitable[Response]]) -> Callable[..., object]:
        async def answered(request: Request) -> Response:
            try:
                return await handler(request)
            except BackscrollError as exc:
                return _refusal(exc)

        return answered

    return [
        Route("/api/kept", reads(memories)),
        Route("/api/kept/review", reads(review)),
        Route("/api/kept/status", reads(status)),
        Route("/api/kept/approve", changes(approve), methods=["POST"]),
        Route("/api/kept/revise", changes(revise), methods=["POST"]),
        Route("/api/kept/forget", changes(forget), methods=["POST"]),
        Route("/api/kept/{id}", reads(memory)),
        Route("/api/kept/{id}/history", reads(history)),
    ]


def _refusal(exc: BackscrollError) -> Response:
    """A keeper's refusal with its code; any other request that does not fit is ``invalid``
    (as ``backscroll keep --json`` says it); the rest is the view's one line."""
    from backscroll.keep import Refused

    if isinstance(exc, Refused):
        refused = exc.refusal
    elif isinstance(exc, UsageError):
        refused = KeepRefusal(error="invalid", message=str(exc))
    else:
        return refusal(exc)
    code = STATUS.get(refused.error, 400)
    return Response(msgspec.json.encode(refused), code, media_type=JSON)


async def _change(action: Callable[[Keeper], msgspec.Struct], home: Path | None) -> Response:
    """``action`` on a keeper of a writer of the store (``_http.change``)."""
    from backscroll.keep import Keeper

    return await change(lambda store: action(Keeper(store)), home, _refusal)
