"""Time per app and per window or site, from frame times: the day at a glance.

A frame holds the screen from its capture until the next frame, for at most ``gap``
seconds; a longer silence closes the span there. The capture daemon takes a frame at every
change of app or window and, while nothing else happens, every ``interval_seconds`` (the
idle fallback, 30 s by default) when the screen changed since the last one. So while the
screen changes, frames are never further apart than one interval; a silence longer than two
(``gap_for``) means two idle checks in a row found the screen unchanged, or capture stopped:
the person was away, or only reading, and the summary does not count it. Counting a frame
for at most two intervals credits a person reading one screen for up to a minute between
scrolls, and never the lunch hour the screen sat unchanged.

The frames of a span are read from the search view by time (the months it touches, each a
range query on the capture time ordered by it), with their app, title and address from the
stored ``meta`` alone: no text, so nothing is decrypted (titles and addresses are stored in
the clear, as they are indexed): a day of 2,000 frames at 1M frames, 15 ms of CPU for the
whole answer here (``bench/summary.py``).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import urlsplit

from projector.index import broken
from projector.schema import folded, frame_meta
from projector.state import matches
from query._queries import TimeSpan, filters, months, utc_us
from query.views import ViewReader

if TYPE_CHECKING:
    import tantivy

SLICES = 200
"""Most slices in an answer's strip: an hour each up to 8 days, then whole days, widened so
a span of any length fits."""


class Seen(NamedTuple):
    """A frame as the summary reads it (its fields named as ``projector.state.Framed``, so a
    pending deletion's scope applies to it)."""

    frame_id: int
    captured_us: int
    app: str
    title: str
    url: str


class Held(NamedTuple):
    """What held the screen for a while: an app, and its window or the page's site."""

    app: str
    window: str
    """The window's title, or the site of the page a browser showed (``site``)."""
    site: bool


class Tally:
    """Seconds and frames of one thing."""

    __slots__ = ("frames", "us")

    def __init__(self) -> None:
        self.us = 0
        self.frames = 0


class Slice(NamedTuple):
    start: datetime
    end: datetime
    us: int
    """Time anything held the screen in the slice, microseconds."""
    app: str | None
    """The app that held it longest (None: nothing did)."""
    app_us: int


class Activity(NamedTuple):
    frames: int
    us: int
    apps: dict[str, Tally]
    windows: dict[Held, Tally]
    slices: list[Slice]
    slice_us: int


def gap_for(interval_seconds: float) -> float:
    """The longest silence between two frames that still counts as time on screen: two idle
    checks of the capture daemon (see the module's docstring)."""
    return 2 * interval_seconds


def frames_in(views: ViewReader, span: TimeSpan) -> list[Seen]:
    """The frames of ``span`` a reader may see (a pending deletion hides its frames), oldest
    first. A month whose index breaks the read, and a frame whose stored bytes do not read,
    are left out, and the month noted as damaged."""
    import tantivy

    indexes = views.partitions(*months(span))
    if not indexes:
        return []
    pending = views.state().pending_deletions()
    query = filters(indexes[0].schema, span, None) or tantivy.Query.all_query()
    out: list[Seen] = []
    for index in indexes:
        try:
            out += _month(views, index, query)
        except BaseException as exc:
            if not broken(exc):
                raise
            views.broke(index, exc)
    if pending:
        out = [f for f in out if not any(matches(d.scope, f) for d in pending)]
    out.sort(key=lambda f: (f.captured_us, f.frame_id))
    return out


def _month(views: ViewReader, index: tantivy.Index, query: tantivy.Query) -> list[Seen]:
    import tantivy

    searcher = index.searcher()
    # Never a top-N above the partition's documents: Tantivy sizes its heap by N.
    n = max(1, searcher.num_docs)
    hits = searcher.search(query, n, count=False, order_by_field="ts", order=tantivy.Order.Asc)
    addresses = [address for _, address in hits.hits]
    ids = searcher.fast_field_values("id", addresses)
    out = []
    for (ts, address), frame_id in zip(hits.hits, ids, strict=True):
        try:
            # ``meta`` alone: the whole document (its text) cost three times as much.
            meta = searcher.doc(address).get_first("meta")
        except BaseException as exc:
            if not broken(exc):
                raise
            views.broke(index, exc)
            continue
        _, _, _, _, app, title, url = frame_meta(bytes(meta or b""))
        out.append(Seen(int(frame_id or 0), int(ts), app, title, url))
    return out


@lru_cache(maxsize=4096)
def held(app: str, title: str, url: str) -> Held:
    """A browser's page by its site (``github.com``), any other window by its title. Cached:
    a day's frames come from a few dozen windows, each seen again and again."""
    if url:
        parts = urlsplit(url)
        return Held(app, parts.hostname or parts.scheme or url, True)
    return Held(app, title, False)


def summarize(
    frames: list[Seen],
    start: datetime,
    end: datetime,
    gap_seconds: float,
    app: str | None = None,
    *,
    now: datetime | None = None,
) -> Activity:
    """The time each app and each window or site held the screen in ``[start, end)``, and
    the strip of slices that covers it; nothing is counted past ``now`` (the last frame holds
    the screen until then at most). With ``app``, only frames whose app name, title or
    address contain it count; the others still end the spans before them.

    One pass in time order, a frame's few operations each: it was half the time of a week's
    summary while it built two tallies a frame and looked its slice up by bisection."""
    gap_us = round(gap_seconds * 1_000_000)
    lo, hi = utc_us(start), utc_us(min(end, now) if now else end)
    edges = _edges(start, end)
    bounds = [utc_us(e) for e in edges]
    per_slice: list[dict[str, int]] = [{} for _ in edges[:-1]]
    windows: dict[Held, Tally] = {}
    wanted = _Filter(app)
    last = len(frames) - 1
    k = 0  # the slice the current frame starts in: frames come in time order
    for i, frame in enumerate(frames):
        place = held(frame.app, frame.title, frame.url)
        if app and not wanted(frame):
            continue
        t = frame.captured_us
        begin = t if t > lo else lo
        stop = min(frames[i + 1].captured_us if i < last else hi, t + gap_us, hi)
        us = stop - begin if stop > begin else 0
        tally = windows.get(place)
        if tally is None:
            tally = windows[place] = Tally()
        tally.us += us
        tally.frames += 1
        if us:
            while bounds[k + 1] <= begin:
                k += 1
            j = k
            while True:
                shares = per_slice[j]
                part = min(stop, bounds[j + 1]) - max(begin, bounds[j])
                shares[frame.app] = shares.get(frame.app, 0) + part
                if stop <= bounds[j + 1]:
                    break
                j += 1
    apps: dict[str, Tally] = {}
    for place, tally in windows.items():
        each = apps.get(place.app)
        if each is None:
            each = apps[place.app] = Tally()
        each.us += tally.us
        each.frames += tally.frames
    slices = []
    for k, shares in enumerate(per_slice):
        top = max(shares.items(), key=lambda kv: (kv[1], kv[0]), default=None)
        slices.append(
            Slice(
                edges[k],
                edges[k + 1],
                sum(shares.values()),
                top[0] if top else None,
                top[1] if top else 0,
            )
        )
    total = sum(t.us for t in windows.values())
    counted = sum(t.frames for t in windows.values())
    return Activity(counted, total, apps, windows, slices, bounds[1] - bounds[0])


class _Filter:
    """The ``app`` filter: whether a frame's app name, title or address contains it, as the
    search's does (folded), decided once per window."""

    def __init__(self, app: str | None) -> None:
        self.needle = folded(app) if app else ""
        self.seen: dict[tuple[str, str, str], bool] = {}

    def __call__(self, frame: Seen) -> bool:
        key = (frame.app, frame.title, frame.url)
        found = self.seen.get(key)
        if found is None:
            found = self.seen[key] = any(self.needle in folded(place) for place in key)
        return found


def _edges(start: datetime, end: datetime) -> list[datetime]:
    """The strip's slice edges from ``start``'s local hour (or midnight) to past ``end``: an
    hour each while that makes at most ``SLICES``, else whole local days, as many as it takes
    to make at most ``SLICES``."""
    first = start.astimezone()
    hours = (end - first.replace(minute=0, second=0, microsecond=0)) / timedelta(hours=1)
    if hours <= SLICES:
        edge = first.replace(minute=0, second=0, microsecond=0)
        edges = [edge]
        while edge < end:
            edge = (edge + timedelta(hours=1)).astimezone()  # UTC steps: a DST hour is an hour
            edges.append(edge)
        return edges
    day = first.date()
    edges = [_midnight(day)]
    days = -(-(end - edges[0]) // timedelta(days=1))
    width = -(-days // SLICES)
    while edges[-1] < end:
        day += timedelta(days=width)
        edges.append(_midnight(day))
    return edges


def _midnight(day: date) -> datetime:
    """Local midnight of ``day``, aware."""
    return datetime(day.year, day.month, day.day).astimezone()
