"""``daemon.json``: the daemon's heartbeat, read by ``status``.

Rewritten in place in a file padded to a fixed size, so a heartbeat can still be written
when the disk is full (overwriting allocated blocks needs no new space): that is exactly when
``status`` must be able to say "paused (disk full)".
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

SIZE = 8192


class Heartbeat:
    def __init__(self, path: Path) -> None:
        self.path = path
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, b" " * SIZE)
        finally:
            os.close(fd)

    def write(self, data: dict[str, Any]) -> None:
        body = json.dumps(data, separators=(",", ":")).encode()
        if len(body) >= SIZE:
            body = json.dumps({k: data[k] for k in ("pid", "last_tick_us")}).encode()
        fd = os.open(self.path, os.O_WRONLY)
        try:
            os.pwrite(fd, body.ljust(SIZE), 0)
        except OSError:
            pass  # a heartbeat is best effort: status then reports the daemon as stale
        finally:
            os.close(fd)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
