"""Each package's public names are pinned: removing one is a breaking change."""

from __future__ import annotations

import backscroll
import eventlog


def test_backscroll_exports_the_public_api() -> None:
    assert backscroll.__all__ == sorted(backscroll.__all__)
    assert backscroll.__all__ == [
        "BackscrollError",
        "Config",
        "Hit",
        "MemoryStore",
        "Redaction",
        "parse_when",
        "redact",
    ]
    for name in backscroll.__all__:
        assert getattr(backscroll, name) is not None


def test_eventlog_exports_its_log_and_events() -> None:
    assert eventlog.__all__ == sorted(eventlog.__all__)
    for name in eventlog.__all__:
        assert hasattr(eventlog, name)
    assert {"Log", "InMemoryLog", "FrameCaptured", "FramesDeleted"} <= set(eventlog.__all__)
