"""Window rectangles and pids from sway's IPC socket (the i3 IPC protocol).

wlr-foreign-toplevel gives each window's app id, title and state, but no position and no
pid; sway's ``GET_TREE`` gives both (``swaymsg -t get_tree``). One request on a fresh
connection took 1-3 ms with a few windows open on the test desktop. A message is the magic
``i3-ipc``, a payload length and a type (both native-endian u32), then JSON.
"""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from base.errors import CaptureError

_MAGIC = b"i3-ipc"
_HEADER = struct.Struct("=6sII")
GET_TREE = 4
# A tree of a few hundred windows is a few hundred KB; anything near this is not sway.
_MAX_REPLY = 64 << 20
_TIMEOUT_S = 2.0


@dataclass(frozen=True, slots=True)
class SwayWindow:
    """A window (a view) in sway's tree; ``rect`` is in layout (logical) coordinates,
    without borders and title bar."""

    con_id: int
    app: str  # app_id, or the X11 class of an XWayland window
    title: str
    pid: int | None
    rect: tuple[int, int, int, int]
    frame: tuple[int, int, int, int]  # with the border and title bar: what masking covers
    output: str
    focused: bool
    visible: bool


def request(path: str, kind: int, payload: bytes = b"") -> Any:
    """One IPC request on a fresh connection; the decoded JSON reply."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(_TIMEOUT_S)
            conn.connect(path)
            conn.sendall(_HEADER.pack(_MAGIC, len(payload), kind) + payload)
            magic, length, _kind = _HEADER.unpack(_read(conn, _HEADER.size))
            if magic != _MAGIC or length > _MAX_REPLY:
                raise CaptureError(f"{path} does not speak sway's IPC")
            body = _read(conn, length)
    except OSError as exc:
        raise CaptureError(f"sway's IPC socket {path} did not answer: {exc}") from None
    try:
        return json.loads(body)
    except ValueError:
        raise CaptureError(f"sway's IPC socket {path} sent something that is not JSON") from None


def windows(path: str) -> list[SwayWindow]:
    """Every view in sway's tree, in tree order (tiled, then floating, per workspace)."""
    return list(_walk(request(path, GET_TREE), ""))


def _walk(node: Any, output: str) -> Iterator[SwayWindow]:
    if not isinstance(node, dict):
        return
    if node.get("type") == "output":
        output = str(node.get("name", ""))
    children = [*node.get("nodes", ()), *node.get("floating_nodes", ())]
    if node.get("type") in ("con", "floating_con") and not children and "pid" in node:
        props = node.get("window_properties") or {}
        app = node.get("app_id") or props.get("class") or ""
        rect = node.get("rect") or {}
        inner = node.get("window_rect") or {}
        # ``rect`` includes the border and title bar; ``window_rect`` is the client area
        # relative to it.
        x = int(rect.get("x", 0)) + int(inner.get("x", 0))
        y = int(rect.get("y", 0)) + int(inner.get("y", 0))
        width = int(inner.get("width") or rect.get("width", 0))
        height = int(inner.get("height") or rect.get("height", 0))
        pid = node.get("pid")
        yield SwayWindow(
            con_id=int(node["id"]),
            app=str(app),
            title=str(node.get("name") or ""),
            pid=pid if isinstance(pid, int) and pid > 0 else None,
            rect=(x, y, width, height),
            frame=(
                int(rect.get("x", 0)),
                int(rect.get("y", 0)),
                int(rect.get("width", 0)),
                int(rect.get("height", 0)),
            ),
            output=output,
            focused=bool(node.get("focused")),
            visible=bool(node.get("visible")),
        )
    for child in children:
        yield from _walk(child, output)


def _read(conn: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = conn.recv(min(left, 1 << 20))
        if not chunk:
            raise OSError("the connection closed mid-reply")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
