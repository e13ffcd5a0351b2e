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

from bisect import bisect_left, bisect_right
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

    import tantivy

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
# The most frames of the log read at once (times and addresses, no documents) from a
# window's first hit to its last, so its pairs need no search each (a search and its
# partitions were a third of a grouping's time, one a pair).
MOST_SPAN = 1024
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
        if len(ranks) < 2:
            continue
        ranks.sort(key=lambda r: (hits[r].when, hits[r].id))
        # The log from the window's first hit to its last, read once when it is short
        # (addresses and times only); else each pair reads its own stretch.
        whole = log.stretch(hits[ranks[0]], hits[ranks[-1]], MOST_SPAN)
        for earlier, later in pairwise(ranks):
            if log.one_run(hits[earlier], hits[later], whole):
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
    return _jaccard(set(tokens.words(a)), set(tokens.words(b)))


def _jaccard(x: set[str], y: set[str]) -> float:
    return len(x & y) / len(x | y) if x | y else 1.0


class _Frame(NamedTuple):
    """A frame of the log between two hits, as ``matches`` reads it, with its words (None:
    encrypted, and it does not open here)."""

    frame_id: int
    captured_us: int
    app: str
    title: str
    words: set[str] | None


class _Stretch(NamedTuple):
    """Frames of the log in time order: their capture times, and where their documents are."""

    times: list[int]
    places: list[tuple[tantivy.Searcher, tantivy.DocAddress]]


class _Log:
    """The log's frames between two hits, read from the index in time order. One per
    ``group``: a frame's words are computed once however many pairs it ends."""

    def __init__(self, searcher: Searcher) -> None:
        self.searcher = searcher
        self.pending: list[Deletion] | None = None
        self.words: dict[int, set[str] | None] = {}
        self.months: dict[tuple[str, str], list[tuple[tantivy.Index, tantivy.Searcher]]] = {}

    def stretch(self, a: Hit, b: Hit, most: int) -> _Stretch | None:
        """The log's frames from ``a`` to ``b`` in time order (their times and where their
        documents are), or None when there are more than ``most``. One microsecond either
        side: a hit's time went through a float on its way here."""
        import tantivy

        lo, hi = max(0, utc_us(a.when) - 1), utc_us(b.when) + 1
        times: list[int] = []
        places: list[tuple[tantivy.Searcher, tantivy.DocAddress]] = []
        for index, searcher in self._partitions(partition_of(lo), partition_of(hi)):
            ranged = tantivy.Query.range_query(
                index.schema, "ts", tantivy.FieldType.Unsigned, lo, hi
            )
            order = tantivy.Order.Asc
            found = searcher.search(
                ranged, most + 1, count=False, order_by_field="ts", order=order
            ).hits
            times += [ts for ts, _ in found]
            places += [(searcher, address) for _, address in found]
            if len(times) > most:
                return None
        return _Stretch(times, places)

    def one_run(self, a: Hit, b: Hit, whole: _Stretch | None) -> bool:
        """Whether every visible frame from ``a`` to ``b`` is their window's, each similar
        enough to the one before. Read in time order, a frame at a time, up to the first
        that is not: two frames of a window left in between cost a few documents, not the
        whole stretch between them."""
        wanted = MOST_BETWEEN + 2
        if whole is None:
            part = self.stretch(a, b, wanted)
            if part is None:
                return False
            places = part.places
        else:
            lo, hi = max(0, utc_us(a.when) - 1), utc_us(b.when) + 1
            first = bisect_left(whole.times, lo)
            places = whole.places[first : bisect_right(whole.times, hi)]
            if len(places) > wanted:
                return False
        window = (a.app, a.title)
        before: set[str] | None = None
        for searcher, address in places:  # months in order, each in time order
            frame = self._frame(searcher.doc(address).to_dict())
            if before is None:
                if frame.frame_id == a.id:
                    before = frame.words
                    if before is None:
                        return False
                continue  # in the microsecond before ``a``
            if not self._visible(frame):
                continue
            if (frame.app, frame.title) != window or frame.words is None:
                return False
            if _jaccard(before, frame.words) < SIMILAR:
                return False
            if frame.frame_id == b.id:
                return True
            before = frame.words
        return False

    def _partitions(self, lo: str, hi: str) -> list[tuple[tantivy.Index, tantivy.Searcher]]:
        """The months from ``lo`` to ``hi`` with a searcher each, opened once a ``group``."""
        if (lo, hi) not in self.months:
            indexes = self.searcher.views.partitions(lo, hi)
            self.months[lo, hi] = [(index, index.searcher()) for index in indexes]
        return self.months[lo, hi]

    def _frame(self, d: dict[str, Any]) -> _Frame:
        frame_id = d["id"][0]
        *_, app, title = frame_meta(bytes(d["meta"][0]))
        if frame_id not in self.words:
            text = self._text(d)
            self.words[frame_id] = None if text is None else set(tokens.words(text))
        return _Frame(frame_id, d["ts"][0], app, title, self.words[frame_id])

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
