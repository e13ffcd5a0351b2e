"""The meaning half of a search, asked of the daemon over a Unix socket.

A search is hybrid: its words fused with the frames by meaning (``query.meaning``). Finding
those in a new process means importing NumPy and ONNX Runtime and loading the model, ~0.5 s
against ~0.1 s for the words. The daemon keeps the model loaded, so a command asks it
(``Asker``) and fuses the answer with the words itself; the daemon's part that answers is
``backscroll.meaning_server``, which runs ``Meaning.hits`` on the same view, so the answer
is the one the command would have found. Where no daemon answers (none runs, its socket is
stale, it does not answer within ``TIMEOUT``, its answer does not read), the command finds
them itself, as it always did.

Where: ``run/meaning.sock`` under the store's home (``Layout.run``), the folder 0700 and the
socket 0600, both made by the daemon. A command writes nothing (reads never write): a stale
socket stays until the next daemon replaces it. Each side checks the other's uid
(``SO_PEERCRED``) and hangs up on any other than its own. The socket is reached through the
folder's descriptor (``/proc/self/fd/N/meaning.sock``): a home's path may be longer than the
108 bytes a socket's address holds.

The wire: one request and one answer a connection, each a 4-byte big-endian length and that
many bytes of MessagePack, decoded into the Structs below with their limits checked. A
request that does not read gets an answer with ``error`` set; bytes that do not read on
either side are one line (``WireError``), never a traceback.
"""

from __future__ import annotations

import os
import struct
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import msgspec
from msgspec import Meta

from base.errors import BackscrollError
from base.home import Layout
from projector.vectors import MeaningHit
from query import TimeSpan, utc_us
from query.parse import MAX_QUERY_CHARS

if TYPE_CHECKING:
    import socket

    from query.meaning import Asked

__all__ = [
    "MAX_HITS",
    "SOCKET",
    "TIMEOUT",
    "Asker",
    "MeaningAnswer",
    "MeaningAsked",
    "Near",
    "WireError",
    "peer_uid",
    "read_message",
    "send_message",
    "socket_address",
]

SOCKET = "meaning.sock"
# 0.25 s: a question cost the daemon 4-6 ms of CPU, and a search with it 10-20 ms more wall
# than one by words (bench/results/startup.txt); a hung daemon costs no more than this before
# the command loads the model itself, less than that load (~0.5 s).
TIMEOUT = 0.25
# A question matches every frame whose best passage scores the cut-off: a broad one over a
# large store may match tens of thousands. The first 20,000 (~0.5 MB) are sent; past them
# the command finds them itself, so its answer stays the one it would have found.
MAX_HITS = 20_000
# 1,000 characters of up to 4 bytes each, and the rest of the request.
MAX_REQUEST = 8 * 1024
# MAX_HITS hits of at most 4 + 9 + 9 + 9 + 9 bytes, and the chunks left unread.
MAX_ANSWER = 4 * 1024 * 1024
MAX_UNREADABLE = 1_000
LAST_US = 253_402_300_799_999_999  # 9999-12-31 23:59:59.999999 UTC, datetime's last
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
LENGTH = struct.Struct(">I")
UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid

Micros = Annotated[int, Meta(ge=0, le=LAST_US)]
Line = Annotated[str, Meta(max_length=1_000)]


class WireError(BackscrollError):
    """Bytes on the meaning socket that are no message of its protocol."""


class MeaningAsked(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag="meaning/1"):
    """A question: the frames of ``[start_us, end_us)`` (UTC microseconds, None: unbounded)
    by meaning, at most ``limit``. The tag names the protocol's version: a daemon of another
    version answers ``error``, and the command finds the frames itself."""

    query: Annotated[str, Meta(min_length=1, max_length=MAX_QUERY_CHARS, pattern=r"\S")]
    start_us: Micros | None = None
    end_us: Micros | None = None
    limit: Annotated[int, Meta(ge=1, le=MAX_HITS)] = MAX_HITS

    @classmethod
    def of(cls, query: str, span: TimeSpan) -> MeaningAsked:
        start = utc_us(span.start) if span.start else None
        end = utc_us(span.end) if span.end else None
        return cls(query, start, end)

    def span(self) -> TimeSpan:
        """The span asked for; ``utc_us`` gives back the same microseconds."""
        start = None if self.start_us is None else EPOCH + timedelta(microseconds=self.start_us)
        end = None if self.end_us is None else EPOCH + timedelta(microseconds=self.end_us)
        return TimeSpan(start, end)


class Near(msgspec.Struct, frozen=True, array_like=True):
    """A frame by meaning: its best passage's score and character span in its text."""

    frame_id: Annotated[int, Meta(ge=0, le=2**63 - 1)]
    # A cosine of int8 rows: a rounded row's length may pass 1 by a little, never 2.
    score: Annotated[float, Meta(ge=-2.0, le=2.0)]
    start: Annotated[int, Meta(ge=0, le=2**63 - 1)]
    end: Annotated[int, Meta(ge=0, le=2**63 - 1)]


class MeaningAnswer(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag="meaning/1"):
    hits: Annotated[list[Near], Meta(max_length=MAX_HITS)] = []
    """Best first, as ``Meaning.hits`` gives them."""
    more: bool = False
    """More frames matched than the request's ``limit``."""
    unreadable: Annotated[dict[Line, Line], Meta(max_length=MAX_UNREADABLE)] = {}
    """The chunks left out (``MeaningView.unreadable``)."""
    error: Line | None = None
    """Why the daemon did not answer the question (a request that does not read, search by
    meaning turned off); then nothing else is set."""


M = TypeVar("M", MeaningAsked, MeaningAnswer)


def socket_address(folder_fd: int) -> str:
    return f"/proc/self/fd/{folder_fd}/{SOCKET}"


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end (the kernel's word, ``SO_PEERCRED``)."""
    import socket

    _, uid, _ = UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, UCRED.size))
    return int(uid)


def send_message(sock: socket.socket, message: msgspec.Struct) -> None:
    body = msgspec.msgpack.encode(message)
    sock.sendall(LENGTH.pack(len(body)) + body)


def read_message(sock: socket.socket, kind: type[M], most: int, deadline: float) -> M:
    """One message of ``kind`` of at most ``most`` bytes, by ``deadline`` (``monotonic``).
    Raises WireError for bytes that are not one, TimeoutError past the deadline, OSError for
    a connection gone."""
    (size,) = LENGTH.unpack(_read(sock, LENGTH.size, deadline))
    if size > most:
        raise WireError(f"a message of {size:,} bytes (at most {most:,})")
    try:
        return msgspec.msgpack.decode(_read(sock, size, deadline), type=kind)
    except msgspec.DecodeError as exc:  # ValidationError is one
        raise WireError(f"not a message of the meaning socket ({exc})") from None


def _read(sock: socket.socket, size: int, deadline: float) -> bytes:
    data = bytearray()
    while len(data) < size:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no answer in time")
        sock.settimeout(left)
        piece = sock.recv(size - len(data))
        if not piece:
            raise WireError(f"the message ended after {len(data)} of {size} bytes")
        data += piece
    return bytes(data)


class Asker:
    """``Meaning.ask`` for a command: the frames by meaning from the daemon of ``home``, or
    None where it gives none (the command then finds them itself). ``problem``: why a daemon
    that runs gave none, for the command to say; None where none runs."""

    def __init__(self, home: Path) -> None:
        self.folder = Layout(home).run
        self.problem: str | None = None

    def __call__(self, query: str, span: TimeSpan) -> Asked | None:
        try:
            answer = self._ask(MeaningAsked.of(query, span))
        except (FileNotFoundError, ConnectionRefusedError):
            return None  # no daemon answers here: none runs, or its socket is stale
        except TimeoutError:
            self.problem = f"the daemon did not answer within {TIMEOUT} s"
            return None
        except WireError as exc:
            self.problem = f"the daemon's answer did not read ({exc})"
            return None
        except OSError as exc:  # it hung up, or its folder is not this user's to open
            self.problem = f"the daemon's socket failed ({exc})"
            return None
        if answer.error is not None:
            self.problem = f"the daemon did not answer: {answer.error}"
            return None
        if answer.more:
            return None  # past MAX_HITS: found here, where every hit is at hand
        hits = [MeaningHit(h.score, h.frame_id, (h.start, h.end)) for h in answer.hits]
        return hits, dict(answer.unreadable)

    def _ask(self, asked: MeaningAsked) -> MeaningAnswer:
        # Here, not at the top: a search of a store with no meaning view never asks, and the
        # socket module is ~2 ms of a search's ~100 (its constants made enums at import).
        import socket

        deadline = time.monotonic() + TIMEOUT
        folder = os.open(self.folder, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(TIMEOUT)
                sock.connect(socket_address(folder))
                uid = peer_uid(sock)
                if uid != os.getuid():
                    raise WireError(f"its socket is held by uid {uid}, not this user's")
                send_message(sock, asked)
                return read_message(sock, MeaningAnswer, MAX_ANSWER, deadline)
        finally:
            os.close(folder)
