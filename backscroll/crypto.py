"""Encryption at rest of frame text and thumbnails, and the blind tokens of encrypted text.

Three sub-keys are derived from the master key with HKDF-SHA256, one per purpose, so no key
ever serves two: "backscroll text v1", "backscroll thumb v1", "backscroll blind v1".

A sealed blob is::

    version (1 byte, = 1) | nonce (12 random bytes) | AES-256-GCM ciphertext and 16-byte tag

Text is UTF-8, zstd-compressed (level 3) before it is encrypted (ciphertext does not
compress); thumbnails are JPEG and are sealed as they are. The associated data binds the
version, the field and the frame id (``b"\\x01backscroll/text/" + id as 8 bytes big-endian``),
so a blob moved to another frame or another field, or tampered with, fails to open
(DecryptionError) instead of showing the wrong frame's text.

Blind tokens (the search index of encrypted text) are HMAC-SHA256 of each distinct word under
the blind sub-key, truncated, sorted: word order and frequency are hidden, equal words give
equal tokens, so whole-word search still works.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
from importlib.util import find_spec
from typing import TYPE_CHECKING

import zstandard

from base.errors import DecryptionError, StoreError
from base.tokens import normalize, words

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = ["BLIND_TOKEN_BYTES", "FORMAT_VERSION", "MEMO_WORDS", "DecryptionError", "FrameCrypto"]

FORMAT_VERSION = 1
NONCE_BYTES = 12  # the size GCM is defined for; random nonces are safe to ~2**32 messages per key
TAG_BYTES = 16
MASTER_KEY_BYTES = 32
ZSTD_LEVEL = 3

# 12 bytes = 96 bits: among n distinct words the chance that any two share a token is about
# n² / 2**97; a lifetime of screen text (10 million distinct words) gives ~6e-16. Shorter
# tokens keep the index small, and 12 bytes is exactly 16 base64 characters, no padding.
BLIND_TOKEN_BYTES = 12

MEMO_WORDS = 200_000
"""How many words' blind tokens a writer of many frames (import, reindex) keeps in memory
(~28 MB: the corpus's 130,000 frames hold 59,480 distinct words, 8.4 MB of memo). A word's
HMAC costs ~2 µs, and a frame of screen text holds ~100 distinct words, of which 3 were not in
the frames before it over 10,000 frames of the corpus (10 within each batch of 1,000)."""

_TEXT_LABEL = b"backscroll text v1"
_THUMB_LABEL = b"backscroll thumb v1"
_BLIND_LABEL = b"backscroll blind v1"
_MEANING_LABEL = b"backscroll meaning v1"
_PASSAGE_LABEL = b"backscroll passage v1"

_MAX_FRAME_ID = 2**64 - 1


class FrameCrypto:
    """Seals and opens the text and thumbnail of frames, and makes blind tokens, for one key.

    Thread-safe: the AES-GCM objects are stateless, and zstd contexts are per thread.
    """

    def __init__(self, master_key: bytes) -> None:
        if len(master_key) != MASTER_KEY_BYTES:
            raise ValueError(f"the master key must be {MASTER_KEY_BYTES} bytes")
        if find_spec("cryptography") is None:
            raise StoreError(
                "encryption needs the cryptography package; install it to read or write "
                "encrypted frames"
            )
        self._keys = (_derive(master_key, _TEXT_LABEL), _derive(master_key, _THUMB_LABEL))
        self._aead: tuple[AESGCM, AESGCM] | None = None
        # HMAC state keyed once and copied per word: skips re-keying, ~1 µs a word instead
        # of ~1.6 µs.
        self._blind = hmac.new(_derive(master_key, _BLIND_LABEL), digestmod=hashlib.sha256)
        # The meaning view's files and the keys of its passages (projector.vectors.ViewCipher):
        # a vector is text in another form, and a plain hash of a passage would confirm a guess.
        self._meaning = _derive(master_key, _MEANING_LABEL)
        self._passage = hmac.new(_derive(master_key, _PASSAGE_LABEL), digestmod=hashlib.sha256)
        # zstd contexts are reused (2 µs a 2 KB text against 10 µs for a fresh one) but are
        # not thread-safe, hence one pair per thread.
        self._zstd = threading.local()

    def __repr__(self) -> str:
        return "FrameCrypto(<key hidden>)"

    # -- text ---------------------------------------------------------------------------

    def encrypt_text(self, frame_id: int, text: str) -> bytes:
        compressed = self._compressor().compress(text.encode("utf-8"))
        return _seal(self._ciphers()[0], _associated_data(b"text", frame_id), compressed)

    def decrypt_text(self, frame_id: int, blob: bytes) -> str:
        text = self._ciphers()[0]
        compressed = _open(text, _associated_data(b"text", frame_id), blob, frame_id, "text")
        try:
            return self._decompressor().decompress(compressed).decode("utf-8")
        except (zstandard.ZstdError, UnicodeDecodeError) as error:
            # Authenticated yet unreadable: written by a buggy or foreign writer.
            raise DecryptionError(
                f"frame {frame_id}: the decrypted text is invalid: {error}"
            ) from None

    # -- kept memories ------------------------------------------------------------------

    def encrypt_memory(self, memory_id: str, version: int, sealed: bytes) -> bytes:
        """A kept memory's version, sealed with the text key; bound to its id and version
        (``backscroll/memory/<id>/<version>``), so it opens as no frame and no other one."""
        compressed = self._compressor().compress(sealed)
        return _seal(self._ciphers()[0], _memory_data(memory_id, version), compressed)

    def decrypt_memory(self, memory_id: str, version: int, blob: bytes) -> bytes:
        text = self._ciphers()[0]
        what = f"memory {memory_id}"
        compressed = _open(text, _memory_data(memory_id, version), blob, 0, "text", what)
        try:
            return self._decompressor().decompress(compressed)
        except zstandard.ZstdError as error:
            raise DecryptionError(f"{what}: the decrypted text is invalid: {error}") from None

    # -- thumbnails ---------------------------------------------------------------------

    def encrypt_thumb(self, frame_id: int, jpeg: bytes) -> bytes:
        # No compression: JPEG is already compressed.
        return _seal(self._ciphers()[1], _associated_data(b"thumb", frame_id), jpeg)

    def decrypt_thumb(self, frame_id: int, blob: bytes) -> bytes:
        thumb = self._ciphers()[1]
        return _open(thumb, _associated_data(b"thumb", frame_id), blob, frame_id, "thumbnail")

    def _ciphers(self) -> tuple[AESGCM, AESGCM]:
        """The text and thumbnail ciphers, made at first use: importing cryptography costs
        ~10 ms, which a search that decrypts nothing (blind tokens are HMACs) never pays.
        Two threads may both make them; either pair serves."""
        if self._aead is None:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM

            self._aead = (AESGCM(self._keys[0]), AESGCM(self._keys[1]))
        return self._aead

    # -- blind tokens -------------------------------------------------------------------

    def blind_tokens(self, text: str, memo: dict[str, bytes] | None = None) -> tuple[bytes, ...]:
        """The sorted, distinct blind tokens of the words of ``text``.

        ``memo`` maps words to their tokens across calls, so a word seen before costs a look-up
        instead of an HMAC: a writer of many frames (an import) keeps one in memory while it
        runs, never on disk (its keys are screen text). The tokens are the same either way.
        """
        distinct = set(words(text))
        known: dict[str, bytes] = {} if memo is None else memo
        for word in distinct.difference(known):
            known[word] = self._token(_canonical(word))
        # Two words may share a canonical form, and so a token: hence the set.
        return tuple(sorted(set(map(known.__getitem__, distinct))))

    def blind_token(self, word: str) -> bytes:
        """The blind token of one query word: the token ``blind_tokens`` gives that word."""
        return self._token(_canonical(word))

    def _token(self, word: str) -> bytes:
        mac = self._blind.copy()
        mac.update(word.encode("utf-8"))
        return mac.digest()[:BLIND_TOKEN_BYTES]

    # -- the meaning view ---------------------------------------------------------------

    def seal_view(self, name: str, data: bytes) -> bytes:
        """A file of the meaning view, sealed under its name: a file renamed or swapped for
        another fails to open."""
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        return _seal(AESGCM(self._meaning), _view_data(name), data)

    def open_view(self, name: str, blob: bytes) -> bytes:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        return _open(AESGCM(self._meaning), _view_data(name), blob, 0, f"view file {name}")

    def passage_key(self, text: str) -> bytes:
        """The key a passage's vector is kept under: equal passages, equal keys; keyed, so the
        key confirms no guess of the text without the store's key."""
        mac = self._passage.copy()
        mac.update(text.encode("utf-8"))
        return mac.digest()[:16]

    # -- per-thread zstd contexts -------------------------------------------------------

    def _compressor(self) -> zstandard.ZstdCompressor:
        compressor: zstandard.ZstdCompressor | None = getattr(self._zstd, "compressor", None)
        if compressor is None:
            compressor = self._zstd.compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
        return compressor

    def _decompressor(self) -> zstandard.ZstdDecompressor:
        decompressor: zstandard.ZstdDecompressor | None = getattr(self._zstd, "decompressor", None)
        if decompressor is None:
            decompressor = self._zstd.decompressor = zstandard.ZstdDecompressor()
        return decompressor


def _canonical(word: str) -> str:
    # The words of `words()` are already NFKC and lowercase, and this leaves them unchanged;
    # applying it on both sides makes "a query word's token equals its token in the text"
    # hold by construction, for query words typed in any case or form.
    return normalize(word).lower()


def _derive(master_key: bytes, label: bytes) -> bytes:
    """HKDF-SHA256 (RFC 5869) without a salt, 32 bytes: one HMAC to extract, one to expand,
    as cryptography's HKDF computes them, without importing it."""
    prk = hmac.digest(bytes(hashlib.sha256().digest_size), master_key, "sha256")
    return hmac.digest(prk, label + b"\x01", "sha256")


def _associated_data(field: bytes, frame_id: int) -> bytes:
    if not 0 <= frame_id <= _MAX_FRAME_ID:
        raise ValueError(f"frame id {frame_id} is outside 0..2**64-1")
    return bytes((FORMAT_VERSION,)) + b"backscroll/" + field + b"/" + frame_id.to_bytes(8, "big")


def _memory_data(memory_id: str, version: int) -> bytes:
    name = memory_id.encode("ascii")
    return (
        bytes((FORMAT_VERSION,)) + b"backscroll/memory/" + name + b"/" + version.to_bytes(8, "big")
    )


def _view_data(name: str) -> bytes:
    return bytes((FORMAT_VERSION,)) + b"backscroll/meaning/" + name.encode("utf-8")


def _seal(aead: AESGCM, associated_data: bytes, plaintext: bytes) -> bytes:
    nonce = os.urandom(NONCE_BYTES)
    return bytes((FORMAT_VERSION,)) + nonce + aead.encrypt(nonce, plaintext, associated_data)


def _open(
    aead: AESGCM,
    associated_data: bytes,
    blob: bytes,
    frame_id: int,
    what: str,
    owner: str = "",
) -> bytes:
    from cryptography.exceptions import InvalidTag

    owner = owner or f"frame {frame_id}"
    if len(blob) < 1 + NONCE_BYTES + TAG_BYTES:
        raise DecryptionError(f"{owner}: the encrypted {what} is truncated")
    if blob[0] != FORMAT_VERSION:
        raise DecryptionError(f"{owner}: the encrypted {what} has unknown format version {blob[0]}")
    nonce = blob[1 : 1 + NONCE_BYTES]
    try:
        return aead.decrypt(nonce, blob[1 + NONCE_BYTES :], associated_data)
    except InvalidTag:
        raise DecryptionError(
            f"{owner}: the encrypted {what} does not open "
            f"(wrong key, or the data was changed or belongs to another {owner.split()[0]})"
        ) from None
