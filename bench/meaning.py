"""Search by meaning, measured (issue 26 §5): the question set before and after, the model's
load time, embedding throughput, what the view costs on disk and a searching process in
memory, and the scores ``CUTOFF`` is set by.

    .venv/bin/python -m bench.meaning                 # ~3,000 corpus frames (~5 min)
    .venv/bin/python -m bench.meaning --frames 500    # a quick trial
    .venv/bin/python -m bench.meaning --passage-words 80   # another passage length, tried
    .venv/bin/python -m bench.meaning --center -1          # questions centred, tried

The model is ``projector/embedder.py``'s (Universal Sentence Encoder Multilingual v3, int8).

A fresh store in a temporary folder: ``--frames`` frames of the corpus tool's cached corpus
(``bench/_corpus.py``: the 130,000-frame, 500-day corpus; every k-th frame of its last 30
days), and the hand-written screens of ``bench/meaning_set.json`` (mail, bookings, bills,
tickets, chats, code reviews, documents; some in German, French and Spanish) placed among
them ``hours_ago`` before the corpus's last frame. Then its 60 questions, through
``MemoryStore.moments`` (what ``backscroll search`` calls), top 5 moments:

    literal     words on the screen: the target at rank 1
    paraphrase  no content word of the screen's text, title or app (checked here): top 5
    time_app    an app filter and a window of time (half in words not on the screen): top 5,
                and no frame of any answer outside the window or the app

"before" is ``by="words"`` (today's search: exact, else one letter off, else near misses),
"after" the hybrid default; "meaning alone" is ``by="meaning"``, for comparison.

Scores by meaning alone, over the whole store without the cut-off: each paraphrase's own
screen against the best other frame, and questions about nothing in the store (``OFF_TOPIC``,
written here, not in the set) against their best frame: a cut-off between the two keeps the
paraphrases and turns the off-topic questions away. Writes ``bench/results/meaning.txt``
(a trial with ``--passage-words`` or ``--center`` prints only).

``--center CUTOFF`` tries questions centred on the store's mean row (``center``): the
questions are asked as they are, then centred, with that cut-off for the centred scores
(-1: none). The model's vectors share a common direction (the mean row's norm is ~0.56, of
unit rows), so a plain cosine favours the frames that lie near every question; centring
the question ranks a frame by how much nearer the question it is than the average frame.
Its run is ``bench/results/meaning.txt``'s "candidates tried".
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench._corpus import (
    REPO,
    RETENTION_DAYS,
    STORAGE_CAP_MB,
    Report,
    cells,
    corpus_file,
    disk_bytes,
    load,
    machine,
    revision,
    rows,
)

SET = Path(__file__).with_name("meaning_set.json")
RESULTS = REPO / "bench" / "results" / "meaning.txt"
TOP = 5
TARGETS = {"literal": (20, 1), "paraphrase": (18, TOP), "time_app": (20, TOP)}
"""Per class: how many of its 20 questions must find their screen, and within which rank."""
LANGUAGES = {
    "freight-invoice": "de",
    "electricity-bill": "de",
    "dentist": "de",
    "tax-letter": "de",
    "car-service": "de",
    "parking-fine": "de",
    "sncf-train": "fr",
    "french-rent": "fr",
    "french-newsletter": "fr",
    "spanish-insurance": "es",
    "spanish-doctor": "es",
    "spanish-flat": "es",
}
# Words a paraphrase may share with its screen: they carry no content.
STOPWORDS = set(
    [
        "a",
        "an",
        "the",
        "my",
        "me",
        "i",
        "we",
        "our",
        "you",
        "your",
        "to",
        "for",
        "of",
        "in",
        "on",
        "at",
        "by",
        "from",
        "with",
        "and",
        "or",
        "that",
        "this",
        "these",
        "those",
        "what",
        "which",
        "who",
        "when",
        "where",
        "how",
        "is",
        "was",
        "were",
        "be",
        "been",
        "are",
        "am",
        "do",
        "did",
        "does",
        "it",
        "its",
        "as",
        "about",
        "into",
        "up",
        "down",
        "out",
        "over",
        "after",
        "before",
        "during",
        "because",
        "while",
        "so",
        "than",
        "then",
        "there",
        "their",
        "them",
        "they",
        "he",
        "she",
        "his",
        "her",
        "us",
        "got",
        "get",
        "gets",
        "getting",
    ]
)
# Questions about nothing the store holds (the corpus is work on a computer; the screens are
# mail, bills, bookings): what the best frame scores for them is what the cut-off must stay
# above.
OFF_TOPIC = [
    "a recipe for lemon cake with almonds",
    "how to teach a puppy to sit",
    "football results from the weekend",
    "a knitting pattern for a wool scarf",
    "the best time of year to plant tulip bulbs",
    "symptoms of a sprained ankle",
    "which whales live in the arctic ocean",
    "how to tune a violin",
]
MEMORY = """
import json, sys, time
import onnxruntime

ARENA = sys.argv[1] == "on"


# Embedder.load's options, with the memory arena as this run asks, whatever it sets.
class Asked(onnxruntime.SessionOptions):
    def __init__(self):
        super().__init__()
        self.enable_cpu_mem_arena = ARENA

    def __setattr__(self, name, value):
        super().__setattr__(name, ARENA if name == "enable_cpu_mem_arena" else value)


onnxruntime.SessionOptions = Asked
from pathlib import Path
from backscroll.store import MemoryStore
from projector.embedder import embedder

def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 1e6

job = json.loads(Path(sys.argv[3]).read_text())
with MemoryStore(Path(sys.argv[2])) as store:
    for q in job["questions"]:
        store.moments(q, limit=5, by="both")
searched = rss()
e = embedder()
t = time.process_time()
for text in job["texts"]:
    e.embed(e.passages(text))
cpu = time.process_time() - t
# VmHWM, not ru_maxrss: that one keeps the benchmark's own peak, from before the exec.
embedded = rss()
status = Path("/proc/self/status").read_text().split("VmHWM:")[1]
# The kernel updates VmHWM lazily: it can trail the resident size just read.
peak = max(int(status.split()[0]) / 1e3, embedded)
print(json.dumps({"search": searched, "embedded": embedded, "peak": peak, "cpu": cpu}))
"""
MODEL_LOAD = (
    "import time; t = time.perf_counter(); from projector.embedder import Embedder; "
    "Embedder.load(); print(time.perf_counter() - t)"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=3000)
    parser.add_argument(
        "--passage-words", type=int, help="try passages of this many words (overlap: an eighth)"
    )
    parser.add_argument(
        "--center",
        type=float,
        metavar="CUTOFF",
        help="try questions centred on the store's mean row, with this cut-off",
    )
    args = parser.parse_args()
    trial = bool(args.passage_words or args.center is not None)
    if args.passage_words:
        from projector import embedder

        embedder.PASSAGE_WORDS, embedder.OVERLAP_WORDS = args.passage_words, args.passage_words // 8
    report = Report()
    for line in machine():
        report(line)
    report(f"code: {revision()}")
    report(f"load before: {load()}")
    qset = json.loads(SET.read_text())
    check_paraphrases(qset, report)
    with tempfile.TemporaryDirectory(prefix="bench-meaning-") as tmp:
        home = Path(tmp) / "home"
        end, texts = build(home, qset, args.frames, report)
        embed(home, report)
        if args.center is not None:
            ask(home, qset, end, report)  # the baseline, in the same run
            center(home, args.center, report)
        ask(home, qset, end, report)
        scores(home, qset, report)
        if not trial:
            two_threads(texts, report)
            memory(home, qset, texts, report)
    if not trial:
        model_load(report)
    report(f"load after: {load()}")
    if not trial:
        report.write(RESULTS)


def check_paraphrases(qset: dict[str, Any], report: Report) -> None:
    """A paraphrase shares no content word with its screen, or it is not one."""
    from base.tokens import words

    screens = {s["id"]: s for s in qset["screens"]}
    for q in qset["questions"]:
        if q["kind"] != "paraphrase":
            continue
        s = screens[q["target"]]
        shared = (set(words(q["query"])) - STOPWORDS) & set(
            words(f"{s['text']} {s['title']} {s['app']}")
        )
        if shared:
            raise SystemExit(f"paraphrase {q['query']!r} shares {sorted(shared)} with its screen")
    report("paraphrases: none shares a content word with its screen (checked)")


def build(
    home: Path, qset: dict[str, Any], frames: int, report: Report
) -> tuple[datetime, list[str]]:
    """The store; returns the corpus's last frame's time, the benchmark's "now", and the
    frames' texts."""
    from backscroll.importer import import_frames
    from backscroll.store import MemoryStore

    corpus = list(rows(corpus_file(130_000, 500, 1)))
    last = corpus[-1]["ts"]
    recent = [r for r in corpus if r["ts"] >= last - 30 * 86400]
    step = max(1, len(recent) // frames)
    picked = recent[::step][:frames]
    screens = [
        {
            "ts": last - s["hours_ago"] * 3600,
            "app": s["app"],
            "title": s["title"],
            "text": s["text"],
            "text_source": "ax",
        }
        for s in qset["screens"]
    ]
    lines = sorted(
        (
            {k: r[k] for k in ("ts", "app", "title", "text", "text_source") if k in r}
            for r in [*picked, *screens]
        ),
        key=lambda r: r["ts"],
    )
    store = MemoryStore(home, write=True)
    store.set_config(retention_days=RETENTION_DAYS, storage_cap_mb=STORAGE_CAP_MB)
    import_frames(store, [json.dumps(r) for r in lines])
    report(
        f"store: {len(picked):,} corpus frames (every {step}th of its last 30 days) and "
        f"{len(screens)} hand-written screens; {disk_bytes(home) / 1e6:.1f} MB"
    )
    return datetime.fromtimestamp(last).astimezone(), [r["text"] for r in lines]


def embed(home: Path, report: Report) -> None:
    from backscroll.store import MemoryStore
    from projector import embedder as model
    from projector.vectors import Manifest, read_chunk

    before = disk_bytes(home)
    model.embedder()  # loaded before the clock starts: its load is measured on its own below
    with MemoryStore(home, write=True) as store:
        cpu0 = resource.getrusage(resource.RUSAGE_SELF)
        wall0 = time.perf_counter()
        done = store.embed()
        wall = time.perf_counter() - wall0
        cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    root = home / "views" / "meaning"
    view = disk_bytes(root)
    manifest = Manifest.load(root)
    chunks = [read_chunk(root, n, None) for names in manifest.months.values() for n in names]
    rows = sum(len(c.keys) for c in chunks)
    report("")
    report(
        f"embedding (one thread, as the daemon's; passages of {model.PASSAGE_WORDS} words "
        f"overlapping by {model.OVERLAP_WORDS}; the corpus's frames average ~200 words)"
    )
    report(f"  frames embedded:      {done:,} in {wall:.1f} s wall, {cpu:.1f} s CPU")
    report(f"  passages embedded:    {rows:,} ({rows / max(done, 1):.2f} a frame)")
    report(f"  throughput:           {done / cpu:.1f} frames/s per core of CPU")
    report(f"                        {done / wall:.1f} frames/s wall, on this shared machine")
    report("  target:               >= 10 distinct frames/s on the 2-core machine (5/core)")
    report(
        f"  store growth:         {view / 1e6:.2f} MB of meaning view on {before / 1e6:.1f} MB "
        f"= {100 * view / before:.1f}% (target <= 30%)"
    )


def center(home: Path, cutoff: float, report: Report) -> None:
    """From here on, questions centred on the store's mean row: ``q - mean``, normalised, scored
    against the rows as they are (a query-side change: the codes and rows stay as written)."""
    import numpy as np

    import query.meaning
    from projector import embedder as model
    from projector.vectors import Manifest, read_chunk

    root = home / "views" / "meaning"
    manifest = Manifest.load(root)
    chunks = [read_chunk(root, n, None) for names in manifest.months.values() for n in names]
    rows = np.concatenate([np.frombuffer(c.vectors, np.int8) for c in chunks])
    mean = rows.reshape(-1, model.DIMENSIONS).astype(np.float32).mean(axis=0) / 127
    plain = model.Embedder.query

    def centred(self: model.Embedder, text: str) -> np.ndarray:
        vector = plain(self, text) - mean
        out: np.ndarray = vector / max(float(np.linalg.norm(vector)), 1e-12)
        return out

    model.Embedder.query = centred  # type: ignore[method-assign]
    query.meaning.CUTOFF = cutoff  # type: ignore[attr-defined]
    report(f"questions centred on the mean row (norm {np.linalg.norm(mean):.3f}); cut-off {cutoff}")


def two_threads(texts: list[str], report: Report) -> None:
    """The model alone over the frames' texts: one thread, then two (each its half), in the
    same run; ONNX Runtime lets go of the GIL while it runs."""
    from concurrent.futures import ThreadPoolExecutor

    from projector.embedder import embedder

    e = embedder()

    def work(part: list[str]) -> None:
        for text in part:
            e.embed(e.passages(text))

    report("")
    report(f"the model alone over the {len(texts):,} frames' texts (passages cut and embedded)")
    t = time.perf_counter()
    work(texts)
    one = time.perf_counter() - t
    report(f"  one thread:           {len(texts) / one:.1f} frames/s wall")
    with ThreadPoolExecutor(2) as pool:
        t = time.perf_counter()
        list(pool.map(work, [texts[0::2], texts[1::2]]))
        two = time.perf_counter() - t
    report(f"  two threads:          {len(texts) / two:.1f} frames/s wall ({one / two:.2f}x)")
    report(f"  load average now:     {load()} (2 cores, shared)")


def scores(home: Path, qset: dict[str, Any], report: Report) -> None:
    """What CUTOFF is set by: meaning alone, every frame scored (no cut-off)."""
    import statistics

    from backscroll.store import MemoryStore
    from projector.embedder import embedder
    from projector.vectors import CANDIDATES, CUTOFF, MeaningView

    e = embedder()
    view = MeaningView(home / "views" / "meaning")
    frame_of: dict[str, int] = {}
    with MemoryStore(home) as store:
        for hit in store.timeline(limit=10_000):
            for s in qset["screens"]:
                if hit.title == s["title"] and hit.app == s["app"]:
                    frame_of[s["id"]] = hit.id
    own, other, kept = [], [], []
    beyond = 0  # own screens not among the passages the codes chose (projector.vectors)
    for q in qset["questions"]:
        if q["kind"] != "paraphrase":
            continue
        found = view.search(e.query(q["query"]), None, None, None, None, cutoff=-1.0)
        target = frame_of[q["target"]]
        mine = [h.score for h in found if h.frame_id == target]
        if mine:
            own.append(mine[0])
        else:
            beyond += 1
        other.append(next(h.score for h in found if h.frame_id != target))
        kept.append(sum(h.score >= CUTOFF for h in found))
    off, off_kept = [], []
    for q in OFF_TOPIC:
        found = view.search(e.query(q), None, None, None, None, cutoff=-1.0)
        off.append(found[0].score)
        off_kept.append(sum(h.score >= CUTOFF for h in found))

    def spread(values: Sequence[float]) -> str:
        return f"median {statistics.median(values):.3g} ({min(values):.3g}-{max(values):.3g})"

    report("")
    report("scores by meaning alone, every frame (what CUTOFF is set by)")
    report(f"  paraphrases, their own screen:      {spread(own)}")
    report(f"  paraphrases, the best other frame:  {spread(other)}")
    report(f"  off-topic questions, best frame:    {spread(off)}")
    report("  own screens by score:  " + " ".join(f"{v:.2f}" for v in sorted(own)))
    report(f"  own screens not among the {CANDIDATES} passages the codes chose: {beyond}")
    report("  off-topic by score:    " + " ".join(f"{v:.2f}" for v in sorted(off)))
    report(
        f"  frames scoring CUTOFF ({CUTOFF}) or more, of the {len(found):,} the codes chose: "
        f"a paraphrase "
        f"{spread(kept)}, an off-topic question {spread(off_kept)}"
    )


def ask(home: Path, qset: dict[str, Any], end: datetime, report: Report) -> None:
    from backscroll.store import MemoryStore
    from query._queries import folded

    report("")
    report(f"questions: top {TOP} moments; rank of the moment holding the target screen")
    by_screen: dict[str, int] = {}
    with MemoryStore(home) as store:
        for hit in store.timeline(limit=10_000):
            for s in qset["screens"]:
                if hit.title == s["title"] and hit.app == s["app"]:
                    by_screen[s["id"]] = hit.id
        found: dict[str, dict[str, list[int | None]]] = {}
        outside = {"words": 0, "both": 0, "meaning": 0}
        times: dict[str, list[float]] = {"words": [], "both": [], "meaning": []}
        misses: list[str] = []
        for q in qset["questions"]:
            start = end - timedelta(hours=q["since_h"]) if "since_h" in q else None
            stop = end - timedelta(hours=q["until_h"]) if "until_h" in q else None
            if stop is not None and q["until_h"] == 0:
                stop = end + timedelta(seconds=1)
            app = q.get("app")
            for by in ("words", "both", "meaning"):
                t = time.perf_counter()
                moments = store.moments(
                    q["query"], start=start, end=stop, app=app, limit=TOP, by=by
                )
                times[by].append((time.perf_counter() - t) * 1000)
                rank = next(
                    (i for i, m in enumerate(moments, 1) if by_screen[q["target"]] in m.frame_ids),
                    None,
                )
                found.setdefault(q["kind"], {}).setdefault(by, []).append(rank)
                for m in moments:
                    for f in m.frames:
                        late = stop is not None and f.when >= stop
                        early = start is not None and f.when < start
                        place = (f.app, f.title, f.url)
                        wrong = app and not any(folded(app) in folded(p) for p in place)
                        outside[by] += bool(late or early or wrong)
                if by == "both":
                    best_ok = rank is not None and rank <= TARGETS[q["kind"]][1]
                    if not best_ok:
                        misses.append(f"  {q['kind']:10s} {q['query']!r}: rank {rank}")
    header = f"  {'class':11s} {'target':>10s} {'before':>8s} {'after':>8s} {'meaning':>8s}"
    report(header + "   (before: words only, today's search; after: hybrid)")
    for kind, (need, within) in TARGETS.items():
        cols = []
        for by in ("words", "both", "meaning"):
            ranks = found[kind][by]
            hits = sum(r is not None and r <= within for r in ranks)
            cols.append(f"{hits:>5d}/{len(ranks)}")
        where = "rank 1" if within == 1 else f"top {within}"
        report(
            f"  {kind:11s} {f'{need}/20 {where}':>10s} {cols[0]:>8s} {cols[1]:>8s} {cols[2]:>8s}"
        )
    for kind in TARGETS:
        at1 = [sum(r == 1 for r in found[kind][by]) for by in ("words", "both", "meaning")]
        report(f"  {kind:11s} {'(rank 1)':>10s} {at1[0]:>8d} {at1[1]:>8d} {at1[2]:>8d}")
    report(
        f"  frames outside the window or app asked for, in any answer: words {outside['words']}, "
        f"hybrid {outside['both']}, meaning {outside['meaning']} (target 0)"
    )
    report("  misses of the hybrid search:" if misses else "  no miss of the hybrid search")
    for line in misses:
        report(line)
    report("")
    report("languages (paraphrases of German, French and Spanish screens, hybrid rank):")
    questions = [q for q in qset["questions"] if q["kind"] == "paraphrase"]
    for q, rank in zip(questions, found["paraphrase"]["both"], strict=True):
        if q["target"] in LANGUAGES:
            report(f"  {LANGUAGES[q['target']]}  {q['query']!r}: rank {rank}")
    report("")
    report("search time in process over this store, ms (60 questions each)")
    report(f"  {'':14s}{cells([])[:0]}count       p50       p90       p99       max")
    for by, label in (("words", "words"), ("both", "hybrid"), ("meaning", "meaning")):
        report(f"  {label:12s}{cells(times[by])}")


def memory(home: Path, qset: dict[str, Any], texts: list[str], report: Report) -> None:
    """A fresh process that runs the 60 questions' hybrid searches, then embeds 300 frames,
    with ONNX Runtime's memory arena (as Embedder.load makes the session) and without."""
    job = home.parent / "memory.json"
    questions = [q["query"] for q in qset["questions"]]
    job.write_text(json.dumps({"questions": questions, "texts": texts[:300]}))
    report("")
    report("memory of a process that searches (60 hybrid searches), then embeds 300 frames")
    for arena in ("on", "off"):
        done = subprocess.run(
            [sys.executable, "-c", MEMORY, arena, str(home), str(job)],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=os.environ,
            check=True,
        )
        got = json.loads(done.stdout)
        report(
            f"  arena {arena:3s}  RSS after the searches {got['search']:.0f} MB, after embedding "
            f"{got['embedded']:.0f} MB (peak {got['peak']:.0f} MB); embedding "
            f"{got['cpu'] * 1000 / 300:.1f} ms CPU a frame"
        )


def model_load(report: Report) -> None:
    runs = []
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, "-c", MODEL_LOAD],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=os.environ,
            check=True,
        )
        runs.append(float(done.stdout))
    runs.sort()
    report("")
    report(
        f"model load (a fresh process: imports, hash check, session): median {runs[1]:.2f} s "
        f"of {', '.join(f'{r:.2f}' for r in runs)} (target <= 1 s)"
    )


if __name__ == "__main__":
    main()
