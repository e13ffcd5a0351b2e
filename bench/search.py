"""Search latency beside SQLite FTS5 over the same corpus, and the CLI's whole-process time.

    cd /work/main && .venv/bin/python -m bench.search [--frames 50000] [--per-class 25]
        [--cli-runs 20]
    (full size: --frames 1000000)

About 1.5 minutes at the default size. At 1M frames the first run builds for ~15 minutes on
this machine (import ~7.5 min, FTS5 ~3.5 min, the query set ~2 min); later runs ~6 minutes.
A run at one size replaces only that size's section of the results file.

The corpus: ``--frames`` frames of real screen text from ``../shared/corpus/screen_corpus.py
N --days 500 --seed 1`` (code, changelogs, licences, logs, man pages; ~1.7 KB each; four
apps, ~650 window titles), loaded with ``manage.import_frames`` (default config, redaction
on; retention and cap set so nothing expires). 20% of the frames have encrypted text: the
first 1,000 of every 5,000 are imported with ``encrypt_text`` on. Stores are cached under
/work/bench-data (see ``bench/_corpus.py``); the first run at a size builds them and reports
the import rate.

The baseline, in the same run: SQLite FTS5 (the spec's engine) over the same frames, read
back from the store's log (the encrypted ones decrypted, so FTS5 has all the text): a table
``frames(id, ts, app, title, text)`` with an index on ``ts``, an external-content FTS5 table
over app, title and text, optimised; queries ``MATCH`` the same words (a phrase as an FTS5
phrase), ``ORDER BY rank`` (bm25) ``LIMIT 15`` with ``snippet()``, the time window on the
indexed ``ts`` and the app filter as ``LIKE`` on app or title.

Queries are cut from random frames, so each has at least one match: 1, 2 and 3 words and
2-3 word "phrases", each without a filter, with the frame's app, with "the last 7 days"
(``parse_when("7d")`` at the corpus's last frame, from frames of that week), with the
frame's calendar month (``parse_when("this month")`` at the frame), and with app and month.
``MemoryStore.search(..., limit=15)`` returns snippets (decrypted where encrypted). Both
engines run each query back to back, after a warm-up pass. Targets: p99 <= 10 ms at 1M
frames and >= 10x lower than FTS5's.

Encrypted-only: words found only in encrypted frames' text (never in a plaintext frame, a
title or an app name), alone, with another word of the frame, and in a phrase (which
Backscroll confirms after decryption). Target p99 <= 15 ms.

Fuzzy: searches that find nothing with every term exactly and so reach the stage that
forgives OCR (a word one edit away in OCR'd text, ``query/_fuzzy.py``): a word of an OCR'd
frame with one letter replaced, alone and with another word of the frame; a word absent
everywhere, alone and with a word of a frame (every stage, near misses last). Each is timed
with ``fuzzy=True`` and ``fuzzy=False`` back to back, beside the exact searches above; with
the table of what one edit reaches in OCR'd text (``bench/_fuzzy.py``).

CLI: ``backscroll status --home <store>`` and ``backscroll search <word> --home <store>`` as
whole processes, warm, ``--cli-runs`` each, beside ``python -c pass``. Target <= 300 ms.

Writes ``bench/results/search.txt``.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

from bench import _fuzzy
from bench._corpus import (
    HEADER,
    REPO,
    Report,
    cached,
    cells,
    chunks,
    corpus_file,
    current,
    import_store,
    load,
    machine,
    revision,
)
from bench._stats import percentile

RESULTS = REPO / "bench" / "results" / "search.txt"
DAYS = 500
SEED = 1
ENCRYPTED_EVERY = 5000
ENCRYPTED_RUN = 1000  # 20%
KINDS = ("1 word", "2 words", "3 words", "phrase")
FILTERS = ("none", "app", "last 7 days", "month", "app+month")
ENC_KINDS = ("enc 1 word", "enc 2 words", "enc phrase")
LIMIT = 15

say = Report()


class Query(NamedTuple):
    kind: str
    filter: str
    text: str
    """In Backscroll's query language: words, or one "quoted phrase"."""
    words: list[str]
    phrase: bool
    app: str | None
    start: float | None
    end: float | None

    @property
    def label(self) -> str:
        return f"{self.kind}, {self.filter}" if self.filter != "none" else self.kind


# -- the stores ------------------------------------------------------------------------------


def search_store(frames: int) -> tuple[Path, dict[str, Any]]:
    def build(home: Path) -> dict[str, Any]:
        say(f"building the store: {frames:,} frames, {DAYS} days, 20% encrypted text")
        with open(corpus_file(frames, DAYS, SEED)) as lines:
            return import_store(
                home,
                lines,
                encrypted_every=ENCRYPTED_EVERY,
                encrypted_run=ENCRYPTED_RUN,
                report=say,
            )

    home, info = cached(f"search-n{frames}-d{DAYS}-s{SEED}", build)
    return current(home, say), info


def stored_frames(home: Path, start: int = 0) -> Iterator[tuple[Any, str]]:
    """Every frame in the store's log with its plaintext (decrypted where encrypted)."""
    from backscroll.store import MemoryStore
    from eventlog.events import FRAME_TYPE, FrameCaptured

    store = MemoryStore(home)
    crypto = store.crypto
    for _, event in store.log.read(start, types={FRAME_TYPE}):
        assert isinstance(event, FrameCaptured)
        if event.encrypted:
            assert crypto is not None
            yield event, crypto.decrypt_text(event.frame_id, event.ciphertext)
        else:
            yield event, event.text


def baseline(frames: int, home: Path) -> tuple[Path, dict[str, Any]]:
    """The FTS5 database, from the store's own frames."""

    def build(folder: Path) -> dict[str, Any]:
        say("building the FTS5 baseline from the store's log")
        start = time.perf_counter()
        info = build_fts(folder / "fts.db", home)
        return {**info, "seconds": round(time.perf_counter() - start, 1), "load": load()}

    return cached(f"fts5-n{frames}-d{DAYS}-s{SEED}", build)


def build_fts(db_path: Path, home: Path) -> dict[str, Any]:
    db = sqlite3.connect(db_path)
    db.executescript(
        """
        PRAGMA journal_mode = WAL;
        CREATE TABLE frames(id INTEGER PRIMARY KEY, ts INTEGER NOT NULL,
                            app TEXT NOT NULL, title TEXT NOT NULL, text TEXT NOT NULL);
        CREATE INDEX frames_ts ON frames(ts);
        CREATE VIRTUAL TABLE fts USING fts5(app, title, text, content='frames',
                                            content_rowid='id');
        """
    )
    t0 = time.perf_counter()
    for batch in chunks(stored_frames(home), 10_000):
        db.executemany(
            "INSERT INTO frames VALUES (?, ?, ?, ?, ?)",
            [(e.frame_id, e.captured_us, e.app, e.title, text) for e, text in batch],
        )
    db.commit()
    t1 = time.perf_counter()
    db.execute("INSERT INTO fts(fts) VALUES ('rebuild')")
    db.execute("INSERT INTO fts(fts) VALUES ('optimize')")
    db.commit()
    t2 = time.perf_counter()
    db.execute("VACUUM")
    db.close()
    return {
        "read_log_s": round(t1 - t0, 1),
        "fts_index_s": round(t2 - t1, 1),
        "db_mb": round(db_path.stat().st_size / 1e6, 1),
    }


def query_set(frames: int, home: Path) -> list[Query]:
    """Queries cut from the store's own frames (so each has a match), cached."""

    def build(folder: Path) -> dict[str, Any]:
        say("choosing the queries from the store's log")
        start = time.perf_counter()
        queries = choose_queries(home, frames)
        (folder / "queries.json").write_text(json.dumps([q._asdict() for q in queries]))
        return {"seconds": round(time.perf_counter() - start, 1)}

    folder, _ = cached(f"queries-n{frames}-d{DAYS}-s{SEED}", build)
    return [Query(**q) for q in json.loads((folder / "queries.json").read_text())]


def fuzzy_query_set(frames: int, home: Path) -> dict[str, Any]:
    """The queries that reach the fuzzy stage, and the neighbour table, cached."""

    def build(folder: Path) -> dict[str, Any]:
        say("choosing the fuzzy queries from the store's log")
        start = time.perf_counter()
        chosen = _fuzzy.choose(stored_frames(home), SEED)
        (folder / "fuzzy.json").write_text(json.dumps(chosen))
        return {"seconds": round(time.perf_counter() - start, 1)}

    folder, _ = cached(f"fuzzy-queries-n{frames}-d{DAYS}-s{SEED}", build)
    return _fuzzy.load(folder)


def choose_queries(home: Path, frames: int) -> list[Query]:
    from base import tokens

    rng = random.Random(SEED)
    sources = 400  # frames the plaintext queries are cut from
    encrypted_sources = 4000  # encrypted frames searched for words no other frame has
    keep = set(rng.sample(range(frames), min(frames, sources)))
    keep_encrypted = encrypted_sources / max(1, frames * ENCRYPTED_RUN // ENCRYPTED_EVERY)
    plain_vocab: set[str] = set()
    kept: list[dict[str, Any]] = []
    encrypted: list[dict[str, Any]] = []
    times: list[tuple[float, int]] = []
    for n, (event, text) in enumerate(stored_frames(home)):
        if not event.encrypted:
            plain_vocab.update(tokens.words(text))
        plain_vocab.update(tokens.words(event.title))
        plain_vocab.update(tokens.words(event.app))
        times.append((event.captured_us / 1e6, event.frame_id))
        if n in keep:
            kept.append(_source(event, text))
        if event.encrypted and rng.random() < keep_encrypted:
            encrypted.append(_source(event, text))
    # Frames of the corpus's last 7 days, for the "last 7 days" queries.
    last_ts = max(ts for ts, _ in times)
    since = last_ts - 7 * 86400
    first = min(offset for ts, offset in times if ts >= since)
    week = [
        _source(e, text) for e, text in stored_frames(home, first) if e.captured_us >= since * 1e6
    ]
    week = rng.sample(week, min(sources, len(week)))
    return make_queries(rng, kept, week, encrypted, plain_vocab, last_ts)


def _source(event: Any, text: str) -> dict[str, Any]:
    return {"id": event.frame_id, "ts": event.captured_us / 1e6, "app": event.app, "text": text}


# -- queries ---------------------------------------------------------------------------------


def candidates(text: str) -> list[str]:
    """Words a person might type: letters, 3 to 20 of them."""
    from base import tokens

    return sorted({w for w in tokens.words(text) if w.isalpha() and 3 <= len(w) <= 20})


def make_queries(
    rng: random.Random,
    frames: list[dict[str, Any]],
    week: list[dict[str, Any]],
    encrypted: list[dict[str, Any]],
    plain_vocab: set[str],
    last_ts: float,
) -> list[Query]:
    from base import tokens
    from query.when import parse_when

    end = datetime.fromtimestamp(last_ts, UTC).astimezone()
    week_start, week_end = parse_when("7d", now=end + timedelta(seconds=1))
    out: list[Query] = []
    for kind in KINDS:
        for filter_ in FILTERS:
            pool = week if filter_ == "last 7 days" else frames
            made = 0
            for frame in rng.sample(pool, len(pool)):
                words = pick(rng, kind, frame["text"])
                if words is None:
                    continue
                app = frame["app"].lower() if "app" in filter_ else None
                start = end_ = None
                if filter_ == "last 7 days":
                    start, end_ = week_start.timestamp(), week_end.timestamp()
                elif "month" in filter_:
                    when = datetime.fromtimestamp(frame["ts"], UTC).astimezone()
                    first, after = parse_when("this month", now=when)
                    start, end_ = first.timestamp(), after.timestamp()
                phrase = kind == "phrase"
                text = f'"{" ".join(words)}"' if phrase else " ".join(words)
                out.append(Query(kind, filter_, text, words, phrase, app, start, end_))
                made += 1
                if made == 100:
                    break
    for kind in ENC_KINDS:
        made = 0
        for frame in rng.sample(encrypted, len(encrypted)):
            all_words = tokens.words(frame["text"])
            only = sorted({w for w in all_words if w not in plain_vocab and len(w) >= 3})
            if not only:
                continue
            word = rng.choice(only)
            if kind == "enc 1 word":
                words, phrase = [word], False
            elif kind == "enc 2 words":
                others = [w for w in candidates(frame["text"]) if w != word]
                if not others:
                    continue
                words, phrase = [word, rng.choice(others)], False
            else:
                at = all_words.index(word)
                lo = max(0, at - rng.randrange(2))
                words, phrase = all_words[lo : lo + 2 + rng.randrange(2)], True
                if len(words) < 2:
                    continue
            text = f'"{" ".join(words)}"' if phrase else " ".join(words)
            out.append(Query(kind, "none", text, words, phrase, None, None, None))
            made += 1
            if made == 100:
                break
    return out


def pick(rng: random.Random, kind: str, text: str) -> list[str] | None:
    from base import tokens

    if kind == "phrase":
        words = tokens.words(text)
        for _ in range(20):
            size = 2 + rng.randrange(2)
            at = rng.randrange(max(1, len(words) - size))
            piece = words[at : at + size]
            if len(piece) == size and any(w.isalpha() and len(w) >= 3 for w in piece):
                return piece
        return None
    pool = candidates(text)
    size = int(kind[0])
    return rng.sample(pool, size) if len(pool) >= size else None


# -- the two engines -------------------------------------------------------------------------


def backscroll_engine(home: Path) -> Callable[[Query], int]:
    from backscroll.store import MemoryStore

    store = MemoryStore(home)

    def run(q: Query) -> int:
        start = datetime.fromtimestamp(q.start, UTC) if q.start is not None else None
        end = datetime.fromtimestamp(q.end, UTC) if q.end is not None else None
        return len(store.search(q.text, start=start, end=end, app=q.app, limit=LIMIT))

    return run


def fts_engine(db_path: Path) -> Callable[[Query], int]:
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    db.execute("PRAGMA mmap_size = 4000000000")
    db.execute("PRAGMA cache_size = -262144")

    def run(q: Query) -> int:
        # Each word quoted, so that no word is read as FTS5 syntax; a phrase is one string.
        quoted = [" ".join(q.words)] if q.phrase else q.words
        match = " ".join(f'"{w}"' for w in quoted)
        where = ["fts MATCH ?"]
        params: list[Any] = [match]
        if q.start is not None:
            where.append("f.ts >= ? AND f.ts < ?")
            params += [int(q.start * 1e6), int(q.end * 1e6) if q.end is not None else 2**62]
        if q.app:
            where.append("(f.app LIKE ? OR f.title LIKE ?)")
            params += [f"%{q.app}%"] * 2
        sql = (
            "SELECT f.id, f.ts, f.app, f.title, snippet(fts, 2, '', '', '…', 24) "
            "FROM fts JOIN frames f ON f.id = fts.rowid "
            f"WHERE {' AND '.join(where)} ORDER BY fts.rank LIMIT {LIMIT}"
        )
        return len(db.execute(sql, params).fetchall())

    return run


# -- measuring -------------------------------------------------------------------------------


def measure(
    queries: list[Query], engines: dict[str, Callable[[Query], int]]
) -> tuple[dict[str, dict[str, list[tuple[float, int]]]], list[tuple[Query, dict[str, int]]]]:
    """Per engine, per class label: (ms, hits) of each query; engines back to back. Also the
    queries some engine found nothing for."""
    for q in queries[::10]:  # warm-up
        for run in engines.values():
            run(q)
    out: dict[str, dict[str, list[tuple[float, int]]]] = {name: {} for name in engines}
    empty: list[tuple[Query, dict[str, int]]] = []
    order = list(queries)
    random.Random(SEED).shuffle(order)
    for i, q in enumerate(order):
        found: dict[str, int] = {}
        for name, run in engines.items():
            start = time.perf_counter()
            found[name] = run(q)
            ms = (time.perf_counter() - start) * 1e3
            out[name].setdefault(q.label, []).append((ms, found[name]))
        if not all(found.values()):
            empty.append((q, found))
        if i and i % 200 == 0:
            print(f"  {i:,} of {len(order):,} queries (load {load()})", flush=True)
    return out, empty


def table(
    results: dict[str, dict[str, list[tuple[float, int]]]], labels: list[str], title: str
) -> dict[str, float]:
    say(f"{title:26s} {'engine':10s} {HEADER} {'hits%':>6s} {'p99 ratio':>10s}")
    ratios: dict[str, float] = {}
    for label in labels:
        ours = results["backscroll"].get(label, [])
        theirs = results["fts5"].get(label, [])
        if not ours:
            continue
        p99s = [percentile(sorted(t for t, _ in r), 0.99) for r in (ours, theirs)]
        ratios[label] = p99s[1] / p99s[0]
        for name, r in (("backscroll", ours), ("fts5", theirs)):
            hit = 100 * sum(1 for _, h in r if h) / len(r)
            extra = f"{ratios[label]:9.1f}x" if name == "fts5" else ""
            shown = label if name == "backscroll" else ""
            say(f"{shown:26s} {name:10s} {cells([t for t, _ in r])} {hit:6.0f} {extra:>10s}")
    return ratios


# -- the CLI ---------------------------------------------------------------------------------


def cli_times(home: Path, word: str, runs: int) -> None:
    from eventlog.log import Log

    exe = str(REPO / ".venv" / "bin" / "backscroll")
    commands = {
        "python -c pass (floor)": [sys.executable, "-c", "pass"],
        "python -c 'import backscroll.cli'": [sys.executable, "-c", "import backscroll.cli"],
        "backscroll status": [exe, "status", "--home", str(home)],
        f"backscroll search {word}": [exe, "search", word, "--home", str(home)],
    }
    say(f"{'ms, wall, whole process':34s} {HEADER}")
    worst = 0.0
    for name, command in commands.items():
        times = []
        for i in range(runs + 2):
            start = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True, cwd=REPO)
            if i >= 2:  # two warm-up runs
                times.append((time.perf_counter() - start) * 1e3)
        say(f"{name:34s} {cells(times, 1)}")
        if name.startswith("backscroll"):
            worst = max(worst, percentile(sorted(times), 0.9))
    say(f"target <= 300 ms each: {'met' if worst <= 300 else 'MISSED'} (worst p90 {worst:.0f} ms)")
    log = Log(home / "log")
    active = [s for s in log.segments() if not s.sealed]
    size = active[0].path.stat().st_size / 1e6 if active else 0.0
    start = time.perf_counter()
    log.next_offset()
    scan = (time.perf_counter() - start) * 1e3
    say(
        f"the log's active segment holds {size:.0f} MB; Log.next_offset() (which every "
        f"command's catch-up calls) takes {scan:.0f} ms here"
    )


def profile(home: Path, queries: list[Query], labels: list[str]) -> None:
    """cProfile of ``MemoryStore.search`` over some classes: where a query's time goes."""
    import cProfile
    import pstats

    run = backscroll_engine(home)
    for label in labels:
        group = [q for q in queries if q.label == label]
        for q in group:
            run(q)
        profiler = cProfile.Profile()
        start = time.perf_counter()
        for q in group:
            profiler.runcall(run, q)
        per_query = (time.perf_counter() - start) * 1e3 / len(group)
        raw = getattr(pstats.Stats(profiler), "stats")  # noqa: B009 (untyped attribute)
        entries = sorted(
            (
                (own, calls, name, file, line)
                for (file, line, name), (_, calls, own, _, _) in raw.items()
            ),
            reverse=True,
        )
        say(
            f"cProfile of MemoryStore.search, '{label}' ({len(group)} queries, "
            f"{per_query:.1f} ms a query with the profiler): own time, top 8"
        )
        say(f"  {'ms/query':>8s} {'calls/query':>11s}  function")
        for own, calls, name, file, line in entries[:8]:
            where = f" ({Path(file).parent.name}/{Path(file).name}:{line})" if line else ""
            say(f"  {own * 1e3 / len(group):8.2f} {calls / len(group):11.1f}  {name}{where}")
        say()


# -- main ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=50_000)
    parser.add_argument("--per-class", type=int, default=25, help="queries per class")
    parser.add_argument("--cli-runs", type=int, default=20)
    args = parser.parse_args()

    for line in machine():
        say(line)
    say(
        f"$ .venv/bin/python -m bench.search --frames {args.frames} "
        f"--per-class {args.per_class} --cli-runs {args.cli_runs}"
    )
    say(f"run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    say()
    home, info = search_store(args.frames)
    say(
        f"store: {info['frames']:,} frames imported {info['built']} in {info['seconds']:,.0f} s "
        f"= {info['frames_per_s']:,.0f} frames/s (plaintext {info['plain']['frames']:,} in "
        f"{info['plain']['seconds']:,.0f} s = "
        f"{info['plain']['frames'] / max(info['plain']['seconds'], 1e-9):,.0f}/s; encrypted "
        f"{info['encrypted']['frames']:,} in {info['encrypted']['seconds']:,.0f} s = "
        f"{info['encrypted']['frames'] / max(info['encrypted']['seconds'], 1e-9):,.0f}/s; "
        f"load then {info['load']}); {info['disk_mb']:,.0f} MB on disk; "
        f"import code: {info.get('code', 'not recorded (built before this field)')}"
    )
    folder, fts_info = baseline(args.frames, home)
    say(
        f"FTS5: {fts_info['db_mb']:,.0f} MB, built in {fts_info['seconds']:,.0f} s "
        f"(log read + decrypt {fts_info['read_log_s']} s, index + optimize "
        f"{fts_info['fts_index_s']} s)"
    )
    every = query_set(args.frames, home)
    rng = random.Random(SEED)
    chosen: list[Query] = []
    for label in dict.fromkeys(q.label for q in every):
        group = [q for q in every if q.label == label]
        chosen += rng.sample(group, min(args.per_class, len(group)))
    from backscroll.store import MemoryStore

    partitions = len(MemoryStore(home).views.partitions())
    say(
        f"{len(chosen):,} queries ({args.per_class} per class), limit {LIMIT}, snippets on; "
        f"{partitions} month partitions; load {load()}"
    )
    say()
    engines = {"backscroll": backscroll_engine(home), "fts5": fts_engine(folder / "fts.db")}
    results, empty = measure(chosen, engines)
    plain_labels = [f"{k}, {f}" if f != "none" else k for f in FILTERS for k in KINDS]
    ratios = table(results, plain_labels, "ms per query")
    for name in results:
        results[name]["all plaintext queries"] = [
            x for label in plain_labels for x in results[name].get(label, [])
        ]
        results[name]["plaintext, no app filter"] = [
            x for label in plain_labels if "app" not in label for x in results[name][label]
        ]
        results[name]["all encrypted-only"] = [
            x for label in ENC_KINDS for x in results[name].get(label, [])
        ]
    say()
    ratios.update(table(results, [*ENC_KINDS], "encrypted-only words"))
    say()
    summary = table(
        results,
        ["all plaintext queries", "plaintext, no app filter", "all encrypted-only"],
        "all",
    )
    say()
    ours = sorted(t for t, _ in results["backscroll"]["all plaintext queries"])
    enc = sorted(t for t, _ in results["backscroll"]["all encrypted-only"])
    p99, p99_enc = percentile(ours, 0.99), percentile(enc, 0.99)
    ratio = summary["all plaintext queries"]
    say(
        f"p99 {p99:.1f} ms (target <= 10 ms at 1M frames: "
        f"{'met' if p99 <= 10 else 'MISSED'} at {args.frames:,}); FTS5/Backscroll p99 ratio "
        f"{ratio:.1f}x (target >= 10x: {'met' if ratio >= 10 else 'MISSED'}); classes under 10x: "
        f"{sum(r < 10 for r in ratios.values())} of {len(ratios)}"
    )
    say(
        f"encrypted-only p99 {p99_enc:.1f} ms (target <= 15 ms: "
        f"{'met' if p99_enc <= 15 else 'MISSED'})"
    )
    for q, found in empty:
        say(
            f"no match from {', '.join(n for n, k in found.items() if not k)}: {q.text} "
            f"({q.label}; matches: {found})"
        )
    say(f"load after the queries: {load()}")
    say()
    fuzzy = fuzzy_query_set(args.frames, home)
    timed = _fuzzy.measure(home, fuzzy, args.per_class, SEED)
    exact = [t for t, _ in results["backscroll"]["all plaintext queries"]]
    _fuzzy.report(say, fuzzy, timed, exact)
    say(f"load after the fuzzy queries: {load()}")
    say()
    profile(home, chosen, ["1 word", "1 word, app"])
    word = next(q.words[0] for q in chosen if q.kind == "1 word")
    cli_times(home, word, args.cli_runs)
    say(f"load at end: {load()}")
    say(f"code at end: {revision()}")
    say.write(RESULTS, section=f"{args.frames:,} frames")


if __name__ == "__main__":
    main()
