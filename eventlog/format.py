"""The byte format of the event log. Everything on disk is described here.

A log is a folder of segments, each named by its base offset in 20 decimal digits:

    00000000000000000000.seg    the active segment: records appended one after another
    00000000000000004096.zst    a sealed segment: the same records in zstd-compressed blocks

Every integer is little-endian. A segment starts with a 64-byte header:

    offset size field
    0      8    magic            b"BSCRLOG\\0"
    8      2    version          FORMAT_VERSION
    10     1    kind             KIND_ACTIVE (0) or KIND_SEALED (1)
    11     1    reserved         0
    12     8    base_offset      first offset this segment may hold
    20     8    created_us       UTC microseconds when the segment was created
    28     8    end_offset       sealed: one past the last offset it covers (dropped ones too),
                                 so the next offset survives even when every record is gone;
                                 active: 0
    36     8    min_captured_us  sealed: the oldest frame's capture time (0 if no frames)
    44     8    max_captured_us  sealed: the newest frame's capture time (0 if no frames)
    52     4    frames           sealed: number of FrameCaptured records
    56     4    controls         sealed: number of other (control) records
    60     4    header_crc       CRC32C of bytes 0..59

A record (appended directly in an active segment, concatenated inside a sealed block):

    0      4    length           payload bytes
    4      4    crc              CRC32C of bytes 8..(18+length): type, offset and payload
    8      2    type             event type code (``eventlog.events.TYPE_CODES``)
    10     8    offset           the record's log offset (a frame's id)
    18     n    payload          the event, MessagePack (``eventlog.codec``)

Offsets only grow. In an active segment they are consecutive from ``base_offset``;
compaction leaves gaps and never renumbers (as Kafka's does).

A sealed segment is the header followed by blocks, each one zstd frame of whole records:

    0      4    magic            b"BLK\\0" (lets a reader resynchronise after a damaged block)
    4      4    length           compressed bytes that follow the block header
    8      4    crc              CRC32C of bytes 12..(32+length): the rest of the header and data
    12     8    first_offset     offset of the block's first record
    20     8    last_offset      offset of the block's last record
    28     4    count            records in the block
    32     n    data             zstd frame

A reader locates an offset by walking block headers (a seek each), so a sealed segment is
readable from any offset without decompressing more than one block.
"""

from __future__ import annotations

import struct

MAGIC = b"BSCRLOG\0"
FORMAT_VERSION = 1
KIND_ACTIVE = 0
KIND_SEALED = 1

HEADER = struct.Struct("<8sHBBQQQqqIII")
RECORD = struct.Struct("<IIHQ")
BLOCK = struct.Struct("<4sIIQQI")
BLOCK_MAGIC = b"BLK\0"

assert HEADER.size == 64
assert RECORD.size == 18
assert BLOCK.size == 32

ACTIVE_SUFFIX = ".seg"
SEALED_SUFFIX = ".zst"
TORN_SUFFIX = ".torn"
NAME_DIGITS = 20

# A block of ~256 KB raw compresses to within a few percent of the whole segment (measured in
# bench/eventlog.py) while keeping a random read to one small decompression.
BLOCK_BYTES = 256 * 1024
# Active segments roll at this size, and at the first append of a new UTC day.
SEGMENT_BYTES = 64 * 1024 * 1024
ZSTD_LEVEL = 3


def segment_name(base_offset: int, sealed: bool) -> str:
    return f"{base_offset:0{NAME_DIGITS}d}{SEALED_SUFFIX if sealed else ACTIVE_SUFFIX}"


def parse_segment_name(name: str) -> tuple[int, bool] | None:
    """``(base_offset, sealed)`` for a segment file name, else None."""
    stem, _dot, suffix = name.partition(".")
    if (
        len(stem) != NAME_DIGITS
        or not stem.isdigit()
        or f".{suffix}"
        not in (
            ACTIVE_SUFFIX,
            SEALED_SUFFIX,
        )
    ):
        return None
    return int(stem), f".{suffix}" == SEALED_SUFFIX
