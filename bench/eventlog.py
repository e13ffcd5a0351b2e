"""Event log: append throughput beside the disk's own limit, replay speed, bytes per frame.

    cd /work/main && .venv/bin/python -m bench.eventlog [--events 20000] [--dir DIR]

Frames are real screen text from ``../shared/corpus/screen_corpus.py 5000 --seed 1`` (code,
changelogs, licences, logs, man pages: about 1.8 KB a record), cycled to ``--events``.

- Append: ``Log.batch`` of 1,000 frames (one fsync each) and ``Log.append`` of one frame (one
  fsync each), beside the baseline run in the same process on the same disk: ``os.write`` +
  ``os.fsync`` of the very bytes the log writes, batched the same way. Three rounds,
  interleaved; the best round of each is reported (other work on a shared machine only ever
  slows a round down). Target: batched >= 0.7 of raw.
- Replay: ``Log.read`` (read, check, decode) over one active segment and over sealed ones.
  Target: >= 200,000 events/s. Also one record read at a random offset (``next(records(o))``).
- Bytes per frame on disk: the active segment, sealed zstd in 256 KB blocks, and zstd with a
  dictionary trained on the same frames (per record and per 256 KB block, the dictionary's
  own bytes counted against the frames it serves).

The temporary folder is made under ``--dir`` (default: beside the repository, on the disk the
store would use; not /tmp, which may be tmpfs, where fsync costs nothing). Writes the report
to ``bench/results/eventlog.txt``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import zstandard

from bench._corpus import cpu_model
from bench._stats import percentile
from eventlog import codec
from eventlog.events import FRAME_TYPE, Event, FrameCaptured
from eventlog.format import BLOCK, BLOCK_BYTES, ZSTD_LEVEL
from eventlog.log import Log
from eventlog.segment import pack_record

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus" / "screen_corpus.py"
RESULTS = REPO / "bench" / "results" / "eventlog.txt"
BATCH = 1000
ROUNDS = 3

out_lines: list[str] = []


def say(line: str = "") -> None:
    print(line, flush=True)
    out_lines.append(line)


# -- setting up --------------------------------------------------------------------------------


def machine(folder: Path) -> str:
    cpu = cpu_model()
    df = subprocess.run(["df", "-T", str(folder)], capture_output=True, text=True).stdout
    source, fstype = df.splitlines()[-1].split()[:2]
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"machine: nproc {os.cpu_count()}, CPU {cpu}, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}; temp dir on {fstype} ({source}); "
        f"load average at start {load} (other work on the machine slows every figure)"
    )


def corpus_frames(count: int = 5000) -> list[FrameCaptured]:
    lines = subprocess.run(
        [sys.executable, str(CORPUS), str(count), "--seed", "1"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    frames = []
    for i, line in enumerate(lines):
        row = json.loads(line)
        us = int(row["ts"] * 1_000_000)
        frames.append(
            FrameCaptured(
                ts_us=us,
                frame_id=i,
                captured_us=us,
                app=row["app"],
                title=row["title"],
                pid=4242,
                text=row["text"],
                text_source=row.get("text_source", "ocr"),
                reason="interval",
            )
        )
    return frames


def numbered(frames: list[FrameCaptured], count: int, start: int = 0) -> list[FrameCaptured]:
    """``count`` frames cycled from ``frames``, with the ids a log starting at ``start`` gives."""
    return [
        msgspec.structs.replace(frames[i % len(frames)], frame_id=start + i) for i in range(count)
    ]


def records(events: list[FrameCaptured]) -> list[bytes]:
    """The exact bytes the log appends for ``events``."""
    return [pack_record(FRAME_TYPE, e.frame_id, codec.encode(e)) for e in events]


# -- append ------------------------------------------------------------------------------------


def log_batched(folder: Path, events: list[FrameCaptured]) -> float:
    log = Log(folder)
    with log.batch():
        pass  # creates the segment (and fsyncs the folder) before timing starts
    started = time.perf_counter()
    for i in range(0, len(events), BATCH):
        with log.batch() as batch:
            for event in events[i : i + BATCH]:
                batch.append(event)
    return time.perf_counter() - started


def raw_batched(folder: Path, data: list[bytes]) -> float:
    folder.mkdir()
    fd = os.open(folder / "raw", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        started = time.perf_counter()
        for i in range(0, len(data), BATCH):
            os.write(fd, b"".join(data[i : i + BATCH]))
            os.fsync(fd)
        return time.perf_counter() - started
    finally:
        os.close(fd)


def log_each(folder: Path, events: list[FrameCaptured]) -> list[float]:
    log = Log(folder)
    log.append(events[0])  # the segment exists before timing starts
    latencies = []
    for event in events[1:]:
        started = time.perf_counter()
        log.append(event)
        latencies.append(time.perf_counter() - started)
    return latencies


def raw_each(folder: Path, data: list[bytes]) -> list[float]:
    folder.mkdir()
    fd = os.open(folder / "raw", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, data[0])
        os.fsync(fd)
        latencies = []
        for record in data[1:]:
            started = time.perf_counter()
            os.write(fd, record)
            os.fsync(fd)
            latencies.append(time.perf_counter() - started)
        return latencies
    finally:
        os.close(fd)


def bench_append(tmp: Path, frames: list[FrameCaptured], count: int) -> Path:
    """Returns the folder of one batched log, kept for the replay benchmark."""
    events = numbered(frames, count)
    data = records(events)
    each = max(500, count // 10)
    megabytes = sum(map(len, data)) / 1e6
    say(
        f"append: {count} frames ({megabytes:.1f} MB, {megabytes * 1e6 / count:.0f} B a record), "
        f"best of {ROUNDS} interleaved rounds"
    )
    say()
    batched: dict[str, list[float]] = {"log": [], "raw": []}
    single: dict[str, list[list[float]]] = {"log": [], "raw": []}
    kept = tmp / "append-log-0"
    for r in range(ROUNDS):
        batched["raw"].append(count / raw_batched(tmp / f"append-raw-{r}", data))
        batched["log"].append(count / log_batched(tmp / f"append-log-{r}", events))
        single["raw"].append(raw_each(tmp / f"each-raw-{r}", data[:each]))
        single["log"].append(log_each(tmp / f"each-log-{r}", events[:each]))
        for name in (f"append-raw-{r}", f"each-raw-{r}", f"each-log-{r}"):
            shutil.rmtree(tmp / name)
        if r:
            shutil.rmtree(tmp / f"append-log-{r}")

    header = (
        f"{'append':<34}{'count':>7}{'events/s':>11}{'vs raw':>8}"
        f"{'p50 ms':>8}{'p90 ms':>8}{'p99 ms':>8}{'max ms':>8}"
    )
    say(header)
    raw_rate = max(batched["raw"])
    say(f"{'raw write+fsync, 1 fsync/1000':<34}{count:>7}{raw_rate:>11,.0f}{'1.00':>8}")
    rate = max(batched["log"])
    verdict = "ok" if rate >= 0.7 * raw_rate else "BELOW TARGET 0.7"
    name = "Log.batch, 1 fsync/1000"
    say(f"{name:<34}{count:>7}{rate:>11,.0f}{rate / raw_rate:>8.2f}  {verdict}")

    def row(name: str, runs: list[list[float]], baseline: float | None) -> float:
        best = min(runs, key=sum)
        rate = len(best) / sum(best)
        ratio = f"{rate / baseline:.2f}" if baseline else "1.00"
        ms = [v * 1000 for v in best]
        say(
            f"{name:<34}{len(best):>7}{rate:>11,.0f}{ratio:>8}"
            + "".join(f"{percentile(ms, q):>8.2f}" for q in (0.5, 0.9, 0.99))
            + f"{max(ms):>8.2f}"
        )
        return rate

    raw_each_rate = row("raw write+fsync, 1 fsync/event", single["raw"], None)
    log_each_rate = row("Log.append, 1 fsync/event", single["log"], raw_each_rate)
    say()
    say(
        f"the log's own work above the raw write: {1e6 / rate - 1e6 / raw_rate:.1f} µs a frame "
        "batched (encode, frame and checksum in Python), "
        f"{1e6 / log_each_rate - 1e6 / raw_each_rate:.0f} µs appended alone (also the lock, two "
        "folder listings, a stat and two opens for every append)"
    )
    say()
    return kept


# -- replay ------------------------------------------------------------------------------------


def best_of(run: Callable[[], int], rounds: int = 5) -> tuple[float, int]:
    """Best time of ``rounds`` (the page cache is warm after the first), and the count."""
    best, count = float("inf"), 0
    for _ in range(rounds):
        started = time.perf_counter()
        count = run()
        best = min(best, time.perf_counter() - started)
    return best, count


def count_of(items: Iterator[object]) -> int:
    n = 0
    for _ in items:
        n += 1
    return n


def seal_everything(folder: Path) -> None:
    # A changed record makes compaction rewrite its segment, and the active one comes out
    # sealed: one equal copy per segment is enough.
    log = Log(folder)
    firsts = {segment.base for segment in log.segments()}

    def touch(offset: int, event: Event) -> Event | None:
        return msgspec.structs.replace(event) if offset in firsts else event

    log.compact(touch)


def bench_replay(tmp: Path, active: Path) -> None:
    sealed = tmp / "replay-sealed"
    shutil.copytree(active, sealed)
    seal_everything(sealed)
    logs = {"active": Log(active), "sealed": Log(sealed)}
    assert not any(s.sealed for s in logs["active"].segments())
    assert all(s.sealed for s in logs["sealed"].segments())

    say(
        f"{'replay (warm page cache, best of 5)':<40}{'segments':>9}{'MB on disk':>11}"
        f"{'events':>8}{'events/s':>11}{'target':>9}"
    )
    for name, log in logs.items():
        size = log.disk_bytes() / 1e6
        segments = len(log.segments())
        seconds, n = best_of(lambda log=log: count_of(log.records()))  # type: ignore[misc]
        say(f"{'records() ' + name:<40}{segments:>9}{size:>11.1f}{n:>8}{n / seconds:>11,.0f}")
        seconds, n = best_of(lambda log=log: count_of(log.read()))  # type: ignore[misc]
        verdict = "ok" if n / seconds >= 200_000 else "BELOW"
        say(
            f"{'read() = records + decode, ' + name:<40}{segments:>9}{size:>11.1f}{n:>8}"
            f"{n / seconds:>11,.0f}{verdict:>9}"
        )
    say()

    say(f"{'one record at a random offset':<40}{'count':>9}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}")
    rng = random.Random(1)
    for name, log in logs.items():
        end = log.next_offset()
        latencies = []
        for _ in range(50):
            start = rng.randrange(end)
            started = time.perf_counter()
            next(log.records(start))
            latencies.append((time.perf_counter() - started) * 1000)
        say(
            f"{'next(records(o)) ' + name:<40}{len(latencies):>9}"
            + "".join(f"{percentile(latencies, q):>9.2f}" for q in (0.5, 0.99))
            + f"{max(latencies):>9.2f}"
        )
    say(
        "(a sealed segment: its file read whole, then the block holding the offset decompressed;"
        " an active one: its records indexed once per process, then the 1 MB piece from the"
        " offset read and checked)"
    )
    say()
    shutil.rmtree(sealed)


# -- bytes per frame ---------------------------------------------------------------------------


def blocks(data: list[bytes]) -> list[bytes]:
    """Records grouped the way ``encode_sealed`` groups them."""
    out, pending, size = [], [], 0
    for record in data:
        pending.append(record)
        size += len(record)
        if size >= BLOCK_BYTES:
            out.append(b"".join(pending))
            pending, size = [], 0
    if pending:
        out.append(b"".join(pending))
    return out


def bench_size(tmp: Path, frames: list[FrameCaptured]) -> None:
    n = len(frames)
    folder = tmp / "size"
    log = Log(folder)
    with log.batch() as batch:
        for frame in frames:
            batch.append(frame)
    active = log.disk_bytes()
    seal_everything(folder)
    sealed = Log(folder).disk_bytes()
    data = records(frames)
    text = sum(len(f.text.encode()) for f in frames)
    grouped = blocks(data)
    plain = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    per_record_plain = sum(len(plain.compress(r)) + 4 for r in data)
    full_segment = 64 * 1024 * 1024 / (active / n)  # frames a full 64 MB segment holds

    say(
        f"bytes per frame on disk: {n} corpus frames, {text / n:,.0f} B of text and "
        f"{active / n:,.0f} B of record each"
    )
    say(
        "(per-record rows add a 4-byte length; block rows add the 32-byte block header;"
        " dictionary rows also carry the dictionary, spread over these frames and, in"
        " brackets, over the ~"
        f"{full_segment:,.0f} frames of a full 64 MB segment)"
    )
    say()
    say(f"{'layout':<44}{'B/frame':>9}{'vs raw':>8}{'B/frame in full seg':>21}")

    def row(name: str, total: float, dictionary: int = 0) -> float:
        per = (total + dictionary) / n
        full = total / n + dictionary / full_segment
        say(f"{name:<44}{per:>9,.0f}{per / (active / n):>8.3f}{full:>21,.0f}")
        return per

    row("raw (active segment)", active)
    row("zstd per record, no dictionary", per_record_plain)
    sealed_per = row(f"sealed: zstd-{ZSTD_LEVEL} per 256 KB block (as on disk)", sealed)
    results = {}
    sample: list[Any] = data[
        : min(n, 2000)
    ]  # trained on the frames it serves, as a segment's would be
    trained_in = {}
    for size in (16 * 1024, 64 * 1024, 110 * 1024):
        started = time.perf_counter()
        trained = zstandard.train_dictionary(size, sample, level=ZSTD_LEVEL)
        trained_in[size] = time.perf_counter() - started
        packed = len(trained.as_bytes())
        with_dict = zstandard.ZstdCompressor(level=ZSTD_LEVEL, dict_data=trained)
        per_record = sum(len(with_dict.compress(r)) + 4 for r in data)
        per_block = sum(len(with_dict.compress(b)) + BLOCK.size for b in grouped)
        results[size] = (
            row(f"zstd per record, {size // 1024} KB dictionary", per_record, packed),
            row(f"zstd per 256 KB block, {size // 1024} KB dictionary", per_block, packed),
            per_block / n + packed / full_segment,
        )
    say()
    best = min(results, key=lambda size: results[size][1])
    best_record = min(record for record, _, _ in results.values())
    best_full = min(full for _, _, full in results.values())
    saved = 1 - best_full / sealed_per
    # 15%: a 256 KB block already teaches zstd the block's vocabulary, so a dictionary only
    # helps each block's first few KB; under 15% the saving (some tens of MB per million
    # frames, about a year of 8-hour days at a frame every 10 s) is small beside the
    # thumbnails, and does not pay for training a dictionary at every seal and compaction,
    # storing it in the segment and encrypting it with the text.
    say(
        f"verdict: with 256 KB blocks a dictionary saves {1 - results[best][1] / sealed_per:.1%}"
        f" on these {n} frames and {saved:.1%} spread over a full segment ({sealed_per:,.0f} ->"
        f" {best_full:,.0f} B/frame, {(sealed_per - best_full):,.0f} MB per million frames;"
        f" training took {trained_in[best]:.2f} s on {len(sample)} records): "
        + ("marginal, it does not pay." if saved < 0.15 else "it pays.")
    )
    say(
        f"         per record the best dictionary gives {best_record:,.0f} B/frame, "
        f"{best_record / sealed_per:.1f}x the plain 256 KB blocks: dictionaries only pay where "
        "records must be compressed one by one."
    )
    say()
    shutil.rmtree(folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--dir", type=Path, default=REPO.parent)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-eventlog-", dir=args.dir))
    try:
        say(machine(tmp))
        say()
        say(f"$ .venv/bin/python -m bench.eventlog --events {args.events}")
        say()
        frames = corpus_frames()
        kept = bench_append(tmp, frames, args.events)
        bench_replay(tmp, kept)
        bench_size(tmp, frames)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(out_lines) + "\n")
    print(f"wrote {RESULTS.relative_to(REPO)}")


if __name__ == "__main__":
    main()
