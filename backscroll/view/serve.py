"""``backscroll view``'s server: loopback only, a secret per run, uvicorn in this process."""

from __future__ import annotations

import secrets
import socket
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from base.errors import UsageError

# 32 bytes: 256 bits, twice the floor of 128.
SECRET_BYTES = 32


class Address(NamedTuple):
    port: int
    token: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?token={self.token}"


def bind(port: int) -> list[socket.socket]:
    """Listening sockets on 127.0.0.1 and, where the machine has it, ::1, on ``port`` (0: a
    free one, the same on both). Nothing else can be bound: no option names an address."""
    four = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    four.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        four.bind(("127.0.0.1", port))
    except OSError as exc:
        four.close()
        raise UsageError(f"cannot serve on 127.0.0.1:{port}: {exc.strerror}") from None
    four.listen(128)
    bound = [four]
    six = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    try:
        six.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        six.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        six.bind(("::1", four.getsockname()[1]))
        six.listen(128)
        bound.append(six)
    except OSError:
        six.close()  # no IPv6 loopback here (or its port taken): 127.0.0.1 serves alone
    return bound


def serve(home: Path | None, port: int = 0, ready: Callable[[Address], None] | None = None) -> None:
    """Serve the view until interrupted; ``ready`` is told its address once it listens."""
    import uvicorn

    from backscroll.view.guard import Guard
    from backscroll.view.server import build

    sockets = bind(port)
    address = Address(sockets[0].getsockname()[1], secrets.token_urlsafe(SECRET_BYTES))
    app = Guard(build(home), address.token, address.port)
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,  # an access log would hold the secret and the searches
        lifespan="off",
        server_header=False,
        proxy_headers=False,
    )
    server = uvicorn.Server(config)
    if ready is not None:
        ready(address)
    server.run(sockets=sockets)
