"""The daemon's embedding thread: the meaning view follows the words view, in the background.

At the lowest CPU priority (nice 19, this thread alone: Linux gives each thread its own), one
batch at a time (``projector.meaning.FRAMES_PER_BATCH``), each under the projector's lock
so a purge never races it. A frame is searchable by its words ~0.2 s after capture whatever
this thread does; by meaning once its batch commits. It sleeps while nothing waits, woken
by the projector thread each time it has caught the words up, and every ``IDLE_SECONDS``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable

from base.config import Config
from projector.runner import Projector

log = logging.getLogger("backscroll.daemon")

IDLE_SECONDS = 30.0
LOWEST = 19


class MeaningThread:
    """``start`` beside a projector; ``close`` before the projector closes."""

    def __init__(self, projector: Projector, config: Callable[[], Config]) -> None:
        self.projector = projector
        self.config = config
        self.wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="meaning", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self.wake.set()
        self._thread.join()

    def _run(self) -> None:
        from projector import embedder

        with contextlib.suppress(OSError):  # a container may refuse; the work is the same
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), LOWEST)
        while not self._stop.is_set():
            self.wake.clear()
            read = 0
            if self.config().meaning and embedder.available():
                try:
                    read = self.projector.embed(embedder.embedder())[1]
                except Exception:
                    log.exception("embedding failed; retrying")
            if not read:
                self.wake.wait(IDLE_SECONDS)
