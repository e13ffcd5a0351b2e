"""When to capture: the spec's table, as a small state machine with no I/O.

frontmost app changed                  app_change, kept even if few pixels changed
same app, another window, or its       title_change, unless the screen is identical to that
  title's letters changed                window's last frame
nothing changed for interval_seconds   interval, kept only if the screen changed
faster than min_interval_seconds       debounced: the next allowed poll takes the latest
"""

from __future__ import annotations

from dataclasses import dataclass

from eventlog.events import CaptureReason


def letters(title: str) -> str:
    """A title compared by its letters only: spinners, counters, percentages and clocks
    (``◐ Build``, ``(3) Slack``, ``45%``, ``12:04``) do not make a new frame."""
    return "".join(c for c in title.casefold() if c.isalpha())


@dataclass
class Trigger:
    mode: str = "events"
    interval: float = 30.0
    min_interval: float = 2.0
    last_app: str | None = None
    last_title: str = ""
    last_window: int | None = None
    """The frontmost window's handle (the X window id): two windows of one app with the same
    title (two terminals titled "bash") are still two windows."""
    last_capture: float | None = None
    last_attempt: float = 0.0
    retry: CaptureReason | None = None

    def due(
        self, now: float, app: str, title: str, window: int | None = None
    ) -> CaptureReason | None:
        """The reason to capture now, or None. Call ``done`` after a capture attempt."""
        if self.last_capture is not None and now - self.last_capture < self.min_interval:
            return None  # debounced; the change is still there at the next allowed poll
        if self.retry is not None:
            return self.retry
        if self.mode == "interval":
            if self.last_app is None:
                return "start"
            return "interval" if now - self.last_attempt >= self.interval else None
        if self.last_app is None:
            return "start"
        if app != self.last_app:
            return "app_change"
        if letters(title) != letters(self.last_title) or window != self.last_window:
            return "title_change"
        if now - self.last_attempt >= self.interval:
            return "interval"
        return None

    def done(
        self, now: float, app: str, title: str, captured: bool, window: int | None = None
    ) -> None:
        """Record an attempt: the window is now the reference, captured or not (a duplicate
        is not retried until something changes again or the next interval)."""
        self.last_app, self.last_title, self.last_window = app, title, window
        self.last_attempt = now
        self.retry = None
        if captured:
            self.last_capture = now

    def failed(self, reason: CaptureReason) -> None:
        """A scheduled capture could not be stored: take the screen again when next allowed."""
        self.retry = reason
