"""Reading and writing one segment file (the layout is in ``eventlog.format``)."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, NamedTuple

import msgspec
import zstandard

from base.clock import now_us
from base.errors import CorruptionError
from base.fs import FileSystem
from eventlog._crc32c import crc32c
from eventlog.events import FRAME_TYPE
from eventlog.format import (
    BLOCK,
    BLOCK_BYTES,
    BLOCK_MAGIC,
    FORMAT_VERSION,
    HEADER,
    KIND_ACTIVE,
    KIND_SEALED,
    MAGIC,
    RECORD,
    ZSTD_LEVEL,
    parse_segment_name,
)


class Record(msgspec.Struct, frozen=True, gc=False):
    """One framed record (a Struct: a NamedTuple's Python-level constructor was ~0.4 µs of
    every record read)."""

    offset: int
    type: int
    payload: bytes


class Header(NamedTuple):
    kind: int
    base_offset: int
    created_us: int
    end_offset: int = 0
    min_captured_us: int = 0
    max_captured_us: int = 0
    frames: int = 0
    controls: int = 0


class Problem(NamedTuple):
    """Something wrong on disk, located exactly enough for a person to find it."""

    segment: str
    position: int
    offset: int | None
    message: str
    length: int = 0
    """How many bytes from ``position`` are unreadable (0: not a range of bytes)."""

    def __str__(self) -> str:
        if not self.segment:  # an event, not bytes: located by its offset alone
            return f"offset {self.offset}: {self.message}"
        where = f"{self.segment} @ byte {self.position}"
        return (
            f"{where} (offset {self.offset}): {self.message}"
            if self.offset is not None
            else (f"{where}: {self.message}")
        )


_TYPE_OFFSET = struct.Struct("<HQ")  # the checksummed part of a record header


class _Captured(msgspec.Struct):
    captured_us: int


_captured = msgspec.msgpack.Decoder(_Captured)


def pack_header(header: Header) -> bytes:
    body = HEADER.pack(
        MAGIC,
        FORMAT_VERSION,
        header.kind,
        0,
        header.base_offset,
        header.created_us,
        header.end_offset,
        header.min_captured_us,
        header.max_captured_us,
        header.frames,
        header.controls,
        0,
    )[:-4]
    return body + crc32c(body).to_bytes(4, "little")


def header_damage(data: bytes) -> str | None:
    """Why ``data`` is not the bytes a writer made of a header (short, bad magic, checksum),
    else None: a whole header of an unsupported version is not damage."""
    if len(data) < HEADER.size:
        return "short header"
    if data[: len(MAGIC)] != MAGIC:
        return "not a Backscroll segment (bad magic)"
    stored = int.from_bytes(data[HEADER.size - 4 : HEADER.size], "little")
    if crc32c(data[: HEADER.size - 4]) != stored:
        return "header checksum mismatch"
    return None


def unpack_header(data: bytes) -> Header:
    """Raise ``CorruptionError`` with the reason when ``data`` is not a valid header."""
    damage = header_damage(data)
    if damage is not None:
        raise CorruptionError(damage)
    _, version, kind, _, base, created, end, lo, hi, frames, controls, _ = HEADER.unpack_from(data)
    if version != FORMAT_VERSION:
        raise CorruptionError(f"segment format version {version} is not supported")
    return Header(kind, base, created, end, lo, hi, frames, controls)


def record_header(type_code: int, offset: int, payload: bytes) -> bytes:
    """The 18 bytes that precede ``payload`` in a record (the CRC runs over type, offset and
    payload without joining them: a batch writes header and payload as separate parts)."""
    crc = crc32c(payload, crc32c(_TYPE_OFFSET.pack(type_code, offset)))
    return RECORD.pack(len(payload), crc, type_code, offset)


def pack_record(type_code: int, offset: int, payload: bytes) -> bytes:
    return record_header(type_code, offset, payload) + payload


def _record_at(
    buf: bytes, pos: int, end: int, after: int, payload: bool = True
) -> tuple[Record, int] | None:
    """The valid record starting at ``pos`` with an offset above ``after``, and its end;
    without ``payload``, the record's payload is left empty (checked, not copied)."""
    if pos + RECORD.size > end:
        return None
    length, crc, type_code, offset = RECORD.unpack_from(buf, pos)
    stop = pos + RECORD.size + length
    if stop > end or offset <= after:
        return None
    if crc32c(memoryview(buf)[pos + 8 : stop]) != crc:
        return None
    return Record(offset, type_code, bytes(buf[pos + RECORD.size : stop]) if payload else b""), stop


class Scan(NamedTuple):
    records: list[tuple[int, Record]]
    """``(position, record)`` of every valid record."""
    end: int
    """Position just past the last valid record: a torn tail starts here."""
    torn: bool
    problems: list[Problem]


def scan_records(
    buf: bytes, pos: int, name: str, after: int = -1, *, payloads: bool = True
) -> Scan:
    """Parse records from ``pos``; step over a damaged record when a valid one follows it.

    What cannot be followed by a valid record is a torn tail: reported by ``torn`` and
    ``end``, never repaired here (only the lock holder repairs). Without ``payloads`` the
    records are only located and checked (their payloads empty).
    """
    records: list[tuple[int, Record]] = []
    problems: list[Problem] = []
    end = len(buf)
    while pos < end:
        found = _record_at(buf, pos, end, after, payloads)
        if found is not None:
            record, stop = found
            records.append((pos, record))
            after, pos = record.offset, stop
            continue
        resync = _resync(buf, pos + 1, end, after)
        if resync is None:
            return Scan(records, pos, True, problems)
        problems.append(
            Problem(
                name, pos, after + 1, f"damaged record ({resync - pos} bytes) skipped", resync - pos
            )
        )
        pos = resync
    return Scan(records, pos, False, problems)


CHUNK_BYTES = 1 << 20
# A frame's record is ~2 KB (its text; the thumbnail is a file of its own): a record larger
# than this at the end is looked for from the start instead.
TAIL_BYTES = 256 * 1024


def tail_from(path: Path, offset: int) -> list[Record] | None:
    """The records from ``offset`` to the end of the active segment at ``path``, read from
    its end: when they lie in its last ``TAIL_BYTES``, each whole and valid, offsets
    increasing, the last one ending the file. None otherwise (more to read, a torn tail,
    damage): the segment is then scanned from its start, which checks every record in it,
    up to 64 MB (56 ms) for the few a reader behind by a few events needs."""
    key = offset.to_bytes(8, "little")
    with open(path, "rb") as f:
        size = f.seek(0, 2)
        f.seek(max(HEADER.size, size - TAIL_BYTES))
        buf = f.read()
    end = len(buf)
    while (at := buf.rfind(key, 0, end)) >= RECORD.size - len(key):
        # The offset is a record header's last field: a record would start here.
        records = _chain(buf, at - (RECORD.size - len(key)), offset)
        if records is not None:
            return records
        end = at + len(key) - 1
    return None


def _chain(buf: bytes, pos: int, offset: int) -> list[Record] | None:
    """The records from ``pos`` to the end of ``buf``, the first one ``offset``, if every
    byte is theirs."""
    records: list[Record] = []
    after = offset - 1
    while pos < len(buf):
        found = _record_at(buf, pos, len(buf), after)
        if found is None or (not records and found[0].offset != offset):
            return None
        records.append(found[0])
        after, pos = found[0].offset, found[1]
    return records


def scan_file(
    f: BinaryIO,
    pos: int,
    end: int,
    name: str,
    after: int = -1,
    *,
    payloads: bool = True,
    chunk: int = CHUNK_BYTES,
) -> Iterator[Scan]:
    """``scan_records`` over bytes ``pos``..``end`` of an open file, a piece at a time: a
    ``Scan`` per piece, whose ``end`` is where the valid records reach so far (the last one's
    ``end`` and ``torn`` are the file's).

    Read whole, a 64 MB active segment spent longer faulting in its fresh buffer than
    checking the records in it (1.2 µs a record, against 0.24 µs in 1 MB pieces that the
    allocator reuses), and a reader held all of it at once. At the first record that is not
    simply valid, the rest is read in one piece and left to ``scan_records``, which knows how
    to step over damage.
    """
    unpack, size, crc32 = RECORD.unpack_from, RECORD.size, crc32c
    want = chunk
    while pos < end:
        f.seek(pos)
        buf = f.read(min(end - pos, want))
        if not buf:  # the file was cut short since ``end`` was taken: a tear for now
            yield Scan([], pos, True, [])
            return
        view, n, i = memoryview(buf), len(buf), 0
        records: list[tuple[int, Record]] = []
        want = chunk
        while i + size <= n:
            length, crc, type_code, offset = unpack(buf, i)
            stop = i + size + length
            if stop > n or offset <= after or crc32(view[i + 8 : stop]) != crc:
                break
            payload = bytes(view[i + size : stop]) if payloads else b""
            records.append((pos + i, Record(offset, type_code, payload)))
            after, i = offset, stop
        pos += i
        if i + size > n and (i == n or pos + size <= end):
            want = max(chunk, size)  # read on from the record header the piece cut, if any
            yield Scan(records, pos, False, [])
            continue
        if i + size <= n and offset > after and pos + size + length <= end and stop > n:
            want = max(chunk, size + length)  # the piece cut a record: read all of it
            yield Scan(records, pos, False, [])
            continue
        f.seek(pos)
        rest = scan_records(f.read(end - pos), 0, name, after, payloads=payloads)
        records += [(pos + at, record) for at, record in rest.records]
        problems = [p._replace(position=pos + p.position) for p in rest.problems]
        yield Scan(records, pos + rest.end, rest.torn, problems)
        return


def _resync(buf: bytes, pos: int, end: int, after: int) -> int | None:
    """The position of the next valid record after a damaged one, if any."""
    while pos + RECORD.size <= end:
        if _record_at(buf, pos, end, after) is not None:
            return pos
        pos += 1
    return None


def read_sealed(
    path: Path, start: int = 0, problems: list[Problem] | None = None
) -> Iterator[Record]:
    """Records of a sealed segment with offsets >= ``start``: the file is read now (a missing
    one raises here), its blocks decompressed as the records are consumed."""
    with open(path, "rb") as f:
        data = f.read()
    return _sealed_records(data, path.name, start, problems)


def _sealed_records(
    data: bytes, name: str, start: int, problems: list[Problem] | None
) -> Iterator[Record]:
    dctx = zstandard.ZstdDecompressor()
    pos, end = HEADER.size, len(data)
    parsed = parse_segment_name(name)
    after = (parsed[0] if parsed else 0) - 1  # the last offset read: damage lies above it
    while pos + BLOCK.size <= end:
        magic, length, crc, first, last, _count = BLOCK.unpack_from(data, pos)
        stop = pos + BLOCK.size + length
        if magic != BLOCK_MAGIC or stop > end or (crc32c(memoryview(data)[pos + 12 : stop]) != crc):
            found = data.find(BLOCK_MAGIC, pos + 1)
            skip = (found if found >= 0 else end) - pos
            if problems is not None:
                problems.append(
                    Problem(name, pos, after + 1, f"damaged block ({skip} bytes) skipped", skip)
                )
            if found < 0:
                return
            pos = found
            continue
        if last >= start:
            try:
                raw = dctx.decompress(memoryview(data)[pos + BLOCK.size : stop])
            except zstandard.ZstdError:
                raw = None
            records = None if raw is None else _block_records(raw, first, start)
            if records is None:
                # The checksum passed but the block does not open or frame up: not what a
                # writer made. The whole block is the damaged range.
                if problems is not None:
                    message = f"block ({stop - pos} bytes) does not decompress into records"
                    problems.append(Problem(name, pos, after + 1, message, stop - pos))
            else:
                for record in records:
                    after = record.offset
                    yield record
        else:
            after = last
        pos = stop
    if pos < end and problems is not None:
        # Too short even for a block header: the segment was cut inside its last block.
        problems.append(
            Problem(name, pos, after + 1, f"truncated block ({end - pos} bytes)", end - pos)
        )


def _block_records(raw: bytes, first: int, start: int) -> list[Record] | None:
    """The records of a block whose checksum passed, offsets >= ``start``; None when they
    do not frame up. The block's CRC already covers every byte, so its records are only
    framed, not checked one by one (a third of reading a sealed segment)."""
    records: list[Record] = []
    pos, end, after = 0, len(raw), first - 1
    while pos + RECORD.size <= end:
        length, _, type_code, offset = RECORD.unpack_from(raw, pos)
        stop = pos + RECORD.size + length
        if stop > end or offset <= after:
            break
        if offset >= start:
            records.append(Record(offset, type_code, raw[pos + RECORD.size : stop]))
        after, pos = offset, stop
    return records if pos == end else None


def encode_sealed(header: Header, records: Iterable[Record]) -> bytes:
    """A whole sealed segment holding ``records``; ``header`` gives base and end offsets."""
    cctx = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    blocks: list[bytes] = []
    pending: list[bytes] = []
    size = frames = controls = 0
    first = last = -1
    lo = hi = 0

    def flush() -> None:
        nonlocal pending, size
        data = cctx.compress(b"".join(pending))
        body = BLOCK.pack(BLOCK_MAGIC, 0, 0, first, last, len(pending))[12:] + data
        blocks.append(BLOCK.pack(BLOCK_MAGIC, len(data), crc32c(body), 0, 0, 0)[:12] + body)
        pending, size = [], 0

    for record in records:
        if not pending:
            first = record.offset
        last = record.offset
        raw = pack_record(record.type, record.offset, record.payload)
        pending.append(raw)
        size += len(raw)
        if record.type == FRAME_TYPE:
            frames += 1
            captured = _captured.decode(record.payload).captured_us
            lo = captured if frames == 1 else min(lo, captured)
            hi = max(hi, captured)
        else:
            controls += 1
        if size >= BLOCK_BYTES:
            flush()
    if pending:
        flush()
    sealed = header._replace(
        kind=KIND_SEALED,
        min_captured_us=lo,
        max_captured_us=hi,
        frames=frames,
        controls=controls,
    )
    return pack_header(sealed) + b"".join(blocks)


def write_file(fs: FileSystem, path: Path, data: bytes) -> None:
    f = fs.create(path)
    try:
        f.write(data)
        f.fsync()
    finally:
        f.close()


def new_active(fs: FileSystem, path: Path, base_offset: int) -> None:
    write_file(fs, path, pack_header(Header(KIND_ACTIVE, base_offset, now_us())))
    fs.fsync_dir(path.parent)
