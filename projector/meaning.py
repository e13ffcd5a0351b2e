"""The meaning view's writer: embeds the log's frames in batches, after the words view.

It keeps its own log position (``Manifest.position``), behind the words view's as long as
embedding takes: a frame is searchable by words ~0.2 s after capture and by meaning once
the daemon's low-priority thread (or ``import``, ``reindex``) has embedded it. Whatever
changes the words view's months (a deletion, retention, a rebuild) changes this view's in
the same call, under the projector's ``lock``: a batch being embedded never writes vectors
of frames a purge has just removed.

Files are written whole (``base.fs``) and the manifest is the commit point: a chunk or a
graph it does not name is an orphan of a crash, removed by the next writer.

The writer tends each month's graph (``projector._codes``): once the rows past it number
``graph_min`` or a quarter of those in it, it opens the graph, adds them, and writes it
whole under a new name (a month's graph is written ~log(rows) times, each row added once).
A deletion's rewritten month loses its graph (its rows are numbered anew): it is searched
exactly until a writer with nothing left to embed tends it again, one month a step (and
``import``, ``reindex`` tend every month before they return).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from base.errors import DecryptionError
from base.fs import current, ensure_dir, write_atomic, write_new
from eventlog.contract import EventLog
from eventlog.events import FrameCaptured
from projector._codes import PLAIN, SEALED, codes, graph_file, new_graph, open_graph
from projector.embedder import DIMENSIONS, MODEL_ID
from projector.schema import partition_of
from projector.vectors import (
    FORMAT,
    MANIFEST,
    SCALE,
    Chunk,
    Graph,
    Manifest,
    ViewCipher,
    plain_key,
    read_chunk,
)

if TYPE_CHECKING:
    from projector.embedder import Embedder

__all__ = ["FRAMES_PER_BATCH", "GRAPH_MIN", "MeaningWriter", "TextOf"]

# 32 frames (~4 s of one core) between commits: a purge waits at most that long for the
# lock, and a daemon stopped loses at most that much work.
FRAMES_PER_BATCH = 32
# Rows a month holds before it has a graph, and rows past its graph before they join it:
# usearch's exact search over 8,192 codes takes ~1 ms here (10.7 ms per 100,000 rows of
# 384 bits), and adding a row to a graph ~110 µs of CPU.
GRAPH_MIN = 8192

TextOf = Callable[[FrameCaptured], "str | None"]
"""A frame's (redacted) text: decrypted where it is encrypted; None where it cannot be."""

Keying = Callable[[], "tuple[ViewCipher | None, bool]"]
"""The store's cipher (None without a key) and whether new chunks are sealed with it (the
store encrypts text); asked at first need, so a writer that touches no chunk never reads
the key (the keyring's import and a call to the Secret Service)."""


class MeaningWriter:
    def __init__(
        self,
        root: Path,
        log: EventLog,
        text_of: TextOf,
        keying: Keying = lambda: (None, False),
        graph_min: int | None = None,
    ) -> None:
        self.root = ensure_dir(root)
        self.graph_min = GRAPH_MIN if graph_min is None else graph_min
        self.log = log
        self.text_of = text_of
        self._keying = keying
        self._keyed: tuple[ViewCipher | None, bool] | None = None
        self.manifest = Manifest.load(root)
        self._keys: dict[str, dict[bytes, int]] = {}
        """Per month: passage key → row, for the months this writer has touched."""
        self._rows: dict[str, int] = {}
        self._doomed: list[str] = []
        """Chunks the manifest no longer names, removed once it is saved."""
        self._remove_unnamed()  # a crash's orphans, or a damaged manifest's whole view

    # -- catching up -----------------------------------------------------------------------

    def step(
        self, embedder: Embedder, upto: int, frames: int = FRAMES_PER_BATCH
    ) -> tuple[int, int]:
        """Embed the next ``frames`` frames of the log up to offset ``upto`` (the words view's
        position) and commit them; (frames embedded, events read). (0, 0) when caught up."""
        if self.manifest.model != MODEL_ID or self.manifest.format != FORMAT:
            self.clear()
            self.manifest.model = MODEL_ID
        start = self.manifest.position + 1
        if start > upto:
            self.tend()
            return 0, 0
        batch: list[FrameCaptured] = []
        last = self.manifest.position
        read = 0
        for offset, event in self.log.read(start):
            if offset > upto:
                break
            last, read = offset, read + 1
            if isinstance(event, FrameCaptured):
                batch.append(event)
                if len(batch) >= frames:
                    break
        self._add(embedder, batch)
        self.manifest.position = last
        self._save()
        return len(batch), read

    def _add(self, embedder: Embedder, frames: list[FrameCaptured]) -> None:
        import numpy as np

        cipher = self.cipher if self.seal else None
        by_month: dict[str, Chunk] = {}
        todo: list[tuple[str, int, bytes, object]] = []  # month, row, key, passage
        for frame in frames:
            text = self.text_of(frame) or ""
            passages = embedder.passages(text) if text else []
            month = partition_of(frame.captured_us)
            keys = self._month_keys(month)
            chunk = by_month.get(month)
            if chunk is None:
                chunk = by_month[month] = Chunk([], [], [], [], [], b"")
            # A frame without words is kept too, without passages: the view's count of the
            # frames it has read stays exact through deletions.
            rows, spans = [], []
            for passage in passages:
                piece = text[passage.start : passage.end]
                key = cipher.passage_key(piece) if cipher else plain_key(piece)
                row = keys.get(key)
                if row is None:
                    row = keys[key] = self._rows[month]
                    self._rows[month] += 1
                    chunk.keys.append(key)
                    todo.append((month, row, key, passage))
                rows.append(row)
                spans.append((passage.start, passage.end))
            chunk.ids.append(frame.frame_id)
            chunk.times.append(frame.captured_us)
            chunk.rows.append(rows)
            chunk.spans.append(spans)
        if todo:
            vectors = embedder.embed([t[3] for t in todo])  # type: ignore[misc]
            quantised = np.clip(np.rint(vectors * SCALE), -127, 127).astype(np.int8)
            for month, chunk in by_month.items():
                mine = [i for i, t in enumerate(todo) if t[0] == month]
                chunk.vectors = quantised[mine].tobytes()
        for month, chunk in by_month.items():
            self._write(month, chunk)
            self._tend(month)

    @property
    def cipher(self) -> ViewCipher | None:
        """Opens sealed chunks; with ``seal``, seals new ones and keys their passages."""
        if self._keyed is None:
            self._keyed = self._keying()
        return self._keyed[0]

    @property
    def seal(self) -> bool:
        return self.cipher is not None and self._keyed is not None and self._keyed[1]

    # -- the months ------------------------------------------------------------------------

    def rebuild_months(self, months: Iterable[str], keep: set[int]) -> None:
        """Rewrite ``months`` with the frames in ``keep`` alone (a deletion, retention): the
        vectors of every other frame leave the files, and rows no frame uses go with them.
        Nothing is embedded again. A month whose chunks cannot be opened (the key is not
        available) is dropped whole: its frames are found by words alone until a reindex."""
        for month in sorted(set(months)):
            names = self.manifest.months.get(month)
            if not names:
                continue
            try:
                chunks = [read_chunk(self.root, name, self.cipher) for name in names]
            except (DecryptionError, FileNotFoundError):
                self._drop(month)
                self._save()
                continue
            merged = _compact(chunks, keep)
            self._drop(month)
            if merged.ids:
                self._write(month, merged)
            self._save()
            self._remove_unnamed()

    def clear(self) -> None:
        """Drop every vector (a full rebuild, another model): the view starts again."""
        for month in list(self.manifest.months):
            self._drop(month)
        self.manifest = Manifest(format=FORMAT)
        self._save()
        self._remove_unnamed()

    def _drop(self, month: str) -> None:
        names = self.manifest.months.pop(month, [])
        self._keys.pop(month, None)
        self._rows.pop(month, None)
        for name in names:
            self.manifest.counts.pop(name, None)
            self.manifest.rows.pop(name, None)
        self._doomed.extend(names)
        graph = self.manifest.graphs.pop(month, None)
        if graph:
            self._doomed.append(graph.name)

    # -- graphs ----------------------------------------------------------------------------

    def _tend(self, month: str, settle: bool = False) -> bool:
        """Add the rows past the month's graph to it when they are many enough (or, with
        ``settle``, any); a graph that does not read is made again from the chunks.
        Whether it wrote one."""
        import numpy as np

        rows = self.manifest.month_rows(month)
        held = self.manifest.graphs.get(month)
        covered = held.rows if held else 0
        tail = rows - covered
        if rows < self.graph_min or tail <= 0:
            return False
        if not settle and tail < max(self.graph_min, covered // 4):
            return False
        index = None
        if held:
            try:
                index = open_graph(self.root, held.name, self.cipher)
            except (DecryptionError, OSError):
                index = None
            if index is not None and len(index) != covered:
                index = None
        if index is None:
            index, covered = new_graph(DIMENSIONS), 0
        first = 0
        for name in self.manifest.months[month]:
            added = self.manifest.rows.get(name, 0)
            if first + added > covered:
                try:
                    chunk = read_chunk(self.root, name, self.cipher)
                except (DecryptionError, FileNotFoundError):
                    return False  # the month is dropped by the next writer that reads it
                matrix = np.frombuffer(chunk.vectors, np.int8).reshape(-1, DIMENSIONS)
                skip = max(0, covered - first)
                index.add(np.arange(first + skip, first + added), codes(matrix[skip:]))
            first += added
        self.manifest.seq += 1
        name = f"{month}.{self.manifest.seq:06d}.graph"
        # The codes are the vectors' signs: a month with any chunk sealed has its graph
        # sealed too, whatever the store does now.
        sealed = self.seal or any(self._sealed(n) for n in self.manifest.months[month])
        write_new(self.root / name, graph_file(index, name, self.cipher if sealed else None))
        if held:
            self._doomed.append(held.name)
        self.manifest.graphs[month] = Graph(name, rows)
        return True

    def _sealed(self, name: str) -> bool:
        with open(self.root / name, "rb") as f:
            return f.read(1) == SEALED

    def tend(self) -> bool:
        """Tend one month that needs it and commit, the writer having nothing left to embed:
        a past month gets every row into its graph (it grows no more), the newest by the
        rule. Whether it wrote a graph."""
        months = sorted(self.manifest.months)
        if any(self._tend(month, settle=month != months[-1]) for month in months):
            self._save()
            return True
        return False

    # -- files -----------------------------------------------------------------------------

    def _month_keys(self, month: str) -> dict[bytes, int]:
        keys = self._keys.get(month)
        if keys is None:
            rows = 0
            found: dict[bytes, int] = {}
            try:
                for name in self.manifest.months.get(month, []):
                    for key in read_chunk(self.root, name, self.cipher).keys:
                        found[key] = rows
                        rows += 1
            except (DecryptionError, FileNotFoundError):
                # A chunk damaged or sealed with a key not at hand: the month's vectors go,
                # and its frames are found by their words until a reindex embeds them again.
                self._drop(month)
                found, rows = {}, 0
            keys = self._keys[month] = found
            self._rows[month] = rows
        return keys

    def _write(self, month: str, chunk: Chunk) -> None:
        self.manifest.seq += 1
        name = f"{month}.{self.manifest.seq:06d}.vec"
        body = msgspec.msgpack.encode(chunk)
        if self.seal and self.cipher:
            data = SEALED + self.cipher.seal_view(name, body)
        else:
            data = PLAIN + body
        write_new(self.root / name, data)
        self.manifest.months.setdefault(month, []).append(name)
        self.manifest.counts[name] = len(chunk.ids)
        self.manifest.rows[name] = len(chunk.keys)

    def _save(self) -> None:
        write_atomic(self.root / MANIFEST, msgspec.json.encode(self.manifest))
        for name in self._doomed:
            current().remove(self.root / name)
        if self._doomed:
            current().fsync_dir(self.root)
        self._doomed = []

    def _remove_unnamed(self) -> None:
        named = {n for names in self.manifest.months.values() for n in names}
        named |= {graph.name for graph in self.manifest.graphs.values()}
        removed = False
        for path in [*self.root.glob("*.vec"), *self.root.glob("*.graph")]:
            if path.name not in named:
                current().remove(path)
                removed = True
        if removed:
            current().fsync_dir(self.root)


def _compact(chunks: list[Chunk], keep: set[int]) -> Chunk:
    """One chunk of the frames of ``chunks`` in ``keep``, with only the rows they use."""
    vectors = b"".join(c.vectors for c in chunks)
    keys = [k for c in chunks for k in c.keys]
    out = Chunk([], [], [], [], [], b"")
    renumber: dict[int, int] = {}
    pieces: list[bytes] = []
    for chunk in chunks:
        for frame, when, rows, spans in zip(
            chunk.ids, chunk.times, chunk.rows, chunk.spans, strict=True
        ):
            if frame not in keep:
                continue
            mine = []
            for row in rows:
                new = renumber.get(row)
                if new is None:
                    new = renumber[row] = len(renumber)
                    out.keys.append(keys[row])
                    pieces.append(vectors[row * DIMENSIONS : (row + 1) * DIMENSIONS])
                mine.append(new)
            out.ids.append(frame)
            out.times.append(when)
            out.rows.append(mine)
            out.spans.append(spans)
    out.vectors = b"".join(pieces)
    return out
