"""The daemon's projector thread: the views follow the log, and while it is idle, a hand
edit of the config is taken, a requested reindex runs, and housekeeping runs hourly; beside
it, the embedding thread (``meaning_thread``) brings the meaning view along."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from backscroll.housekeeping import housekeep
from backscroll.meaning_thread import MeaningThread
from backscroll.reindex import run_requested
from backscroll.store import CONFIG_FILE, MemoryStore
from base.config import Config
from base.errors import LockedError

log = logging.getLogger("backscroll.daemon")

HOUSEKEEPING_SECONDS = 3600


class ProjectorThread:
    """``run`` until ``stop_event``; ``config`` gives the config in force (the daemon's
    interval override applied). The views can always be rebuilt: a failure is logged and
    retried every ``retry_seconds``, never allowed to stop capture."""

    def __init__(
        self,
        store: MemoryStore,
        config: Callable[[], Config],
        stop_event: threading.Event,
        retry_seconds: float,
    ) -> None:
        self.store, self.config = store, config
        self.stop_event = stop_event
        self.retry_seconds = retry_seconds
        self._next_housekeeping = 0.0

    def run(self) -> None:
        while not self.stop_event.is_set():
            try:
                self._follow()
            except LockedError:  # a command is catching the views up itself: for a moment
                log.info("the views are held by another process; retrying")
                self.stop_event.wait(self.retry_seconds)
            except Exception:
                log.exception("projector failed; retrying")
                self.stop_event.wait(self.retry_seconds)

    def _follow(self) -> None:
        with self.store.projector() as projector:
            meaning = MeaningThread(projector, self.config)

            def idle() -> None:
                self.store.take_config_edit()
                run_requested(self.store, projector)
                if time.monotonic() >= self._next_housekeeping:
                    housekeep(self.store, projector, self.config())
                    self._next_housekeeping = time.monotonic() + HOUSEKEEPING_SECONDS
                meaning.wake.set()  # the words are caught up: embed what is new

            meaning.start()
            try:
                projector.follow(self.stop_event, idle, also=[self.store.home / CONFIG_FILE])
            finally:
                meaning.close()
