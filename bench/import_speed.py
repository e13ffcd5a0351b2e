"""Import speed: ``backscroll import`` of real text, plain and encrypted, beside bare Tantivy.

    cd /work/main && .venv/bin/python -m bench.import_speed [--frames 20000] [--days 30]
        [--rounds 3] [--baseline REV]

(about 4 minutes at the defaults on an idle machine; in a git worktree, which has no
``../shared`` beside it, set ``BACKSCROLL_CORPUS_TOOL`` to ``screen_corpus.py``.)

``--frames`` frames of real screen text (``../shared/corpus/screen_corpus.py``, seed 1,
cached under /work/bench-data by ``bench/_corpus.py``) are imported with ``import_frames``
(default config, so redaction runs) into a new store, once with ``encrypt_text`` off and once
on, each timed from the call until it returns (appended, fsynced, the views caught up). The
ceiling, in the same run: bare tantivy-py indexing the same rows as the search view's
documents (built before its clock starts) with our schema and analyzer, one writer
(``WRITER_HEAP``, ``WRITER_THREADS``), one commit at the end. The code of ``--baseline``
(default: the commit this work started from) imports the same corpus in the same rounds, in a
temporary git worktree. Each run is a process of its own (``bench/_import_worker.py``); the
order of a round's runs rotates, so a load that rises or falls favours none. The median round
of each is reported, with the median of each round's ratio to its own bare run, in wall time
and in CPU time (every thread's): on a machine shared with other work the wall-time ratio
moves with the load, as bare Tantivy's two threads compete for the cores and the import's
one thread less so. Target (issue 26 §5): a words-only import at >= 0.3 of bare Tantivy's
rate, plain and encrypted.

Writes ``bench/results/import_speed.txt``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from bench._checkout import checkout
from bench._corpus import REPO, Report, corpus_file, load, machine

RESULTS = REPO / "bench" / "results" / "import_speed.txt"
WORKER = Path(__file__).with_name("_import_worker.py")
BASELINE = "89ed17f"
"""The commit this work started from: its import is measured beside this tree's."""
TARGET = 0.3
SEED = 1

say = Report()


def run(kind: str, code: Path, corpus: Path) -> dict[str, float]:
    """One timed run of ``kind`` with the library of ``code``, in a process of its own."""
    with tempfile.TemporaryDirectory(prefix="bench-import-") as folder:
        env = {**os.environ, "PYTHONPATH": str(code), "BACKSCROLL_HOME": f"{folder}/home"}
        done = subprocess.run(
            [sys.executable, "-P", str(WORKER), kind, str(corpus), f"{folder}/run"],
            env=env,
            cwd=code,
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode:
        raise SystemExit(f"{kind} run of {code} failed:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=20_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", default=BASELINE, help="a git revision; '' for none")
    args = parser.parse_args()

    corpus = corpus_file(args.frames, args.days, SEED)
    sizes = [len(json.loads(line)["text"]) for line in corpus.open(encoding="utf-8")]
    say("$ python -m bench.import_speed " + " ".join(sys.argv[1:]))
    for line in machine():
        say(line)
    say(
        f"corpus: {len(sizes):,} frames over {args.days} days (screen_corpus.py, seed {SEED}), "
        f"text {statistics.fmean(sizes):,.0f} characters on average (median "
        f"{statistics.median(sizes):,.0f})"
    )
    with ExitStack() as stack:
        codes = {"this tree": REPO}
        if args.baseline:
            codes[f"baseline {args.baseline}"] = stack.enter_context(checkout(args.baseline))
        kinds = [("bare", "bare tantivy-py (the ceiling)", REPO)]
        for name, code in codes.items():
            kinds += [
                ("plain", f"import, plain: {name}", code),
                ("encrypted", f"import, encrypted: {name}", code),
            ]
        measured: dict[str, list[dict[str, float]]] = {label: [] for _, label, _ in kinds}
        bare_label = kinds[0][1]
        for r in range(args.rounds):
            order = kinds[r % len(kinds) :] + kinds[: r % len(kinds)]
            for kind, label, code in order:
                measured[label].append(run(kind, code, corpus))
            bare = measured[bare_label][-1]
            say(
                f"  round {r + 1}: "
                + "; ".join(
                    f"{label.removeprefix('import, ')} {x[-1]['frames'] / x[-1]['wall']:,.0f}/s"
                    + ("" if label == bare_label else f" ({bare['wall'] / x[-1]['wall']:.2f})")
                    for label, x in measured.items()
                )
                + f"; load {load()}"
            )
    say()
    bare_runs = measured[bare_label]
    say(
        f"{'median of ' + str(args.rounds) + ' rounds':44s} {'frames/s':>9s} {'µs/frame':>9s} "
        f"{'CPU µs':>7s}   of bare: wall (rounds), CPU"
    )
    ratios: dict[str, tuple[float, float]] = {}
    for _, label, _ in kinds:
        runs = measured[label]
        mid = sorted(runs, key=lambda x: x["wall"])[len(runs) // 2]
        frames = mid["frames"]
        line = (
            f"{label:44s} {frames / mid['wall']:9,.0f} {mid['wall'] / frames * 1e6:9.1f} "
            f"{mid['cpu'] / frames * 1e6:7.1f}"
        )
        if label != bare_label:
            # Each round's ratio: its runs ran in the same minute, under the same load.
            wall = sorted(b["wall"] / x["wall"] for b, x in zip(bare_runs, runs, strict=True))
            cpu = statistics.median(
                b["cpu"] / x["cpu"] for b, x in zip(bare_runs, runs, strict=True)
            )
            ratios[label] = (statistics.median(wall), cpu)
            line += f"   {ratios[label][0]:.2f} ({wall[0]:.2f}-{wall[-1]:.2f}), {cpu:.2f}"
        say(line)
    say()
    for kind in ("plain", "encrypted"):
        wall, cpu = ratios[f"import, {kind}: this tree"]
        verdict = "met" if wall >= TARGET else "MISSED"
        say(
            f"target: words-only import, {kind}, >= {TARGET} of bare tantivy's rate: "
            f"{wall:.2f} ({verdict}); of its CPU a frame: {cpu:.2f}"
        )
    say(f"load average at the end: {load()}")
    say.write(RESULTS)


if __name__ == "__main__":
    main()
