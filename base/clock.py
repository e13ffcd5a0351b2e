"""The one clock every event is stamped with: microseconds since the Unix epoch."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import datetime


def now_us() -> int:
    return time.time_ns() // 1000


def to_us(when: datetime | None) -> int | None:
    """``when`` on the same clock (None stays None: an open end of a span)."""
    return int(when.timestamp() * 1_000_000) if when else None
