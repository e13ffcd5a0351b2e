"""The daemon's meaning socket: it answers the meaning half of a command's search.

Started by the daemon when the model is installed and search by meaning is on (a config
that turns it on later is served from the next start; commands meanwhile find the frames by
meaning themselves). Its thread loads the model first, then makes ``run/meaning.sock``
(``backscroll.meaning_socket``: the protocol and where it lives), replacing the socket a
daemon that died left behind (this daemon holds ``daemon.lock``: no other serves this home).
It answers one connection at a time, each within ``TIMEOUT`` of its bytes, with
``Meaning.hits`` on the store's meaning view, the months it read kept loaded between
questions. A connection of another uid is hung up on; a request that does not read gets an
``error`` answer and one line in the log; nothing a client sends ends the thread.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator

from backscroll.meaning_socket import (
    MAX_REQUEST,
    MAX_UNREADABLE,
    SOCKET,
    TIMEOUT,
    MeaningAnswer,
    MeaningAsked,
    Near,
    WireError,
    peer_uid,
    read_message,
    send_message,
    socket_address,
)
from backscroll.store import MemoryStore
from base.fs import ensure_dir

log = logging.getLogger("backscroll.daemon")

BACKLOG = 16
# What an error answer says of its cause: a line, within the answer's limit.
ERROR_CHARS = 300


class MeaningServer:
    """``start`` with the daemon's store; ``close`` before the daemon stops."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self._stop = threading.Event()
        self._lock = threading.Lock()  # the listener, made by the thread, shut by close
        self._listener: socket.socket | None = None
        self._thread = threading.Thread(target=self._run, name="meaning-socket", daemon=True)

    def start(self) -> None:
        """Serve, where the model is installed and the config says search by meaning."""
        from projector import embedder

        if self.store.config.meaning and embedder.available():
            self._thread.start()

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            if self._listener is not None:
                # Wakes the thread's accept: a shut listening socket returns at once.
                with contextlib.suppress(OSError):
                    self._listener.shutdown(socket.SHUT_RDWR)
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        from projector.embedder import embedder

        try:
            embedder()  # loaded before the socket exists: a command asks a ready daemon
        except Exception:
            log.exception("the meaning model did not load: commands search by meaning themselves")
            return
        try:
            folder = ensure_dir(self.store.layout.run)
            os.chmod(folder, 0o700)  # made by hand, or by an older umask: private again
            fd = os.open(folder, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:  # a full disk, a read-only home: capture goes on without it
            log.warning("no meaning socket (%s): commands search by meaning themselves", exc)
            return
        try:
            with self._listening(fd) as listener:
                if listener is not None:
                    log.info("answering searches by meaning on %s", folder / SOCKET)
                    self._serve(listener)
        except OSError as exc:
            log.warning("no meaning socket (%s): commands search by meaning themselves", exc)
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def _listening(self, fd: int) -> Iterator[socket.socket | None]:
        """The socket, bound and listening, removed after; None where ``close`` came first."""
        with self._lock:
            if self._stop.is_set():
                yield None
                return
            with contextlib.suppress(FileNotFoundError):
                os.unlink(SOCKET, dir_fd=fd)  # a dead daemon's: nothing listens on it
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(socket_address(fd))
            os.chmod(SOCKET, 0o600, dir_fd=fd)
            made = os.stat(SOCKET, dir_fd=fd)
            listener.listen(BACKLOG)
            self._listener = listener
        try:
            yield listener
        finally:
            with self._lock:
                self._listener = None
                listener.close()
                with contextlib.suppress(FileNotFoundError):
                    # Its own socket only: one a later server made in its place is left.
                    if os.path.samestat(os.stat(SOCKET, dir_fd=fd), made):
                        os.unlink(SOCKET, dir_fd=fd)

    def _serve(self, listener: socket.socket) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                if self._stop.is_set():
                    return
                log.exception("the meaning socket did not accept; retrying")
                self._stop.wait(1.0)
                continue
            with conn:
                try:
                    self._answer(conn)
                except OSError as exc:  # the command hung up, or took too long to ask
                    log.info("a search's connection to the meaning socket failed: %s", exc)

    def _answer(self, conn: socket.socket) -> None:
        uid = peer_uid(conn)
        if uid != os.getuid():
            log.warning("the meaning socket hung up on uid %d (not this daemon's)", uid)
            return
        deadline = time.monotonic() + TIMEOUT
        try:
            asked = read_message(conn, MeaningAsked, MAX_REQUEST, deadline)
        except WireError as exc:
            log.warning("a request on the meaning socket did not read: %s", exc)
            answer = MeaningAnswer(error=f"the request did not read: {exc}"[:ERROR_CHARS])
        else:
            try:
                answer = self.answer(asked)
            except Exception:
                log.exception("a search by meaning failed in the daemon")
                answer = MeaningAnswer(error="the search failed (the daemon's log says why)")
        conn.settimeout(TIMEOUT)  # what the request's deadline left may be too little to send
        send_message(conn, answer)

    def answer(self, asked: MeaningAsked) -> MeaningAnswer:
        """What ``Meaning.hits`` finds here, with the chunks it could not read."""
        meaning = self.store.searcher().meaning
        if meaning is None:
            return MeaningAnswer(error="search by meaning is off (config: meaning false)")
        found = meaning.hits(asked.query, asked.span())
        hits = [Near(h.frame_id, h.score, *h.span) for h in found[: asked.limit]]
        unread = list(meaning.view.unreadable.items())[:MAX_UNREADABLE]
        unreadable = {name[:ERROR_CHARS]: why[:ERROR_CHARS] for name, why in unread}
        return MeaningAnswer(hits, len(found) > asked.limit, unreadable)
