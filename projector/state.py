"""The small state views: config, pause, frame statistics, daemon runs, deletion history.

Frame statistics are kept per search partition (month), so a partition rebuilt after a
deletion recomputes exactly its own numbers. The whole state is one MessagePack file written
atomically with its log position.

No ``from __future__ import annotations`` here: msgspec resolves a Struct's annotations
when it first decodes one, and a string annotation costs a ``compile`` of it (~0.1 M
instructions each; the state's ~60 were 0.07x Python's own start on every read).
"""

from pathlib import Path
from typing import Any, Protocol

import msgspec

from base.fs import write_atomic
from eventlog.events import (
    CapturePaused,
    CaptureResumed,
    ConfigChanged,
    DaemonStarted,
    DaemonStopped,
    DamageDiscarded,
    DamageFound,
    Event,
    FrameCaptured,
    FramesDeleted,
    FramesRewritten,
    KeyCreated,
    PurgeCompleted,
    ReindexRequested,
)
from projector.schema import partition_of

STATE_FILE = "state.msgpack"
KEEP_RUNS = 200


class FrameStats(msgspec.Struct):
    frames: int = 0
    text_sources: dict[str, int] = {}
    encrypted_text: int = 0
    thumbnails: int = 0
    encrypted_thumbnails: int = 0
    thumb_bytes: int = 0
    oldest_us: int = 0
    newest_us: int = 0
    apps: dict[str, int] = {}

    def add(self, frame: FrameCaptured) -> None:
        self.frames += 1
        sources, source = self.text_sources, frame.text_source
        sources[source] = sources.get(source, 0) + 1
        apps, app = self.apps, frame.app
        apps[app] = apps.get(app, 0) + 1
        if frame.encrypted:
            self.encrypted_text += 1
        if frame.thumb is not None:
            self.thumbnails += 1
            self.encrypted_thumbnails += frame.thumb_encrypted
            self.thumb_bytes += frame.thumb_bytes
        t = frame.captured_us
        if t < self.oldest_us or self.frames == 1:
            self.oldest_us = t
        if t > self.newest_us:
            self.newest_us = t


class Pause(msgspec.Struct):
    paused: bool = False
    since_us: int = 0
    until_us: int | None = None
    origin: str = ""
    reason: str = ""

    def active(self, now_us: int) -> bool:
        return self.paused and (self.until_us is None or now_us < self.until_us)


class DaemonRun(msgspec.Struct):
    offset: int
    pid: int
    started_us: int
    stopped_us: int | None = None
    reason: str | None = None
    """None while running (or crashed, if a later run started without a stop)."""


class Scope(msgspec.Struct, frozen=True):
    """The frames a tombstone covers: its ``FramesDeleted`` fields. No ids, times or app:
    every frame up to ``upto_id`` (the last frame id when the deletion was asked for)."""

    upto_id: int
    ids: tuple[int, ...] = ()
    since_us: int | None = None
    until_us: int | None = None
    app: str | None = None


class Framed(Protocol):
    """What ``matches`` reads of a frame: a ``FrameCaptured``, or a search hit's view of one."""

    @property
    def frame_id(self) -> int: ...
    @property
    def captured_us(self) -> int: ...
    @property
    def app(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def url(self) -> str: ...


class Deletion(msgspec.Struct):
    offset: int
    requested_us: int
    scope: Scope
    reason: str
    origin: str
    completed_us: int | None = None
    frames: int = 0
    problem: str = ""
    """Why its purge could not complete when last tried (the frames stay hidden), or ""."""


class Reindex(msgspec.Struct):
    offset: int
    requested_us: int
    views_only: bool
    completed_us: int | None = None
    frames: int = 0
    problem: str = ""
    """Why the views' writer could not carry it out (it is not tried again), or ""."""


class Weakened(msgspec.Struct):
    """What the latest config change gave up of privacy, shown until the next change."""

    ts_us: int
    origin: str
    what: list[str]


class Unapplied(msgspec.Struct):
    """An event the projector could not apply, skipped so that the log is never hostage to
    it (an older version's bug, a hand-made segment)."""

    offset: int
    why: str


class Damage(msgspec.Struct):
    """Damage the log recorded (``DamageFound``) and the person has not discarded yet."""

    offset: int
    segment: str
    first_offset: int
    last_offset: int
    length: int
    aside: str


class State(msgspec.Struct):
    position: int = -1
    config: dict[str, Any] = {}
    config_origin: str = "default"
    config_changed_us: int = 0
    weakened: Weakened | None = None
    pause: Pause = msgspec.field(default_factory=Pause)
    pauses: list[Pause] = []
    """Past and current pauses (bounded), so a search can say capture was paused."""
    partitions: dict[str, FrameStats] = {}
    runs: list[DaemonRun] = []
    deletions: list[Deletion] = []
    reindexes: list[Reindex] = []
    key_fingerprint: str | None = None
    key_store: str | None = None
    unapplied: list[Unapplied] = []
    """Events skipped because they could not be applied (the first ``KEEP_RUNS``)."""
    damage: list[Damage] = []
    log_mark: tuple[str, int] | None = None
    """The log's last segment (name, size) when the views last caught up with all of it."""

    def apply(self, offset: int, event: Event) -> None:
        match event:
            case FrameCaptured():
                month = partition_of(event.captured_us)
                stats = self.partitions.get(month)
                if stats is None:
                    stats = self.partitions[month] = FrameStats()
                stats.add(event)
            case ConfigChanged():
                self.config = event.config
                self.config_origin = event.origin
                self.config_changed_us = event.ts_us
                self.weakened = (
                    Weakened(event.ts_us, event.origin, list(event.weakened))
                    if event.weakened
                    else None  # shown until the next change, which shows the whole config
                )
            case CapturePaused():
                self.pause = Pause(True, event.ts_us, event.until_us, event.origin, event.reason)
                self.pauses.append(self.pause)
                del self.pauses[:-KEEP_RUNS]
            case CaptureResumed():
                if self.pause.paused and self.pauses:
                    end = event.ts_us
                    if self.pause.until_us is not None:
                        end = min(end, self.pause.until_us)
                    self.pauses[-1] = msgspec.structs.replace(self.pauses[-1], until_us=end)
                self.pause = Pause(False, event.ts_us, None, event.origin)
            case DaemonStarted():
                self.runs.append(DaemonRun(offset, event.pid, event.ts_us))
                del self.runs[:-KEEP_RUNS]
            case DaemonStopped():
                for run in reversed(self.runs):
                    if run.pid == event.pid and run.stopped_us is None:
                        run.stopped_us, run.reason = event.ts_us, event.reason
                        break
            case FramesDeleted():
                self.deletions.append(
                    Deletion(offset, event.ts_us, scope_of(event), event.reason, event.origin)
                )
            case PurgeCompleted():
                for deletion in self.deletions:
                    if deletion.offset == event.request_id:
                        deletion.completed_us, deletion.frames = event.ts_us, event.frames
                        deletion.problem = ""
            case ReindexRequested():
                self.reindexes.append(Reindex(offset, event.ts_us, event.views_only))
            case FramesRewritten():
                for reindex in self.reindexes:
                    if reindex.offset == event.request_id:
                        reindex.completed_us, reindex.frames = event.ts_us, event.frames
            case KeyCreated():
                self.key_fingerprint, self.key_store = event.fingerprint, event.store
            case DamageFound():
                self.damage.append(
                    Damage(
                        offset,
                        event.segment,
                        event.first_offset,
                        event.last_offset,
                        event.length,
                        event.aside,
                    )
                )
            case DamageDiscarded():
                self.damage = [d for d in self.damage if d.offset > event.upto_id]
                self.unapplied = [u for u in self.unapplied if u.offset > event.upto_id]
        self.position = max(self.position, offset)

    def skip(self, offset: int, why: str) -> None:
        """Note an event that could not be applied, and move past it."""
        if len(self.unapplied) < KEEP_RUNS:
            self.unapplied.append(Unapplied(offset, why))
        self.position = max(self.position, offset)

    def totals(self) -> FrameStats:
        total = FrameStats()
        for stats in self.partitions.values():
            total.frames += stats.frames
            for source, n in stats.text_sources.items():
                total.text_sources[source] = total.text_sources.get(source, 0) + n
            total.encrypted_text += stats.encrypted_text
            total.thumbnails += stats.thumbnails
            total.encrypted_thumbnails += stats.encrypted_thumbnails
            total.thumb_bytes += stats.thumb_bytes
            if stats.frames:
                first = total.oldest_us == 0
                total.oldest_us = (
                    stats.oldest_us if first else min(total.oldest_us, stats.oldest_us)
                )
                total.newest_us = max(total.newest_us, stats.newest_us)
            for app, n in stats.apps.items():
                total.apps[app] = total.apps.get(app, 0) + n
        return total

    def pending_deletions(self) -> list[Deletion]:
        return [d for d in self.deletions if d.completed_us is None]

    def stuck_deletions(self) -> list[Deletion]:
        """Pending deletions whose purge could not complete when last tried."""
        return [d for d in self.pending_deletions() if d.problem]

    def save(self, root: Path) -> None:
        write_atomic(root / STATE_FILE, msgspec.msgpack.encode(self))

    @classmethod
    def load(cls, root: Path) -> "State | None":
        try:
            return msgspec.msgpack.decode((root / STATE_FILE).read_bytes(), type=cls)
        except FileNotFoundError:
            return None
        except msgspec.DecodeError:
            return None  # a damaged or older view is rebuilt from the log


def scope_of(event: FramesDeleted) -> Scope:
    return Scope(event.upto_id, event.ids, event.since_us, event.until_us, event.app)


def matches(scope: Scope, frame: Framed) -> bool:
    """Whether a tombstone's scope covers ``frame`` (an empty scope covers every frame)."""
    if frame.frame_id > scope.upto_id:
        return False
    if scope.ids and frame.frame_id not in scope.ids:
        return False
    if scope.since_us is not None and frame.captured_us < scope.since_us:
        return False
    if scope.until_us is not None and frame.captured_us >= scope.until_us:
        return False
    if scope.app is not None:
        needle = scope.app.lower()
        return any(needle in place.lower() for place in (frame.app, frame.title, frame.url))
    return True
