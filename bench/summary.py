"""The day at a glance (``answer.summary``) and the search's and timeline's later pages,
at scale, beside reading the same frames through the timeline.

    cd /work/main && .venv/bin/python -m bench.summary [--frames 1000000] [--days 40]

It reads the store ``bench.search`` builds and caches (``search-n<frames>-d500-s1`` under
/work/bench-data: the corpus tool's real screen text over 500 days, 20% of it encrypted), to
read only: at 1M frames a day holds ~2,000 frames. It never builds one: run ``bench.search
--frames N`` first (at 1M, ~15 minutes); while another run is building it, this waits.

Rows, each over ``--days`` random days of the store's span (after a warm-up pass), in ms of the
whole library call from request to answer (the text rendering included), wall time and, for
the day's summary and its baseline, CPU time (the 2 cores are shared: the load is printed):
- summary of one day (``since=YYYY-MM-DD``): target <= 50 ms at 1M frames (the issue's
  server answer for a day of 2,000 frames); a week and a month of days, for scale;
- the baseline, in the same run: the timeline of the same day with every frame
  (``limit=10000``), which is what a view or an agent reads to add the day up itself;
- a search's page 3 against its page 1 (15 moments a page, a word cut from that day's frames,
  over the whole store), and a timeline's page 3 against its page 1 (50 frames a page, that
  day): a later page costs what it ranks, not more.
"""

from __future__ import annotations

import argparse
import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench._corpus import DATA, HEADER, REPO, Report, cells, load, machine
from bench._stats import percentile

DAYS_IN_CORPUS, SEED = 500, 1
TARGET_MS = 50.0

say = Report()


def cached_store(frames: int) -> Path:
    """The complete cached store of ``frames`` frames, waiting while another run builds it."""
    name = f"search-n{frames}-d{DAYS_IN_CORPUS}-s{SEED}"
    home, partial = DATA / name, DATA / f"{name}.partial"
    waited = False
    while not (home / "build.json").exists():
        if not partial.exists():
            raise SystemExit(f"no store at {home}: run `python -m bench.search --frames {frames}`")
        if not waited:
            say(f"(waiting for another run to finish building {partial.name})")
            waited = True
        time.sleep(30)
    return home


def timed(work: Any) -> tuple[float, Any]:
    """Wall ms of ``work()``, and its result; its CPU ms go to ``cpu`` (the machine is
    shared, so wall time depends on the load: CPU time says what the call itself costs)."""
    start, started = time.perf_counter(), time.process_time()
    result = work()
    cpu.append((time.process_time() - started) * 1000)
    return (time.perf_counter() - start) * 1000, result


cpu: list[float] = []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=130_000)
    parser.add_argument("--days", type=int, default=40, help="days sampled")
    args = parser.parse_args()

    from backscroll import answer
    from backscroll.contract import SearchRequest, SummaryRequest, TimelineRequest, parse
    from backscroll.store import MemoryStore

    for line in machine():
        say(line)
    say(f"$ .venv/bin/python -m bench.summary --frames {args.frames} --days {args.days}")
    say(f"run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    home = cached_store(args.frames)
    store = MemoryStore(home)
    if store.lag:
        raise SystemExit(f"the cached store's views are {store.lag} event(s) behind: catch up")
    totals = store.state().totals()
    first = datetime.fromtimestamp(totals.oldest_us / 1e6, UTC).astimezone().date()
    last = datetime.fromtimestamp(totals.newest_us / 1e6, UTC).astimezone().date()
    rng = random.Random(SEED)
    candidates = [first + timedelta(days=d) for d in range((last - first).days + 1)]
    days = [candidates.pop(rng.randrange(len(candidates))) for _ in range(args.days)]
    say(
        f"store: {totals.frames:,} frames, {len(store.views.partitions())} month partitions, "
        f"{first} to {last}; {len(days)} random days; load {load()}"
    )

    def summary(since: str, until: str | None = None) -> Any:
        request = parse(SummaryRequest, {"since": since, **({"until": until} if until else {})})
        return answer.summary(store, request)

    rows: dict[str, list[float]] = {k: [] for k in ROWS}
    frames_a_day: list[int] = []
    for warm in (True, False):
        for day in days:
            iso = day.isoformat()
            ms, reply = timed(lambda iso=iso: summary(iso))
            if warm:
                continue
            frames_a_day.append(reply.answer.total.frames)
            rows["summary, a day"].append(ms)
            rows["summary, a day (CPU ms)"].append(cpu[-1])
            week = (day + timedelta(days=6)).isoformat()
            rows["summary, a week"].append(timed(lambda iso=iso, w=week: summary(iso, w))[0])
            month = (day + timedelta(days=29)).isoformat()
            rows["summary, 30 days"].append(timed(lambda iso=iso, m=month: summary(iso, m))[0])
            request = parse(TimelineRequest, {"since": iso, "limit": 10_000})
            rows[BASELINE].append(timed(lambda r=request: answer.timeline(store, r))[0])
            rows[f"{BASELINE} (CPU ms)"].append(cpu[-1])
            _pages(store, iso, reply, rows, answer, parse, SearchRequest, TimelineRequest)
    say(
        f"frames a day sampled: min {min(frames_a_day):,}, "
        f"median {sorted(frames_a_day)[len(frames_a_day) // 2]:,}, max {max(frames_a_day):,}"
    )
    say()
    say(f"{'ms per call (wall, unless CPU)':55s} {HEADER}")
    for label, times in rows.items():
        say(f"{label:55s} {cells(times)}")
    say()
    day, base = sorted(rows["summary, a day"]), sorted(rows[BASELINE])
    day_p50, base_p50 = percentile(day, 0.5), percentile(base, 0.5)
    cpu_p50 = percentile(sorted(rows["summary, a day (CPU ms)"]), 0.5)

    def verdict(ms: float) -> str:
        return "met" if ms <= TARGET_MS else "MISSED"

    say(
        f"summary of a day (target <= {TARGET_MS:.0f} ms at 1M frames; here "
        f"{args.frames:,}, under the load above): p50 {day_p50:.1f} ms wall "
        f"({verdict(day_p50)}), max {day[-1]:.1f} ms ({verdict(day[-1])}); CPU p50 "
        f"{cpu_p50:.1f} ms; the baseline's p50 {base_p50:.1f} ms wall "
        f"({base_p50 / day_p50:.1f}x the summary's)"
    )
    say(f"load at end: {load()}")
    say.write(REPO / "bench" / "results" / "summary.txt", f"{args.frames:,} frames")


BASELINE = "baseline: the day's timeline, every frame"
ROWS = [
    "summary, a day",
    "summary, a day (CPU ms)",
    "summary, a week",
    "summary, 30 days",
    BASELINE,
    f"{BASELINE} (CPU ms)",
    "search page 1 (15 moments)",
    "search page 3",
    "timeline page 1 (50 frames)",
    "timeline page 3",
]


def _pages(
    store: Any,
    iso: str,
    reply: Any,
    rows: dict[str, list[float]],
    answer: Any,
    parse: Any,
    search_request: Any,
    timeline_request: Any,
) -> None:
    """A search's and a timeline's page 1 and page 3, timed."""
    if not reply.answer.windows:
        return
    word = next((w for w in reply.answer.windows[0].window.split() if w.isalpha()), None)
    for kind, row, arguments in (
        (search_request, "search page", {"query": word or "the", "limit": 15}),
        (timeline_request, "timeline page", {"since": iso, "limit": 50}),
    ):
        first = parse(kind, arguments)
        call = answer.search if kind is search_request else answer.timeline
        ms, page = timed(lambda r=first, c=call: c(store, r))
        label = next(k for k in ROWS if k.startswith(row + " 1"))
        rows[label].append(ms)
        cursor = page.answer.next_cursor
        if cursor is None:
            continue
        second = call(store, parse(kind, {**arguments, "cursor": cursor})).answer.next_cursor
        if second is None:
            continue
        third = parse(kind, {**arguments, "cursor": second})
        rows[f"{row} 3"].append(timed(lambda r=third, c=call: c(store, r))[0])


if __name__ == "__main__":
    main()
