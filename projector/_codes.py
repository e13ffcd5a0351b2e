"""The meaning view's binary codes and their graphs: what finds a question's candidate rows
before their int8 vectors score them.

A row's code is the sign of each coordinate of its int8 vector, one bit each
(``DIMENSIONS / 8`` bytes): the Hamming distance between two codes follows the angle
between the vectors closely enough to pick a few hundred candidates, which the int8 vectors
then score exactly (cosine, the ``CUTOFF``). Codes are not kept on disk: they are the int8
rows' signs, taken when a month is read.

A month's graph is a usearch HNSW index (``Index(metric="hamming", dtype="b1")``) of its
first ``Graph.rows`` rows' codes, keyed by row, in a file of its own::

    2026-11.000057.graph   one byte saying how it is kept, then usearch's serialised index:
                           P  BLAKE2b-128 of the index, then the index (a plain store)
                           E  ViewCipher.seal_view(name, index) (text encrypted)

The digest is there because usearch reads a damaged index without noticing every damage;
AES-GCM authenticates a sealed one. Rows past a graph (the month's newest, or every row of a
month too small for one) are searched exactly, by usearch's SIMD search over their codes.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from base.errors import DecryptionError

if TYPE_CHECKING:
    import numpy as np
    from usearch.index import Index

PLAIN, SEALED = b"P", b"E"
DIGEST = 16
# usearch's defaults but for connectivity 16 (its default is 16 too, written down because the
# memory per row follows it: ~350 B a row of 384 bits in memory, measured at 100,000 rows).
CONNECTIVITY = 16


class Sealer(Protocol):
    def seal_view(self, name: str, data: bytes) -> bytes: ...
    def open_view(self, name: str, blob: bytes) -> bytes: ...


def codes(vectors: np.ndarray) -> np.ndarray:
    """The packed sign bits of int8 rows (rows × dimensions): rows × dimensions / 8 bytes."""
    import numpy as np

    packed: np.ndarray = np.packbits(vectors > 0, axis=1)
    return packed


def new_graph(dimensions: int) -> Index:
    from usearch.index import Index

    return Index(ndim=dimensions, metric="hamming", dtype="b1", connectivity=CONNECTIVITY)


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


def graph_file(index: Index, name: str, cipher: Sealer | None) -> bytes:
    saved = index.save()
    assert saved is not None  # given no path, usearch returns the bytes
    body = bytes(saved)
    if cipher is not None:
        return SEALED + cipher.seal_view(name, body)
    return PLAIN + hashlib.blake2b(body, digest_size=DIGEST).digest() + body


def open_graph(root: Path, name: str, cipher: Sealer | None) -> Index:
    """The graph in ``root / name``; raises DecryptionError where it cannot be opened (no key,
    another key) or is damaged."""
    from usearch.index import Index

    kind, body = view_file(root, name, cipher)
    if kind == PLAIN:
        digest, body = body[:DIGEST], body[DIGEST:]
        if hashlib.blake2b(body, digest_size=DIGEST).digest() != digest:
            raise DecryptionError(f"{name}: damaged (its checksum does not match)")
    elif kind != SEALED:
        raise DecryptionError(f"{name}: not a graph of the meaning view")
    try:
        index = Index.restore(body)
    except (ValueError, RuntimeError) as exc:
        raise DecryptionError(f"{name}: does not read ({exc})") from None
    if index is None:
        raise DecryptionError(f"{name}: does not read")
    return index


def nearest_exact(rows: np.ndarray, query: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``count`` rows of ``rows`` (codes) nearest ``query`` (a code): positions in
    ``rows`` and Hamming distances, by usearch's exact search."""
    import numpy as np
    from usearch.index import search

    count = min(count, len(rows))
    if not count:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    found = search(rows, query, count, "hamming", exact=True)
    return found.keys.astype(np.int64), found.distances.astype(np.float32)


def nearest_graph(index: Index, query: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``count`` rows of a graph nearest ``query``, approximately: rows and distances."""
    import numpy as np

    found = index.search(query, min(count, len(index)))
    return found.keys.astype(np.int64), found.distances.astype(np.float32)
