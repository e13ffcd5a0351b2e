"""The index of an active segment: where its valid records are, extended as the file grows."""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from eventlog.folder import base_of
from eventlog.format import HEADER
from eventlog.segment import Problem, Record, scan_file


class ActiveIndex:
    """Offsets and byte positions of an active segment's valid records, extended as the file
    grows, so following a log re-reads only what was appended (not up to 64 MB a time)."""

    def __init__(self, path: Path, inode: int) -> None:
        self.path, self.inode = path, inode
        self.base = base_of(path)
        self.offsets: list[int] = []
        self.positions: list[int] = []
        self.end = HEADER.size
        self.size = 0
        self.problems: list[Problem] = []

    def refresh(self) -> bool:
        """Scan what was appended since; False when the file was replaced or shrank."""
        with open(self.path, "rb") as f:
            stat = os.fstat(f.fileno())
            if stat.st_ino != self.inode or stat.st_size < self.end:
                return False
            self.size = stat.st_size
            if stat.st_size == self.end:
                return True
            after = self.offsets[-1] if self.offsets else self.base - 1
            for scan in scan_file(f, self.end, stat.st_size, self.path.name, after, payloads=False):
                for pos, record in scan.records:
                    self.offsets.append(record.offset)
                    self.positions.append(pos)
                self.problems += scan.problems
                self.end = scan.end
        return True

    @property
    def torn(self) -> bool:
        return self.size > self.end

    def next_offset(self) -> int:
        return self.offsets[-1] + 1 if self.offsets else self.base

    def records(self, start: int, problems: list[Problem] | None = None) -> Iterator[Record]:
        """Records with offsets >= ``start``: the file is opened now (a replaced or missing one
        raises FileNotFoundError here), and read a piece at a time as they are consumed; what
        fails its check as it is read goes into ``problems`` (bytes can change in place,
        behind the index)."""
        i = bisect.bisect_left(self.offsets, start)
        if i == len(self.offsets):
            return iter(())
        f = open(self.path, "rb")  # noqa: SIM115 (closed by the generator)
        if os.fstat(f.fileno()).st_ino != self.inode:
            f.close()
            raise FileNotFoundError(self.path)
        return self._stream(f, self.positions[i], self.end, start, problems)

    def _stream(
        self, f: BinaryIO, pos: int, end: int, start: int, problems: list[Problem] | None
    ) -> Iterator[Record]:
        after = start - 1
        with f:
            for scan in scan_file(f, pos, end, self.path.name, start - 1):
                if problems is not None:
                    problems.extend(scan.problems)
                    if scan.torn and scan.end < end:
                        # Bytes that changed in place behind the index (it saw valid records
                        # there): damage, not an append in progress.
                        size = end - scan.end
                        message = f"unreadable tail ({size} bytes)"
                        problems.append(Problem(self.path.name, scan.end, after + 1, message, size))
                for _, record in scan.records:
                    after = record.offset
                    yield record
