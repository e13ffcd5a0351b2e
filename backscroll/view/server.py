"""The view's routes: its pages (one page of the package's own script and style, which reads
its address) and its JSON, which is the answer contract's: each route parses its request
Struct from the query (or a POST's body), makes the one library call of ``answer`` and sends
the answer Struct as msgspec encodes it. A refusal is the contract's ``Refusal``: one line.
The kept memories' routes are ``memories``'; what every route shares is ``_http``.

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
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backscroll import answer, contract
from backscroll.view import memories
from backscroll.view._http import change, from_body, from_query, number, refusal, reply
from base.errors import BackscrollError, NotFoundError

if TYPE_CHECKING:
    from backscroll.store import MemoryStore

STATIC = files("backscroll.view") / "static"
TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html"}


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
            return refusal(NotFoundError(f"no file {name!r}"))
        try:
            body = _static(name)
        except FileNotFoundError:
            return refusal(NotFoundError(f"no file {name!r}"))
        return Response(body, media_type=TYPES[suffix])

    def search(request: Request) -> Response:
        asked = from_query(request, contract.SearchRequest)
        with reader.open() as store:
            return reply(answer.search(store, asked).answer)

    def timeline(request: Request) -> Response:
        asked = from_query(request, contract.TimelineRequest)
        with reader.open() as store:
            return reply(answer.timeline(store, asked).answer)

    def frame(request: Request) -> Response:
        asked = _frame_request(request, include_image=False)
        with reader.open() as store:
            return reply(answer.show(store, asked).answer)

    def thumbnail(request: Request) -> Response:
        asked = _frame_request(request, include_image=True)
        with reader.open() as store:
            shown = answer.show(store, asked)
        if shown.jpeg is None:
            why = shown.answer.problem or f"frame #{asked.id} has no thumbnail"
            raise NotFoundError(why)
        return Response(shown.jpeg, media_type="image/jpeg")

    def summary(request: Request) -> Response:
        asked = from_query(request, contract.SummaryRequest)
        with reader.open() as store:
            return reply(answer.summary(store, asked).answer)

    def status(request: Request) -> Response:
        from_query(request, contract.StatusRequest)
        with reader.open() as store:
            return reply(answer.status(store).answer)

    async def pause(request: Request) -> Response:
        asked = await from_body(request, contract.PauseRequest)
        return await change(lambda store: answer.pause(store, asked, "api"), home)

    async def resume(request: Request) -> Response:
        await from_body(request, contract.ResumeRequest)
        return await change(lambda store: answer.resume(store, "api"), home)

    async def delete(request: Request) -> Response:
        asked = await from_body(request, contract.DeleteRequest)
        return await change(lambda store: answer.delete(store, asked, "api"), home)

    def changes(handler: Callable[[Request], Awaitable[Response]]) -> Callable[..., Any]:
        async def answered(request: Request) -> Response:
            try:
                return await handler(request)
            except BackscrollError as exc:
                return refusal(exc)

        return answered

    def reads(handler: Callable[[Request], Response]) -> Callable[[Request], Response]:
        def answered(request: Request) -> Response:
            WAITED.ms = 0.0
            try:
                response = handler(request)
            except BackscrollError as exc:
                response = refusal(exc)
            response.headers.append("server-timing", f"wait;dur={WAITED.ms:.2f}")
            return response

        return answered

    pages = ["/", "/day/{day}", "/search", "/frame/{id}", "/glance", "/control", *memories.PAGES]
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
            *memories.routes(reader.open, home),
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


def _frame_request(request: Request, *, include_image: bool) -> contract.ShowRequest:
    given = number(request.path_params["id"])
    return contract.parse(contract.ShowRequest, {"id": given, "include_image": include_image})
