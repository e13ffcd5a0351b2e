"""The append-only, segmented event log: Backscroll's single source of truth."""

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
from eventlog.log import Compacted, Log, LogReader
from eventlog.memory import InMemoryLog
from eventlog.segment import Problem, Record

__all__ = [
    "AnyEvent",
    "CapturePaused",
    "CaptureResumed",
    "Compacted",
    "ConfigChanged",
    "DaemonStarted",
    "DaemonStopped",
    "Event",
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
]
