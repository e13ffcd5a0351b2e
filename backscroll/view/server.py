"""The view's routes: its pages (one page of the package's own script and style, which reads
its address) and its JSON, which is the answer contract's: each route parses its request
Struct from the query (or a POST's body), makes the one library call of ``answer`` and sends
the answer Struct as msgspec encodes it. A refusal is the contract's ``Refusal``: one line.

Reads share one reader of the store, kept open so its search views stay loaded, and read the
log's end again when it has grown (a second reader for thumbnails cost 37 MB of RSS at 1M
frames, past the issue's 150 MB, for no CPU the 2 cores had to spare); a change opens a
writer for its call, as the CLI does, so the audit trail records it (origin ``api``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backscroll import answer, contract
from base.errors import BackscrollError, NotFoundError, UsageError

if TYPE_CHECKING:
    from backscroll.store import MemoryStore

R = TypeVar("R", bound=contract.Request)

STATIC = files("backscroll.view") / "static"
TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html"}
# A request's body at most: a deletion of a moment's ids is the largest (10,000 ids).
MAX_BODY = 256 * 1024
JSON = "application/json"
# The requests' arguments that are numbers (the rest of a query is text).
NUMBERS = frozenset({"limit", "id"})


# The time this thread's read waited for the reader, which ``Server-Timing`` says apart
# (``wait``): a page's thumbnails come at once, each waiting for the ones before it.
WAITED = threading.local()


class Reader:
    """One reader of the store for every read, one read at a time (the search views it
    keeps open are not shared between threads)."""

    def __init__(self, home: Path | None) -> None:
        from backscroll.store import MemoryStore

        self.home = home
        self.store = MemoryStore(home)
        self.lock = threading.Lock()
        self.mark = self.store.log.mark()

    @contextmanager
    def open(self) -> Iterator[MemoryStore]:
        asked = time.perf_counter()
        with self.lock:
            WAITED.ms = getattr(WAITED, "ms", 0.0) + (time.perf_counter() - asked) * 1000
            mark = self.store.log.mark()
            if mark != self.mark:
                self.store.reread()
                self.mark = mark
            yield self.store


def build(home: Path | None) -> ASGIApp:
    """The view's application (behind ``guard.Guard``, which ``serve`` puts in front)."""
    reader = Reader(home)

    def page(request: Request) -> Response:
        return Response(_static("index.html"), media_type="text/html")

    def static(request: Request) -> Response:
        name = request.path_params["name"]
        suffix = Path(name).suffix
        if suffix not in TYPES or "/" in name or name.startswith("."):
            return _refusal(NotFoundError(f"no file {name!r}"))
        try:
            body = _static(name)
        except FileNotFoundError:
            return _refusal(NotFoundError(f"no file {name!r}"))
        return Response(body, media_type=TYPES[suffix])

    def search(request: Request) -> Response:
        asked = _query(request, contract.SearchRequest)
        with reader.open() as store:
            return _json(answer.search(store, asked).answer)

    def timeline(request: Request) -> Response:
        asked = _query(request, contract.TimelineRequest)
        with reader.open() as store:
            return _json(answer.timeline(store, asked).answer)

    def frame(request: Request) -> Response:
        asked = _frame_request(request, include_image=False)
        with reader.open() as store:
            return _json(answer.show(store, asked).answer)

    def thumbnail(request: Request) -> Response:
        asked = _frame_request(request, include_image=True)
        with reader.open() as store:
            shown = answer.show(store, asked)
        if shown.jpeg is None:
            why = shown.answer.problem or f"frame #{asked.id} has no thumbnail"
            raise NotFoundError(why)
        return Response(shown.jpeg, media_type="image/jpeg")

    def summary(request: Request) -> Response:
        asked = _query(request, contract.SummaryRequest)
        with reader.open() as store:
            return _json(answer.summary(store, asked).answer)

    def status(request: Request) -> Response:
        _query(request, contract.StatusRequest)
        with reader.open() as store:
            return _json(answer.status(store).answer)

    async def pause(request: Request) -> Response:
        asked = await _body(request, contract.PauseRequest)
        return await _change(lambda store: answer.pause(store, asked, "api"), home)

    async def resume(request: Request) -> Response:
        await _body(request, contract.ResumeRequest)
        return await _change(lambda store: answer.resume(store, "api"), home)

    async def delete(request: Request) -> Response:
        asked = await _body(request, contract.DeleteRequest)
        return await _change(lambda store: answer.delete(store, asked, "api"), home)

    def changes(handler: Callable[[Request], Awaitable[Response]]) -> Callable[..., Any]:
        async def answered(request: Request) -> Response:
            try:
                return await handler(request)
            except BackscrollError as exc:
                return _refusal(exc)

        return answered

    def reads(handler: Callable[[Request], Response]) -> Callable[[Request], Response]:
        def answered(request: Request) -> Response:
            WAITED.ms = 0.0
            try:
                response = handler(request)
            except BackscrollError as exc:
                response = _refusal(exc)
            response.headers.append("server-timing", f"wait;dur={WAITED.ms:.2f}")
            return response

        return answered

    pages = ["/", "/day/{day}", "/search", "/frame/{id}", "/glance", "/control"]
    app = Starlette(
        routes=[
            *(Route(path, page) for path in pages),
            Route("/static/{name}", static),
            Route("/api/search", reads(search)),
            Route("/api/timeline", reads(timeline)),
            Route("/api/frame/{id}", reads(frame)),
            Route("/api/thumbnail/{id}", reads(thumbnail)),
            Route("/api/summary", reads(summary)),
            Route("/api/status", reads(status)),
            Route("/api/pause", changes(pause), methods=["POST"]),
            Route("/api/resume", changes(resume), methods=["POST"]),
            Route("/api/delete", changes(delete), methods=["POST"]),
        ]
    )
    return timed(app)


def timed(app: ASGIApp) -> ASGIApp:
    """``app``, each answer saying its server time (``Server-Timing``), which the browser's
    Performance API gives the page and the bench (``bench/view.py``) reads."""

    async def timing(scope: Scope, receive: Receive, send: Send) -> None:
        start = time.perf_counter()

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                spent = (time.perf_counter() - start) * 1000
                header = (b"server-timing", f"app;dur={spent:.2f}".encode())
                message = {**message, "headers": [*message.get("headers", []), header]}
            await send(message)

        await app(scope, receive, sending)

    return timing


def _static(name: str) -> bytes:
    return (STATIC / name).read_bytes()


def _json(answer: msgspec.Struct) -> Response:
    return Response(msgspec.json.encode(answer), media_type=JSON)


def _refusal(exc: BackscrollError) -> Response:
    code = 404 if isinstance(exc, NotFoundError) else 400
    return Response(msgspec.json.encode(contract.Refusal(error=str(exc))), code, media_type=JSON)


def _query(request: Request, kind: type[R]) -> R:
    """The query's parameters as ``kind``: a number where the request takes one."""
    given: dict[str, Any] = {}
    for name, value in request.query_params.multi_items():
        if name in given:
            raise UsageError(f"{name}: given twice")
        given[name] = _number(value) if name in NUMBERS else value
    return contract.parse(kind, given)


def _number(value: str) -> int | str:
    """A whole number, or the text as given (the request's check then names the argument)."""
    try:
        return int(value)
    except ValueError:
        return value


def _frame_request(request: Request, *, include_image: bool) -> contract.ShowRequest:
    given = _number(request.path_params["id"])
    return contract.parse(contract.ShowRequest, {"id": given, "include_image": include_image})


async def _body(request: Request, kind: type[R]) -> R:
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


async def _change(action: Callable[[MemoryStore], msgspec.Struct], home: Path | None) -> Response:
    """``action`` on a writer of the store, in a worker thread; why not, in one line, where
    it cannot be (a store opened read-only, a full disk, a scope that is refused)."""
    from starlette.concurrency import run_in_threadpool

    def changed() -> msgspec.Struct:
        from backscroll.store import MemoryStore

        with MemoryStore(home, write=True) as store:
            return action(store)

    try:
        return _json(await run_in_threadpool(changed))
    except BackscrollError as exc:
        return _refusal(exc)
    except OSError as exc:
        return _refusal(BackscrollError(f"the store cannot be changed here: {exc.strerror}"))
