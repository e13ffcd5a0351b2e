"""Redaction: recall and false positives on the peer data set, and throughput on screen text.

    cd /work/main && .venv/bin/python -m bench.redact

Scores ``../shared/benchmarks/secrets.jsonl`` by the rules of its README (a positive passes
when no 16-character run of a secret survives and every expected kind is reported; a negative
passes when the text comes back unchanged), then times ``redact`` on 2000 frames of real screen
text from ``../shared/corpus/screen_corpus.py``, clean and with 1% of frames holding a secret,
against two baselines run on the same frames in the same process: ``str.encode`` and
``re.compile(r"\\w+").findall``. Writes the report to ``bench/results/redact.txt``.
"""

from __future__ import annotations

import json
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from bench._corpus import cpu_model
from bench._stats import percentile
from capture.redact import KINDS, redact

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
DATA = REPO / "tests" / "data" / "secrets.jsonl"
CORPUS = SHARED / "corpus" / "screen_corpus.py"
RESULTS = REPO / "bench" / "results" / "redact.txt"
MARKER = re.compile(r"\[REDACTED:(\w+)\]")

WORDS_BASELINE = r"baseline \w+ findall"

Row = dict[str, Any]


def load_rows(path: Path = DATA) -> list[Row]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _merged(kinds: Iterable[str]) -> set[str]:
    # The README lets password and secret stand for each other.
    return {"secret" if kind == "password" else kind for kind in kinds}


def row_failure(row: Row, redact_text: Callable[[str], str]) -> str | None:
    """Why ``row`` fails under the README's rules, or None when it passes."""
    out = redact_text(row["text"])
    if not row["kinds"]:
        return None if out == row["text"] else f"changed: {out!r}"
    for secret in row["secrets"]:
        run = min(len(secret), 16)
        for i in range(len(secret) - run + 1):
            if secret[i : i + run] in out:
                return f"leaks {secret[i : i + run]!r}"
    found = _merged(MARKER.findall(out))
    missing = _merged(row["kinds"]) - found
    if missing:
        return f"missing {sorted(missing)}"
    extra = found - _merged(row["kinds"]) - _merged(row.get("also_ok", []))
    return f"mislabelled {sorted(extra)}" if extra else None


def score(rows: list[Row], redact_text: Callable[[str], str]) -> dict[str, Any]:
    """Per tier and kind: rows, passes and failures; per negative type: false positives."""
    tiers: dict[str, dict[str, list[int]]] = {"core": {}, "extended": {}}
    negatives: dict[str, list[int]] = {"hard": [0, 0], "placeholder": [0, 0], "strict": [0, 0]}
    failures: list[str] = []
    for row in rows:
        failure = row_failure(row, redact_text)
        if failure:
            failures.append(f"{row['id']} ({row.get('tier') or row['neg_type']}): {failure}")
        if row["kinds"]:
            for kind in row["kinds"]:
                cell = tiers[row["tier"]].setdefault(kind, [0, 0])
                cell[0] += 1
                cell[1] += failure is None
            tiers[row["tier"]].setdefault("all", [0, 0])
            tiers[row["tier"]]["all"][0] += 1
            tiers[row["tier"]]["all"][1] += failure is None
        else:
            negatives[row["neg_type"]][0] += 1
            negatives[row["neg_type"]][1] += failure is not None
    return {"tiers": tiers, "negatives": negatives, "failures": failures}


def recall(scores: dict[str, Any], tier: str) -> float:
    total, caught = scores["tiers"][tier]["all"]
    return caught / total


def false_positive_rate(scores: dict[str, Any], neg_type: str) -> float:
    total, flagged = scores["negatives"][neg_type]
    return flagged / total


def score_table(scores: dict[str, Any]) -> str:
    lines = [f"{'tier':<9} {'kind':<14} {'positives':>9} {'caught':>7} {'recall':>8}"]
    for tier, kinds in scores["tiers"].items():
        for kind in [*(k for k in KINDS if k in kinds), "all"]:
            total, caught = kinds[kind]
            lines.append(f"{tier:<9} {kind:<14} {total:>9} {caught:>7} {caught / total:>8.1%}")
    lines += ["", f"{'negatives':<24} {'rows':>9} {'changed':>7} {'FP rate':>8}"]
    for neg_type, (total, flagged) in scores["negatives"].items():
        lines.append(f"{neg_type:<24} {total:>9} {flagged:>7} {flagged / total:>8.1%}")
    return "\n".join(lines)


def _corpus(frames: int, secrets: float) -> list[str]:
    command = [sys.executable, str(CORPUS), str(frames), "--seed", "1", "--secrets", str(secrets)]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return [json.loads(line)["text"] for line in out.splitlines()]


def _timings(texts: list[str], run: Callable[[str], object], rounds: int) -> list[float]:
    """Per-frame seconds, the fastest of ``rounds`` passes for each frame."""
    best = [float("inf")] * len(texts)
    for _ in range(rounds):
        for i, text in enumerate(texts):
            start = time.perf_counter()
            run(text)
            best[i] = min(best[i], time.perf_counter() - start)
    return best


def throughput_table(frames: int = 2000, rounds: int = 5) -> str:
    runs: list[tuple[str, Callable[[str], object]]] = [
        ("redact", redact),
        ("baseline str.encode", str.encode),
        (WORDS_BASELINE, re.compile(r"\w+").findall),
    ]
    header = (
        f"{'corpus':<14} {'function':<22} {'frames':>6} {'MB/s':>8} {'p50 µs':>8} "
        f"{'p90 µs':>8} {'p99 µs':>8} {'max µs':>8}"
    )
    lines = [header]
    for label, rate in (("clean", 0.0), ("1% secrets", 0.01)):
        texts = _corpus(frames, rate)
        size = sum(len(text.encode()) for text in texts)
        changed = sum(redact(text).text != text for text in texts)
        speeds = {}
        for name, run in runs:
            seconds = _timings(texts, run, rounds)
            speeds[name] = size / sum(seconds) / 1e6
            p50, p90, p99 = (percentile(seconds, q) * 1e6 for q in (0.5, 0.9, 0.99))
            lines.append(
                f"{label:<14} {name:<22} {len(texts):>6} {speeds[name]:>8.1f} {p50:>8.1f} "
                f"{p90:>8.1f} {p99:>8.1f} {max(seconds) * 1e6:>8.1f}"
            )
        lines.append(
            f"{label:<14} {size / len(texts) / 1000:.1f} KB a frame; frames changed: {changed}; "
            f"redact runs at {speeds['redact'] / speeds[WORDS_BASELINE]:.2f}× {WORDS_BASELINE}"
        )
    return "\n".join(lines)


def machine() -> str:
    cpu = cpu_model()
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    return f"machine: nproc {nproc}, CPU {cpu}, Python {platform.python_version()}"


def main() -> None:
    scores = score(load_rows(), lambda text: redact(text).text)
    report = "\n\n".join(
        [
            machine(),
            f"$ .venv/bin/python -m bench.redact   # data: {DATA.name}",
            score_table(scores),
            "rows that did not pass (strict negatives may be redacted, README):\n"
            + "\n".join(scores["failures"] or ["(none)"]),
            throughput_table(),
        ]
    )
    print(report)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(report + "\n")


if __name__ == "__main__":
    main()
