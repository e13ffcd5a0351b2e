"""Whether a process still runs: the heartbeat's daemon, the writer of a temporary file."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs, or when it cannot be told (another user's process, a number
    too large to ask about): callers then leave what that process owns alone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True
