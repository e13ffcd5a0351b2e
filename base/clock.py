"""The one clock every event is stamped with: microseconds since the Unix epoch."""

from __future__ import annotations

import time


def now_us() -> int:
    return time.time_ns() // 1000
