"""The changes a person or an agent makes to a store: pause, resume, deny, delete, discard
damage, rebuild the views."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import NamedTuple

from backscroll.store import MemoryStore
from base.clock import now_us, to_us
from base.config import Config
from base.errors import StoreError, UsageError, is_text
from base.fs import fsync_dir
from eventlog.contract import EventLog
from eventlog.events import (
    CapturePaused,
    CaptureResumed,
    DamageDiscarded,
    DeleteReason,
    FramesDeleted,
    Origin,
)
from projector.state import Deletion


def pause(store: MemoryStore, until: datetime | None, origin: Origin = "cli") -> None:
    until_us = int(until.timestamp() * 1_000_000) if until else None
    store.append(CapturePaused(ts_us=now_us(), until_us=until_us, origin=origin))


def resume(store: MemoryStore, origin: Origin = "cli") -> None:
    store.append(CaptureResumed(ts_us=now_us(), origin=origin))


def pause_until(duration: str | None, now: datetime | None = None) -> datetime | None:
    """``30m``/``2h`` from now; None pauses until resumed. Only durations are accepted: a
    period such as ``yesterday`` is not a length of time."""
    if duration is None:
        return None
    if not duration.strip():
        raise UsageError("an empty pause duration: write e.g. 30m or 2h, or omit it")
    from query.when import parse_when

    now = now or datetime.now(UTC).astimezone()
    start, end = parse_when(duration, now=now)
    if end != now or end <= start:
        raise UsageError(f"'{duration}' is not a duration (write e.g. 30m or 2h)")
    try:
        return now + (end - start)
    except OverflowError:
        raise UsageError(f"'{duration}' is longer than the calendar goes") from None


def deny(store: MemoryStore, add: str | None, remove: str | None, origin: Origin = "cli") -> None:
    for name, value in (("add", add), ("remove", remove)):
        if value is not None and not value.strip():
            raise UsageError(f"deny {name}: the pattern is empty (it would match every window)")

    def changed(config: Config) -> Config:
        # Computed from the config as it stands under the log's lock, not as it was read.
        patterns = list(config.deny_apps)
        if add and add.lower() not in {p.lower() for p in patterns}:
            patterns.append(add)
        if remove:
            kept = [p for p in patterns if p.lower() != remove.lower()]
            if len(kept) == len(patterns):
                raise UsageError(f"'{remove}' is not on the deny list")
            patterns = kept
        return config.replace(deny_apps=patterns)

    store.change_config(origin, changed)


def delete(
    store: MemoryStore,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    app: str | None = None,
    ids: tuple[int, ...] = (),
    origin: Origin = "cli",
    wait: Callable[[], None] | None = None,
) -> int:
    """Append a tombstone and return once its purge is complete; returns frames removed.

    No scope at all means every frame; an empty scope (``app=""``) is refused, never taken
    for "everything".
    """
    check_scope(start, end, app)
    offset = append_tombstone(
        store.log, ids=ids, since_us=to_us(start), until_us=to_us(end), app=app, origin=origin
    )
    return wait_for_completion(store, offset, wait)


def append_tombstone(
    log: EventLog,
    *,
    ids: tuple[int, ...] = (),
    since_us: int | None = None,
    until_us: int | None = None,
    app: str | None = None,
    reason: DeleteReason = "user",
    origin: Origin = "cli",
) -> int:
    """Append a ``FramesDeleted`` of this scope; its offset.

    Its time and ``upto_id`` are read under the append lock: every frame appended before it
    is at or below ``upto_id``, and every frame seen before its time but appended after it
    is dropped by the recorder (``backscroll.record.Recorder``). Read before the lock, a
    frame appended in between escaped both.
    """
    with log.batch() as batch:
        return batch.append(
            FramesDeleted(
                ts_us=now_us(),
                upto_id=batch.next_offset - 1,
                ids=ids,
                since_us=since_us,
                until_us=until_us,
                app=app,
                reason=reason,
                origin=origin,
            )
        )


FINISH = "backscroll clear --damaged -y"


def stuck(deletion: Deletion) -> str:
    """One line for a deletion whose purge cannot complete: what is true, the command that
    finishes it (``discard_damaged``, then the purge tried again) and what stops it."""
    return (
        f"deletion #{deletion.offset} is not complete: its frames are hidden, but their bytes "
        f"remain in the log until `{FINISH}` can finish it: {deletion.problem}"
    )


def check_scope(start: datetime | None, end: datetime | None, app: str | None) -> None:
    """A deletion's scope as given: an empty one is refused, never taken for everything."""
    if app is not None and not app.strip():
        raise UsageError("an empty app scope would match every frame: name the app, or omit it")
    if app is not None and not is_text(app):
        raise UsageError("the app scope is not UTF-8 text")
    if start is not None and end is not None and end <= start:
        raise UsageError("the scope ends before it starts")
    for name, bound in (("since", start), ("until", end)):
        if bound is not None and bound.timestamp() < 0:
            raise UsageError(f"{name}: {bound:%Y-%m-%d} is before 1970, when capture times begin")


class Discarded(NamedTuple):
    files: int
    events: int


def discard_damaged(store: MemoryStore, origin: Origin = "cli") -> Discarded:
    """The person's decision on damage: rewrite every segment that holds unreadable bytes or
    events that do not decode without them, delete the copies kept aside, and record it."""
    compacted = store.log.compact(lambda _, event: event, repair=True)
    store.refresh()  # the damage this compaction found is in the views now
    files = store.log.kept_aside()
    for path in files:
        path.unlink()
    for folder in {path.parent for path in files}:
        fsync_dir(folder)
    state = store.state()
    # A purge that could not complete is retried by the views' writer at the next control
    # event: the daemon's, if it holds them, at this one.
    if files or compacted.undecodable or state.damage or state.unapplied or state.stuck_deletions():
        store.append(
            DamageDiscarded(
                ts_us=now_us(),
                upto_id=store.log.next_offset() - 1,
                files=len(files),
                events=compacted.undecodable,
                origin=origin,
            )
        )
    return Discarded(len(files), compacted.undecodable)


def rebuild_views(store: MemoryStore, progress: Callable[[int, int], None] | None = None) -> None:
    """Replay the log into new generations of every view, then switch atomically."""
    from backscroll.reindex import reindex

    reindex(store, views_only=True, progress=progress)


def wait_for_completion(
    store: MemoryStore, request: int, tick: Callable[[], None] | None = None
) -> int:
    """Execute the request ourselves when no daemon holds the views, else wait for it.

    Returns once the purge is complete; raises when it cannot complete, its frames hidden
    (``stuck``): waiting on would wait forever, and returning would say the bytes are gone.
    """
    import time

    while True:
        store.refresh()
        for deletion in store.state().deletions:
            if deletion.offset == request and deletion.completed_us is not None:
                return deletion.frames
            if deletion.offset == request and deletion.problem:
                raise StoreError(stuck(deletion))
        if tick:
            tick()
        time.sleep(0.2)
