"""The meaning view's rows, their binary codes and each month's map: how a question's
candidate rows are found and scored.

A row (a passage's vector) is kept in 4 bits a dimension (``ROW_BYTES``, 256 bytes at 512):
level ``k`` = floor(v × ``SCALE`` + 8), clipped to 0..15, standing for k - 7.5, two levels a
byte (the even dimension in the high half). No level stands for 0, so a level's top bit is
the coordinate's sign: a row's binary code (a bit a dimension, ``CODE_BYTES``) is taken from
its 4-bit row. The Hamming distance between two codes follows the angle between the vectors
closely enough to choose a few hundred candidates, which their 4-bit rows then score (the
cosine with the question, the levels' own norm divided out).

A month's map is what a reader needs to choose among the month's rows without opening its
chunks: the codes of its first ``Map.rows`` rows and which frames of its first ``Map.chunks``
chunks use which of them, in a file of its own::

    2026-11.000057.map   one byte saying how it is kept, then a MessagePack ``MapBody``:
                         P  BLAKE2b-128 of the body, then the body (a plain store)
                         E  ViewCipher.seal_view(name, body) (text encrypted)

A plain map is memory-mapped, not read: its arrays are views of the file's pages (page
cache, shared and reclaimable); a sealed one is decrypted into memory. The digest is there
because a damaged map would point at rows and frames that are not there; AES-GCM
authenticates a sealed one.
"""

from __future__ import annotations

import hashlib
import mmap
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import msgspec

from base.errors import DecryptionError
from projector.embedder import DIMENSIONS

if TYPE_CHECKING:
    import numpy as np

PLAIN, SEALED = b"P", b"E"
DIGEST = 16
ROW_BYTES = DIMENSIONS // 2
CODE_BYTES = DIMENSIONS // 8
# Levels a unit of a coordinate. 100, measured on 2,609 passages of the corpus (this model's
# vectors: coordinates of 0.043 median size, 0.073 at the 99th percentile, so ±7.5 levels
# reach 0.075): the cosine of 200 of them with all was off by 0.0030 on average (0.0075 at
# 40, 0.0053 at 60, 0.0038 at 80, 0.0080 at 130, where more coordinates are clipped), and
# the first 10 by the 4-bit rows were 95.0% those by the float vectors (int8 rows × 127, the
# format before, 0.0022 and 96.6%: this model's coordinates used ±16 of int8's ±127).
SCALE = 100.0


class Sealer(Protocol):
    def seal_view(self, name: str, data: bytes) -> bytes: ...
    def open_view(self, name: str, blob: bytes) -> bytes: ...


class MapBody(msgspec.Struct, array_like=True):
    """A month's map: each array's bytes, little-endian; frames without passages are left
    out (each frame here has a row)."""

    ids: memoryview  # int64, each frame
    times: memoryview  # int64, each frame's capture time, UTC µs
    counts: memoryview  # int32, each frame's passages
    rows: memoryview  # int32, each passage's row, frame by frame
    spans: memoryview  # int32 × 2, each passage's characters in its frame's text
    codes: memoryview  # CODE_BYTES each row


def quantise(vectors: np.ndarray) -> np.ndarray:
    """Unit vectors (rows × DIMENSIONS, float) as 4-bit rows: rows × ROW_BYTES, uint8."""
    import numpy as np

    levels = np.clip(np.floor(vectors * SCALE + 8), 0, 15).astype(np.uint8)
    packed: np.ndarray = (levels[:, 0::2] << 4) | levels[:, 1::2]
    return packed


def levels(rows: np.ndarray) -> np.ndarray:
    """4-bit rows as their levels, centred (k - 7.5): rows × DIMENSIONS, float32."""
    import numpy as np

    out = np.empty((len(rows), 2 * rows.shape[1]), np.float32)
    out[:, 0::2] = rows >> 4
    out[:, 1::2] = rows & 15
    out -= 7.5
    return out


def cosines(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Each 4-bit row's cosine with the unit vector ``query``."""
    import numpy as np

    found = levels(rows)
    scored: np.ndarray = (found @ query.astype(np.float32)) / np.linalg.norm(found, axis=1)
    return scored


def codes(rows: np.ndarray) -> np.ndarray:
    """The binary codes of 4-bit rows: each level's top bit, packed (rows × CODE_BYTES)."""
    import numpy as np

    bits = np.empty((len(rows), 2 * rows.shape[1]), bool)
    bits[:, 0::2] = rows & 0x80
    bits[:, 1::2] = rows & 0x08
    packed: np.ndarray = np.packbits(bits, axis=1)
    return packed


def distances(found: np.ndarray, code: np.ndarray) -> np.ndarray:
    """The Hamming distance of each code of ``found`` (rows × CODE_BYTES) to ``code``, by
    numkong's SIMD kernel (usearch's own): ~12 ms for 1.19 million codes of 512 bits on
    this machine, where usearch's exact search, which keeps its own top-k, took ~110 ms and
    numpy's XOR and popcount ~85 ms (measured, one core each)."""
    import numkong
    import numpy as np

    if not len(found):
        return np.zeros(0, np.float32)
    # float32 holds every count to 512 exactly (numkong's stubs name float results only).
    out = numkong.cdist(code[None, :], found, "hamming", dtype="uint1", out_dtype="float32")
    counted: np.ndarray = np.asarray(out)[0]
    return counted


def view_file(root: Path, name: str, cipher: Sealer | None) -> tuple[bytes, bytes]:
    """A meaning view file's kind (its first byte) and its body, opened where it is sealed;
    raises DecryptionError where it cannot be (no key, another key)."""
    data = (root / name).read_bytes()
    kind, body = data[:1], data[1:]
    if kind == SEALED:
        if cipher is None:
            raise DecryptionError(f"{name}: the encryption key is not available")
        body = cipher.open_view(name, body)
    return kind, body


def map_file(body: MapBody, name: str, cipher: Sealer | None) -> bytes:
    encoded = msgspec.msgpack.encode(body)
    if cipher is not None:
        return SEALED + cipher.seal_view(name, encoded)
    return PLAIN + hashlib.blake2b(encoded, digest_size=DIGEST).digest() + encoded


def open_map(root: Path, name: str, cipher: Sealer | None) -> MapBody:
    """The map in ``root / name``, its arrays views of the mapped file (plain) or of the
    decrypted body (sealed); raises DecryptionError where it cannot be opened (no key,
    another key) or is damaged."""
    with open(root / name, "rb") as f:
        kind = f.read(1)
        if kind == SEALED:
            if cipher is None:
                raise DecryptionError(f"{name}: the encryption key is not available")
            body: memoryview | bytes = cipher.open_view(name, f.read())
        elif kind == PLAIN:
            mapped = memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
            digest, body = mapped[1 : 1 + DIGEST], mapped[1 + DIGEST :]
            if hashlib.blake2b(body, digest_size=DIGEST).digest() != digest:
                raise DecryptionError(f"{name}: damaged (its checksum does not match)")
        else:
            raise DecryptionError(f"{name}: not a map of the meaning view")
    try:
        found = msgspec.msgpack.decode(body, type=MapBody)
    except msgspec.DecodeError as exc:
        raise DecryptionError(f"{name}: does not read ({exc})") from None
    frames, pairs = len(found.ids) // 8, len(found.rows) // 4
    if (
        len(found.times) != 8 * frames
        or len(found.counts) != 4 * frames
        or len(found.spans) != 8 * pairs
        or len(found.codes) % CODE_BYTES
    ):
        raise DecryptionError(f"{name}: its arrays do not agree")
    return found
