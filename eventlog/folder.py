"""The files of a log folder besides the records: segment listing, the lock, the NEXT counter.

LOCK       the append lock (an OS file lock; its bytes mean nothing)
NEXT       the next offset an append hands out: 8 bytes little-endian, then their CRC32C
           (4 bytes): a flipped bit is found, and the offset taken from the segments instead
COMPACT    a committed rewrite's plan, present until it is finished (``eventlog.swap``)
*.new      files a rewrite staged and has not installed yet
damaged/   unreadable ranges a rewrite kept aside (``eventlog.damage``)
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import NamedTuple

from base.errors import CorruptionError
from base.fs import FileSystem
from eventlog._crc32c import crc32c
from eventlog.format import HEADER, KIND_SEALED, parse_segment_name
from eventlog.segment import Header, header_damage, read_sealed, unpack_header

LOCK_NAME = "LOCK"
MANIFEST_NAME = "COMPACT"
NEXT_NAME = "NEXT"
"""Written after each append: segments that vanish behind the log's back (deleted by hand) are
noticed, and their offsets never handed out again."""
_NEXT_BYTES = 12
DAMAGED_DIR = "damaged"
DAMAGED_SUFFIX = ".damaged"
NEW_SUFFIX = ".new"


class Segment(NamedTuple):
    base: int
    sealed: bool
    path: Path


def list_segments(folder: Path) -> list[Segment]:
    """Segments in offset order; where a base has both forms, the sealed one wins."""
    found: dict[int, Segment] = {}
    for segment in segment_files(folder):
        if segment.base not in found or segment.sealed:
            found[segment.base] = segment
    return [found[base] for base in sorted(found)]


def segment_files(folder: Path) -> list[Segment]:
    """Every segment file, both forms of a base included (a rewrite between its steps)."""
    out = []
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return []  # nothing appended yet
    for entry in entries:
        parsed = parse_segment_name(entry.name)
        if parsed is not None:
            out.append(Segment(parsed[0], parsed[1], Path(entry.path)))
    return out


def base_of(path: Path) -> int:
    return int(path.name.split(".", 1)[0])


def sealed_header(path: Path) -> Header:
    with open(path, "rb") as f:
        data = f.read(HEADER.size)
    try:
        return unpack_header(data)
    except CorruptionError as exc:
        raise CorruptionError(f"event log segment {path.name} is damaged: {exc}") from None


class Sealed(NamedTuple):
    header: Header
    damage: str | None
    """Why the header on disk is unreadable: ``header`` then stands in for it."""
    foreign: bool = False
    """The header is whole but of a format version this one does not read."""


def sealed_or_stand_in(segment: Segment, later: list[Segment]) -> Sealed:
    """A sealed segment's header, or a stand-in when its bytes are damaged: a header is all
    a sealed segment holds outside its blocks, which carry checksums of their own and still
    read, so one flipped bit there must not make the segment (or the log) unusable. The
    stand-in takes the base from the name, the end offset from the next segment's base (the
    segments tile the offsets) or, for the last, from its records and ``NEXT``, and the
    creation time from the file's. ``later`` are the segments after it, in order."""
    with open(segment.path, "rb") as f:
        data = f.read(HEADER.size)
    damage = header_damage(data)
    foreign = False
    if damage is None:
        try:
            return Sealed(unpack_header(data), None)
        except CorruptionError as exc:
            # A whole header of a format this version does not know (a newer one's): read as
            # far as its blocks check, and rewritten only by the person's ``clear --damaged``.
            damage, foreign = str(exc), True
    if later:
        end = later[0].base
    else:
        last = segment.base - 1
        for record in read_sealed(segment.path):
            last = record.offset
        end = max(last + 1, read_next(segment.path.parent) or 0)
    created = int(segment.path.stat().st_mtime * 1_000_000)
    return Sealed(Header(KIND_SEALED, segment.base, created, end_offset=end), damage, foreign)


def read_next(folder: Path) -> int | None:
    """The next offset an append hands out, as ``NEXT`` says, or 0 when it has none: not
    written yet, or cut short by a power cut (it is not fsynced). None when its bytes fail
    their check: damage, which the segments make up for."""
    try:
        data = (folder / NEXT_NAME).read_bytes()
    except OSError:
        return 0
    if len(data) != _NEXT_BYTES:
        return 0
    if crc32c(data[:8]) != int.from_bytes(data[8:], "little"):
        return None
    return int.from_bytes(data[:8], "little")


def write_next(fs: FileSystem, folder: Path, offset: int) -> None:
    """Not fsynced: after a power cut it may be older than the segments, never newer (it is
    written after their fsync), and the larger of the two wins."""
    data = offset.to_bytes(8, "little")
    with contextlib.suppress(OSError):
        f = fs.create(folder / NEXT_NAME)
        try:
            f.write(data + crc32c(data).to_bytes(4, "little"))
        finally:
            f.close()


def lock_writer(folder: Path) -> int:
    """Wait for the append lock; closing the returned descriptor releases it."""
    fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd


def writer_active(folder: Path) -> bool:
    """Whether another holder has the append lock now. Asked by readers: the lock file is
    opened read-only and never created (a flock needs no write access)."""
    try:
        fd = os.open(folder / LOCK_NAME, os.O_RDONLY)
    except FileNotFoundError:
        return False  # no writer ever took it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
