"""The meaning model's memory in its two forms: the weights inside the graph (the package's
file) against the weights in a file of their own (the split form ``make venv`` writes,
projector/model_split.py), in the same run.

    .venv/bin/python -m bench.model_split [--rounds 5]

Each round starts one fresh process per form, alternately: it loads the model as
``Embedder.load`` does (the same session options; the inline form opens the package's
checked file, as before the split), then embeds 60 texts (20 of ~1,700 characters, 40
questions). It reports the process's anonymous and file-backed resident memory
(/proc/self/status: RssAnon, RssFile) before the load, after it and after the 60 texts,
the load's time, and whether both forms gave the same vectors. Writes
bench/results/model_split.txt.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from typing import Any

from bench._corpus import REPO, Report, load, machine

RESULTS = REPO / "bench" / "results" / "model_split.txt"
CHILD = """
import hashlib, json, os, sys, time
from contextlib import contextmanager
from pathlib import Path

import numpy, onnxruntime, onnxruntime_extensions  # imported before the first reading

from projector import embedder as model


def memory():
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    return {k: int(fields[k].split()[0]) / 1024 for k in ("RssAnon", "RssFile", "VmRSS")}


if sys.argv[1] == "inline":
    @contextmanager
    def original():
        fd = model.checked_file(model.model_folder() / model.MODEL_FILE, model.MODEL_SHA256)
        try:
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)

    model._checked_model = original

readme = Path("README.md").read_text()
texts = [readme[i * 1700 : (i + 1) * 1700] for i in range(20)]
texts += [line for line in readme.splitlines() if 20 < len(line) < 200][:40]
before = memory()
t = time.perf_counter()
e = model.Embedder.load()
seconds = time.perf_counter() - t
loaded = memory()
vectors = numpy.stack([e.query(text) for text in texts])
ran = memory()
print(json.dumps({
    "before": before, "loaded": loaded, "ran": ran, "seconds": seconds,
    "vectors": hashlib.sha256(vectors.tobytes()).hexdigest(), "texts": len(texts),
}))
"""
FORMS = ("inline", "split")


def run(form: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, form],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=os.environ,
        check=True,
    )
    got: dict[str, Any] = json.loads(done.stdout)
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    report = Report()
    for line in machine():
        report(line)
    report(f"load before: {load()}")
    runs: dict[str, list[dict[str, Any]]] = {form: [] for form in FORMS}
    for _ in range(args.rounds):
        for form in FORMS:
            runs[form].append(run(form))
    texts = runs["split"][0]["texts"]
    report("")
    report(
        f"the model in a fresh process, {args.rounds} rounds a form, alternately; medians, MiB "
        f"(/proc/self/status), after loading it and after embedding {texts} texts"
    )
    for form in FORMS:

        def median(stage: str, key: str, form: str = form) -> float:
            return statistics.median(r[stage][key] for r in runs[form])

        seconds = sorted(r["seconds"] for r in runs[form])
        report(
            f"  {form:7s} loaded: anon {median('loaded', 'RssAnon'):4.0f}, file "
            f"{median('loaded', 'RssFile'):4.0f}; after the texts: anon "
            f"{median('ran', 'RssAnon'):4.0f}, file {median('ran', 'RssFile'):4.0f}, RSS "
            f"{median('ran', 'VmRSS'):4.0f}; load {statistics.median(seconds):.2f} s "
            f"({seconds[0]:.2f}-{seconds[-1]:.2f})"
        )
    before = statistics.median(r["before"]["RssAnon"] for f in FORMS for r in runs[f])
    report(f"  (anonymous memory before the load, both forms: {before:.0f} MiB)")
    hashes = {r["vectors"] for f in FORMS for r in runs[f]}
    report(f"  the same vectors from both forms, every run: {'yes' if len(hashes) == 1 else 'NO'}")
    report(f"load after: {load()}")
    report.write(RESULTS)


if __name__ == "__main__":
    main()
