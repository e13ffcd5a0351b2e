"""What every route of the view shares: its request Struct parsed from the query or a POST's
JSON body, its answer Struct sent as msgspec encodes it, a refusal in one line, and a change
made on a writer of the store (``server`` and ``memories``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from backscroll import contract
from base.errors import BackscrollError, NotFoundError, UsageError

if TYPE_CHECKING:
    from backscroll.store import MemoryStore

R = TypeVar("R", bound=contract.Request)

# A request's body at most: a deletion of a moment's ids is the largest (10,000 ids).
MAX_BODY = 256 * 1024
JSON = "application/json"
# The requests' arguments that are numbers (the rest of a query is text).
NUMBERS = frozenset({"limit", "id"})


def reply(answer: msgspec.Struct) -> Response:
    return Response(msgspec.json.encode(answer), media_type=JSON)


def refusal(exc: BackscrollError) -> Response:
    code = 404 if isinstance(exc, NotFoundError) else 400
    return Response(msgspec.json.encode(contract.Refusal(error=str(exc))), code, media_type=JSON)


def from_query(request: Request, kind: type[R]) -> R:
    """The query's parameters as ``kind``: a number where the request takes one."""
    given: dict[str, Any] = {}
    for name, value in request.query_params.multi_items():
        if name in given:
            raise UsageError(f"{name}: given twice")
        given[name] = number(value) if name in NUMBERS else value
    return contract.parse(kind, given)


def number(value: str) -> int | str:
    """A whole number, or the text as given (the request's check then names the argument)."""
    try:
        return int(value)
    except ValueError:
        return value


async def from_body(request: Request, kind: type[R]) -> R:
    """A POST's JSON body (none: an empty request) as ``kind``."""
    body = await request.body()
    if len(body) > MAX_BODY:
        raise UsageError(f"the request is larger than {MAX_BODY:,} bytes")
    try:
        given = msgspec.json.decode(body) if body else {}
    except (msgspec.DecodeError, RecursionError):
        raise UsageError("the request's body is not JSON") from None
    if not isinstance(given, dict):
        raise UsageError("the request's body must be a JSON object")
    return contract.parse(kind, given)


async def change(
    action: Callable[[MemoryStore], msgspec.Struct],
    home: Path | None,
    refused: Callable[[BackscrollError], Response] = refusal,
) -> Response:
    """``action`` on a writer of the store, in a worker thread; why not, in one line, where
    it cannot be (a store opened read-only, a full disk, a scope that is refused)."""
    from starlette.concurrency import run_in_threadpool

    def changed() -> msgspec.Struct:
        from backscroll.store import MemoryStore

        with MemoryStore(home, write=True) as store:
            return action(store)

    try:
        return reply(await run_in_threadpool(changed))
    except BackscrollError as exc:
        return refused(exc)
    except OSError as exc:
        return refusal(BackscrollError(f"the store cannot be changed here: {exc.strerror}"))
