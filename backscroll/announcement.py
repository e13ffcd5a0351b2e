"""Announcing an assistive technology to apps (AT-SPI's ``IsEnabled``), as the config's
``announce_accessibility`` says, so that apps that ask (Firefox, Qt) publish their text."""

from __future__ import annotations

import logging

from base.config import Config

log = logging.getLogger("backscroll.daemon")


class Announcement:
    """Turns ``IsEnabled`` on while ``announce_accessibility`` is, and back off when it is
    turned off or the daemon stops, if (and only if) this daemon turned it on: a screen
    reader's setting is never touched."""

    def __init__(self) -> None:
        self._wanted: bool | None = None  # the setting acted on; None: none yet
        self.announced = False  # whether this daemon turned IsEnabled on

    def follow(self, config: Config) -> None:
        from capture.ax import set_accessibility_enabled

        if config.announce_accessibility == self._wanted:
            return
        self._wanted = config.announce_accessibility
        if self._wanted:
            self.announced = set_accessibility_enabled(True) is False
            if self.announced:
                log.info("announced an assistive technology to apps (AT-SPI IsEnabled)")
        elif self.announced:
            set_accessibility_enabled(False)
            self.announced = False
