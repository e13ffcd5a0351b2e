"""A process's CPU time from /proc, read one way by every bench script."""

from __future__ import annotations

import os
from collections.abc import Iterable

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int | str, *, waited: bool = False) -> float:
    """utime + stime of a process (all its threads) or of one ``pid/task/tid``; with
    ``waited``, plus the children it has reaped (cutime + cstime: finished tesseract runs)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11 : 15 if waited else 13]) / TICK


def live_cpu_seconds(pids: Iterable[int], *, waited: bool = False) -> float:
    """``cpu_seconds`` summed over those of ``pids`` still running."""
    total = 0.0
    for pid in pids:
        try:
            total += cpu_seconds(pid, waited=waited)
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total
