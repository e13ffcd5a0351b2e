"""The views: rebuild throughput beside bare Tantivy, scoped deletion, append-to-searchable.

    cd /work/main && .venv/bin/python -m bench.projector [--frames 50000] [--rounds 5]
        [--delete-rounds 3] [--appends 100] [--burst 5000] [--only rebuild,delete,follow]

(about 2 minutes once the stores are cached; building them the first time adds ~1 minute.)

Every frame is real screen text from ``../shared/corpus/screen_corpus.py`` (code,
changelogs, licences, logs, man pages), loaded with ``import_frames`` (default config, so
redaction runs) into stores cached under /work/bench-data (see ``bench/_corpus.py``).

- Rebuild: ``Projector.rebuild_all`` over ``--frames`` frames of 2,048 characters each (a
  corpus frame, topped up with the text of the frames before it) over 60 days, beside the
  ceiling run in the same process: bare tantivy-py indexing the very documents
  (``projector.schema.frame_document``, built before the clock starts) with the same schema,
  analyzer, month partitions, ``WRITER_HEAP``, ``WRITER_THREADS`` and commit policy (one
  commit per partition, then ``wait_merging_threads``, as ``SearchWriter.rebuild`` does). Rounds
  alternate, and which of a round's two runs goes first; the median round of each is
  reported, and the median of each round's own ratio (its two runs back to back). Targets:
  >= 0.8 of bare (both ways) and >= 15,000 frames/s.
  The cost of each step alone (log decode, state, document build) and a cProfile of one
  rebuild say where the time goes.
- Delete: ``manage.delete(store, app=, start=, end=)`` of one app across 30 days at 2,000
  frames a day (60,000 frames) in a store of 120,000 over 60 days (the other apps' 60,000
  frames spread evenly over all 60 days), timed from the call until it returns (purge
  complete), on a fresh copy of the store each round. Target <= 10 s.
- Follow: the views followed by ``Projector.follow`` in another process, as the daemon does;
  this process appends frames one at a time with ``Log.append`` and polls ``Searcher.search``
  (a fresh ``ViewReader`` per poll, as another process would) for each frame's unique word.
  ``--appends`` frames one by one (each waited for, then a random 0-300 ms pause), then a
  burst of ``--burst`` appends as fast as the log takes them. Target p99 <= 2 s.

Writes ``bench/results/projector.txt``.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any

from bench._corpus import (
    DATA,
    HEADER,
    REPO,
    Report,
    cached,
    cells,
    copy_store,
    corpus_file,
    current,
    import_store,
    load,
    machine,
    revision,
    rows,
)
from bench._stats import percentile

RESULTS = REPO / "bench" / "results" / "projector.txt"
TEXT_CHARS = 2048
REBUILD_DAYS = 60
SEED = 1
DELETE_APP = "Mattermost"
DELETE_DAYS = 60
DELETE_WINDOW = (15, 45)  # days [15, 45) of the 60: 30 days
DELETE_PER_DAY = 2000  # frames of the deleted app a day, inside the window
OTHER_PER_DAY = 1000  # frames of the other apps a day, on all 60 days
FOLLOW_TIMEOUT = 30.0
PURGE = "Projector.purge, in all"
COMPACT = "Log.compact (drop the frames from the log)"
REBUILD_MONTHS = "Projector.rebuild_months (reindex the months)"
REBUILD_TANTIVY = "  of which SearchWriter.rebuild (Tantivy)"

say = Report()


# -- corpora ---------------------------------------------------------------------------------


def two_kb(source: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Each corpus frame's text topped up to ``TEXT_CHARS`` with the text of the frames
    before it (real text throughout), then cut there."""
    recent: deque[str] = deque(maxlen=8)
    for row in source:
        text = row["text"]
        for before in reversed(recent):
            if len(text) >= TEXT_CHARS:
                break
            text = text + "\n" + before
        recent.append(row["text"])
        yield {**row, "text": text[:TEXT_CHARS]}


def rebuild_store(frames: int) -> tuple[Path, dict[str, Any]]:
    def build(home: Path) -> dict[str, Any]:
        lines = (json.dumps(r) for r in two_kb(rows(corpus_file(frames, REBUILD_DAYS, SEED))))
        return import_store(home, lines, report=say)

    home, info = cached(f"projector-n{frames}-d{REBUILD_DAYS}-s{SEED}", build)
    return current(home, say), info


def delete_store() -> tuple[Path, dict[str, Any]]:
    """120,000 frames over 60 days: 1,000 a day of the corpus's own apps on every day, and
    2,000 a day of ``DELETE_APP`` on the 30 days of ``DELETE_WINDOW``."""
    total = DELETE_DAYS * OTHER_PER_DAY + (DELETE_WINDOW[1] - DELETE_WINDOW[0]) * DELETE_PER_DAY
    channels = ("general", "town-square", "backend", "releases", "random", "ops")

    first_day = int(time.time() // 86400) - DELETE_DAYS

    def shaped() -> Iterator[str]:
        source = rows(corpus_file(total, DELETE_DAYS, SEED))
        for day in range(DELETE_DAYS):
            inside = DELETE_WINDOW[0] <= day < DELETE_WINDOW[1]
            count = OTHER_PER_DAY + (DELETE_PER_DAY if inside else 0)
            for k in range(count):
                row = next(source)
                # 08:00-18:00 UTC, evenly spread; inside the window two frames in three
                # are the deleted app's.
                row["ts"] = (first_day + day) * 86400 + 8 * 3600 + k * 36_000 / count
                if inside and k % 3 != 0:
                    row["app"] = DELETE_APP
                    row["title"] = f"#{channels[k % len(channels)]} - {DELETE_APP}"
                    row["text_source"] = "ax"
                yield json.dumps(row)

    def build(home: Path) -> dict[str, Any]:
        info = import_store(home, shaped(), report=say)
        info["window"] = [
            (first_day + DELETE_WINDOW[0]) * 86400,
            (first_day + DELETE_WINDOW[1]) * 86400,
        ]
        return info

    home, info = cached(f"delete-d{DELETE_DAYS}-s{SEED}", build)
    return current(home, say), info


# -- rebuild ---------------------------------------------------------------------------------


class Clock:
    """Wall and CPU seconds (all of the process's threads, Tantivy's included)."""

    def __enter__(self) -> Clock:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu


def documents(frames: list[Any]) -> dict[str, list[Any]]:
    from projector.schema import build_schema, frame_document, partition_of

    schema = build_schema()
    by_month: dict[str, list[Any]] = {}
    for frame in frames:
        by_month.setdefault(partition_of(frame.captured_us), []).append(
            frame_document(frame, schema)
        )
    return by_month


def bare_index(docs_by_month: dict[str, list[Any]], folder: Path) -> Clock:
    """Index prepared documents exactly as ``SearchWriter.rebuild`` does: the ceiling."""
    from base.fs import ensure_dir
    from projector.index import open_index
    from projector.indexer import WRITER_HEAP, WRITER_THREADS
    from projector.schema import build_schema

    shutil.rmtree(folder, ignore_errors=True)
    schema = build_schema()
    with Clock() as clock:
        for month, docs in docs_by_month.items():
            index = open_index(ensure_dir(folder / month), schema)
            writer = index.writer(WRITER_HEAP, WRITER_THREADS)
            for doc in docs:
                writer.add_document(doc)
            writer.commit()
            writer.wait_merging_threads()
    shutil.rmtree(folder, ignore_errors=True)
    return clock


def timed_rebuild(home: Path) -> Clock:
    from projector.runner import Projector

    with Projector(home) as projector, Clock() as clock:
        projector.rebuild_all()
    return clock


def bench_rebuild(frames: int, rounds: int) -> None:
    import msgspec

    from base import tokens
    from eventlog.events import FrameCaptured
    from eventlog.log import Log
    from projector.state import State

    say(f"== Rebuild throughput: {frames:,} frames of {TEXT_CHARS} characters, 60 days ==")
    source, info = rebuild_store(frames)
    say(
        f"store built {info['built']} by import_frames at {info['frames_per_s']:,.0f} "
        f"frames/s; {info['disk_mb']:,.0f} MB on disk"
    )
    home = copy_store(source, DATA / "work-rebuild")
    log = Log(home / "log")

    # Each step alone, in this thread, to see where a rebuild's time goes.
    steps: list[tuple[str, Clock]] = []
    with Clock() as clock:
        events = list(log.read())
    steps.append(("Log.read: read, check, decompress, decode", clock))
    with Clock() as clock:
        state = State()
        for offset, event in events:
            state.apply(offset, event)
    steps.append(("State.apply", clock))
    found = [e for _, e in events if isinstance(e, FrameCaptured)]
    with Clock() as clock:
        docs_by_month = documents(found)
    steps.append(("partition_of + frame_document", clock))
    analyzer = tokens.analyzer()
    with Clock() as clock:
        for frame in found:
            analyzer.analyze(frame.text)
    steps.append(("the analyzer alone (TextAnalyzer.analyze)", clock))
    n = len(found)
    mean_bytes = statistics.fmean(len(f.text.encode()) for f in found)
    say(
        f"{n:,} frames (text {mean_bytes:,.0f} bytes on average), "
        f"{len(docs_by_month)} month partitions, {len(events) - n} control events"
    )

    bare: list[Clock] = []
    rebuild: list[Clock] = []
    for r in range(rounds):
        # Which of the two runs first alternates: a load that rises or falls through a round
        # then favours neither.
        if r % 2:
            rebuild.append(timed_rebuild(home))
        if r:  # untimed, like the first round's
            docs_by_month = documents(found)
        bare.append(bare_index(docs_by_month, DATA / "work-bare"))
        docs_by_month = {}
        if not r % 2:
            rebuild.append(timed_rebuild(home))
        say(
            f"  round {r + 1}: bare {n / bare[-1].wall:,.0f} frames/s "
            f"({bare[-1].cpu / bare[-1].wall:.2f} cores busy), rebuild_all "
            f"{n / rebuild[-1].wall:,.0f} frames/s ({rebuild[-1].cpu / rebuild[-1].wall:.2f} "
            f"cores busy); load {load()}"
        )
    bare_mid = sorted(bare, key=lambda c: c.wall)[len(bare) // 2]
    rebuild_mid = sorted(rebuild, key=lambda c: c.wall)[len(rebuild) // 2]
    ceiling, rate = n / bare_mid.wall, n / rebuild_mid.wall
    say()
    say(f"{'median of ' + str(rounds) + ' rounds':46s} {'frames/s':>10s} {'µs/frame':>9s}")
    say(
        f"{'bare tantivy-py, same documents (the ceiling)':46s} {ceiling:10,.0f} "
        f"{bare_mid.wall / n * 1e6:9.1f}"
    )
    say(f"{'Projector.rebuild_all':46s} {rate:10,.0f} {rebuild_mid.wall / n * 1e6:9.1f}")
    # Each round's pair ran back to back, so its ratio is less exposed to the load of the
    # moment than the ratio of the two medians (rounds of bare alone spread by ±10%).
    paired = sorted(b.wall / r.wall for b, r in zip(bare, rebuild, strict=True))
    say(
        f"ratio rebuild/bare: {rate / ceiling:.2f} of the medians, {paired[len(paired) // 2]:.2f} "
        f"the median round (rounds {paired[0]:.2f}-{paired[-1]:.2f}; target >= 0.8: "
        f"{'met' if min(rate / ceiling, paired[len(paired) // 2]) >= 0.8 else 'MISSED'}); "
        f"{rate:,.0f} frames/s (target >= 15,000: {'met' if rate >= 15_000 else 'MISSED'})"
    )
    say()
    say("where the time goes: each step alone, µs per frame (wall, and CPU of all threads)")
    blank = documents([msgspec.structs.replace(f, text="") for f in found])
    blank_clock = bare_index(blank, DATA / "work-bare")
    del blank
    steps.append(("bare indexing, median round", bare_mid))
    steps.append(("bare indexing of the same frames without text", blank_clock))
    steps.append(("rebuild_all, median round", rebuild_mid))
    for name, c in steps:
        say(f"  {name:48s} {c.wall / n * 1e6:7.1f} wall {c.cpu / n * 1e6:7.1f} CPU")
    say()
    profile_rebuild(home, n)
    say(f"load at end: {load()}")


def profile_rebuild(home: Path, frames: int) -> None:
    """cProfile of one rebuild: the Python side by own time; Tantivy's indexing threads show
    up as the main thread waiting in ``commit``/``add_document``."""
    from projector.runner import Projector

    profiler = cProfile.Profile()
    with Projector(home) as projector:
        start = time.perf_counter()
        profiler.runcall(projector.rebuild_all)
        wall = time.perf_counter() - start
    raw = getattr(pstats.Stats(profiler), "stats")  # noqa: B009 (untyped attribute)
    entries = []
    for (file, line, name), (_, calls, own, cumulative, _) in raw.items():
        where = f"{Path(file).parent.name}/{Path(file).name}:{line}" if line else file
        entries.append((own, cumulative, calls, f"{name} ({where})"))
    entries.sort(reverse=True)
    say(
        f"cProfile of one rebuild_all ({wall:.1f} s with the profiler, "
        f"{frames / wall:,.0f} frames/s): own time, top 12"
    )
    say(f"  {'own s':>7s} {'own %':>6s} {'cum s':>7s} {'calls':>9s}  function")
    for own, cumulative, calls, name in entries[:12]:
        say(f"  {own:7.2f} {own / wall:6.1%} {cumulative:7.2f} {calls:9d}  {name[:90]}")
    say()


# -- deletion --------------------------------------------------------------------------------


class Timers:
    """Wraps library methods to add up their time, without changing them."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._undo: list[Callable[[], None]] = []

    def wrap(self, owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - start

        setattr(owner, name, timed)
        self._undo.append(lambda: setattr(owner, name, original))

    def undo(self) -> None:
        for step in reversed(self._undo):
            step()
        self._undo.clear()


def bench_delete(rounds: int) -> None:
    from backscroll.manage import delete
    from backscroll.store import MemoryStore
    from eventlog.log import Log
    from projector.indexer import SearchWriter
    from projector.runner import Projector

    say(
        f"== Scoped deletion: {DELETE_APP}, 30 days x 2,000 frames = 60,000 frames, "
        "in a store of 120,000 over 60 days =="
    )
    source, info = delete_store()
    say(
        f"store built {info['built']} by import_frames at {info['frames_per_s']:,.0f} "
        f"frames/s; {info['disk_mb']:,.0f} MB on disk"
    )
    start_day, end_day = (datetime.fromtimestamp(t, UTC) for t in info["window"])
    times: list[float] = []
    for r in range(rounds):
        home = copy_store(source, DATA / "work-delete")
        store = MemoryStore(home, write=True)
        before = store.state().totals()
        timers = Timers()
        timers.wrap(Projector, "purge", PURGE)
        timers.wrap(Log, "compact", COMPACT)
        timers.wrap(Projector, "rebuild_months", REBUILD_MONTHS)
        timers.wrap(SearchWriter, "rebuild", REBUILD_TANTIVY)
        try:
            start = time.perf_counter()
            removed = delete(store, app=DELETE_APP, start=start_day, end=end_day)
            times.append(time.perf_counter() - start)
        finally:
            timers.undo()
        after = store.state().totals()
        left = store.search(DELETE_APP.lower(), limit=5)
        say(
            f"  round {r + 1}: {times[-1]:.2f} s, {removed:,} frames removed "
            f"({before.frames:,} -> {after.frames:,}; '{DELETE_APP}' still found: "
            f"{len(left)}; load {load()})"
        )
        for label in (PURGE, COMPACT, REBUILD_MONTHS, REBUILD_TANTIVY):
            say(f"      {label:48s} {timers.seconds.get(label, 0.0):6.2f} s")
        rest = timers.seconds.get(PURGE, 0.0) - sum(
            timers.seconds.get(k, 0.0) for k in (COMPACT, REBUILD_MONTHS)
        )
        say(f"      {'rest of the purge (plan: a scan of the log)':48s} {rest:6.2f} s")
    say()
    say(f"{'seconds':28s} {HEADER}")
    say(f"{'delete(app, 30 days)':28s} {cells(times)}")
    worst = max(times)
    say(f"target <= 10 s: {'met' if worst <= 10 else 'MISSED'} (worst round {worst:.2f} s)")
    say(f"load at end: {load()}")
    say()


# -- follow ----------------------------------------------------------------------------------


def follow_child(home: str) -> None:
    """The views' writer in its own process, as the daemon runs it; stops at stdin's EOF."""
    from projector.runner import Projector

    stop = threading.Event()

    def watch_stdin() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    with Projector(Path(home)) as projector:
        projector.catch_up()
        print("ready", flush=True)
        projector.follow(stop)


def seal_active_segment(home: Path) -> None:
    """Seal the copied log's active segment (a no-op rewrite of its last record through the
    public ``Log.compact``), so the appends start a fresh one, as a day of the daemon's does:
    a copy of an imported store would otherwise make every catch-up re-scan up to 64 MB."""
    import msgspec

    from eventlog.log import Log

    log = Log(home / "log")
    last = log.next_offset() - 1
    log.compact(
        lambda offset, e: msgspec.structs.replace(e) if offset == last else e,
        lambda segment, header: header is None,
    )


class Appender:
    """Appends frames of real text, each with one unique word, with ``Log.append``."""

    def __init__(self, home: Path, texts: list[dict[str, Any]]) -> None:
        from eventlog.log import Log

        self.log = Log(home / "log")
        self.next = self.log.next_offset()
        self.texts = texts
        self.tag = f"{random.randrange(36**4):04x}"

    def word(self, i: int) -> str:
        return f"bsq{self.tag}x{i}"

    def append(self, i: int) -> float:
        from base.clock import now_us
        from eventlog.events import FrameCaptured

        row = self.texts[i % len(self.texts)]
        text = row["text"]
        cut = len(text) // 2
        frame = FrameCaptured(
            ts_us=now_us(),
            frame_id=self.next,
            captured_us=now_us(),
            app=row["app"],
            title=row["title"],
            text=f"{text[:cut]} {self.word(i)} {text[cut:]}",
            text_source=row["text_source"],
            reason="title_change",
        )
        start = time.perf_counter()
        self.next = self.log.append(frame) + 1
        return start


def fresh_search(home: Path) -> Callable[[str], bool]:
    """A search as another process makes it: a new ViewReader, so every index is reopened."""
    from query.search import Searcher
    from query.views import ViewReader

    searcher = Searcher(ViewReader(home))
    return lambda word: bool(searcher.search(word, limit=1))


def bench_follow(frames: int, appends: int, burst: int) -> None:
    say(
        f"== Append-to-searchable in follow mode: the views followed in another process, "
        f"over a store of {frames:,} frames =="
    )
    source, _ = rebuild_store(frames)
    home = copy_store(source, DATA / "work-follow")
    seal_active_segment(home)
    texts = list(islice(rows(corpus_file(frames, REBUILD_DAYS, SEED)), 2000))
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.projector", "--follow-child", str(home)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        appender = Appender(home, texts)
        single: list[float] = []
        polls: list[float] = []
        for i in range(appends):
            start = appender.append(i)
            while True:
                t = time.perf_counter()
                hit = fresh_search(home)(appender.word(i))
                polls.append(time.perf_counter() - t)
                if hit:
                    single.append(time.perf_counter() - start)
                    break
                if time.perf_counter() - start > FOLLOW_TIMEOUT:
                    single.append(float("inf"))
                    break
                time.sleep(0.01)
            time.sleep(random.random() * 0.3)
        say(f"one poll (fresh ViewReader + search): p50 {statistics.median(polls) * 1e3:.1f} ms")
        burst_latency, burst_s = run_burst(home, appender, appends, burst)
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=60)
    say()
    say(f"{'seconds':34s} {HEADER}")
    say(f"{'one by one, each waited for':34s} {cells(single, 3)}")
    say(f"{f'burst of {burst:,} appends':34s} {cells(burst_latency, 3)}")
    slow = sum(t >= 0.9 for t in single)
    say(
        f"{slow} of {len(single)} one-by-one appends waited >= 0.9 s (an append the "
        "follower's watcher missed would wait for its 5 s idle wake-up)"
    )
    say(
        f"burst: {burst:,} Log.append calls (one fsync each) took {burst_s:.1f} s "
        f"({burst / burst_s:,.0f} appends/s)"
    )
    worst = max(percentile(sorted(single), 0.99), percentile(sorted(burst_latency), 0.99))
    say(f"target p99 <= 2 s: {'met' if worst <= 2 else 'MISSED'} (worst p99 {worst:.3f} s)")
    say(f"load at end: {load()}")
    say()


def run_burst(home: Path, appender: Appender, first: int, count: int) -> tuple[list[float], float]:
    """Append ``count`` frames as fast as possible while another thread finds each one.

    Commits make frames visible in log order, so when frame k is found every frame before it
    is too: each poll finds the newest visible frame by binary search over the unseen ones
    (all probes with one fresh reader) and stamps everything up to it with that time.
    """
    started: list[float] = []
    done = threading.Event()

    def append_all() -> None:
        for i in range(first, first + count):
            started.append(appender.append(i))
        done.set()

    seen = [0.0] * count
    writer = threading.Thread(target=append_all)
    begin = time.perf_counter()
    writer.start()
    lo = 0
    deadline = None
    while lo < count:
        n = len(started)
        if n == lo:
            time.sleep(0.005)
            continue
        found = fresh_search(home)

        def visible(k: int, found: Callable[[str], bool] = found) -> bool:
            return found(appender.word(first + k))

        if visible(n - 1):
            j = n - 1
        else:
            a, b = lo - 1, n - 1  # a is visible (or before lo), b is not
            while b - a > 1:
                mid = (a + b) // 2
                if visible(mid):
                    a = mid
                else:
                    b = mid
            j = a
        now = time.perf_counter()
        for k in range(lo, j + 1):
            seen[k] = now
        lo = j + 1
        if done.is_set():
            deadline = deadline or now + FOLLOW_TIMEOUT
            if now > deadline:
                break
        if j < n - 1:
            time.sleep(0.01)
    writer.join()
    burst_s = started[-1] - begin if started else 0.0
    sample = random.sample(range(count), min(50, count))
    missing = [k for k in sample if not fresh_search(home)(appender.word(first + k))]
    if missing:
        say(f"  ! {len(missing)} of 50 sampled burst frames are not searchable at the end")
    latency = [(seen[k] - started[k]) if seen[k] else float("inf") for k in range(len(started))]
    return latency, burst_s


# -- main ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=50_000, help="rebuild size")
    parser.add_argument("--rounds", type=int, default=5, help="rebuild rounds")
    parser.add_argument("--delete-rounds", type=int, default=3)
    parser.add_argument("--appends", type=int, default=100, help="one-by-one appends")
    parser.add_argument("--burst", type=int, default=5000)
    parser.add_argument("--only", default="rebuild,delete,follow")
    parser.add_argument("--follow-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.follow_child:
        follow_child(args.follow_child)
        return
    parts = set(args.only.split(","))
    for line in machine():
        say(line)
    command = f"$ .venv/bin/python -m bench.projector --frames {args.frames}"
    say(
        f"{command} --rounds {args.rounds} --delete-rounds {args.delete_rounds} "
        f"--appends {args.appends} --burst {args.burst} --only {args.only}"
    )
    say(f"run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    say()
    if "rebuild" in parts:
        bench_rebuild(args.frames, args.rounds)
    if "delete" in parts:
        bench_delete(args.delete_rounds)
    if "follow" in parts:
        bench_follow(args.frames, args.appends, args.burst)
    say(f"code at end: {revision()}")
    say.write(RESULTS)
    for name in ("work-rebuild", "work-delete", "work-follow"):
        shutil.rmtree(DATA / name, ignore_errors=True)


if __name__ == "__main__":
    main()
