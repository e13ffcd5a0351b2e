"""Search hits grouped into moments: consecutive frames of one window whose text barely
changed come back as one answer, with every frame's id and the times it was seen, so ten
frames of the same terminal do not fill an answer.

Two hits are one moment when they have the same app name and window title and every frame of
the log from one to the other (matching the query or not) is that window's too, each barely
changed from the frame before it. "Barely changed" is a word-set Jaccard similarity of at
least ``SIMILAR`` between the frames' texts (the words the index sees, as sets: robust to a
line scrolled off or appended, cheap on 20,000-character texts where difflib is quadratic).

A moment ranks where its best hit ranked, and shows that hit's id, snippet and score.
"""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec

from base import tokens
from base.errors import DecryptionError
from projector.schema import frame_meta, partition_of
from projector.state import Deletion, matches
from query._queries import TimeSpan, utc_us
from query.search import Hit, Searcher

if TYPE_CHECKING:
    from datetime import datetime

__all__ = ["SIMILAR", "Moment", "group", "search_moments"]

# 0.65, measured by ``python -m bench.moments`` on 40-line views of the benchmark corpus's
# real texts: a view scrolled by 1-5 lines kept >= 0.70 in 99% of cases (median 0.91), a
# few words typed >= 0.90; the next page of the same document stayed below 0.62 in 99%
# (median 0.23), another document of the same app below 0.52.
SIMILAR = 0.65
# The most frames read between two hits of one window to decide they are one moment: past
# it they are kept apart (a run that long is no longer "one thing seen", and reading it
# would cost more than the search).
MOST_BETWEEN = 64
# A search for ``limit`` moments asks for ``FETCH`` times as many hits, and again three
# times as many while too few moments come back, up to ``MOST_HITS``.
FETCH = 3
MOST_HITS = 3000


class Moment(msgspec.Struct, kw_only=True):
    """One answer: ``hit`` is the best-ranked frame, ``frames`` every hit of the moment in
    time order (``hit`` among them)."""

    hit: Hit
    frames: list[Hit]

    @property
    def frame_ids(self) -> list[int]:
        return [frame.id for frame in self.frames]

    @property
    def first_seen(self) -> datetime:
        return self.frames[0].when

    @property
    def last_seen(self) -> datetime:
        return self.frames[-1].when


def search_moments(
    searcher: Searcher,
    query: str,
    span: TimeSpan = TimeSpan(),
    app: str | None = None,
    limit: int = 15,
) -> list[Moment]:
    """The best ``limit`` moments for ``query``: ``limit`` counts moments, not frames."""
    want = min(limit * FETCH, MOST_HITS)
    while True:
        hits = searcher.search(query, span, app, want)
        found = group(searcher, hits)
        if len(found) >= limit or len(hits) < want or want >= MOST_HITS:
            return found[:limit]
        want = min(want * 3, MOST_HITS)


def group(searcher: Searcher, hits: list[Hit]) -> list[Moment]:
    """``hits`` (best first) as moments, best first."""
    windows: dict[tuple[str, str], list[int]] = {}
    for rank, hit in enumerate(hits):
        windows.setdefault((hit.app, hit.title), []).append(rank)
    leader = list(range(len(hits)))  # union-find: a moment is named by its best rank
    log = _Log(searcher)
    for ranks in windows.values():
        ranks.sort(key=lambda r: (hits[r].when, hits[r].id))
        for earlier, later in pairwise(ranks):
            if log.one_run(hits[earlier], hits[later]):
                x, y = _root(leader, earlier), _root(leader, later)
                leader[max(x, y)] = min(x, y)
    moments: dict[int, list[Hit]] = {}
    for rank, hit in enumerate(hits):
        moments.setdefault(_root(leader, rank), []).append(hit)
    return [
        Moment(hit=hits[best], frames=sorted(frames, key=lambda h: (h.when, h.id)))
        for best, frames in sorted(moments.items())
    ]


def _root(leader: list[int], rank: int) -> int:
    while leader[rank] != rank:
        rank = leader[rank]
    return rank


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of the two texts' word sets (1.0 for two texts without words)."""
    x, y = set(tokens.words(a)), set(tokens.words(b))
    return len(x & y) / len(x | y) if x | y else 1.0


class _Frame(NamedTuple):
    """A frame of the log between two hits, as ``matches`` reads it, with its text."""

    frame_id: int
    captured_us: int
    app: str
    title: str
    text: str | None


class _Log:
    """The frames between two hits, read from the index once per ``group``."""

    def __init__(self, searcher: Searcher) -> None:
        self.searcher = searcher
        self.pending: list[Deletion] | None = None

    def one_run(self, a: Hit, b: Hit) -> bool:
        """Whether every frame from ``a`` to ``b`` is their window's, each similar enough
        to the one before."""
        frames = self._between(a, b)
        if frames is None:
            return False
        window = (a.app, a.title)
        for before, after in pairwise(frames):
            if (after.app, after.title) != window or before.text is None or after.text is None:
                return False
            if similarity(before.text, after.text) < SIMILAR:
                return False
        return True

    def _between(self, a: Hit, b: Hit) -> list[_Frame] | None:
        """The visible frames from ``a`` to ``b`` inclusive in log order; None when there are
        more than ``MOST_BETWEEN`` or ``a`` and ``b`` are not both among them."""
        import tantivy

        lo, hi = utc_us(a.when), utc_us(b.when) + 1
        indexes = self.searcher.views.partitions(partition_of(max(0, lo - 1)), partition_of(hi))
        if not indexes:
            return None
        # One microsecond either side: a hit's time went through a float on its way here.
        ranged = tantivy.Query.range_query(
            indexes[0].schema, "ts", tantivy.FieldType.Unsigned, max(0, lo - 1), hi
        )
        wanted = MOST_BETWEEN + 2
        found: list[tuple[int, int, dict[str, Any]]] = []
        for index in indexes:
            searcher = index.searcher()
            hits = searcher.search(ranged, wanted + 1, count=False).hits
            if len(hits) > wanted:
                return None
            for _, address in hits:
                d = searcher.doc(address).to_dict()
                found.append((d["ts"][0], d["id"][0], d))
        if len(found) > wanted:
            return None
        found.sort(key=lambda f: (f[0], f[1]))
        ids = [frame_id for _, frame_id, _ in found]
        if a.id not in ids or b.id not in ids:
            return None
        frames = [self._frame(d) for _, _, d in found[ids.index(a.id) : ids.index(b.id) + 1]]
        return [f for f in frames if self._visible(f)]

    def _frame(self, d: dict[str, Any]) -> _Frame:
        *_, app, title = frame_meta(bytes(d["meta"][0]))
        return _Frame(d["id"][0], d["ts"][0], app, title, self._text(d))

    def _text(self, d: dict[str, Any]) -> str | None:
        """The frame's text; None for an encrypted frame that does not open here."""
        if d.get("cipher"):
            decrypt = self.searcher.decrypt
            if decrypt is None:
                return None
            try:
                return decrypt(d["id"][0], bytes(d["cipher"][0]))
            except DecryptionError:
                return None
        if d.get("body"):
            return bytes(d["body"][0]).decode()
        return str(d["text"][0]) if d.get("text") else ""

    def _visible(self, frame: _Frame) -> bool:
        """Not hidden by a tombstone still waiting for its purge."""
        if self.pending is None:
            self.pending = self.searcher.views.state().pending_deletions()
        return not any(matches(d.scope, frame) for d in self.pending)
