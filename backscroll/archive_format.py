"""The byte format of an archive (``backscroll export --archive``): one file, sealed under a
key derived from a passphrase, read and written as a stream.

An archive is a header, then chunks::

    header   56 bytes, big-endian
             magic "BSCRLARC" | version u16 (= 1) | kdf u8 (1: Argon2id)
             | memory KiB u32 | iterations u32 | lanes u8 | salt 16 bytes
             | check 16 bytes | crc32c u32 of every byte before it
    chunk    length u32 (of what follows) | AES-256-GCM ciphertext and 16-byte tag

The key is Argon2id(passphrase, salt) with the parameters the header names (RFC 9106's
second recommended setting when written: 64 MiB, 3 passes, 4 lanes). ``check`` is the tag
of an empty message under the key (the nonce ``CHECK_NONCE``, the header's first 36 bytes
as associated data), so a wrong passphrase is told from a damaged chunk; the checksum tells
a damaged header from a wrong passphrase.

Chunk ``i`` is sealed with the nonce ``i`` (u64) | final flag (u8) | three zero bytes, and the
whole header as associated data (the STREAM construction of Hoang, Reyhanitabar, Rogaway and
Vizár): a chunk moved, dropped, repeated, altered or taken from another archive fails to
open, and an archive cut short lacks its final chunk. The key is new for every archive (a
random salt), so counting nonces never repeat under one key. The last chunk carries the
final flag, and nothing may follow it.

A chunk's plaintext is a zstd frame of one MessagePack array of ``Item``: an event of the
log at its offset, as the log holds it but for what the store's key sealed (a frame's text
and thumbnail), which is opened and carried in the clear inside the archive's encryption.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, BinaryIO, Protocol

import crc32c
import msgspec
import zstandard

from base.errors import CorruptionError, UsageError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

MAGIC = b"BSCRLARC"
VERSION = 1
KDF_ARGON2ID = 1
SALT_BYTES = 16
TAG_BYTES = 16
KEY_BYTES = 32
HEAD = struct.Struct(">8sHBIIB16s")
"""What the check and the checksum cover: everything but themselves."""
HEADER = struct.Struct(">8sHBIIB16s16sI")
CHUNK = struct.Struct(">I")
CHECK_NONCE = b"\xff" * 12
"""Never a chunk's nonce: a chunk's ninth byte is its final flag, 0 or 1."""
CHUNK_BYTES = 1 << 20
"""Items are gathered into a chunk until it holds this much (a chunk holds at least one):
large enough that the 20 bytes of framing and the zstd frame cost nothing, small enough that
a reader holds little."""
MAX_PLAIN = 64 << 20
"""The most a chunk may decompress to: a chunk of ``CHUNK_BYTES`` and one more item, whose
text is at most 4,000,000 characters (16 MB of UTF-8) beside a thumbnail."""
ZSTD_LEVEL = 3

assert HEAD.size == 36 and HEADER.size == 56


class Kdf(msgspec.Struct, frozen=True):
    """Argon2id's cost: ``memory_kib`` of memory, ``iterations`` passes, ``lanes`` lanes."""

    memory_kib: int = 64 * 1024
    iterations: int = 3
    lanes: int = 4


DEFAULT_KDF = Kdf()
"""RFC 9106 §4, its second recommendation where memory is limited: 64 MiB, t = 3, p = 4.
0.66 s here (2 cores, loaded); the first (2 GiB) would not fit a small machine."""
KDF_LIMITS = Kdf(memory_kib=4 << 20, iterations=64, lanes=64)
"""The most an archive may ask of the reader (4 GiB): a header asking more is damaged, not
a reason to exhaust the machine's memory."""

Offset = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]


class Item(msgspec.Struct, array_like=True, frozen=True, gc=False):
    """One event of the log at its offset.

    ``payload`` is the event's MessagePack, as the log's record holds it, with record type
    ``type``; a frame's is opened: its text in the clear (``seal_text``: the store sealed
    it) and its thumbnail in ``jpeg`` (``seal_thumb``: the store sealed it).
    """

    offset: Offset
    type: Annotated[int, msgspec.Meta(ge=0, le=0xFFFF)]
    payload: bytes
    jpeg: bytes | None = None
    seal_text: bool = False
    seal_thumb: bool = False


_items = msgspec.msgpack.Decoder(list[Item])


def derive(passphrase: bytes, salt: bytes, kdf: Kdf) -> bytes:
    from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

    return Argon2id(
        salt=salt,
        length=KEY_BYTES,
        iterations=kdf.iterations,
        lanes=kdf.lanes,
        memory_cost=kdf.memory_kib,
    ).derive(passphrase)


def _nonce(index: int, final: bool) -> bytes:
    return index.to_bytes(8, "big") + bytes((final, 0, 0, 0))


class Sink(Protocol):
    def write(self, data: bytes) -> object: ...


class Writer:
    """Writes items to ``file`` as an archive; ``close`` seals the final chunk."""

    def __init__(self, file: Sink, passphrase: bytes, kdf: Kdf = DEFAULT_KDF) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        salt = os.urandom(SALT_BYTES)
        head = HEAD.pack(
            MAGIC, VERSION, KDF_ARGON2ID, kdf.memory_kib, kdf.iterations, kdf.lanes, salt
        )
        self._aead = AESGCM(derive(passphrase, salt, kdf))
        check = self._aead.encrypt(CHECK_NONCE, b"", head)
        body = head + check
        self._header = body + crc32c.crc32c(body).to_bytes(4, "big")
        self._file = file
        self._file.write(self._header)
        self._pending: list[Item] = []
        self._size = 0
        self._index = 0
        self._zstd = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
        self.bytes = len(self._header)

    def add(self, item: Item) -> None:
        self._pending.append(item)
        self._size += len(item.payload) + len(item.jpeg or b"")
        if self._size >= CHUNK_BYTES:
            self._seal(final=False)

    def close(self) -> None:
        self._seal(final=True)

    def _seal(self, final: bool) -> None:
        plain = self._zstd.compress(msgspec.msgpack.encode(self._pending))
        sealed = self._aead.encrypt(_nonce(self._index, final), plain, self._header)
        self._file.write(CHUNK.pack(len(sealed)) + sealed)
        self.bytes += CHUNK.size + len(sealed)
        self._index += 1
        self._pending.clear()
        self._size = 0


class Reader:
    """An archive opened with its passphrase: the header read and the key derived once (it
    costs the KDF), the items read as often as asked, each chunk authenticated before any of
    its items is given. ``UsageError`` for a wrong passphrase, ``CorruptionError`` for an
    archive that is damaged (cut short, a byte changed, chunks moved), both one line."""

    def __init__(self, file: BinaryIO, passphrase: bytes) -> None:
        self._file = file
        self._header = file.read(HEADER.size)
        self._aead = _key(self._header, passphrase)

    def items(self) -> Iterator[Item]:
        """The items in order, from the first chunk."""
        self._file.seek(HEADER.size)
        return _chunks(self._file, self._header, self._aead)


def open_archive(file: BinaryIO, passphrase: bytes) -> Iterator[Item]:
    """The archive's items in order (``Reader``); the key is derived before the first item is
    asked for."""
    return Reader(file, passphrase).items()


def _key(header: bytes, passphrase: bytes) -> AESGCM:
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    if len(header) < HEADER.size or not header.startswith(MAGIC):
        raise CorruptionError("not a Backscroll archive (it does not start as one)")
    _, version, kdf_id, memory, iterations, lanes, salt, check, crc = HEADER.unpack(header)
    if crc32c.crc32c(header[:-4]) != crc:
        raise CorruptionError("the archive is damaged: its header fails its checksum")
    if version != VERSION or kdf_id != KDF_ARGON2ID:
        raise CorruptionError(
            f"the archive is of format {version} (KDF {kdf_id}); this Backscroll reads format "
            f"{VERSION}: import it with the version that wrote it, or a newer one"
        )
    kdf = Kdf(memory, iterations, lanes)
    if not (
        8 * lanes <= memory <= KDF_LIMITS.memory_kib
        and 1 <= iterations <= KDF_LIMITS.iterations
        and 1 <= lanes <= KDF_LIMITS.lanes
    ):
        raise CorruptionError(
            f"the archive is damaged: its KDF parameters are out of range ({kdf})"
        )
    aead = AESGCM(derive(passphrase, salt, kdf))
    try:
        aead.decrypt(CHECK_NONCE, check, header[: HEAD.size])
    except InvalidTag:
        raise UsageError("wrong passphrase: the archive does not open with it") from None
    return aead


def _chunks(file: BinaryIO, header: bytes, aead: AESGCM) -> Iterator[Item]:
    from cryptography.exceptions import InvalidTag

    dctx = zstandard.ZstdDecompressor()
    index = 0
    while True:
        head = file.read(CHUNK.size)
        if len(head) < CHUNK.size:
            raise CorruptionError(
                f"the archive is damaged: it is cut short after chunk {index} (no final chunk)"
            )
        (length,) = CHUNK.unpack(head)
        if not TAG_BYTES <= length <= MAX_PLAIN + TAG_BYTES:
            raise CorruptionError(f"the archive is damaged: chunk {index} has a length of {length}")
        sealed = file.read(length)
        if len(sealed) < length:
            raise CorruptionError(f"the archive is damaged: it is cut short in chunk {index}")
        for final in (False, True):
            try:
                plain = aead.decrypt(_nonce(index, final), sealed, header)
                break
            except InvalidTag:
                continue
        else:
            raise CorruptionError(
                f"the archive is damaged: chunk {index} does not open (changed, moved or cut)"
            )
        try:
            items = _items.decode(dctx.decompress(plain, max_output_size=MAX_PLAIN))
        except (zstandard.ZstdError, msgspec.DecodeError) as exc:
            # Authenticated yet unreadable: written by a buggy or foreign writer.
            raise CorruptionError(
                f"the archive is damaged: chunk {index} does not read: {exc}"
            ) from None
        yield from items
        index += 1
        if final:
            if file.read(1):
                raise CorruptionError("the archive is damaged: bytes follow its final chunk")
            return
