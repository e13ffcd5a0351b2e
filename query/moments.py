"""Search hits grouped into moments: consecutive frames of one window whose text barely
changed come back as one answer, with every frame's id and the times it was seen, so ten
frames of the same terminal do not fill an answer.

Two hits are one moment when they have the same app name and window title and every frame of
the log from one to the other (matching the query or not, in the order they were captured)
is that window's too, each barely changed from the frame before it. "Barely changed" is a
word-set Jaccard similarity of at least ``SIMILAR`` between the frames' texts (the words the
index sees, as sets: robust to a line scrolled off or appended, and cheap on 20,000-character
texts, where difflib's ratio is quadratic).

A moment ranks where its best hit ranked, and shows that hit's id, snippet and score.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from itertools import pairwise
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec

from base import tokens
from base.errors import DecryptionError
from projector.index import broken
from projector.schema import frame_meta, frame_query, partition_of
from projector.state import Deletion, matches
from query._queries import TimeSpan, utc_us
from query.search import Hit, Searcher

if TYPE_CHECKING:
    from datetime import datetime

    import tantivy

    from query.meaning import By

__all__ = ["SIMILAR", "Moment", "Moments", "group", "search_moments"]

# 0.65, measured by ``python -m bench.moments`` on 40-line views of the benchmark corpus's
# real texts (bench/results/moments.txt): a view scrolled by 1-5 lines scored >= 0.65 in
# 99.5% of 1,970 pairs (median 0.91), a few words typed in 99.9%; the next page of the same
# document in 0.8% (median 0.23), half a screen further in 8%, another document in none.
# At 0.70 the scrolls kept fell to 98.3%; at 0.60 the pages merged rose to 1.0%.
SIMILAR = 0.65
# The most events of the log between two hits of one window (frames that did not match, of
# that window) for them to be one moment: past it they are kept apart (a run that long is no
# longer "one thing seen", and reading it would cost more than the search).
MOST_BETWEEN = 64
# A search for ``limit`` moments asks for ``FETCH`` times as many hits, and again three
# times as many while too few moments come back, up to ``MOST_HITS``: on the benchmark's
# store, 15 moments held 40 frames on average (at most 80).
FETCH = 3
MOST_HITS = 3000
# Instructions to find the frames of one id by its term, and to read one frame's id from the
# column for a range (``_ids_query``).
TERM_COST = 22_000
RANGE_COST = 40


class Moment(msgspec.Struct, kw_only=True):
    """One answer: ``hit`` is the best-ranked frame, ``frames`` every hit of the moment in
    time order (``hit`` among them). Only ``hit`` has its snippet."""

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


class Moments(list[Moment]):
    """A search's moments, best first, and why there may be more it did not show.

    A list, so that every caller that wants the moments alone has them as before."""

    incomplete: str | None = None
    """Set when the search may have left matching frames out: it stopped at ``MOST_HITS``
    frames with fewer than ``limit`` moments (a window seen thousands of times held every
    one of them, and other windows' matches rank below it), or ``Searcher.incomplete``."""

    meaning_note: str | None = None
    """``Searcher.meaning_note``: why some frames could be found by their words alone."""


def search_moments(
    searcher: Searcher,
    query: str,
    span: TimeSpan = TimeSpan(),
    app: str | None = None,
    limit: int = 15,
    by: By = "both",
) -> Moments:
    """The best ``limit`` moments for ``query``: ``limit`` counts moments, not frames. Fewer
    only when no more frames match, or with ``incomplete`` saying why. A moment shows its
    best hit's snippet alone: the other frames' snippets are not made (finding the words in
    each frame's text was a search's third most costly step, two in three of them unseen)."""
    want = min(limit * FETCH, MOST_HITS)
    while True:
        hits = searcher.search(query, span, app, want, by=by, snippets=False)
        found = Moments(group(searcher, hits)[:limit])
        found.incomplete = searcher.incomplete
        found.meaning_note = searcher.meaning_note
        if len(found) >= limit or len(hits) < want:
            break
        if want >= MOST_HITS:
            found.incomplete = "; ".join(
                filter(None, [searcher.incomplete, _crowded(len(hits), len(found))])
            )
            break
        want = min(want * 3, MOST_HITS)
    searcher.snip([moment.hit for moment in found], query)
    return found


def _crowded(hits: int, moments: int) -> str:
    """Why fewer moments than asked came back though more frames match."""
    return (
        f"the best {hits:,} matching frames are all in these {moments} "
        "moment(s), and other matches rank below them: narrow the search (an app, a "
        "time span, another word) to see them"
    )


def group(searcher: Searcher, hits: list[Hit]) -> list[Moment]:
    """``hits`` (best first) as moments, best first."""
    windows: dict[tuple[str, str], list[int]] = {}
    for rank, hit in enumerate(hits):
        windows.setdefault((hit.app, hit.title), []).append(rank)
    leader = list(range(len(hits)))  # union-find: a moment is named by its best rank
    pairs: list[tuple[int, int]] = []  # each window's hits, each with the next in the log
    for ranks in windows.values():
        ranks.sort(key=lambda r: hits[r].id)
        pairs += pairwise(ranks)
    log = _Log(searcher, [(hits[a], hits[b]) for a, b in pairs])
    for earlier, later in pairs:
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


def _ids_query(
    schema: tantivy.Schema, pairs: list[tuple[Hit, Hit]], ids: list[int], docs: int
) -> tantivy.Query:
    """The frames with ``ids`` (those from each pair's first hit to its second), in a month
    of ``docs`` frames: each id looked up in the id field's terms, or where that costs more,
    each pair's range of ids, read from the id column. A range scans the column whole (~40
    instructions a frame, Tantivy's); a term lookup cost ~22,000 instructions an id, Python's
    making of the query most of it: a search's 28 pairs over 124 ids in months of ~7,000
    frames took 8 M instructions in ranges, 2.8 M in terms."""
    import tantivy

    should = tantivy.Occur.Should
    if len(ids) * TERM_COST < len(pairs) * docs * RANGE_COST:
        return tantivy.Query.boolean_query([(should, frame_query(schema, i)) for i in ids])
    unsigned = tantivy.FieldType.Unsigned
    return tantivy.Query.boolean_query(
        [(should, tantivy.Query.range_query(schema, "id", unsigned, a.id, b.id)) for a, b in pairs]
    )


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
    """A frame of the log between two hits, as ``matches`` reads it, with its text (None:
    encrypted, and it does not open here)."""

    frame_id: int
    captured_us: int
    app: str
    title: str
    url: str
    text: str | None


class _Log:
    """The log's frames between the hits of each pair, in log order, read from the index
    for all pairs in one search a month. A frame's text is read once, and its words found
    once, only where they are compared: a pair's run ends at the first frame of another
    window, whose words (and the frame's before it) are never needed."""

    def __init__(self, searcher: Searcher, pairs: list[tuple[Hit, Hit]]) -> None:
        self.searcher = searcher
        self.pending: list[Deletion] | None = None
        self.texts: dict[int, str | None] = {}
        self.words: dict[int, set[str]] = {}
        # A frame's id is its offset in the log, and offsets count events one by one: more
        # than MOST_BETWEEN offsets apart, more than MOST_BETWEEN events came between, and
        # the pair is apart without reading anything.
        self.short = {(a.id, b.id) for a, b in pairs if 0 < b.id - a.id <= MOST_BETWEEN + 1}
        self.ids: list[int] = []
        self.places: list[tuple[tantivy.Index, tantivy.Searcher, tantivy.DocAddress]] = []
        near = [(a, b) for a, b in pairs if (a.id, b.id) in self.short]
        if near:
            self._read(near)

    def _read(self, pairs: list[tuple[Hit, Hit]]) -> None:
        """Where the frames from each pair's first hit to its second are, in log order.
        They are looked for in the months from the first hit's to the second's: capture
        appends frames in time order (an import of frames out of time order could put one
        between them in the log and in another month, and it would not be seen). Each month
        is asked for the pairs that reach it alone: asking every month in the hits' span for
        every pair (45 hits over 18 months at 130,000 frames) was 0.5x Python's own start."""
        import tantivy

        spans: dict[tuple[str, str], list[tuple[Hit, Hit]]] = {}
        for a, b in pairs:
            span = (partition_of(utc_us(a.when)), partition_of(utc_us(b.when)))
            spans.setdefault(span, []).append((a, b))
        months: dict[int, tuple[tantivy.Index, list[tuple[Hit, Hit]]]] = {}
        for (lo, hi), spanning in spans.items():
            for index in self.searcher.views.partitions(lo, hi):
                months.setdefault(id(index), (index, []))[1].extend(spanning)
        found: list[tuple[int, tantivy.Index, tantivy.Searcher, tantivy.DocAddress]] = []
        for index, reaching in months.values():
            searcher = index.searcher()
            ids = sorted({i for a, b in reaching for i in range(a.id, b.id + 1)})
            within = _ids_query(index.schema, reaching, ids, searcher.num_docs)
            most = sum(b.id - a.id + 1 for a, b in reaching)  # at least all of them
            order = tantivy.Order.Asc
            try:
                result = searcher.search(
                    within, most, count=False, order_by_field="id", order=order
                )
            except BaseException as exc:
                if not broken(exc):
                    raise
                self.searcher.views.broke(index, exc)
                continue
            found += [(frame_id, index, searcher, address) for frame_id, address in result.hits]
        found.sort(key=lambda f: f[0])  # a frame captured late may sit in an earlier month
        self.ids = [frame_id for frame_id, *_ in found]
        self.places = [(index, searcher, address) for _, index, searcher, address in found]

    def one_run(self, a: Hit, b: Hit) -> bool:
        """Whether every visible frame of the log from ``a`` to ``b`` is their window's,
        each similar enough to the one before. Read in order, a frame at a time, up to the
        first that is not: two frames of a window left in between cost a document or two."""
        if (a.id, b.id) not in self.short:
            return False
        stretch = self.places[bisect_left(self.ids, a.id) : bisect_right(self.ids, b.id)]
        window = (a.app, a.title)
        before: _Frame | None = None
        for index, searcher, address in stretch:
            try:
                frame = self._frame(searcher.doc(address).to_dict())
            except BaseException as exc:  # damaged: the hits stay apart
                if not broken(exc):
                    raise
                self.searcher.views.broke(index, exc)
                return False
            if before is None:  # ``a`` comes first
                if frame.text is None:
                    return False
                before = frame
                continue
            if not self._visible(frame):
                continue
            if (frame.app, frame.title) != window or frame.text is None:
                return False
            if _jaccard(self._words(before), self._words(frame)) < SIMILAR:
                return False
            if frame.frame_id == b.id:
                return True
            before = frame
        return False

    def _frame(self, d: dict[str, Any]) -> _Frame:
        frame_id = d["id"][0]
        *_, app, title, url = frame_meta(bytes(d["meta"][0]))
        if frame_id not in self.texts:
            self.texts[frame_id] = self._text(d)
        return _Frame(frame_id, d["ts"][0], app, title, url, self.texts[frame_id])

    def _words(self, frame: _Frame) -> set[str]:
        words = self.words.get(frame.frame_id)
        if words is None:
            assert frame.text is not None
            words = self.words[frame.frame_id] = set(tokens.words(frame.text))
        return words

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
