"""The meaning view's writer: embeds the log's frames in batches, after the words view.

It keeps its own log position (``Manifest.position``), behind the words view's as long as
embedding takes: a frame is searchable by words ~0.2 s after capture and by meaning once
the daemon's low-priority thread (or ``import``, ``reindex``) has embedded it. Whatever
changes the words view's months (a deletion, retention, a rebuild) changes this view's in
the same call, under the projector's ``lock``: a batch being embedded never writes vectors
of frames a purge has just removed.

Files are written whole (``base.fs``) and the manifest is the commit point: a chunk or a
map it does not name is an orphan of a crash, removed by the next writer.

The writer tends each month's map (``projector._codes``): once the rows past it number
``map_min`` or a quarter of those in it, it makes the map again from the month's chunks
and writes it whole under a new name (a month's map is written ~log(rows) times). A
deletion's rewritten month loses its map (its rows are numbered anew): readers read its
chunks until a writer with nothing left to embed tends it again, one month a step (and
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
from projector._codes import PLAIN, ROW_BYTES, SEALED, map_file, quantise
from projector.embedder import MODEL_ID
from projector.schema import partition_of
from projector.vectors import (
    FORMAT,
    MANIFEST,
    Chunk,
    Manifest,
    Map,
    ViewCipher,
    map_body,
    plain_key,
    read_chunk,
)

if TYPE_CHECKING:
    from projector.embedder import Embedder

__all__ = ["FRAMES_PER_BATCH", "MAP_MIN", "MeaningWriter", "TextOf"]

# 32 frames (~4 s of one core) between commits: a purge waits at most that long for the
# lock, and a daemon stopped loses at most that much work.
FRAMES_PER_BATCH = 32
# Rows a month holds before it has a map, and rows past its map before it is made again: a
# reader decodes the chunks past a map, 8,192 rows in ~250 chunks of a batch (~50 ms, read
# once by a long-lived reader), and a map of a month of 66,000 rows (1M frames over 18
# months) takes ~1 s to make from its chunks.
MAP_MIN = 8192

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
        map_min: int | None = None,
    ) -> None:
        self.root = ensure_dir(root)
        self.map_min = MAP_MIN if map_min is None else map_min
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
            quantised = quantise(vectors)
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
        held = self.manifest.maps.pop(month, None)
        if held:
            self._doomed.append(held.name)

    # -- maps ------------------------------------------------------------------------------

    def _tend(self, month: str, settle: bool = False) -> bool:
        """Make the month's map again from its chunks when the rows past it are many enough
        (or, with ``settle``, when any chunk is past it). Whether it wrote one."""

        names = self.manifest.months[month]
        rows = self.manifest.month_rows(month)
        held = self.manifest.maps.get(month)
        covered = held.rows if held else 0
        if rows < self.map_min or (held and held.chunks == len(names)):
            return False
        if not settle and rows - covered < max(self.map_min, covered // 4):
            return False
        read: list[Chunk] = []
        for name in names:
            try:
                read.append(read_chunk(self.root, name, self.cipher))
            except (DecryptionError, FileNotFoundError):
                return False  # the month is dropped by the next writer that reads it
        body = map_body(read)
        self.manifest.seq += 1
        name = f"{month}.{self.manifest.seq:06d}.map"
        # The codes are the vectors' signs: a month with any chunk sealed has its map sealed
        # too, whatever the store does now.
        sealed = self.seal or any(self._sealed(n) for n in names)
        write_new(self.root / name, map_file(body, name, self.cipher if sealed else None))
        if held:
            self._doomed.append(held.name)
        self.manifest.maps[month] = Map(name, len(names), rows)
        return True

    def _sealed(self, name: str) -> bool:
        with open(self.root / name, "rb") as f:
            return f.read(1) == SEALED

    def tend(self) -> bool:
        """Tend one month that needs it and commit, the writer having nothing left to embed:
        a past month gets every chunk into its map (it grows no more), the newest by the
        rule. Whether it wrote a map."""
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
        named |= {held.name for held in self.manifest.maps.values()}
        removed = False
        # *.graph: the graphs of the format before (2), which a rebuild leaves unnamed.
        for path in [
            *self.root.glob("*.vec"),
            *self.root.glob("*.map"),
            *self.root.glob("*.graph"),
        ]:
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
                    pieces.append(vectors[row * ROW_BYTES : (row + 1) * ROW_BYTES])
                mine.append(new)
            out.ids.append(frame)
            out.times.append(when)
            out.rows.append(mine)
            out.spans.append(spans)
    out.vectors = b"".join(pieces)
    return out
