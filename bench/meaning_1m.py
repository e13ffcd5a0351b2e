"""Search by meaning at 1M frames (issue 26 §5): hybrid search p99 in process beside words
alone in the same run, the meaning view's size against the store's, and the RSS of a search
process (anonymous and mapped files apart), with the view sealed and the same view kept
plain; and what choosing 256 candidates by their binary codes misses.

    .venv/bin/python -m bench.meaning_1m [--frames 1000000] [--per-class 25] [--sample 2000]

The store is ``bench.search``'s cached corpus store (built by it, 20% of it with encrypted
text), copied, with ``encrypt_text`` turned on so that the meaning view is sealed (the case
that costs most: every chunk decrypted to score its rows, every graph decrypted into
memory). The plain case is a copy of that store (hard links) whose meaning view's files
are opened and written plain, byte for byte what a plain store's writer writes (its maps
then memory-mapped). Embedding a million frames would take ~30 hours of this machine's CPU (0.11 s a
frame), so ``--sample`` frames spread over the corpus are embedded with the real model
(every passage, as the meaning writer cuts them) and their vectors reused across the
million, as issue 26 allows: the real ``MeaningWriter`` cuts each frame of the store into
its own passages (a passage seen before shares its row, as always) and gives each new
passage the normalised sum of two sample vectors picked at random (one vector a thousand
times over would be no index's real case). Batches of 32 frames, as ``import`` writes them.

Queries: the same as ``bench.search``'s (its cached query set, the same sampling: 25 a
class), through ``MemoryStore.search(limit=15)``: words alone (``by="words"``) and hybrid
(the default), sealed and plain; back to back, after a warm-up pass (which loads the model
and the view). The hybrid time includes embedding the question. Also: the meaning view's
own search, and how many of its first 10 frames (256 candidates by their codes) are those
found from 20,000 candidates (every row a question's first ten could come from, in
practice: the 4-bit rows then score both alike). Peak RSS (VmHWM, see ``peak_rss_kib``),
anonymous and mapped-file RSS at the end, of a process that runs the queries one way, each
in its own process, with its first query's time (the view read from the page cache).
Writes ``bench/results/meaning_1m.txt``.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from bench._corpus import (
    DATA,
    HEADER,
    REPO,
    Report,
    cached,
    cells,
    corpus_file,
    disk_bytes,
    load,
    machine,
    revision,
    rows,
)
from bench._stats import percentile
from query.meaning import By

RESULTS = REPO / "bench" / "results" / "meaning_1m.txt"
DAYS = 500
SEED = 1
LIMIT = 15
MORE = 20_000
ENGINES = ("words", "hybrid")
KEPT = ("sealed", "plain")

say = Report()


# -- the store -------------------------------------------------------------------------------


def sample_vectors(frames: int, sample: int) -> tuple[Path, dict[str, Any]]:
    """``sample`` frames of the corpus, every k-th, embedded with the real model (cached)."""
    from projector.embedder import MODEL_ID

    def build(folder: Path) -> dict[str, Any]:
        import numpy as np

        from projector.embedder import DIMENSIONS, embedder

        step = max(1, frames // sample)
        texts = [
            row["text"]
            for n, row in enumerate(rows(corpus_file(frames, DAYS, SEED)))
            if n % step == 0 and row.get("text")
        ][:sample]
        model = embedder()
        start = time.process_time()
        vectors, passages = [], 0
        for text in texts:
            found = model.passages(text)
            passages += len(found)
            if found:
                vectors.append(model.embed(found))
        cpu = time.process_time() - start
        np.save(folder / "vectors.npy", np.concatenate(vectors).astype(np.float32))
        return {
            "model": MODEL_ID,
            "dimensions": DIMENSIONS,
            "frames": len(texts),
            "passages": passages,
            "cpu_s": round(cpu, 1),
        }

    return cached(f"meaning-sample-n{frames}-k{sample}-{MODEL_ID}", build)


class Reused:
    """The model's own passages; for their vectors, sums of two of the sample's."""

    def __init__(self, model: Any, pool: Any) -> None:
        import numpy as np

        self.model = model
        self.pool = pool
        self.rng = np.random.default_rng(SEED)

    def passages(self, text: str) -> Any:
        return self.model.passages(text)

    def embed(self, passages: list[Any]) -> Any:
        import numpy as np

        picks = self.rng.integers(len(self.pool), size=(len(passages), 2))
        vectors = self.pool[picks[:, 0]] + self.pool[picks[:, 1]]
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors


def meaning_store(frames: int, sample: int) -> tuple[Path, dict[str, Any]]:
    from bench.search import search_store

    source, _ = search_store(frames)
    folder, sampled = sample_vectors(frames, sample)

    def build(home: Path) -> dict[str, Any]:
        import numpy as np

        from backscroll.store import MemoryStore
        from projector.embedder import Embedder, embedder

        say(f"copying the {frames:,}-frame store and embedding it with reused vectors")
        shutil.copytree(source, home, dirs_exist_ok=True, symlinks=True)
        (home / "build.json").unlink()
        store = MemoryStore(home, write=True)
        store.set_config(encrypt_text=True)
        reused = cast(Embedder, Reused(embedder(), np.load(folder / "vectors.npy")))
        start = time.perf_counter()
        cpu = time.process_time()

        def progress(done: int, total: int) -> None:
            if done % 50_000 < 32:
                took = time.perf_counter() - start
                say(f"  {done:,} of {total:,} frames in {took:,.0f} s (load {load()})")

        with store.projector() as projector:
            done = projector.embed_all(reused, progress)
        return {
            "frames": done,
            "seconds": round(time.perf_counter() - start, 1),
            "cpu_s": round(time.process_time() - cpu, 1),
            "load": load(),
            "sample": sampled,
            "code": revision(),
        }

    return cached(store_name(frames, sample), build)


def store_name(frames: int, sample: int) -> str:
    from projector.embedder import MODEL_ID
    from projector.vectors import FORMAT

    return f"meaning-n{frames}-k{sample}-{MODEL_ID}-f{FORMAT}"


def plain_store(home: Path) -> Path:
    """``home`` (hard links) with its meaning view's files opened and written plain."""
    from backscroll.store import MemoryStore
    from projector._codes import PLAIN, map_file, open_map, view_file

    def build(target: Path) -> dict[str, Any]:
        say("linking the store and writing its meaning view plain")
        subprocess.run(["cp", "-al", f"{home}/.", str(target)], check=True)
        (target / "build.json").unlink()
        view = target / "views" / "meaning"
        cipher = MemoryStore(home).crypto
        for path in sorted(view.glob("*.vec")):
            _, body = view_file(view, path.name, cipher)
            path.unlink()  # a hard link: the sealed store's file stays
            path.write_bytes(PLAIN + body)
        for path in sorted(view.glob("*.map")):
            found = open_map(view, path.name, cipher)
            path.unlink()
            path.write_bytes(map_file(found, path.name, None))
        return {"from": home.name}

    return cached(f"{home.name}-plain", build)[0]


# -- measuring -------------------------------------------------------------------------------


def chosen_queries(frames: int, per_class: int) -> list[Any]:
    """``bench.search``'s queries at this size, sampled as it samples them (its store is
    named, not opened: a process measured for its RSS opens nothing else)."""
    from bench.search import query_set

    every = query_set(frames, DATA / f"search-n{frames}-d{DAYS}-s{SEED}")
    rng = random.Random(SEED)
    chosen: list[Any] = []
    for label in dict.fromkeys(q.label for q in every):
        group = [q for q in every if q.label == label]
        chosen += rng.sample(group, min(per_class, len(group)))
    return chosen


def engine(home: Path, how: str) -> Any:
    from backscroll.store import MemoryStore

    store = MemoryStore(home)

    def run(q: Any) -> int:
        start = datetime.fromtimestamp(q.start, UTC) if q.start is not None else None
        end = datetime.fromtimestamp(q.end, UTC) if q.end is not None else None
        by: By = "words" if how == "words" else "both"
        found = store.search(q.text, start=start, end=end, app=q.app, limit=LIMIT, by=by)
        return len(found)

    return run


def latencies(homes: dict[str, Path], queries: list[Any]) -> dict[str, list[float]]:
    runs = {f"{how}, {kept}": engine(home, how) for kept, home in homes.items() for how in ENGINES}
    start = time.perf_counter()
    for q in queries[::10]:  # warm-up: the model and every month of the view loaded
        for run in runs.values():
            run(q)
    say(f"warm-up ({len(queries[::10])} queries each way): {time.perf_counter() - start:.1f} s")
    out: dict[str, list[float]] = {how: [] for how in runs}
    order = list(queries)
    random.Random(SEED).shuffle(order)
    for i, q in enumerate(order):
        for how, run in runs.items():
            t0 = time.perf_counter()
            run(q)
            out[how].append((time.perf_counter() - t0) * 1e3)
        if i and i % 100 == 0:
            print(f"  {i} of {len(order)} queries (load {load()})", flush=True)
    return out


def codes_against_more(home: Path, queries: list[Any]) -> None:
    """The view's own search over every month: its time, and its first 10 frames against
    those from 20,000 candidates."""
    from backscroll.store import MemoryStore
    from projector.embedder import embedder

    store = MemoryStore(home)
    meaning = store._meaning(store.crypto)
    assert meaning is not None
    view = meaning.view
    model = embedder()
    times: list[float] = []
    found, asked = 0, 0
    for q in queries:
        vector = model.query(q.text)
        t0 = time.perf_counter()
        chosen = view.search(vector, None, None, None, None)
        times.append((time.perf_counter() - t0) * 1e3)
        more = {h.frame_id for h in view.search(vector, None, None, None, None, candidates=MORE)}
        found += len(more & {h.frame_id for h in chosen[:10]})
        asked += min(10, len(more))
    say(f"{'the view alone, every month':34s} {HEADER}")
    say(f"{'  256 candidates by their codes':34s} {cells(times)}")
    say(
        f"of the first 10 frames from {MORE:,} candidates, 256 found {found:,} of {asked:,}: "
        f"{100 * found / max(asked, 1):.1f}%"
    )


def status_kib(field: str) -> int:
    """A field of /proc/self/status, in KiB. The peak RSS is VmHWM, not ``resource.getrusage``:
    a process forked from this bench's own (GBs, with the view loaded) starts with its
    parent's ru_maxrss, which exec keeps (measured: 4.8 GB before the child had opened
    anything); VmHWM is exec's new address space's own. It counts the pages of mapped files
    (Tantivy's index) the process has touched, which the kernel can take back: RssAnon and
    RssFile say how much of the RSS is which, at the end."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def peak_rss_kib() -> int:
    return status_kib("VmHWM")


def rss_run(home: Path, how: str, frames: int, per_class: int) -> None:
    """In a process of its own: the queries one way; its first query and peak RSS."""
    queries = chosen_queries(frames, per_class)
    base = peak_rss_kib()
    run = engine(home, how)
    t0 = time.perf_counter()
    run(queries[0])
    first = (time.perf_counter() - t0) * 1e3
    times = []
    for q in queries[1:]:
        t0 = time.perf_counter()
        run(q)
        times.append((time.perf_counter() - t0) * 1e3)
    peak = peak_rss_kib()
    anon, mapped = status_kib("RssAnon"), status_kib("RssFile")
    p99 = percentile(times, 0.99)
    print(
        json.dumps(
            {"first_ms": first, "p99": p99, "rss": peak, "at": base, "anon": anon, "file": mapped}
        )
    )


def rss(homes: dict[str, Path], frames: int, per_class: int) -> None:
    say(f"{'a process, one way':18s} {'first query':>12s} {'p99 after':>10s} {'peak RSS':>10s}")
    for kept, home in homes.items():
        for how in ENGINES if kept == "sealed" else ENGINES[1:]:
            rss_one(home, how, kept, frames, per_class)


def rss_one(home: Path, how: str, kept: str, frames: int, per_class: int) -> None:
    command = [sys.executable, "-m", "bench.meaning_1m", "--frames", str(frames)]
    command += ["--per-class", str(per_class), "--rss", how, "--home", str(home)]
    done = subprocess.run(command, check=True, capture_output=True, text=True, cwd=REPO)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    say(
        f"{how + ', ' + kept:18s} {got['first_ms']:10.0f} ms {got['p99']:7.1f} ms "
        f"{got['rss'] / 1024:7.0f} MiB  (before the store opened: {got['at'] / 1024:.0f} "
        f"MiB; at the end anonymous {got['anon'] / 1024:.0f} MiB, mapped files "
        f"{got['file'] / 1024:.0f} MiB)"
    )


def sizes(home: Path) -> None:
    from projector.vectors import Manifest

    view = home / "views" / "meaning"
    meaning = disk_bytes(view)
    total = disk_bytes(home)
    rest = total - meaning
    maps = sum(p.stat().st_size for p in view.glob("*.map"))
    chunks = sum(p.stat().st_size for p in view.glob("*.vec"))
    manifest = Manifest.load(view)
    rows_ = sum(manifest.rows.values())
    listed = (view / "manifest.json").stat().st_size
    say(
        f"the store without the meaning view: {rest / 1e6:,.0f} MB; the meaning view "
        f"{meaning / 1e6:,.0f} MB = +{100 * meaning / rest:.1f}% (chunks {chunks / 1e6:,.0f} MB, "
        f"maps {maps / 1e6:,.0f} MB, manifest {listed / 1e6:.1f} MB)"
    )
    say(
        f"{manifest.frames:,} frames, {rows_:,} rows ({rows_ / max(manifest.frames, 1):.2f} a "
        f"frame), {len(manifest.rows):,} chunks, {len(manifest.maps)} maps over "
        f"{len(manifest.months)} months ({sum(m.rows for m in manifest.maps.values()):,} rows)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--per-class", type=int, default=25)
    parser.add_argument("--sample", type=int, default=2000)
    parser.add_argument("--rss", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--home", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss:
        rss_run(args.home, args.rss, args.frames, args.per_class)
        return
    for line in machine():
        say(line)
    say(
        f"$ .venv/bin/python -m bench.meaning_1m --frames {args.frames} "
        f"--per-class {args.per_class} --sample {args.sample}"
    )
    say(f"run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    say()
    home, info = meaning_store(args.frames, args.sample)
    homes = {"sealed": home, "plain": plain_store(home)}
    sample = info["sample"]
    say(
        f"REUSED VECTORS: {sample['frames']:,} corpus frames embedded with {sample['model']} "
        f"({sample['passages']:,} passages, {sample['dimensions']} dimensions, "
        f"{sample['cpu_s']} s of CPU: {sample['cpu_s'] / sample['frames']:.3f} s a frame); "
        "each passage of the million the normalised sum of two of them"
    )
    say(
        f"meaning view built {info['built']}: {info['frames']:,} frames in "
        f"{info['seconds']:,.0f} s ({info['cpu_s']:,.0f} s CPU; the model's work not in it), "
        f"load then {info['load']}; code: {info['code']}"
    )
    for kept, where in homes.items():
        say(f"{kept}:")
        sizes(where)
    queries = chosen_queries(args.frames, args.per_class)
    say(f"{len(queries)} queries ({args.per_class} a class of bench.search's), limit {LIMIT}")
    say(f"load before the queries: {load()}")
    say()
    times = latencies(homes, queries)
    say(f"{'ms a query, in process':34s} {HEADER}")
    for how, took in times.items():
        say(f"{how:34s} {cells(took)}")
    p99 = {how: percentile(took, 0.99) for how, took in times.items()}
    say(
        f"hybrid p99 {p99['hybrid, sealed']:.1f} ms sealed, {p99['hybrid, plain']:.1f} ms "
        f"plain (target <= 150 ms); words alone {p99['words, sealed']:.1f} ms in the same run"
    )
    say(f"load after the queries: {load()}")
    say()
    codes_against_more(home, queries[::5])
    say(f"load: {load()}")
    say()
    rss(homes, args.frames, args.per_class)
    say(f"this process's peak RSS (every way, both stores): {peak_rss_kib() / 1024:.0f} MiB")
    say(f"load at end: {load()}")
    say(f"code at end: {revision()}")
    say.write(RESULTS, section=f"{args.frames:,} frames")


if __name__ == "__main__":
    main()
