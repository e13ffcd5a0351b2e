"""The meaning view's files, and what readers ask of them: the frames nearest a question.

Layout under ``views/meaning/``::

    manifest.json          the format, the model, the log position applied, the frames
                           embedded, each month's chunk files in the order they were written
                           with the rows each adds, and each month's map
    2026-11.000042.vec     one chunk: the frames of one month that one batch embedded
    2026-11.000057.map     the month's map: its first chunks' rows' binary codes and which
                           frames use which rows (``projector._codes``)

A chunk is one byte saying how it is kept (``P`` plain, ``E`` sealed with the store's key by
``ViewCipher.seal_view`` under the file's name), then a MessagePack ``Chunk``: for each frame
its id, capture time, the month's rows of its passages and their character spans in its
text; the new rows' keys (``ViewCipher.passage_key``, or BLAKE2b of the passage text when the
store keeps text in plain) and, last, their 4-bit rows (``projector._codes``), so that a
plain chunk's rows are its file's last ``ROW_BYTES`` × rows bytes. A passage whose key the
month already holds is not embedded again: the frame points at the existing row (a window
ticking over shares its vectors). No text is kept: a hit's passage is cut from the frame's
text by its span.

Search is in two steps: every row of the span's months whose frames are in the span, by
the Hamming distance of its binary code to the question's (numkong's SIMD kernel over the
months' maps, and over the codes of the chunks past a map), then those ``CANDIDATES``
rows scored by their 4-bit rows, read alone from their chunks (a sealed chunk is opened
whole). A reader keeps each month's map (mapped from its file in a plain store) and the
chunks past it, never the 4-bit rows.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

import msgspec

from base import jsontext
from base.errors import DecryptionError
from projector._codes import (
    CODE_BYTES,
    PLAIN,
    ROW_BYTES,
    SEALED,
    MapBody,
    codes,
    cosines,
    distances,
    open_map,
    view_file,
)
from projector.embedder import MODEL_ID

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "CANDIDATES",
    "CUTOFF",
    "Chunk",
    "Manifest",
    "Map",
    "MeaningHit",
    "MeaningView",
    "ViewCipher",
    "map_body",
    "open_map",
    "plain_key",
    "read_chunk",
    "read_rows",
]

MANIFEST = "manifest.json"
FORMAT = 3
"""1: chunks alone, searched exactly; 2: the rows a chunk adds, and the months' graphs; 3:
4-bit rows, and the months' maps in place of graphs. A view of another format is built
again (it is disposable)."""
# A meaning match below this cosine is no hit. 0.10, for Universal Sentence Encoder
# Multilingual v3 (bench/meaning.py, 3,035 frames): a paraphrase's own screen scored a
# median of 0.23 (0.04-0.42), the best other frame 0.18 (0.10-0.28), and questions about
# nothing in the store 0.14-0.22 at their best frame: no cut-off parts the two. Each step up
# lost screens the questions were about: 0.10 and 0.12 found 15/20 paraphrases, 0.15 14,
# 0.20 12; time-and-app questions 20, 19, 18 and 16 of 20 (one screen scored 0.11 within
# its hour). What it still turns away is the plainly unrelated: a cake recipe scored
# 0.02-0.05 against tests/test_meaning.py's three screens.
CUTOFF = 0.10
# Rows scored by their 4-bit rows after the codes chose them. A hybrid answer fuses at
# most 15 + 8 frames by meaning a round (query.search); 256 rows leave room for the rows a
# code ranks in the wrong order and for the frames the app filter drops afterwards
# (bench/meaning_1m.py measures what the codes miss against scoring every row).
CANDIDATES = 256


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


class Map(msgspec.Struct, array_like=True):
    """A month's map file, the month's first chunks it covers and the rows they add."""

    name: str
    chunks: int
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
    maps: dict[str, Map] = {}

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


class _Part(NamedTuple):
    """A month's map, or the chunks past it, as a reader holds them: its rows' codes and
    which of its frames use which of the month's rows. Nothing is derived from the map's
    arrays but each frame's first pair (4 bytes a frame): the rest are views of the map."""

    codes: np.ndarray  # its rows × CODE_BYTES, the month's rows from its first
    ids: np.ndarray  # each frame with passages
    times: np.ndarray
    counts: np.ndarray  # each frame's pairs (frame, row)
    starts: np.ndarray  # each frame's first pair
    row_of: np.ndarray  # each pair's row of the month (a frame past the map may use its rows)
    spans: np.ndarray  # pairs × 2: the passage's characters in the frame's text

    def pairs(self, chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The pairs whose row is ``True`` in ``chosen`` (a mask of the month's rows), and
        their frames."""
        import numpy as np

        found = np.flatnonzero(chosen[self.row_of])
        return found, np.searchsorted(self.starts, found, side="right") - 1

    def rows_of(self, inside: np.ndarray) -> np.ndarray:
        """The rows the frames ``inside`` use."""
        import numpy as np

        found: np.ndarray = self.row_of[np.repeat(inside, self.counts)]
        return found


class _Month(NamedTuple):
    names: tuple[str, ...]
    """Its chunks, then its map's file (what the manifest names: a change reloads it)."""
    chunks: tuple[str, ...]
    firsts: np.ndarray  # each chunk's first row
    added: tuple[int, ...]  # the rows each chunk adds
    parts: tuple[_Part, ...]


class MeaningView:
    """Reads the meaning view; keeps months loaded between questions (a long-lived reader:
    the MCP server) and reloads a month whose files changed."""

    def __init__(self, root: Path, cipher: ViewCipher | None = None) -> None:
        self.root = root
        self.cipher = cipher
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
        code = np.packbits(query >= 0)  # as a row's code: its levels' top bits
        near: list[tuple[np.ndarray, str, np.ndarray, list[np.ndarray]]] = []
        for month in sorted(manifest.months):
            if (first and month < first) or (last and month > last):
                continue
            loaded = self._month(month, manifest)
            if loaded is None:
                continue
            insides = [_inside(part.times, start_us, end_us) for part in loaded.parts]
            if not any(inside.any() for inside in insides):
                continue
            rows, found = _nearest(loaded.parts, insides, code, candidates)
            near.append((found, month, rows, insides))
        if not near:
            return []
        every = np.concatenate([n[0] for n in near])
        if not len(every):
            return []
        limit = np.partition(every, min(candidates, len(every)) - 1)[
            min(candidates, len(every)) - 1
        ]
        out: list[MeaningHit] = []
        for month_distances, month, rows, insides in near:
            chosen = rows[month_distances <= limit]
            if len(chosen):
                out += self._score(self._months[month], chosen, insides, query, cutoff)
        out.sort(key=lambda h: (-h.score, -h.frame_id))
        return out

    def _score(
        self,
        month: _Month,
        rows: np.ndarray,
        insides: list[np.ndarray],
        query: np.ndarray,
        cutoff: float,
    ) -> list[MeaningHit]:
        """``rows`` scored by their 4-bit rows (cosine); each frame inside the span that uses
        one scores its best."""
        import numpy as np

        scores = np.zeros(len(rows), np.float32)
        which = np.searchsorted(month.firsts, rows, side="right") - 1
        for chunk in np.unique(which).tolist():
            name = month.chunks[chunk]
            mine = which == chunk
            try:
                found = read_rows(
                    self.root,
                    name,
                    month.added[chunk],
                    rows[mine] - month.firsts[chunk],
                    self.cipher,
                )
            except (DecryptionError, FileNotFoundError) as exc:
                self.unreadable[name] = str(exc)
                scores[mine] = -1.0
                continue
            scores[mine] = cosines(found, query)
        passed = scores >= cutoff
        chosen = np.zeros(int(month.firsts[-1]) + month.added[-1], bool)
        chosen[rows[passed]] = True
        score_of = dict(zip(rows[passed].tolist(), scores[passed].tolist(), strict=True))
        best: dict[tuple[int, int], tuple[float, int]] = {}
        for p, part in enumerate(month.parts):
            pairs, frames = part.pairs(chosen)
            for pair, frame in zip(pairs.tolist(), frames.tolist(), strict=True):
                score = score_of[int(part.row_of[pair])]
                if insides[p][frame] and score > best.get((p, frame), (-2.0, 0))[0]:
                    best[(p, frame)] = (score, pair)
        return [
            MeaningHit(score, int(part.ids[frame]), (int(s[0]), int(s[1])))
            for (p, frame), (score, pair) in best.items()
            for part in (month.parts[p],)
            for s in (part.spans[pair],)
        ]

    def _month(self, month: str, manifest: Manifest) -> _Month | None:
        import numpy as np

        names = _names(manifest, month)
        cached = self._months.get(month)
        if cached is not None and cached.names == names:
            return cached
        chunks = manifest.months[month]
        added = tuple(manifest.rows.get(name, 0) for name in chunks)
        parts: list[_Part] = []
        covered = self._map(manifest, month, added, parts)
        read: list[Chunk] = []
        for name in chunks[covered:]:
            try:
                read.append(read_chunk(self.root, name, self.cipher))
            except (DecryptionError, FileNotFoundError) as exc:
                self.unreadable[name] = str(exc)
                return None
        if read:
            parts.append(_body_part(map_body(read), sum(added)))
        loaded = _Month(
            names,
            tuple(chunks),
            np.cumsum((0, *added[:-1])).astype(np.int64),
            added,
            tuple(parts),
        )
        self._months[month] = loaded
        return loaded

    def _map(
        self, manifest: Manifest, month: str, added: tuple[int, ...], parts: list[_Part]
    ) -> int:
        """The month's map made a part of ``parts``; the chunks it covers (0 where it has
        none, or where it does not read: its chunks are then read instead, as complete an
        answer; the map is made again by the next writer that tends the month)."""

        held = manifest.maps.get(month)
        if held is None or held.rows != sum(added[: held.chunks]):
            return 0
        try:
            body = open_map(self.root, held.name, self.cipher)
            if len(body.codes) != held.rows * CODE_BYTES:
                return 0
            part = _body_part(body, held.rows)
        except (DecryptionError, OSError):
            return 0
        parts.append(part)
        return held.chunks


def read_rows(
    root: Path, name: str, added: int, rows: np.ndarray, cipher: ViewCipher | None
) -> np.ndarray:
    """The 4-bit rows ``rows`` of a chunk that adds ``added`` rows: from a plain chunk the
    rows alone (they end its file), from a sealed one out of its whole body."""
    import numpy as np

    # os.pread on a descriptor, not a buffered file: a question reads ~300 chunks (measured
    # at 1M frames), and the buffered file's reads, seeks and Path joins were a quarter of
    # the view's own search.
    fd = os.open(os.path.join(root, name), os.O_RDONLY | os.O_CLOEXEC)
    try:
        end = os.fstat(fd).st_size
        kind = os.pread(fd, 1, 0)
        if kind == SEALED:
            if cipher is None:
                raise DecryptionError(f"{name}: the encryption key is not available")
            body = cipher.open_view(name, os.pread(fd, end - 1, 1))
            if len(body) < added * ROW_BYTES:
                raise DecryptionError(f"{name}: holds fewer rows than the manifest says")
            every = np.frombuffer(body, np.uint8)[len(body) - added * ROW_BYTES :]
            picked: np.ndarray = every.reshape(-1, ROW_BYTES)[rows]
            return picked
        if kind != PLAIN:
            raise DecryptionError(f"{name}: not a chunk of the meaning view")
        if end - 1 < added * ROW_BYTES:
            raise DecryptionError(f"{name}: holds fewer rows than the manifest says")
        start = end - added * ROW_BYTES
        found = b"".join(os.pread(fd, ROW_BYTES, start + r * ROW_BYTES) for r in rows.tolist())
        if len(found) != len(rows) * ROW_BYTES:
            raise DecryptionError(f"{name}: holds fewer rows than the manifest says")
        return np.frombuffer(found, np.uint8).reshape(-1, ROW_BYTES)
    finally:
        os.close(fd)


def map_body(chunks: list[Chunk]) -> MapBody:
    """The map of ``chunks``, a month's in their order: their codes, and which rows their
    frames use. Frames without passages (no words) are left out: each frame here has a row."""
    import numpy as np

    ids, times, counts, rows, spans = [], [], [], [], []
    for chunk in chunks:
        for frame, when, used, where in zip(
            chunk.ids, chunk.times, chunk.rows, chunk.spans, strict=True
        ):
            if used:
                ids.append(frame)
                times.append(when)
                counts.append(len(used))
                rows += used
                spans += [n for span in where for n in span]
    found = [codes(np.frombuffer(c.vectors, np.uint8).reshape(-1, ROW_BYTES)) for c in chunks]
    return MapBody(
        memoryview(np.asarray(ids, "<i8").tobytes()),
        memoryview(np.asarray(times, "<i8").tobytes()),
        memoryview(np.asarray(counts, "<i4").tobytes()),
        memoryview(np.asarray(rows, "<i4").tobytes()),
        memoryview(np.asarray(spans, "<i4").tobytes()),
        memoryview(np.concatenate(found).tobytes()),
    )


def _body_part(body: MapBody, rows: int) -> _Part:
    """A part from a map's arrays (views of its bytes); ``rows``: the month's rows up to its
    last."""
    import numpy as np

    return _part(
        np.frombuffer(body.codes, np.uint8).reshape(-1, CODE_BYTES),
        np.frombuffer(body.ids, "<i8"),
        np.frombuffer(body.times, "<i8"),
        np.frombuffer(body.counts, "<i4"),
        np.frombuffer(body.rows, "<i4"),
        np.frombuffer(body.spans, "<i4").reshape(-1, 2),
        rows,
    )


def _part(
    found: np.ndarray,
    ids: np.ndarray,
    times: np.ndarray,
    counts: np.ndarray,
    row_of: np.ndarray,
    spans: np.ndarray,
    rows: int,
) -> _Part:
    """A part from its arrays; ``rows``: the month's rows up to its last."""
    import numpy as np

    if int(counts.sum()) != len(row_of) or (len(row_of) and int(row_of.max()) >= rows):
        raise DecryptionError("the meaning view's frame map does not agree with its rows")
    # int32: a month holds far fewer than 2**31 pairs.
    starts = (np.cumsum(counts, dtype=np.int32) - counts).astype(np.int32)
    return _Part(found, ids, times, counts, starts, row_of, spans)


def _inside(times: np.ndarray, start_us: int | None, end_us: int | None) -> np.ndarray:
    import numpy as np

    inside = np.ones(len(times), bool)
    if start_us is not None:
        inside &= times >= start_us
    if end_us is not None:
        inside &= times < end_us
    return inside


def _nearest(
    parts: tuple[_Part, ...], insides: list[np.ndarray], code: np.ndarray, count: int
) -> tuple[np.ndarray, np.ndarray]:
    """The month's ``count`` rows nearest ``code`` among those its frames inside the span
    use, and their Hamming distances: every code compared (no index to miss one)."""
    import numpy as np

    found = np.concatenate([distances(part.codes, code) for part in parts])
    if all(inside.all() for inside in insides):
        rows = np.arange(len(found))
    else:
        wanted = np.zeros(len(found), bool)
        for part, inside in zip(parts, insides, strict=True):
            wanted[part.rows_of(inside)] = True
        rows = np.flatnonzero(wanted)
        found = found[rows]
    if len(rows) > count:
        at = np.argpartition(found, count - 1)[:count]
        rows, found = rows[at], found[at]
    return rows, found


def _names(manifest: Manifest, month: str) -> tuple[str, ...]:
    held = manifest.maps.get(month)
    return (*manifest.months.get(month, ()), *((held.name,) if held else ()))
