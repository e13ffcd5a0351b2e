"""The capture daemon: probe, decide, grab, read text, redact, encrypt, append.

Threads (never forked processes: a forked child would inherit the log's lock):
- the probe loop (the caller's thread) polls the frontmost window every ``poll_seconds``;
- one worker turns a due capture into a frame (AT-SPI text, OCR, thumbnail, append), so a
  slow OCR never delays noticing the next switch; a capture that falls due while the worker
  is busy replaces any older one still waiting;
- the projector follows the log, keeping the views current, and runs housekeeping.
Logs never contain screen text or window titles.

A display that goes away (the X server or the Wayland compositor stopped or crashed) pauses
capture with the reason in the heartbeat; the probe loop opens the display again every
``RETRY_SECONDS`` until it answers, then starts the backends and the pause hotkey afresh on
it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from backscroll import grabs
from backscroll.heartbeat import Heartbeat, HeartbeatFile, read_heartbeat
from backscroll.housekeeping import housekeep
from backscroll.record import Seen, record_frame, remove_orphan_thumbnails
from backscroll.reindex import run_requested
from backscroll.store import CONFIG_FILE, MemoryStore
from base.clock import now_us
from base.config import Config
from base.errors import (
    BackscrollError,
    CaptureError,
    DiskFullError,
    KeyUnavailableError,
    LockedError,
)
from capture.ocr import panels
from capture.trigger import Trigger
from eventlog.events import (
    CapturePaused,
    CaptureReason,
    CaptureResumed,
    DaemonStarted,
    DaemonStopped,
    TextSource,
)

if TYPE_CHECKING:
    from PIL.Image import Image

    from backscroll.crypto import FrameCrypto
    from capture.probe import Frontmost
    from capture.screen import Monitor

log = logging.getLogger("backscroll.daemon")

HOUSEKEEPING_SECONDS = 3600
RETRY_SECONDS = 5.0


class Daemon:
    def __init__(
        self, home: str | os.PathLike[str] | None = None, *, interval: float | None = None
    ):
        self.store = MemoryStore(home, write=True, catch_up=False)
        self.home = self.store.home
        self.interval_override = interval
        self.stop_event = threading.Event()
        self.problem: str | None = None
        self._next_retry = 0.0  # when a paused capture next tries again
        self.outcome = "starting"
        self.counts: dict[str, dict[str, int]] = {"text_sources": {}, "reasons": {}}
        self.redactions: dict[str, int] = {}
        self.last_reason: str | None = None
        self.last_text_source: str | None = None
        self.last_capture_us: int | None = None
        self.hotkey_problem: str | None = None
        self._hotkey: Any = None
        self._hotkey_combo: str | None = None  # the combination listened for; None: none yet
        self._announce: bool | None = None  # the announce_accessibility acted on; None: none
        self._announced = False  # whether this daemon turned AT-SPI's IsEnabled on
        self._lock_fd = self._single_instance()
        self._pending: tuple[CaptureReason, Frontmost, float] | None = None
        self._wake = threading.Condition()
        self._busy = False
        self._last_signature: bytes | None = None
        self._deletions = 0  # deletions the state held at the probe loop's last look
        self._forget = False  # a deletion came since: the worker has the OCR engine forget
        self._last_window: int | None = None  # the window of ``_last_signature``
        # The probe's one X connection is not thread-safe: the probe loop and the worker
        # (visible windows) took turns without this and, after ~5,000 frames, one hung in
        # the middle of the X protocol.
        self._x_lock = threading.Lock()
        # The AT-SPI read mostly waits on the window's app: it runs beside the grab,
        # signature and thumbnail instead of after them (3 ms off a frame's wall time).
        self._reader = ThreadPoolExecutor(1, thread_name_prefix="ax-read")

    # -- lifecycle -------------------------------------------------------------------------

    def _single_instance(self) -> int:
        fd = os.open(self.home / "daemon.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            beat = read_heartbeat(self.home)
            pid = "?" if beat is None else beat.pid
            raise LockedError(
                f"a capture daemon is already running for {self.home} (pid {pid})"
            ) from None
        return fd

    def run(self) -> None:
        from capture.platform import backends

        grabs.keep_freed_memory()
        config = self.config()
        self.backends = backends(choice=config.capture_backend)
        self.backends.ocr.check()
        self.heartbeat = HeartbeatFile(self.home)
        self.started_us = now_us()
        self.store.log.append(DaemonStarted(ts_us=self.started_us, pid=os.getpid()))
        with self.store.log.locked():
            remove_orphan_thumbnails(self.home, self.store.log)
        self.trigger = Trigger()
        self._deletions = len(self.store.state().deletions)
        self._default_excepthook = threading.excepthook
        threading.excepthook = self._thread_failed
        self._follow_hotkey(config)
        self._follow_announcement(config)
        threads = [
            threading.Thread(target=self._project, name="projector", daemon=True),
            threading.Thread(target=self._work, name="capture-worker", daemon=True),
        ]
        for thread in threads:
            thread.start()
        log.info("capture daemon started (pid %d, home %s)", os.getpid(), self.home)
        reason = "stopped"
        try:
            self._probe_loop()
        except KeyboardInterrupt:
            reason = "interrupted"
        finally:
            self.stop_event.set()
            with self._wake:
                self._wake.notify_all()
            for thread in threads:
                thread.join(timeout=30)
            self._reader.shutdown()
            self._stop_hotkey()
            self._follow_announcement(config.replace(announce_accessibility=False))
            self.store.log.append(DaemonStopped(ts_us=now_us(), pid=os.getpid(), reason=reason))
            try:
                self.store.refresh()  # the last frames searchable: readers never catch up
            except Exception:  # the views can always be caught up later: stop cleanly
                log.exception("the views did not catch up before the daemon stopped")
            self.heartbeat.remove()
            threading.excepthook = self._default_excepthook
            os.close(self._lock_fd)
            log.info("capture daemon stopped (%s)", reason)

    def stop(self) -> None:
        self.stop_event.set()

    def config(self) -> Config:
        config = self.store.config
        if self.interval_override:
            config = config.replace(interval_seconds=self.interval_override)
        return config

    # -- the probe loop --------------------------------------------------------------------

    def _probe_loop(self) -> None:
        while not self.stop_event.is_set():
            config = self.config()
            started = time.monotonic()
            try:
                self._tick(config)
            except CaptureError as exc:
                self._set_problem(f"display unavailable: {exc}")
                self._reconnect(config)
                continue
            self._follow_hotkey(config)
            self._follow_announcement(config)
            self._beat(config)
            elapsed = time.monotonic() - started
            self.stop_event.wait(max(0.0, config.poll_seconds - elapsed))

    def _tick(self, config: Config) -> None:
        self.trigger.mode = config.trigger
        self.trigger.interval = config.interval_seconds
        self.trigger.min_interval = config.min_interval_seconds if config.trigger == "events" else 0
        state = self.store.state()
        if len(state.deletions) != self._deletions:
            # The worker acts on it: forgetting waits for an OCR read the worker may be in.
            self._deletions, self._forget = len(state.deletions), True
        if state.pause.active(now_us()):
            self.outcome = "paused"
            return
        if self.problem:
            self.outcome = "paused"
            if not self._recovered():
                return
        with self._x_lock:
            front = self.backends.probe.frontmost()
        if front is None:
            self.outcome = "no window"
            return
        now = time.monotonic()
        reason = self.trigger.due(now, front.app, front.title, front.window_id)
        if grabs.denied(config, front.app, front.title):
            # Checked before any pixel is read: a denied window is never grabbed. It still
            # becomes the reference, so switching back away from it is an app change.
            if reason is not None:
                self.trigger.done(now, front.app, front.title, False, front.window_id)
            self.outcome = "denied"
            return
        if reason is None:
            self.outcome = "unchanged" if not self._busy else "working"
            return
        # The trigger's reference moves when a capture is scheduled, not when the worker
        # finishes it: otherwise a switch seen while the worker is busy would be judged
        # against a window that is no longer the latest one scheduled.
        self.trigger.done(now, front.app, front.title, True, front.window_id)
        with self._wake:
            if self._pending is not None and self._pending[0] == "app_change":
                reason = "app_change"  # a newer state of a window just switched to
            self._pending = (reason, front, now)
            self._wake.notify()

    # -- the worker ------------------------------------------------------------------------

    def _work(self) -> None:
        while not self.stop_event.is_set():
            with self._wake:
                while self._pending is None and not self.stop_event.is_set():
                    self._wake.wait(1.0)
                if self.stop_event.is_set():
                    return
                assert self._pending is not None
                reason, front, when = self._pending
                self._pending = None
                self._busy = True
            try:
                self.outcome = self._capture(self.config(), reason, front, when)
                self.last_capture_us = now_us()
                log.info("capture (%s): %s", reason, self.outcome)
            except OSError as exc:
                if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                    self._set_problem("disk full")
                else:
                    self._set_problem(f"cannot write the store: {exc.strerror}")
                self.trigger.failed(reason)
                self.outcome = "error"
            except DiskFullError:
                self._set_problem("disk full")
                self.trigger.failed(reason)
                self.outcome = "error"
            except KeyUnavailableError as exc:
                self._set_problem(str(exc))
                self.trigger.failed(reason)
                self.outcome = "error"
            except BackscrollError as exc:
                log.warning("frame skipped: %s", exc)
                self.outcome = "error"
            except Exception as exc:  # a bug must cost one frame, never the capture thread
                log.exception("frame skipped after an unexpected %s", type(exc).__name__)
                self.outcome = "error"
            finally:
                self._busy = False

    def _capture(self, config: Config, reason: CaptureReason, front: Frontmost, when: float) -> str:
        from capture import screen

        captured_us = now_us()
        # Read before any pixel: a denied site, or a private window that only its accessible
        # name tells (Chromium's "(Incognito)"), is never grabbed.
        name, url = self._page(front.pid)
        if (name or url) and grabs.denied(config, front.app, name, url):
            return "denied"
        ax_text = self._reader.submit(self._ax_text, front.pid)
        image, monitor = self.backends.screen.grab(front.geometry)
        with self._x_lock:
            visible = self.backends.probe.visible_windows()
        denied = [
            w.geometry
            for w in visible
            if w.window_id != front.window_id and grabs.denied(config, w.app, w.title)
        ]
        if denied:
            # Beyond the spec: a password manager beside the active window is blacked out
            # before OCR and the thumbnail ever see it.
            screen.black_out(image, denied, origin=monitor.origin, scale=monitor.scale)
        sig = screen.signature(image)
        # Only a frame of the same window can be a duplicate: on a tiling compositor two
        # windows side by side make the same screen whichever has the focus, yet a switch
        # between them (same app, same title) is a new frame of the other window's text.
        if (
            reason != "app_change"
            and self._last_signature is not None
            and front.window_id == self._last_window
            and screen.difference(sig, self._last_signature) < config.dedupe_threshold
        ):
            return "duplicate"
        if self._forget:
            # The OCR engine keeps the text of lines it has read: they may be deleted frames'.
            self._forget = False
            self.backends.ocr.forget()
        text, source = self._text(config, front, ax_text, image, monitor)
        seen = Seen(
            captured_us=captured_us,
            app=front.app,
            title=front.title,
            text=text,
            text_source=source,
            reason=reason,
            pid=front.pid,
            jpeg=screen.thumbnail(image, config.thumbnail_width, config.thumbnail_quality),
            signature=grabs.event_signature(sig),
            monitor=(monitor.index, monitor.left, monitor.top, monitor.width, monitor.height),
            url=url,
        )
        crypto = self._crypto(config)
        with self.store.log.batch() as batch:
            frame = record_frame(batch, seen, config, crypto, self.home)
        self._last_signature, self._last_window = sig, front.window_id
        self._count("text_sources", source)
        self._count("reasons", reason)
        for kind, n in frame.redactions.items():
            self.redactions[kind] = self.redactions.get(kind, 0) + n
        self.last_reason, self.last_text_source = reason, source
        return "captured"

    def _ax_text(self, pid: int | None) -> str:
        if not pid:
            return ""
        try:
            return self.backends.ax.window_text(pid, max_chars=20000)
        except BackscrollError as exc:
            log.info("accessibility text unavailable: %s", exc)
            return ""

    def _page(self, pid: int | None) -> tuple[str, str]:
        if not pid:
            return "", ""
        try:
            return self.backends.ax.window_page(pid)
        except BackscrollError as exc:
            log.info("page address unavailable: %s", exc)
            return "", ""

    def _text(
        self, config: Config, front: Frontmost, ax_text: Future[str], image: Image, monitor: Monitor
    ) -> tuple[str, TextSource]:
        text = ax_text.result()
        if len(text.strip()) >= config.ax_min_chars and config.ocr_backend != "always":
            return text, "ax"
        region = grabs.window_region(image, front.geometry, monitor)
        # A window whose rectangle nobody gives (GNOME) is the whole desktop: each of its
        # light and dark regions is read alone (capture.ocr.panels).
        whole = tuple(front.geometry) == (monitor.left, monitor.top, monitor.width, monitor.height)
        try:
            parts = panels(region) if whole else [region]
            ocr = "\n".join(filter(None, (self.backends.ocr.text(part) for part in parts)))
        except BackscrollError as exc:
            log.warning("OCR failed on one frame: %s", exc)
            ocr = ""
        if len(text.strip()) >= config.ax_min_chars:
            return (text + "\n" + ocr).strip(), "ax"
        if ocr.strip():
            return ocr, "ocr"
        return text, "ax" if text.strip() else "none"

    def _crypto(self, config: Config) -> FrameCrypto | None:
        if not (config.encrypt_text or config.encrypt_thumbnails):
            return None
        return self.store.ensure_crypto()

    # -- the projector thread ----------------------------------------------------------------

    def _project(self) -> None:
        next_housekeeping = 0.0
        while not self.stop_event.is_set():
            try:
                with self.store.projector() as projector:

                    def idle() -> None:
                        nonlocal next_housekeeping
                        self.store.take_config_edit()
                        run_requested(self.store, projector)
                        if time.monotonic() >= next_housekeeping:
                            housekeep(self.store, projector, self.config())
                            next_housekeeping = time.monotonic() + HOUSEKEEPING_SECONDS

                    projector.follow(self.stop_event, idle, also=[self.home / CONFIG_FILE])
            except LockedError:  # a command is catching the views up itself: for a moment
                log.info("the views are held by another process; retrying")
                self.stop_event.wait(RETRY_SECONDS)
            except Exception:  # the views can always be rebuilt: never let them stop capture
                log.exception("projector failed; retrying")
                self.stop_event.wait(RETRY_SECONDS)

    # -- faults, heartbeat, hotkey -----------------------------------------------------------

    def _set_problem(self, problem: str) -> None:
        if problem != self.problem:
            log.warning("capture paused: %s", problem)
        self.problem = problem
        self._next_retry = time.monotonic() + RETRY_SECONDS

    def _recovered(self) -> bool:
        if time.monotonic() < self._next_retry:
            return False
        log.info("retrying capture after: %s", self.problem)
        self.problem = None
        return True

    def _reconnect(self, config: Config) -> None:
        """Open the display again every RETRY_SECONDS until it answers or the daemon stops.

        The heartbeat goes on meanwhile, so ``status`` shows the reason, not a stale daemon.
        The old backends are closed only once new ones are open: the worker may still be
        reading a window's text through them.
        """
        from capture.platform import backends

        self.outcome = "paused"
        while True:
            self._beat(config)
            if self.stop_event.wait(RETRY_SECONDS):
                return
            try:
                fresh = backends(choice=self.config().capture_backend)
            except CaptureError as exc:
                self._set_problem(f"display unavailable: {exc}")
                continue
            with self._x_lock:
                stale, self.backends = self.backends, fresh
            stale.close()
            break
        log.info("display available again; capture resumes")
        self.problem = None
        # pynput's listener ended with its X connection: a new one listens on the new one.
        self._stop_hotkey()
        self._follow_hotkey(config)

    def _count(self, kind: str, key: str) -> None:
        self.counts[kind][key] = self.counts[kind].get(key, 0) + 1

    def _beat(self, config: Config) -> None:
        self.heartbeat.write(
            Heartbeat(
                pid=os.getpid(),
                started_us=self.started_us,
                last_tick_us=now_us(),
                last_outcome=self.outcome,
                last_capture_us=self.last_capture_us,
                problem=self.problem,
                trigger=config.trigger,
                poll_seconds=config.poll_seconds,
                min_interval_seconds=config.min_interval_seconds,
                interval_seconds=config.interval_seconds,
                last_reason=self.last_reason,
                last_text_source=self.last_text_source,
                text_sources=self.counts["text_sources"],
                reasons=self.counts["reasons"],
                redactions=self.redactions,
                hotkey_problem=self.hotkey_problem,
                config_problem=self.store.config_problem,
                backend=self.backends.name,
                abilities=list(self.backends.abilities),
            )
        )

    def _follow_hotkey(self, config: Config) -> None:
        """Listen for the config's pause hotkey: a changed one replaces the old listener at
        the next tick, and ``''`` stops it."""
        if config.pause_hotkey == self._hotkey_combo:
            return
        self._stop_hotkey()
        self._hotkey_combo = config.pause_hotkey
        self.hotkey_problem = None
        if not config.pause_hotkey:
            return
        if self.backends.hotkey_problem:
            self.hotkey_problem = self.backends.hotkey_problem
            return
        try:
            from capture.hotkey import Hotkey

            self._hotkey = Hotkey(config.pause_hotkey, self.toggle_pause)
            self._hotkey.start()
        except Exception as exc:  # pynput raises many kinds where it cannot work
            self.hotkey_problem = f"{type(exc).__name__}: {exc}"
            log.warning("pause hotkey unavailable: %s", self.hotkey_problem)

    def _follow_announcement(self, config: Config) -> None:
        """Turn AT-SPI's IsEnabled on while ``announce_accessibility`` is, and back off when
        it is turned off or the daemon stops, if (and only if) this daemon turned it on: a
        screen reader's setting is never touched."""
        from capture.ax import set_accessibility_enabled

        if config.announce_accessibility == self._announce:
            return
        self._announce = config.announce_accessibility
        if self._announce:
            self._announced = set_accessibility_enabled(True) is False
            if self._announced:
                log.info("announced an assistive technology to apps (AT-SPI IsEnabled)")
        elif self._announced:
            set_accessibility_enabled(False)
            self._announced = False

    def _stop_hotkey(self) -> None:
        if self._hotkey is not None:
            with contextlib.suppress(Exception):  # stopping it needs the connection that is gone
                self._hotkey.stop()
        self._hotkey = None
        self._hotkey_combo = None

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
            self.hotkey_problem = "the display went away"
            log.warning("pause hotkey stopped: %s", self.hotkey_problem)
            return
        self._default_excepthook(args)

    def toggle_pause(self) -> None:
        if self.store.state().pause.active(now_us()):
            self.store.log.append(CaptureResumed(ts_us=now_us(), origin="daemon"))
        else:
            self.store.log.append(CapturePaused(ts_us=now_us(), origin="daemon", reason="hotkey"))


def run_daemon(home: Path | None, interval: float | None) -> None:
    Daemon(home, interval=interval).run()
