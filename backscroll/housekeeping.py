"""Retention and the storage cap: deletions recorded as events and purged for real."""

from __future__ import annotations

import logging

from backscroll.manage import append_tombstone
from backscroll.stats import dir_bytes
from backscroll.store import MemoryStore
from base.clock import now_us
from base.config import Config
from eventlog.events import FRAME_TYPE, DeleteReason, FrameCaptured
from projector.runner import Projector

log = logging.getLogger("backscroll.housekeeping")

DAY_US = 86_400_000_000
CAP_TARGET = 0.9  # when over the cap, delete oldest first down to 90% of it


def housekeep(store: MemoryStore, projector: Projector, config: Config) -> None:
    """One pass: frames past ``retention_days`` go, then the oldest while over the cap."""
    stuck = store.state().stuck_deletions()
    if stuck:
        # Another deletion would stop on the same problem: one a pass would pile up, each
        # tried again at every command (status and verify name the one there is).
        log.warning("housekeeping: skipped while deletion #%d is not complete", stuck[0].offset)
        return
    cutoff = now_us() - config.retention_days * DAY_US
    oldest = store.state().totals().oldest_us
    if oldest and oldest < cutoff:
        _delete_before(store, projector, cutoff, "retention")
    cap = config.storage_cap_mb * 1_000_000
    for _ in range(3):  # each pass estimates from the average frame size; converge quickly
        used = _used_bytes(store)
        frames = store.state().totals().frames
        if used <= cap or frames == 0:
            return
        excess = used - CAP_TARGET * cap
        count = min(frames, max(1, int(excess / (used / frames)) + 1))
        cutoff = _capture_time_of_nth_oldest(store, count)
        _delete_before(store, projector, cutoff + 1, "storage_cap")


def _delete_before(
    store: MemoryStore, projector: Projector, cutoff_us: int, reason: DeleteReason
) -> None:
    append_tombstone(store.log, until_us=cutoff_us, reason=reason, origin="daemon")
    projector.catch_up()
    log.info("housekeeping: %s pass done", reason)


def _used_bytes(store: MemoryStore) -> int:
    layout = store.layout
    thumbs = store.state().totals().thumb_bytes  # from the events: no walk over every file
    return dir_bytes(layout.log) + dir_bytes(layout.views) + thumbs


def _capture_time_of_nth_oldest(store: MemoryStore, n: int) -> int:
    times = sorted(
        e.captured_us for _, e in store.log.read(types={FRAME_TYPE}) if isinstance(e, FrameCaptured)
    )
    return times[min(n, len(times)) - 1]
