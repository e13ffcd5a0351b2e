"""The global pause hotkey: a listener for the config's ``pause_hotkey``, following it as it
changes, and the process-wide thread hook that keeps its end quiet when the display goes."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any

from base.config import Config

log = logging.getLogger("backscroll.daemon")


class PauseHotkey:
    """``problem`` says why no listener runs (None: it runs, or none was asked for)."""

    def __init__(self, toggle: Callable[[], None]) -> None:
        self.toggle = toggle
        self.problem: str | None = None
        self._hotkey: Any = None
        self._combo: str | None = None  # the combination listened for; None: none yet
        self._default_excepthook = threading.excepthook
        threading.excepthook = self._thread_failed

    def follow(self, config: Config, unavailable: str | None) -> None:
        """Listen for the config's hotkey: a changed one replaces the old listener, and
        ``''`` stops it. ``unavailable``: why no global hotkey can work on this desktop."""
        if config.pause_hotkey == self._combo:
            return
        self.stop()
        self._combo = config.pause_hotkey
        self.problem = None
        if not config.pause_hotkey:
            return
        if unavailable:
            self.problem = unavailable
            return
        try:
            from capture.hotkey import Hotkey

            self._hotkey = Hotkey(config.pause_hotkey, self.toggle)
            self._hotkey.start()
        except Exception as exc:  # pynput raises many kinds where it cannot work
            self.problem = f"{type(exc).__name__}: {exc}"
            log.warning("pause hotkey unavailable: %s", self.problem)

    def restart(self, config: Config, unavailable: str | None) -> None:
        """A new listener on a new display: pynput's ended with its X connection."""
        self.stop()
        self.follow(config, unavailable)

    def stop(self) -> None:
        if self._hotkey is not None:
            with contextlib.suppress(Exception):  # stopping it needs the connection that is gone
                self._hotkey.stop()
        self._hotkey = None
        self._combo = None

    def close(self) -> None:
        """Stop listening and give the process its thread hook back."""
        self.stop()
        threading.excepthook = self._default_excepthook

    def _thread_failed(self, args: threading.ExceptHookArgs) -> None:
        """``threading.excepthook`` while the daemon runs.

        pynput's listener thread ends with an X error when the display goes away; that is
        one line in the log, not a traceback: the probe loop notices the same loss and
        starts a new listener once the display is back. Anything else is a bug, reported by
        the default hook.
        """
        from Xlib import error

        listener = getattr(self._hotkey, "listener", None)
        lost = (error.ConnectionClosedError, error.DisplayError)
        if args.thread is not None and args.thread is listener and isinstance(args.exc_value, lost):
            self.problem = "the display went away"
            log.warning("pause hotkey stopped: %s", self.problem)
            return
        self._default_excepthook(args)
