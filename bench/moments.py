"""Search answers as moments: the similarity threshold, and how many distinct moments a
15-hit answer holds before and after grouping, on a store of real text.

    .venv/bin/python -m bench.moments [--frames 8000] [--queries 200]

(in a clone that is not beside ``../shared``, such as a git worktree, name the corpus tool:
``BACKSCROLL_CORPUS_TOOL=/path/to/shared/corpus/screen_corpus.py``)

About two minutes. Text: the pools of ``../shared/corpus/screen_corpus.py`` (Python source
in an editor, Debian changelogs and licences in a browser and a document viewer, dpkg/apt logs
and man pages in a terminal), read on this machine with its seed 1.

1. The threshold. 40-line views of those texts, and the same view after a change a person
   makes without leaving the window (scrolled 1-5 lines, a few words typed) or after the
   screen changed (half a screen and a whole page further, another document of the same app):
   the word-set Jaccard similarity ``query.moments.similarity`` of each pair, and how many
   pairs each threshold would call "barely changed".

2. Before and after. The corpus tool's own frames are random slices of a document, so no two
   are near-duplicates; a session is generated instead from the same pools the way a screen
   changes: a visit to a window lasts a few frames 3-30 s apart; in it a log grows by 1-3
   lines, a page scrolls by 1-5 lines or jumps a page (1 step in 5), an editor gets a few
   words typed. A window is left for another and sometimes returned to. Each frame is labelled
   with its true moment (its visit, and the screens since the last jump), then imported with
   ``backscroll import``'s code (default config). Queries are 1 and 2 words of four letters or
   more cut from random frames. For each: ``MemoryStore.search(q, limit=15)`` (before: one
   hit a frame) and ``MemoryStore.moments(q, limit=15)`` (after), counting the distinct true
   moments each answer shows, the answers that merged frames of different true moments
   (a moment across another window must never happen), and the time each took, beside a
   plain search for as many hits as the grouping asks for (``FETCH`` x 15).

Writes ``bench/results/moments.txt``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from bench._corpus import CORPUS_TOOL, HEADER, REPO, Report, cells, import_store, machine

RESULTS = REPO / "bench" / "results" / "moments.txt"
ROWS = 40
SEED = 1
LIMIT = 15
THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75)

say = Report()


def pools() -> list[tuple[str, str, list[str]]]:
    """(app, title, lines) of the corpus tool's sources, long enough for three pages."""
    spec = importlib.util.spec_from_file_location("screen_corpus", CORPUS_TOOL)
    assert spec is not None and spec.loader is not None
    corpus = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(corpus)
    found = corpus.sources(random.Random(SEED))
    return [(a, t, x.splitlines()) for a, t, x in found if len(x.splitlines()) > 3 * ROWS + 10]


def view(lines: list[str], top: int) -> str:
    return "\n".join(lines[top : top + ROWS])


def typed(text: str, rng: random.Random) -> str:
    at = rng.randrange(len(text) + 1)
    words = " ".join(rng.choice(("self", "value", "result", "items", "return")) for _ in range(3))
    return text[:at] + " " + words + " " + text[at:]


# -- 1. the threshold --------------------------------------------------------------------


def threshold(sources: list[tuple[str, str, list[str]]]) -> None:
    from query.moments import SIMILAR, similarity

    rng = random.Random(SEED)
    pairs: dict[str, list[float]] = {
        k: [] for k in ("scroll 1-5 lines", "typed 3 words", "half a screen", "next page")
    }
    pairs["other document"] = []
    for app, _, lines in sources:
        for _ in range(5):
            top = rng.randrange(len(lines) - 2 * ROWS - 6)
            seen = view(lines, top)
            pairs["scroll 1-5 lines"].append(similarity(seen, view(lines, top + rng.randint(1, 5))))
            pairs["typed 3 words"].append(similarity(seen, typed(seen, rng)))
            pairs["half a screen"].append(similarity(seen, view(lines, top + ROWS // 2)))
            pairs["next page"].append(similarity(seen, view(lines, top + ROWS)))
        same_app = [p for p in sources if p[0] == app and p[2] is not lines]
        if same_app:
            other = rng.choice(same_app)[2]
            pairs["other document"].append(
                similarity(view(lines, 0), view(other, rng.randrange(len(other) - ROWS)))
            )
    say(f"1. word-set Jaccard of two {ROWS}-line views of the same window (real texts)")
    say(f"{'change':18s} {'pairs':>6s} {'p1':>5s} {'p5':>5s} {'p50':>5s} {'p95':>5s} {'p99':>5s}")
    for name, values in pairs.items():
        v = sorted(values)

        def q(f: float, v: list[float] = v) -> str:
            return f"{v[min(len(v) - 1, int(f * len(v)))]:5.2f}"

        say(f"{name:18s} {len(v):6d} {q(0.01)} {q(0.05)} {q(0.5)} {q(0.95)} {q(0.99)}")
    say()
    say("share of pairs called 'barely changed' (similarity >= threshold)")
    say(f"{'change':18s} " + " ".join(f"{t:>6.2f}" for t in THRESHOLDS))
    for name, values in pairs.items():
        shares = [sum(x >= t for x in values) / len(values) for t in THRESHOLDS]
        say(f"{name:18s} " + " ".join(f"{100 * s:5.1f}%" for s in shares))
    say(f"threshold in use: query.moments.SIMILAR = {SIMILAR}")
    say()


# -- 2. before and after -----------------------------------------------------------------


class Frame(NamedTuple):
    row: dict[str, Any]
    moment: int


def session(sources: list[tuple[str, str, list[str]]], frames: int) -> list[Frame]:
    """Frames as a person's screen changes them, each with its true moment."""
    rng = random.Random(SEED)
    windows = rng.sample(sources, min(60, len(sources)))
    tops = {id(w): rng.randrange(len(w[2]) - ROWS) for w in windows}
    ts = datetime(2026, 11, 2, 8, tzinfo=UTC).timestamp()
    out: list[Frame] = []
    moment = 0
    window = windows[0]
    while len(out) < frames:
        left = window
        while window is left:  # a visit ends by going to another window
            window = rng.choice(windows[:12]) if rng.random() < 0.3 else rng.choice(windows)
        app, title, lines = window
        moment += 1  # a new visit is a new moment
        text = None
        for _ in range(max(1, round(rng.expovariate(1 / 6)))):
            top = tops[id(window)]
            if text is not None:
                if app == "Terminal" and "tail -f" in title:
                    top += rng.randint(1, 3)  # the log grows
                elif app == "Code" and rng.random() < 0.5:
                    text = typed(text, rng)
                elif rng.random() < 0.2:
                    top += ROWS  # a page further: the screen changed
                    moment += 1
                else:
                    top += rng.randint(1, 5)
            if top + ROWS >= len(lines):
                top = 0
                moment += 1
            if text is None or tops[id(window)] != top:
                text = view(lines, top)
            tops[id(window)] = top
            ts += rng.uniform(3, 30)
            row = {"ts": round(ts, 3), "app": app, "title": title, "text": text}
            row["text_source"] = "ocr" if app == "Terminal" else "ax"
            out.append(Frame(row, moment))
        ts += rng.uniform(2, 600)
    return out[:frames]


def queries(frames: list[Frame], count: int) -> list[str]:
    from base import tokens

    rng = random.Random(SEED + 1)
    chosen: list[str] = []
    while len(chosen) < count:
        words = [w for w in tokens.words(rng.choice(frames).row["text"]) if len(w) >= 4]
        if len(words) < 2:
            continue
        i = rng.randrange(len(words) - 1)
        chosen.append(words[i] if len(chosen) % 2 == 0 else f"{words[i]} {words[i + 1]}")
    return chosen


def before_after(sources: list[tuple[str, str, list[str]]], frames: int, count: int) -> None:
    from backscroll.store import MemoryStore
    from query.moments import FETCH

    made = session(sources, frames)
    with tempfile.TemporaryDirectory(prefix="bench-moments-") as folder:
        home = Path(folder) / "store"
        info = import_store(home, (json.dumps(f.row) for f in made))
        say(
            f"2. store: {info['frames']:,} frames of {made[-1].moment:,} true moments in "
            f"{len({(f.row['app'], f.row['title']) for f in made})} windows, imported in "
            f"{info['seconds']:.0f} s"
        )
        truth: dict[int, int] = {}
        with MemoryStore(home) as store:
            ids = [h.id for h in store.timeline(limit=frames)]
            assert len(ids) == len(made)
            truth = {frame_id: f.moment for frame_id, f in zip(ids, made, strict=True)}
            asked = queries(made, count)
            for q in asked[:10]:  # warm-up
                store.search(q, limit=LIMIT)
                store.moments(q, limit=LIMIT)
            times: dict[str, list[float]] = {"before": [], "after": [], "wide": []}
            distinct: dict[str, list[int]] = {"before": [], "after": [], "matching": []}
            shown: list[int] = []
            mixed = full = split = 0
            for q in asked:
                t0 = time.perf_counter()
                hits = store.search(q, limit=LIMIT)
                t1 = time.perf_counter()
                moments = store.moments(q, limit=LIMIT)
                t2 = time.perf_counter()
                store.search(q, limit=LIMIT * FETCH)
                t3 = time.perf_counter()
                times["before"].append((t1 - t0) * 1000)
                times["after"].append((t2 - t1) * 1000)
                times["wide"].append((t3 - t2) * 1000)
                if len(hits) < LIMIT:
                    continue  # fewer than 15 frames match: nothing to crowd out
                full += 1
                every = store.search(q, limit=1000)
                distinct["matching"].append(len({truth[h.id] for h in every}))
                distinct["before"].append(len({truth[h.id] for h in hits}))
                distinct["after"].append(len({truth[m.hit.id] for m in moments}))
                shown.append(sum(len(m.frames) for m in moments))
                mixed += sum(len({truth[f.id] for f in m.frames}) > 1 for m in moments)
                labels = [truth[m.hit.id] for m in moments]
                split += len(labels) - len(set(labels))
    say(f"{len(asked)} queries (1 and 2 words); {full} have 15 or more matching frames")
    say()
    say("distinct true moments in a 15-hit answer (queries with >= 15 matching frames)")
    say(f"{'':22s} {'mean':>6s} {'median':>6s} {'min':>5s} {'max':>5s}")
    rows = (
        ("before", "before (15 frames)"),
        ("after", "after (15 moments)"),
        ("matching", "matching (at most)"),
    )
    for name, label in rows:
        v = distinct[name]
        say(
            f"{label:22s} {statistics.mean(v):6.1f} {statistics.median(v):6.1f} "
            f"{min(v):5d} {max(v):5d}"
        )
    say(f"frames the 15 moments hold: mean {statistics.mean(shown):.1f}, max {max(shown)}")
    say(f"moments holding frames of more than one true moment: {mixed}")
    say(f"moments that are another moment's true moment again (split apart): {split}")
    say("(matching: the true moments among all of a query's matching frames, up to 1000)")
    say()
    say(f"ms per query ({len(asked)} queries)   {HEADER}")
    say(f"{'before: search':28s} {cells(times['before'])}")
    say(f"{'after: moments':28s} {cells(times['after'])}")
    say(f"{f'search, {LIMIT * FETCH} hits (no grouping)':28s} {cells(times['wide'])}")
    ratio = statistics.median(times["after"]) / statistics.median(times["before"])
    say(f"p50 after / before: {ratio:.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=8000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    for line in machine():
        say(line)
    say(f"$ .venv/bin/python -m bench.moments --frames {args.frames} --queries {args.queries}")
    say(f"run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    say()
    sources = pools()
    threshold(sources)
    before_after(sources, args.frames, args.queries)
    say.write(RESULTS)


if __name__ == "__main__":
    main()
