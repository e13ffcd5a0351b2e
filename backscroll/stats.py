"""``MemoryStore.stats()``: the spec's status fields, from the views' state and the disk.

Below the store (which calls ``measure``) and below ``status`` (which shows these fields with
the daemon's heartbeat and the rest of the config), so neither has to import the other.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import msgspec

from backscroll import keys
from backscroll.contract.answers import Counts
from base.config import Config
from base.home import Layout
from projector.state import FrameStats, State

TEXT_SOURCES = ("ax", "none", "ocr")
"""Every text source, in the order ``status`` lists them, shown even when none has frames."""


class Stats(Counts, kw_only=True):
    """``MemoryStore.stats()``: the spec's status fields, the span as times."""

    oldest: datetime | None
    newest: datetime | None


class DiskUse(msgspec.Struct, frozen=True, kw_only=True):
    """The bytes each part of a store takes on disk."""

    thumbs: int
    """Summed from the frames' events: no walk over a million thumbnail files."""
    log: int
    views: int

    @property
    def total(self) -> int:
        return self.thumbs + self.log + self.views


def measure(state: State, config: Config, layout: Layout) -> Stats:
    """The store's stats, its key's health read afresh."""
    totals = state.totals()
    return stats(totals, config, disk_use(layout, totals), keys.key_status(layout.home).store)


def stats(totals: FrameStats, config: Config, disk: DiskUse, key_store: str | None) -> Stats:
    return Stats(
        frames=totals.frames,
        oldest=_local_second(totals.oldest_us),
        newest=_local_second(totals.newest_us),
        apps=len(totals.apps),
        thumb_bytes=disk.thumbs,
        db_bytes=disk.log + disk.views,
        total_bytes=disk.total,
        text_sources={s: totals.text_sources.get(s, 0) for s in TEXT_SOURCES},
        encrypted_text_frames=totals.encrypted_text,
        thumbnails=totals.thumbnails,
        encrypted_thumbnails=totals.encrypted_thumbnails,
        encrypt_text=config.encrypt_text,
        encrypt_thumbnails=config.encrypt_thumbnails,
        key_store=key_store,
        encryption_available=keys.encryption_installed(),
    )


def disk_use(layout: Layout, totals: FrameStats) -> DiskUse:
    return DiskUse(
        thumbs=totals.thumb_bytes, log=dir_bytes(layout.log), views=dir_bytes(layout.views)
    )


def dir_bytes(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except FileNotFoundError:  # removed by a rewrite since the walk listed it
                continue
    return total


def _local_second(us: int) -> datetime | None:
    """Local time to the second, as ``status`` prints it; None for no frame (0)."""
    if not us:
        return None
    return datetime.fromtimestamp(us / 1e6).replace(microsecond=0).astimezone()
