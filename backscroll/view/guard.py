"""The view's door: nothing but the person's own browser tab reads the store.

An ASGI middleware in front of every route, so no route can forget a rule:

- the ``Host`` header must name the loopback address and port served (DNS rebinding: a
  page of another name resolved to 127.0.0.1 sends its own name);
- the per-run secret, given once as ``?token=`` on any page, is exchanged for an
  ``HttpOnly; SameSite=Strict`` cookie and the answer redirects to the same address without
  it; every other request needs the cookie, compared in constant time, or gets 403 and the
  one line ``REFUSED``;
- a request that is no navigation (an API call, a picture, a script) must come from the
  view's own pages (``Sec-Fetch-Site``): a page of another local origin shares the cookie's
  site (cookies ignore the port), and this keeps even its ``<img>`` from loading a frame;
- a change is a POST whose ``Origin`` is the view's own (CSRF); GET and HEAD only read;
- every answer carries a strict Content-Security-Policy, ``X-Frame-Options: DENY``,
  ``Referrer-Policy: no-referrer`` and ``Cache-Control: no-store``, and no CORS header.
"""

from __future__ import annotations

import hmac
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE = "backscroll_view"
REFUSED = "open the address `backscroll view` printed\n"
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
# Nothing from another origin, nothing inline; no frame may hold the view.
POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
HEADERS = [
    (b"content-security-policy", POLICY.encode()),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
    (b"x-content-type-options", b"nosniff"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
]
READS = frozenset({"GET", "HEAD"})
# What a browser's own request says of where it comes from; "none": typed or bookmarked.
OWN = frozenset({b"same-origin", b"none"})


class Guard:
    def __init__(self, app: ASGIApp, token: str, port: int) -> None:
        self.app = app
        self.token = token.encode()
        self.hosts = frozenset(f"{host}:{port}".encode() for host in LOOPBACK)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            return  # no websocket is served
        headers = dict(scope["headers"])  # a repeated header: the last one counts
        method = scope["method"]
        host = headers.get(b"host", b"")
        origin = headers.get(b"origin")
        if host not in self.hosts:
            await _refuse(send, 403, REFUSED)
            return
        given = _token(scope)
        if given is not None:
            if not hmac.compare_digest(given.encode(), self.token):
                await _refuse(send, 403, REFUSED)
                return
            await self._exchange(scope, send)
            return
        if not hmac.compare_digest(_cookie(headers), self.token):
            await _refuse(send, 403, REFUSED)
            return
        navigating = headers.get(b"sec-fetch-mode") == b"navigate"
        site = headers.get(b"sec-fetch-site")
        if not navigating and site is not None and site not in OWN:
            await _refuse(send, 403, "refused: not from the view's own pages\n")
            return
        if method not in READS:
            if method != "POST":
                await _refuse(send, 405, f"{method} is not served: reads are GET, changes POST\n")
                return
            if origin != b"http://" + host:
                await _refuse(send, 403, "refused: a change must come from the view's own page\n")
                return
        await self.app(scope, receive, _secured(send))

    async def _exchange(self, scope: Scope, send: Send) -> None:
        """The secret for a cookie, and the same address without it."""
        query: bytes = scope["query_string"]
        rest = [(k, v) for k, v in parse_qsl(query.decode(errors="replace")) if k != "token"]
        location = scope["path"] + (f"?{urlencode(rest)}" if rest else "")
        cookie = f"{COOKIE}={self.token.decode()}; HttpOnly; SameSite=Strict; Path=/"
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    *HEADERS,
                    (b"location", location.encode()),
                    (b"set-cookie", cookie.encode()),
                    (b"content-length", b"0"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})


def _token(scope: Scope) -> str | None:
    query: bytes = scope["query_string"]
    for key, value in parse_qsl(query.decode(errors="replace")):
        if key == "token":
            return value
    return None


def _cookie(headers: dict[bytes, bytes]) -> bytes:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get(b"cookie", b"").decode("latin-1"))
    except CookieError:  # a malformed cookie header is no cookie
        return b""
    morsel = jar.get(COOKIE)
    return morsel.value.encode() if morsel is not None else b""


def _secured(send: Send) -> Send:
    """``send``, with the view's headers on every answer (and a route's own of the same
    name dropped: no route may loosen them)."""
    names = {name for name, _ in HEADERS}

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            own = [(k, v) for k, v in message.get("headers", []) if k.lower() not in names]
            message = {**message, "headers": [*own, *HEADERS]}
        await send(message)

    return sending


async def _refuse(send: Send, status: int, line: str) -> None:
    body = line.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                *HEADERS,
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
