"""The capture loop: the probe loop's tick decides, the worker takes and records.

- ``tick`` (the probe loop, every ``poll_seconds``) asks the camera which window is in
  front and the trigger whether a frame of it is due, and schedules it;
- ``work`` (one worker thread) has the camera take a scheduled frame and the recorder
  append it, so a slow OCR never delays noticing the next switch; a frame that falls due
  while the worker is busy replaces any older one still waiting.

Logs never contain screen text or window titles.
"""

from __future__ import annotations

import errno
import logging
import threading
import time
from typing import TYPE_CHECKING

from base.clock import now_us
from base.config import Config
from base.errors import BackscrollError, DiskFullError, KeyUnavailableError
from capture.deny import denied
from capture.trigger import Trigger
from eventlog.events import CaptureReason

if TYPE_CHECKING:
    from backscroll.record import Recorder
    from backscroll.store import MemoryStore
    from capture.camera import Camera
    from capture.probe import Frontmost
    from capture.seen import Likeness
    from projector.state import State

log = logging.getLogger("backscroll.daemon")


class CaptureLoop:
    """What the heartbeat tells of capture: ``outcome`` (of the last tick or frame) and
    ``problem`` (why capture is paused: the disk full, the display gone; None while it
    captures). A problem is retried every ``retry_seconds``."""

    def __init__(
        self,
        store: MemoryStore,
        camera: Camera,
        recorder: Recorder,
        stop_event: threading.Event,
        retry_seconds: float,
    ) -> None:
        self.store, self.camera, self.recorder = store, camera, recorder
        self.stop_event = stop_event
        self.retry_seconds = retry_seconds
        self.trigger = Trigger()
        self.outcome = "starting"
        self.last_capture_us: int | None = None
        """When the worker last finished a frame (taken, a duplicate or denied): a worker
        stuck in OCR shows as this growing old while the ticks go on."""
        self.problem: str | None = None
        self._next_retry = 0.0  # when a paused capture next tries again
        self._deletions = len(store.state().deletions)  # as the last tick saw them
        self._pending: tuple[CaptureReason, Frontmost, Config] | None = None
        self._wake = threading.Condition()
        self._busy = False
        self._last: Likeness | None = None  # of the last frame recorded

    def tick(self, config: Config) -> None:
        """Schedule a frame if one is due (``CaptureError``: the display is gone)."""
        self.trigger.mode = config.trigger
        self.trigger.interval = config.interval_seconds
        self.trigger.min_interval = config.min_interval_seconds if config.trigger == "events" else 0
        state = self.follow_deletions()
        if state.pause.active(now_us()):
            self.outcome = "paused"
            return
        if self.problem:
            self.outcome = "paused"
            if not self._recovered():
                return
        front = self.camera.frontmost()
        if front is None:
            self.outcome = "no window"
            return
        now = time.monotonic()
        reason = self.trigger.due(now, front.app, front.title, front.window_id)
        if denied(config, front.app, front.title):
            # Checked before any pixel is read: a denied window is never grabbed. It still
            # becomes the reference, so switching back away from it is an app change.
            if reason is not None:
                self.trigger.done(now, front.app, front.title, False, front.window_id)
            self.outcome = "denied"
            return
        if reason is None:
            self.outcome = "unchanged" if not self._busy else "working"
            return
        # The trigger's reference moves when a frame is scheduled, not when the worker
        # finishes it: otherwise a switch seen while the worker is busy would be judged
        # against a window that is no longer the latest one scheduled.
        self.trigger.done(now, front.app, front.title, True, front.window_id)
        with self._wake:
            if self._pending is not None and self._pending[0] == "app_change":
                reason = "app_change"  # a newer state of a window just switched to
            self._pending = (reason, front, config)
            self._wake.notify()

    def follow_deletions(self) -> State:
        """Have the camera forget what it read once a deletion is new since the last call
        (paused or not, the display there or not); the views' state as it is now."""
        state = self.store.state()
        if len(state.deletions) != self._deletions:
            self._deletions = len(state.deletions)
            self.camera.forget()
        return state

    def work(self) -> None:
        """The worker thread: take and record each scheduled frame until the stop event."""
        try:
            while (due := self._next()) is not None:
                reason, front, config = due
                try:
                    self.outcome = self.frame(reason, front, config)
                    if self.outcome != "error":
                        self.last_capture_us = now_us()
                    log.info("capture (%s): %s", reason, self.outcome)
                finally:
                    self._busy = False
        finally:
            self.camera.close_thread()

    def _next(self) -> tuple[CaptureReason, Frontmost, Config] | None:
        """The frame scheduled next, once there is one; None once the daemon stops."""
        with self._wake:
            while self._pending is None and not self.stop_event.is_set():
                self._wake.wait(1.0)
            if self._pending is None or self.stop_event.is_set():
                return None
            due, self._pending = self._pending, None
            self._busy = True
            return due

    def wake(self) -> None:
        """Have the worker look at the stop event now."""
        with self._wake:
            self._wake.notify_all()

    def frame(self, reason: CaptureReason, front: Frontmost, config: Config) -> str:
        """Take and record one frame; its outcome (``captured``, ``denied``, ``duplicate``,
        ``deleted``, ``error``). A fault of the store pauses capture; any other costs this
        one frame."""
        try:
            seen = self.camera.take(front, reason, config, after=self._last)
            if isinstance(seen, str):
                return seen
            if self.recorder.record(seen, config) is None:
                return "deleted"  # seen before a deletion that was asked for meanwhile
            self._last = seen.likeness
            return "captured"
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                self.set_problem("disk full")
            else:
                self.set_problem(f"cannot write the store: {exc.strerror}")
        except DiskFullError:
            self.set_problem("disk full")
        except KeyUnavailableError as exc:
            self.set_problem(str(exc))
        except BackscrollError as exc:
            log.warning("frame skipped: %s", exc)
            return "error"
        except Exception as exc:  # a bug must cost one frame, never the capture thread
            log.exception("frame skipped after an unexpected %s", type(exc).__name__)
            return "error"
        self.trigger.failed(reason)
        return "error"

    def set_problem(self, problem: str) -> None:
        if problem != self.problem:
            log.warning("capture paused: %s", problem)
        self.problem = problem
        self._next_retry = time.monotonic() + self.retry_seconds

    def _recovered(self) -> bool:
        if time.monotonic() < self._next_retry:
            return False
        log.info("retrying capture after: %s", self.problem)
        self.problem = None
        return True
