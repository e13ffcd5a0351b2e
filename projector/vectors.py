"""The meaning view's files, and what readers ask of them: the frames nearest a question.

Layout under ``views/meaning/``::

    manifest.json          the model, the log position applied, the frames embedded, and
                           each month's chunk files in the order they were written
    2026-11.000042.vec     one chunk: the frames of one month that one batch embedded

A chunk is one byte saying how it is kept (``P`` plain, ``E`` sealed with the store's key by
``ViewCipher.seal_view`` under the file's name), then a MessagePack ``Chunk``: for each frame
its id, capture time, the month's rows of its passages and their character spans in its
text; the new rows' keys (``ViewCipher.passage_key``, or BLAKE2b of the passage text when the
store keeps text in plain) and their vectors, int8 (a normalised vector × 127, rounded).
A passage whose key the month already holds is not embedded again: the frame points at the
existing row (a window ticking over shares its vectors). No text is kept: a hit's passage is
cut from the frame's text by its span.

Search is exact (every row of the months in the span, a matrix product): at 130,000 frames a
question costs a few milliseconds of it; see the README for why no approximate index.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

import msgspec

from base import jsontext
from base.errors import DecryptionError
from projector.embedder import DIMENSIONS, MODEL_ID

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "CUTOFF",
    "Chunk",
    "Manifest",
    "MeaningHit",
    "MeaningView",
    "ViewCipher",
    "plain_key",
]

MANIFEST = "manifest.json"
PLAIN, SEALED = b"P", b"E"
SCALE = 127.0
# A meaning match below this cosine is no hit. 0.10, for Universal Sentence Encoder
# Multilingual v3 (bench/meaning.py, 3,035 frames): a paraphrase's own screen scored a
# median of 0.23 (0.04-0.42), the best other frame 0.18 (0.10-0.28), and questions about
# nothing in the store 0.14-0.22 at their best frame: no cut-off parts the two. Each step up
# lost screens the questions were about: 0.10 and 0.12 found 15/20 paraphrases, 0.15 14,
# 0.20 12; time-and-app questions 20, 19, 18 and 16 of 20 (one screen scored 0.11 within
# its hour). What it still turns away is the plainly unrelated: a cake recipe scored
# 0.02-0.05 against tests/test_meaning.py's three screens.
CUTOFF = 0.10


class ViewCipher(Protocol):
    """What the meaning view needs of the store's key (``backscroll.crypto.FrameCrypto``)."""

    def seal_view(self, name: str, data: bytes) -> bytes: ...
    def open_view(self, name: str, blob: bytes) -> bytes: ...
    def passage_key(self, text: str) -> bytes: ...


def plain_key(text: str) -> bytes:
    """A passage's key in a store that keeps its text in plain (the text is there anyway)."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


class Chunk(msgspec.Struct, array_like=True):
    ids: list[int]
    times: list[int]
    rows: list[list[int]]
    spans: list[list[tuple[int, int]]]
    keys: list[bytes]
    vectors: bytes


class Manifest(msgspec.Struct):
    model: str = ""
    position: int = -1
    seq: int = 0
    months: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    """Frames a chunk holds, by its name."""

    @property
    def frames(self) -> int:
        """Frames the view has read (embedded, or without words to embed)."""
        return sum(self.counts.values())

    @classmethod
    def load(cls, root: Path) -> Manifest:
        """The manifest, or an empty one where there is none, it does not read, or another
        model made its vectors (they are not comparable with this model's questions: no
        reader searches them, and the next writer removes their chunks, which no manifest
        then names). The view is then rebuilt: it is disposable."""
        try:
            data = (root / MANIFEST).read_bytes()
        except FileNotFoundError:
            return cls()
        try:
            manifest = jsontext.decode(data, cls)
        except (msgspec.DecodeError, ValueError):
            return cls()
        return manifest if manifest.model in ("", MODEL_ID) else cls()


def read_chunk(root: Path, name: str, cipher: ViewCipher | None) -> Chunk:
    """Raises DecryptionError where a sealed chunk cannot be opened (no key, another key)."""
    data = (root / name).read_bytes()
    kind, body = data[:1], data[1:]
    if kind == SEALED:
        if cipher is None:
            raise DecryptionError(f"{name}: the encryption key is not available")
        body = cipher.open_view(name, body)
    elif kind != PLAIN:
        raise DecryptionError(f"{name}: not a chunk of the meaning view")
    try:
        return msgspec.msgpack.decode(body, type=Chunk)
    except msgspec.DecodeError as exc:
        raise DecryptionError(f"{name}: does not read ({exc})") from None


class MeaningHit(NamedTuple):
    score: float
    frame_id: int
    span: tuple[int, int]


class _Month(NamedTuple):
    """A month's rows, and its frames' passages as (frame, row) pairs grouped by frame."""

    names: tuple[str, ...]
    vectors: np.ndarray  # float32 rows × DIMENSIONS
    ids: np.ndarray
    times: np.ndarray
    starts: np.ndarray  # each frame's first pair
    pairs: np.ndarray  # rows, frame by frame
    spans: list[list[tuple[int, int]]]


class MeaningView:
    """Reads the meaning view; keeps months loaded between questions (a long-lived reader:
    the MCP server) and reloads a month whose chunks changed."""

    def __init__(self, root: Path, cipher: ViewCipher | None = None) -> None:
        self.root = root
        self.cipher = cipher
        self._months: dict[str, _Month] = {}
        self.unreadable: dict[str, str] = {}
        """Chunks left out of the last search (a key not available), and why."""

    def manifest(self) -> Manifest:
        return Manifest.load(self.root)

    def search(
        self,
        query: np.ndarray,
        first: str | None,
        last: str | None,
        start_us: int | None,
        end_us: int | None,
        cutoff: float = CUTOFF,
    ) -> list[MeaningHit]:
        """Every frame of the months ``first``..``last`` captured in [start_us, end_us) whose
        best passage scores ``cutoff`` or more, best first."""
        import numpy as np

        manifest = self.manifest()
        self.unreadable = {}
        for month, held in list(self._months.items()):
            # A month deleted or rewritten (a deletion's purge) leaves memory at once: a
            # long-lived reader must not keep deleted frames' vectors.
            if tuple(manifest.months.get(month, ())) != held.names:
                del self._months[month]
        out: list[MeaningHit] = []
        for month in sorted(manifest.months):
            if (first and month < first) or (last and month > last):
                continue
            loaded = self._month(month, tuple(manifest.months[month]))
            if loaded is None or not len(loaded.ids):
                continue
            row_scores = loaded.vectors @ query
            pair_scores = row_scores[loaded.pairs]
            best = np.maximum.reduceat(pair_scores, loaded.starts)
            keep = best >= cutoff
            if start_us is not None:
                keep &= loaded.times >= start_us
            if end_us is not None:
                keep &= loaded.times < end_us
            for i in np.flatnonzero(keep):
                lo = loaded.starts[i]
                hi = loaded.starts[i + 1] if i + 1 < len(loaded.starts) else len(loaded.pairs)
                which = int(np.argmax(pair_scores[lo:hi]))
                out.append(MeaningHit(float(best[i]), int(loaded.ids[i]), loaded.spans[i][which]))
        out.sort(key=lambda h: (-h.score, -h.frame_id))
        return out

    def _month(self, month: str, names: tuple[str, ...]) -> _Month | None:
        import numpy as np

        cached = self._months.get(month)
        if cached is not None and cached.names == names:
            return cached
        chunks = []
        for name in names:
            try:
                chunks.append(read_chunk(self.root, name, self.cipher))
            except (DecryptionError, FileNotFoundError) as exc:
                self.unreadable[name] = str(exc)
                return None
        matrix = b"".join(c.vectors for c in chunks)
        vectors = np.frombuffer(matrix, np.int8).reshape(-1, DIMENSIONS).astype(np.float32) / SCALE
        # Frames without passages (no words) are left out: each group below has a row.
        frames = [
            (i, t, r, s)
            for c in chunks
            for i, t, r, s in zip(c.ids, c.times, c.rows, c.spans, strict=True)
            if r
        ]
        rows = [f[2] for f in frames]
        starts = np.cumsum([0, *[len(r) for r in rows[:-1]]]).astype(np.int64)
        loaded = _Month(
            names,
            vectors,
            np.asarray([f[0] for f in frames], np.int64),
            np.asarray([f[1] for f in frames], np.int64),
            starts if rows else np.zeros(0, np.int64),
            np.asarray([r for frame in rows for r in frame], np.int64),
            [f[3] for f in frames],
        )
        self._months[month] = loaded
        return loaded
