"""Shared by ``bench.search`` and ``bench.projector``: real-text corpora, the stores built from
them, timing tables and the machine report.

Everything built is cached under ``$BACKSCROLL_BENCH_DATA`` (default ``/work/bench-data``,
outside the repository), keyed by size, days and seed:

    corpus-n50000-d500-s1.jsonl          ``screen_corpus.py 50000 --days 500 --seed 1``
    <name>/                              a store, with ``build.json`` (how long it took)

A cached item is built under ``<name>.partial`` and renamed when complete, so an interrupted
build is never mistaken for a finished one. The corpus tool places frames in the days ending
*today*, so a cached corpus keeps the dates of the day it was made: benchmarks take "now" from
the corpus (its last frame), never from the clock.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from importlib import metadata
from itertools import islice
from pathlib import Path
from typing import Any

from bench._stats import percentile

REPO = Path(__file__).resolve().parents[1]
# $BACKSCROLL_CORPUS_TOOL: a clone that is not beside ``shared/`` (a git worktree) names it.
CORPUS_TOOL = Path(
    os.environ.get("BACKSCROLL_CORPUS_TOOL", REPO.parent / "shared" / "corpus" / "screen_corpus.py")
)
DATA = Path(os.environ.get("BACKSCROLL_BENCH_DATA", "/work/bench-data"))
BUILD_INFO = "build.json"
LIBRARY = ("eventlog", "projector", "query", "backscroll", "capture")

# Nothing may expire while a benchmark runs: 500 days of frames, a terabyte of cap.
RETENTION_DAYS = 36_500
STORAGE_CAP_MB = 1_000_000


# -- the corpus ------------------------------------------------------------------------------


def corpus_file(frames: int, days: int, seed: int) -> Path:
    """The cached JSONL of ``screen_corpus.py frames --days days --seed seed``."""
    path = DATA / f"corpus-n{frames}-d{days}-s{seed}.jsonl"
    if not path.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        command = [sys.executable, str(CORPUS_TOOL), str(frames), "--days", str(days)]
        with open(partial, "w") as out:
            subprocess.run([*command, "--seed", str(seed)], stdout=out, check=True)
        _end_by_now(partial)
        partial.rename(path)
    return path


def _end_by_now(path: Path) -> None:
    """Move the whole corpus back by whole days if its last frames lie in the future.

    The tool puts ``frames % days`` frames on the day after today (50,000 over 60 days: 20
    of them, at 08:00 tomorrow), and an import refuses frames more than a day ahead of the
    clock. The days between frames, and every text, stay as the tool made them."""
    ahead = max(row["ts"] for row in rows(path)) - time.time()
    if ahead <= 0:
        return
    shift = 86_400 * (int(ahead // 86_400) + 1)
    moved = path.with_suffix(".moved")
    with open(moved, "w") as out:
        for row in rows(path):
            row["ts"] = round(row["ts"] - shift, 3)
            out.write(json.dumps(row) + "\n")
    moved.replace(path)


def rows(path: Path) -> Iterator[dict[str, Any]]:
    with open(path) as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


# -- stores ----------------------------------------------------------------------------------


def cached(name: str, build: Callable[[Path], dict[str, Any]]) -> tuple[Path, dict[str, Any]]:
    """``DATA/name``, built by ``build(folder)`` (which returns what to remember about the
    build) unless a complete copy exists; returns the folder and that record."""
    path = DATA / name
    info = path / BUILD_INFO
    if not info.exists():
        partial = DATA / f"{name}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        record = {"built": time.strftime("%Y-%m-%d %H:%M:%S"), **build(partial)}
        (partial / BUILD_INFO).write_text(json.dumps(record, indent=2) + "\n")
        shutil.rmtree(path, ignore_errors=True)
        partial.rename(path)
    return path, json.loads(info.read_text())


def current(home: Path, report: Callable[[str], None] | None = None) -> Path:
    """Catch a cached store's views up with the code as it is now: after a change of the
    search schema the first open re-projects the whole log, which is no part of any timing."""
    from backscroll.store import MemoryStore

    start = time.perf_counter()
    MemoryStore(home, write=True)
    seconds = time.perf_counter() - start
    if report and seconds > 2:
        report(f"(the cached store's views were brought up to date first: {seconds:.0f} s)")
    return home


def copy_store(source: Path, target: Path) -> Path:
    """A private copy of a cached store, for benchmarks that change it."""
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, symlinks=True)
    return target


def import_store(
    home: Path,
    lines: Iterable[str],
    *,
    encrypted_every: int = 0,
    encrypted_run: int = 0,
    report: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Load ``lines`` into a new store at ``home`` with ``import_frames``, the way a person's
    ``backscroll import`` does (default config: redaction on), with nothing set to expire.

    With ``encrypted_every``, the first ``encrypted_run`` frames of every
    ``encrypted_every`` are imported with ``encrypt_text`` on (line ``i`` is encrypted when
    ``i % encrypted_every < encrypted_run``). Returns the import's timing.
    """
    from backscroll.importer import import_frames
    from backscroll.store import MemoryStore

    store = MemoryStore(home, write=True)
    store.set_config(retention_days=RETENTION_DAYS, storage_cap_mb=STORAGE_CAP_MB)
    period = encrypted_every or 10**12
    run = encrypted_run if encrypted_every else 0
    done = 0
    seconds = {"plain": 0.0, "encrypted": 0.0}
    frames = {"plain": 0, "encrypted": 0}
    toggles = 0.0
    start = time.perf_counter()
    for block in chunks(lines, period):
        for kind, part in (("encrypted", block[:run]), ("plain", block[run:])):
            if not part:
                continue
            t0 = time.perf_counter()
            if store.config.encrypt_text != (kind == "encrypted"):
                store.set_config(encrypt_text=kind == "encrypted")
            t1 = time.perf_counter()
            import_frames(store, part)
            t2 = time.perf_counter()
            toggles += t1 - t0
            seconds[kind] += t2 - t1
            frames[kind] += len(part)
        done += len(block)
        if report and (done // period) % max(1, 50_000 // period) == 0:
            elapsed = time.perf_counter() - start
            report(f"  imported {done:,} frames in {elapsed:.0f} s ({done / elapsed:,.0f}/s)")
    total = time.perf_counter() - start
    return {
        "frames": done,
        "seconds": round(total, 2),
        "frames_per_s": round(done / total, 1) if total else 0.0,
        "plain": {"frames": frames["plain"], "seconds": round(seconds["plain"], 2)},
        "encrypted": {"frames": frames["encrypted"], "seconds": round(seconds["encrypted"], 2)},
        "config_toggles_s": round(toggles, 2),
        "load": load(),
        "disk_mb": round(disk_bytes(home) / 1e6, 1),
        "code": revision(),
    }


def disk_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


# -- timing tables ---------------------------------------------------------------------------


SECTION = "#### "

HEADER = f"{'count':>6s} {'p50':>9s} {'p90':>9s} {'p99':>9s} {'max':>9s}"


def cells(times: list[float], digits: int = 2) -> str:
    """count, p50, p90, p99 and max of ``times`` (any order), in the table's columns."""
    if not times:
        return f"{0:6d} {'-':>9s} {'-':>9s} {'-':>9s} {'-':>9s}"
    ordered = sorted(times)
    values = [percentile(ordered, q) for q in (0.5, 0.9, 0.99)] + [ordered[-1]]
    return f"{len(ordered):6d} " + " ".join(f"{v:9.{digits}f}" for v in values)


class Report:
    """Lines printed as they come and kept for the results file."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)

    def write(self, path: Path, section: str | None = None) -> None:
        """Write the lines to ``path``; with ``section``, replace only that section of the
        file (a run at another size keeps its own), sections in the order first written."""
        path.parent.mkdir(parents=True, exist_ok=True)
        body = "\n".join(self.lines) + "\n"
        if section is None:
            path.write_text(body)
            return
        sections: dict[str, str] = {}
        if path.exists():
            for part in path.read_text().split(SECTION)[1:]:
                key, _, text = part.partition("\n")
                sections[key.strip()] = text
        sections[section] = "\n" + body
        path.write_text("".join(f"{SECTION}{k}\n{v}" for k, v in sections.items()))


# -- the machine -----------------------------------------------------------------------------


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, for the machine line of every result."""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def machine() -> list[str]:
    import tantivy

    cpu = cpu_model()
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    version = f"{metadata.version('tantivy')} ({getattr(tantivy, '__version__', '?')})"
    return [
        f"machine: nproc {os.cpu_count()}, CPU {cpu}, {memory:.0f} GiB RAM, "
        f"{platform.system()} {platform.release()}",
        f"python {platform.python_version()}, tantivy-py {version}, "
        f"sqlite {__import__('sqlite3').sqlite_version}",
        f"load average at start (1/5/15 min): {load()}; the 2 cores are shared with other "
        "sessions' work",
        f"code: {revision()}",
    ]


def revision() -> str:
    """The commit the library code is at, and which library files differ from it."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
        return done.stdout.rstrip()  # porcelain lines start with a status column: keep it

    changed = git("status", "--porcelain", "--", *LIBRARY).splitlines()
    edits = ", ".join(line[3:] for line in changed) or "none"
    return f"commit {git('rev-parse', '--short', 'HEAD')}; library files changed since: {edits}"
