"""The append-only, segmented event log: Backscroll's single source of truth.

``EventLog`` is the contract; ``Log`` keeps it on disk and ``InMemoryLog`` in memory.
"""

from eventlog.batch import Batch
from eventlog.compaction import Compacted, Transform
from eventlog.contract import EventLog, Follower
from eventlog.events import (
    AnyEvent,
    CapturePaused,
    CaptureResumed,
    ConfigChanged,
    DaemonStarted,
    DaemonStopped,
    Event,
    FrameCaptured,
    FramesDeleted,
    FramesRewritten,
    KeyCreated,
    PurgeCompleted,
    ReindexRequested,
)
from eventlog.log import Log
from eventlog.memory import InMemoryLog
from eventlog.reader import LogReader
from eventlog.segment import Problem, Record

__all__ = [
    "AnyEvent",
    "Batch",
    "CapturePaused",
    "CaptureResumed",
    "Compacted",
    "ConfigChanged",
    "DaemonStarted",
    "DaemonStopped",
    "Event",
    "EventLog",
    "Follower",
    "FrameCaptured",
    "FramesDeleted",
    "FramesRewritten",
    "InMemoryLog",
    "KeyCreated",
    "Log",
    "LogReader",
    "Problem",
    "PurgeCompleted",
    "Record",
    "ReindexRequested",
    "Transform",
]
