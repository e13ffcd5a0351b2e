"""The meaning view's files, and what readers ask of them: the frames nearest a question.

Layout under ``views/meaning/``::

    manifest.json          the format, the model, the log position applied, the frames
                           embedded, each month's chunk files in the order they were written
                           with the rows each adds, and each month's graph
    2026-11.000042.vec     one chunk: the frames of one month that one batch embedded
    2026-11.000057.graph   the month's graph: an HNSW index of its rows' binary codes
                           (``projector._codes``)

A chunk is one byte saying how it is kept (``P`` plain, ``E`` sealed with the store's key by
``ViewCipher.seal_view`` under the file's name), then a MessagePack ``Chunk``: for each frame
its id, capture time, the month's rows of its passages and their character spans in its
text; the new rows' keys (``ViewCipher.passage_key``, or BLAKE2b of the passage text when the
store keeps text in plain) and their vectors, int8 (a normalised vector × 127, rounded).
A passage whose key the month already holds is not embedded again: the frame points at the
existing row (a window ticking over shares its vectors). No text is kept: a hit's passage is
cut from the frame's text by its span.

Search is in two steps: the rows whose binary codes (the int8 rows' signs) are nearest the
question's (each month's graph, and usearch's exact search over the rows past it), then
those ``CANDIDATES`` rows scored exactly by their int8 vectors, read from their chunks.
The readers keep a month's codes, graph and frame map in memory, never its int8 vectors.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

import msgspec

from base import jsontext
from base.errors import DecryptionError
from projector._codes import (
    PLAIN,
    SEALED,
    codes,
    nearest_exact,
    nearest_graph,
    open_graph,
    view_file,
)
from projector.embedder import DIMENSIONS, MODEL_ID

if TYPE_CHECKING:
    import numpy as np
    from usearch.index import Index

__all__ = [
    "CANDIDATES",
    "CUTOFF",
    "Chunk",
    "Graph",
    "Manifest",
    "MeaningHit",
    "MeaningView",
    "ViewCipher",
    "open_graph",
    "plain_key",
    "read_chunk",
]

MANIFEST = "manifest.json"
FORMAT = 2
"""1: chunks alone, searched exactly; 2: the rows a chunk adds, and the months' graphs. A
view of another format is built again (it is disposable)."""
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
# Rows scored by their int8 vectors after the codes chose them. A hybrid answer fuses at
# most 15 + 8 frames by meaning a round (query.search); 256 rows leave room for the rows a
# code ranks in the wrong order and for the frames the app filter drops afterwards
# (bench/meaning_1m.py measures what the codes miss against an exact search).
CANDIDATES = 256
# A span that holds at most this many of a month's rows is searched exactly over them, not
# through the month's graph (which knows no time): ~2 ms of usearch's exact search.
EXACT_ROWS = 20_000


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


class Graph(msgspec.Struct, array_like=True):
    """A month's graph file and how many of the month's rows (the first) it holds."""

    name: str
    rows: int


class Manifest(msgspec.Struct):
    format: int = 0
    model: str = ""
    position: int = -1
    seq: int = 0
    months: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    """Frames a chunk holds, by its name."""
    rows: dict[str, int] = {}
    """Rows a chunk adds to its month, by its name."""
    graphs: dict[str, Graph] = {}

    @property
    def frames(self) -> int:
        """Frames the view has read (embedded, or without words to embed)."""
        return sum(self.counts.values())

    def month_rows(self, month: str) -> int:
        return sum(self.rows.get(name, 0) for name in self.months.get(month, ()))

    @classmethod
    def load(cls, root: Path) -> Manifest:
        """The manifest, or an empty one where there is none, it does not read, it is of
        another format, or another model made its vectors (they are not comparable with this
        model's questions: no reader searches them, and the next writer removes their chunks,
        which no manifest then names). The view is then rebuilt: it is disposable."""
        try:
            data = (root / MANIFEST).read_bytes()
        except FileNotFoundError:
            return cls()
        try:
            found = jsontext.decode(data, cls)
        except (msgspec.DecodeError, ValueError):
            return cls()
        return found if found.format == FORMAT and found.model in ("", MODEL_ID) else cls()


def read_chunk(root: Path, name: str, cipher: ViewCipher | None) -> Chunk:
    """Raises DecryptionError where a sealed chunk cannot be opened (no key, another key)."""
    kind, body = view_file(root, name, cipher)
    if kind not in (PLAIN, SEALED):
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
    """A month as a reader holds it: its rows' codes and graph, and which frames use which
    rows; the int8 vectors stay in the chunks."""

    names: tuple[str, ...]
    """Its chunks, then its graph's file (what the manifest names: a change reloads it)."""
    chunks: tuple[str, ...]
    firsts: np.ndarray  # each chunk's first row
    codes: np.ndarray  # rows × DIMENSIONS / 8, packed sign bits
    graph: Index | None
    covered: int  # rows in the graph: the first ones
    ids: np.ndarray  # each frame with passages
    times: np.ndarray
    frame_of: np.ndarray  # each (frame, row) pair's frame, pairs frame by frame
    row_of: np.ndarray  # each pair's row
    spans: np.ndarray  # pairs × 2: the passage's characters in the frame's text
    by_row: np.ndarray  # the pairs in row order
    row_starts: np.ndarray  # each row's first place in by_row; rows + 1


class MeaningView:
    """Reads the meaning view; keeps months loaded between questions (a long-lived reader:
    the MCP server) and reloads a month whose files changed."""

    def __init__(
        self,
        root: Path,
        cipher: ViewCipher | None = None,
        graphs: bool = True,
        exact_rows: int = EXACT_ROWS,
    ) -> None:
        self.root = root
        self.cipher = cipher
        self.graphs = graphs
        """Whether the months' graphs are used; without them every row is searched exactly
        (bench/meaning_1m.py compares the two)."""
        self.exact_rows = exact_rows
        self._months: dict[str, _Month] = {}
        self._manifest: tuple[tuple[int, int, int], Manifest] | None = None
        self.unreadable: dict[str, str] = {}
        """Chunks left out of the last search (a key not available, damage), and why."""

    def manifest(self) -> Manifest:
        """The manifest as it stands, decoded again only when its file changed (a writer
        replaces it whole): at 1M frames it is 2.2 MB of JSON, and a hybrid search asks
        for it three times (13 ms each, measured)."""
        try:
            found = (self.root / MANIFEST).stat()
        except FileNotFoundError:
            return Manifest()
        key = (found.st_ino, found.st_mtime_ns, found.st_size)
        if self._manifest is None or self._manifest[0] != key:
            self._manifest = (key, Manifest.load(self.root))
        return self._manifest[1]

    def search(
        self,
        query: np.ndarray,
        first: str | None,
        last: str | None,
        start_us: int | None,
        end_us: int | None,
        cutoff: float = CUTOFF,
        candidates: int = CANDIDATES,
    ) -> list[MeaningHit]:
        """The frames of the months ``first``..``last`` captured in [start_us, end_us) whose
        best passage among the ``candidates`` rows nearest the question scores ``cutoff`` or
        more, best first."""
        import numpy as np

        manifest = self.manifest()
        self.unreadable = {}
        for month, held in list(self._months.items()):
            # A month deleted or rewritten (a deletion's purge) leaves memory at once: a
            # long-lived reader must not keep deleted frames' codes.
            if _names(manifest, month) != held.names:
                del self._months[month]
        code = codes(np.clip(np.rint(query * SCALE), -127, 127).astype(np.int8)[None, :])[0]
        near: list[tuple[np.ndarray, str, np.ndarray, np.ndarray]] = []
        for month in sorted(manifest.months):
            if (first and month < first) or (last and month > last):
                continue
            loaded = self._month(month, manifest)
            if loaded is None or not len(loaded.ids):
                continue
            inside = np.ones(len(loaded.ids), bool)
            if start_us is not None:
                inside &= loaded.times >= start_us
            if end_us is not None:
                inside &= loaded.times < end_us
            if not inside.any():
                continue
            rows, distances = self._nearest(loaded, code, inside, candidates)
            near.append((distances, month, rows, inside))
        if not near:
            return []
        distances = np.concatenate([n[0] for n in near])
        limit = np.sort(distances)[min(candidates, len(distances)) - 1]
        out: list[MeaningHit] = []
        for month_distances, month, rows, inside in near:
            chosen = rows[month_distances <= limit]
            if len(chosen):
                out += self._score(self._months[month], chosen, inside, query, cutoff)
        out.sort(key=lambda h: (-h.score, -h.frame_id))
        return out

    def _nearest(
        self, month: _Month, code: np.ndarray, inside: np.ndarray, count: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The month's rows nearest ``code`` among those its frames ``inside`` use, and their
        Hamming distances."""
        import numpy as np

        whole = bool(inside.all())
        wanted = None if whole else np.unique(month.row_of[inside[month.frame_of]])
        graph = month.graph if self.graphs else None
        if graph is None and wanted is None:
            return nearest_exact(month.codes, code, count)
        if graph is None or (wanted is not None and len(wanted) <= self.exact_rows):
            assert wanted is not None
            at, distances = nearest_exact(month.codes[wanted], code, count)
            return wanted[at], distances
        # The graph knows no time: for a span of part of the month, ask it for as many more
        # rows as the month holds over the span's, and keep the span's.
        share = 1 if wanted is None else -(-len(month.codes) // len(wanted))
        rows, distances = nearest_graph(graph, code, min(count * share, month.covered))
        tail = np.arange(month.covered, len(month.codes))
        if wanted is not None:
            keep = np.isin(rows, wanted)
            rows, distances = rows[keep], distances[keep]
            tail = tail[np.isin(tail, wanted)]
        at, more = nearest_exact(month.codes[tail], code, count)
        return np.concatenate([rows, tail[at]]), np.concatenate([distances, more])

    def _score(
        self,
        month: _Month,
        rows: np.ndarray,
        inside: np.ndarray,
        query: np.ndarray,
        cutoff: float,
    ) -> list[MeaningHit]:
        """``rows`` scored by their int8 vectors (cosine); each frame ``inside`` that uses
        one scores its best."""
        import numpy as np

        scores = np.zeros(len(rows), np.float32)
        which = np.searchsorted(month.firsts, rows, side="right") - 1
        for chunk in np.unique(which):
            name = month.chunks[chunk]
            try:
                vectors = read_chunk(self.root, name, self.cipher).vectors
            except (DecryptionError, FileNotFoundError) as exc:
                self.unreadable[name] = str(exc)
                scores[which == chunk] = -1.0
                continue
            matrix = np.frombuffer(vectors, np.int8).reshape(-1, DIMENSIONS)
            mine = which == chunk
            local = rows[mine] - month.firsts[chunk]
            scores[mine] = matrix[local].astype(np.float32) @ query / SCALE
        best: dict[int, tuple[float, int]] = {}
        for row, score in zip(rows.tolist(), scores.tolist(), strict=True):
            if score < cutoff:
                continue
            for pair in month.by_row[month.row_starts[row] : month.row_starts[row + 1]].tolist():
                frame = int(month.frame_of[pair])
                if inside[frame] and score > best.get(frame, (-2.0, 0))[0]:
                    best[frame] = (score, pair)
        return [
            MeaningHit(score, int(month.ids[frame]), (int(s[0]), int(s[1])))
            for frame, (score, pair) in best.items()
            for s in (month.spans[pair],)
        ]

    def _month(self, month: str, manifest: Manifest) -> _Month | None:
        import numpy as np

        names = _names(manifest, month)
        cached = self._months.get(month)
        if cached is not None and cached.names == names:
            return cached
        chunks = manifest.months[month]
        pieces, ids, times, counts, rows, spans, firsts = [], [], [], [], [], [], []
        first = 0
        for name in chunks:
            try:
                chunk = read_chunk(self.root, name, self.cipher)
            except (DecryptionError, FileNotFoundError) as exc:
                self.unreadable[name] = str(exc)
                return None
            firsts.append(first)
            first += len(chunk.keys)
            pieces.append(codes(np.frombuffer(chunk.vectors, np.int8).reshape(-1, DIMENSIONS)))
            # Frames without passages (no words) are left out: each frame here has a row.
            for frame, when, used, where in zip(
                chunk.ids, chunk.times, chunk.rows, chunk.spans, strict=True
            ):
                if used:
                    ids.append(frame)
                    times.append(when)
                    counts.append(len(used))
                    rows += used
                    spans += where
        # int32 for what is counted in pairs and rows: a month holds far fewer than 2**31.
        row_of = np.asarray(rows, np.int32)
        by_row = np.argsort(row_of, kind="stable").astype(np.int32)
        loaded = _Month(
            names,
            tuple(chunks),
            np.asarray(firsts, np.int64),
            np.concatenate(pieces) if pieces else np.zeros((0, DIMENSIONS // 8), np.uint8),
            *self._graph(manifest, month),
            np.asarray(ids, np.int64),
            np.asarray(times, np.int64),
            np.repeat(np.arange(len(ids), dtype=np.int32), counts),
            row_of,
            np.asarray(spans, np.int32).reshape(-1, 2),
            by_row,
            np.searchsorted(row_of[by_row], np.arange(first + 1)).astype(np.int32),
        )
        self._months[month] = loaded
        return loaded

    def _graph(self, manifest: Manifest, month: str) -> tuple[Index | None, int]:
        """The month's graph and the rows it holds; (None, 0) where it has none, or where it
        does not read: the month's rows are then all searched exactly, as complete an answer
        (the graph is the codes' index, made again by the next writer that tends it)."""
        graph = manifest.graphs.get(month)
        if graph is None or not self.graphs:
            return None, 0
        try:
            index = open_graph(self.root, graph.name, self.cipher)
        except (DecryptionError, OSError):
            return None, 0
        if len(index) != graph.rows:
            return None, 0
        return index, graph.rows


def _names(manifest: Manifest, month: str) -> tuple[str, ...]:
    graph = manifest.graphs.get(month)
    return (*manifest.months.get(month, ()), *((graph.name,) if graph else ()))
