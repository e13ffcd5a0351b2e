"""Archive export and import (``backscroll export --archive``, ``import --archive``) beside a
plain ``tar`` of the home in the same run, with each step's peak memory.

    python -m bench.archive --frames 1000000 --frames 130000 --thumbnails 20000

Each ``--frames`` size is the search benchmark's corpus store (``bench.search.search_store``:
real screen text over 500 days, 20% of it encrypted, no thumbnails; cached under
/work/bench-data, built on the first run); ``--thumbnails N`` adds a store of N frames each
with a sealed thumbnail of its own (``thumbnail_store``), so the bytes of thumbnails are
measured too. For each store, every step runs as its own process (the
CLI, as a person runs it), timed, its peak resident memory read from the kernel
(``wait4``'s ``ru_maxrss``):

- ``tar -cf`` of the home into a file, and ``tar -xf`` of it into a new folder: the baseline;
- ``backscroll export --archive`` of the home (reading it as a reader: the Argon2id KDF,
  every frame's text and thumbnail opened, sealed into chunks);
- ``backscroll import --archive`` into a new home (the archive read twice: checked whole,
  then written; frames sealed under the new key; the views built from nothing).

Memory is bounded when the peak of a step does not grow with the store: compare the sizes.
After the import the new store's frame count is checked against the old one's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._corpus import DATA, cached, disk_bytes, import_store, load, machine

PASSPHRASE = b"a bench passphrase, long enough\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, action="append", help="corpus store sizes")
    parser.add_argument("--thumbnails", type=int, default=0, help="frames of a thumbnail store")
    args = parser.parse_args()
    for line in machine():
        print(line)
    from bench.search import search_store

    rows = []
    for frames in args.frames or [130_000]:  # each measured once built: the figures come first
        rows += measure(f"corpus {frames:,}", search_store(frames)[0])
    if args.thumbnails:
        rows += measure(f"thumbnails {args.thumbnails:,}", thumbnail_store(args.thumbnails))
    print(f"load average at the end: {load()}")
    print()
    header = f"{'store':<20} {'step':<16} {'seconds':>8} {'frames/s':>10} {'MB/s':>7}"
    print(header + f" {'output MB':>10} {'peak RSS MB':>12}")
    for row in rows:
        print(
            f"{row['store']:<20} {row['step']:<16} {row['seconds']:>8.1f} "
            f"{row['frames'] / row['seconds']:>10,.0f} {row['mb'] / row['seconds']:>7.1f} "
            f"{row['out_mb']:>10.1f} {row['rss_mb']:>12.1f}"
        )


def measure(name: str, home: Path) -> list[dict[str, Any]]:
    from backscroll.store import MemoryStore

    with MemoryStore(home) as store:
        frames = store.state().totals().frames
    mb = disk_bytes(home) / 1e6
    print(f"{name}: {frames:,} frames, home {mb:,.1f} MB ({home})", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(dir=DATA, prefix="archive-bench-") as scratch:
        work = Path(scratch)
        pf = work / "pf"
        pf.write_bytes(PASSPHRASE)
        pf.chmod(0o600)
        tar, untarred = work / "home.tar", work / "untarred"
        untarred.mkdir()
        archive, restored = work / "home.bsa", work / "restored"
        secret = ["--passphrase-file", str(pf)]
        cli = [sys.executable, "-m", "backscroll"]
        steps = [
            ("tar -cf", ["tar", "-cf", str(tar), "-C", str(home), "."], tar),
            ("tar -xf", ["tar", "-xf", str(tar), "-C", str(untarred)], untarred),
            (
                "export --archive",
                [*cli, "export", "--archive", str(archive), *secret, "--home", str(home)],
                archive,
            ),
            (
                "import --archive",
                [*cli, "import", "--archive", str(archive), *secret, "--home", str(restored)],
                restored,
            ),
        ]
        for step, command, output in steps:
            seconds, rss = run(command)
            out_mb = (output.stat().st_size if output.is_file() else disk_bytes(output)) / 1e6
            row = dict(
                store=name,
                step=step,
                seconds=seconds,
                frames=frames,
                mb=mb,
                out_mb=out_mb,
                rss_mb=rss,
            )
            print(
                f"  {step:<16} {seconds:7.1f} s  {frames / seconds:>9,.0f} frames/s  "
                f"{mb / seconds:6.1f} MB/s  output {out_mb:,.1f} MB  peak RSS {rss:.1f} MB  "
                f"(load {load()})",
                flush=True,
            )
            rows.append(row)
        with MemoryStore(restored) as store:
            moved = store.state().totals().frames
        assert moved == frames, f"{moved:,} frames restored of {frames:,}"
    print(flush=True)
    return rows


# Linux keeps a process's peak RSS across fork and exec: a child forked from this process
# (263 MB once the store is open) reports at least that much. A bare interpreter forks the
# command instead and reports its peak, which is then at least the launcher's ~9 MB.
LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run(command: list[str]) -> tuple[float, float]:
    """Seconds of wall time and peak RSS (MB) of ``command`` as one process."""
    with tempfile.NamedTemporaryFile("r") as peak:
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-S", "-c", LAUNCHER, peak.name, *command],
            stdout=subprocess.DEVNULL,
            check=False,
        )
        seconds = time.perf_counter() - start
        if done.returncode:
            raise SystemExit(f"{command[:4]} failed with {done.returncode}")
        return seconds, int(peak.read()) / 1024


def thumbnail_store(frames: int) -> Path:
    """A store of ``frames`` frames, each with a sealed thumbnail of its own: a flat screen
    with a band of noise (11 KB at the thumbnail's quality; a real screen's is 12.6 KB).
    Each is distinct, as real ones are: repeated pictures would let the archive's zstd
    fold them into one another, flattering its size."""

    def build(home: Path) -> dict[str, Any]:
        from PIL import Image

        images = home.parent / f"{home.name}-images"
        images.mkdir(exist_ok=True)
        for i in range(frames):
            picture = Image.new("RGB", (480, 270), (i % 251, 40, 90))
            picture.paste(Image.frombytes("RGB", (480, 40), os.urandom(480 * 40 * 3)), (0, 120))
            picture.save(images / f"{i}.jpg", quality=90)
        now = time.time()
        lines = (
            f'{{"ts": {now - (frames - i) * 30}, "app": "app{i % 7}", "title": "window {i}", '
            f'"text": "frame {i} of the thumbnail store", "image": "{images / f"{i}.jpg"}"}}'
            for i in range(frames)
        )
        info = import_store(home, lines)
        shutil.rmtree(images)
        return info

    home, _ = cached(f"archive-thumbnails-n{frames}", build)
    return home


if __name__ == "__main__":
    main()
