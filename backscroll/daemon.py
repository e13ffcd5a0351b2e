"""The capture daemon: a composition of named parts, each in its own module.

- the camera (``capture.camera.Camera``): the session's backends, taking a frame in one call;
- the capture loop (``backscroll.capture_loop``): the probe loop's tick on the caller's
  thread, and one worker thread that has the camera take each frame due;
- the recorder (``backscroll.record.Recorder``): redact, encrypt, append;
- the projector thread (``backscroll.projector_thread``): the views follow the log, with
  housekeeping (``backscroll.housekeeping``) hourly;
- the heartbeat (``backscroll.heartbeat``): ``daemon.json``, written every tick;
- the meaning socket (``backscroll.meaning_server``): the meaning half of a command's
  search, answered with the model the daemon keeps loaded;
- the pause hotkey and the AT-SPI announcement (``backscroll.pause_hotkey``,
  ``backscroll.announcement``), following the config.

Threads, never forked processes: a forked child would inherit the log's lock.

A display that goes away (the X server or the Wayland compositor stopped or crashed) pauses
capture with the reason in the heartbeat; the probe loop opens the display again every
``RETRY_SECONDS`` until it answers, then starts the backends and the pause hotkey afresh on
it.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from pathlib import Path

from backscroll.announcement import Announcement
from backscroll.capture_loop import CaptureLoop
from backscroll.heartbeat import Heartbeat, HeartbeatFile, read_heartbeat
from backscroll.meaning_server import MeaningServer
from backscroll.pause_hotkey import PauseHotkey
from backscroll.projector_thread import ProjectorThread
from backscroll.record import Recorder, remove_orphan_thumbnails
from backscroll.store import MemoryStore
from base.clock import now_us
from base.config import Config
from base.errors import CaptureError, LockedError
from base.fs import names
from capture.camera import Camera, keep_freed_memory
from eventlog.events import CapturePaused, CaptureResumed, DaemonStarted, DaemonStopped

log = logging.getLogger("backscroll.daemon")

RETRY_SECONDS = 5.0


class Daemon:
    def __init__(
        self, home: str | os.PathLike[str] | None = None, *, interval: float | None = None
    ):
        self.store = MemoryStore(home, write=True, catch_up=False)
        self.home = self.store.home
        self.interval_override = interval
        self.stop_event = threading.Event()
        self._lock_fd = self._single_instance()
        self._lock_lost = False  # said once: another process holds a new daemon.lock

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

    def _keep_lock(self) -> None:
        """Take the lock again when ``daemon.lock`` was removed or replaced while the daemon
        runs: the lock is on the file, so a second daemon would lock a new one and capture
        beside this one."""
        if names(self.home / "daemon.lock", self._lock_fd):
            return
        try:
            fd = self._single_instance()
        except LockedError as exc:
            if not self._lock_lost:
                log.warning("daemon.lock was replaced and is held by another process: %s", exc)
            self._lock_lost = True
            return
        log.info("daemon.lock was removed or replaced while the daemon ran: taken again")
        os.close(self._lock_fd)
        self._lock_fd, self._lock_lost = fd, False

    def run(self) -> None:
        keep_freed_memory()
        config = self.config()
        self.camera = Camera.open(config.capture_backend)
        self.heartbeat = HeartbeatFile(self.home)
        self.started_us = now_us()
        self.store.log.append(DaemonStarted(ts_us=self.started_us, pid=os.getpid()))
        with self.store.log.locked():
            remove_orphan_thumbnails(self.home, self.store.log)
        self.recorder = Recorder(self.store)
        self.loop = CaptureLoop(
            self.store, self.camera, self.recorder, self.stop_event, RETRY_SECONDS
        )
        self.hotkey = PauseHotkey(self.toggle_pause)
        self.announcement = Announcement()
        self.hotkey.follow(config, self.camera.backends.hotkey_problem)
        self.announcement.follow(config)
        views = ProjectorThread(self.store, self.config, self.stop_event, RETRY_SECONDS)
        threads = [
            threading.Thread(target=views.run, name="projector", daemon=True),
            threading.Thread(target=self.loop.work, name="capture-worker", daemon=True),
        ]
        for thread in threads:
            thread.start()
        meaning = MeaningServer(self.store)
        meaning.start()
        log.info("capture daemon started (pid %d, home %s)", os.getpid(), self.home)
        reason = "stopped"
        try:
            self._probe_loop()
        except KeyboardInterrupt:
            reason = "interrupted"
        except Exception as exc:
            # Said as what it is: a fault that ends the probe loop was logged as a normal stop.
            reason = f"failed: {type(exc).__name__}"
            log.exception("the capture daemon failed")
            raise
        finally:
            self.stop_event.set()
            self.loop.wake()
            for thread in threads:
                thread.join(timeout=30)
            meaning.close()
            self.hotkey.close()
            self.announcement.follow(config.replace(announce_accessibility=False))
            self.store.log.append(DaemonStopped(ts_us=now_us(), pid=os.getpid(), reason=reason))
            try:
                self.store.refresh()  # the last frames searchable: readers never catch up
            except Exception:  # the views can always be caught up later: stop cleanly
                log.exception("the views did not catch up before the daemon stopped")
            self.heartbeat.remove()
            self.camera.close()  # last: GNOME's screen cast may take a moment to hang up
            os.close(self._lock_fd)
            log.info("capture daemon stopped (%s)", reason)

    def stop(self) -> None:
        self.stop_event.set()

    def config(self) -> Config:
        config = self.store.config
        if self.interval_override:
            config = config.replace(interval_seconds=self.interval_override)
        return config

    def toggle_pause(self) -> None:
        if self.store.state().pause.active(now_us()):
            self.store.log.append(CaptureResumed(ts_us=now_us(), origin="daemon"))
        else:
            self.store.log.append(CapturePaused(ts_us=now_us(), origin="daemon", reason="hotkey"))

    def _probe_loop(self) -> None:
        while not self.stop_event.is_set():
            config = self.config()
            started = time.monotonic()
            try:
                self.loop.tick(config)
            except CaptureError as exc:
                self.loop.set_problem(f"display unavailable: {exc}")
                self._reconnect(config)
                continue
            self.hotkey.follow(config, self.camera.backends.hotkey_problem)
            self.announcement.follow(config)
            self._beat(config)
            elapsed = time.monotonic() - started
            self.stop_event.wait(max(0.0, config.poll_seconds - elapsed))

    def _reconnect(self, config: Config) -> None:
        """Open the display again every RETRY_SECONDS until it answers or the daemon stops.

        The heartbeat goes on meanwhile, so ``status`` shows the reason, not a stale daemon.
        """
        self.loop.outcome = "paused"
        while True:
            self.loop.follow_deletions()
            self._beat(config)
            if self.stop_event.wait(RETRY_SECONDS):
                return
            try:
                self.camera.reopen(self.config().capture_backend)
            except CaptureError as exc:
                self.loop.set_problem(f"display unavailable: {exc}")
                continue
            break
        log.info("display available again; capture resumes")
        self.loop.problem = None
        self.hotkey.restart(config, self.camera.backends.hotkey_problem)

    def _beat(self, config: Config) -> None:
        self._keep_lock()
        backends, recorder = self.camera.backends, self.recorder
        self.heartbeat.write(
            Heartbeat(
                pid=os.getpid(),
                started_us=self.started_us,
                last_tick_us=now_us(),
                last_outcome=self.loop.outcome,
                last_capture_us=self.loop.last_capture_us,
                problem=self.loop.problem,
                trigger=config.trigger,
                poll_seconds=config.poll_seconds,
                min_interval_seconds=config.min_interval_seconds,
                interval_seconds=config.interval_seconds,
                last_reason=recorder.last_reason,
                last_text_source=recorder.last_text_source,
                text_sources=recorder.text_sources,
                reasons=recorder.reasons,
                redactions=recorder.redactions,
                hotkey_problem=self.hotkey.problem,
                config_problem=self.store.config_problem,
                backend=backends.name,
                abilities=list(backends.abilities),
            )
        )


def run_daemon(home: Path | None, interval: float | None) -> None:
    Daemon(home, interval=interval).run()
