"""A command's start-up: ``backscroll status`` and ``backscroll search WORD`` as whole
processes, the code before and after beside ``python -c pass``, in one run.

    cd /work/main && .venv/bin/python -m bench.startup [--before 1a8df0e] [--frames 130000]
        [--runs 7] [--word error]

``--before`` (a git ref, default 1a8df0e: main before issue 23's start-up work) is checked out
into a temporary ``git worktree``, removed after; this tree is "after". Each is run with this
interpreter, that tree first on PYTHONPATH and as the working folder, as the console script
runs it (the function its pyproject.toml names): the same installed libraries, only
Backscroll's code differs. The baseline is ``python -c pass`` with the same interpreter.

The store is ``bench.search``'s (``--frames`` frames of real screen text over 500 days, 20%
with encrypted text; cached under /work/bench-data), copied to a temporary folder so that
neither version can change the cached one, with its views brought up to date first. 130,000
frames fill three sealed segments and 97% of the active one (62 MB of 64): the most of the
active segment a command can meet. A second copy is as a running daemon leaves it while it
catches up: three events appended past the views, and the views' lock held by another
process, so commands read the views as they are and say how far behind they are.
A third store has a meaning view (``--meaning-frames`` frames of the corpus, embedded with
the real model; cached under /work/bench-data too), where a hybrid search (the default)
needs the frames by meaning: asked of the daemon's meaning socket (``MeaningServer``, the
daemon's part, run alone in a process of its own beside the commands), found in process
where no daemon runs (a copy without the socket: the model loaded by the command), and by
``--words`` alone. The daemon's CPU for the questions it answered is read from its
``/proc/PID/stat``. These rows are of this tree only (the code before had no meaning view),
and are not counted by valgrind (the fallback's model load would take minutes under it, and
the command's deadline for the daemon's answer is wall time).
A cache whose ``log/NEXT`` predates its checksum (6ef9f5b) has it written as this code
writes it (``current_next``), or every status would scan the active segment for the log's
end, as a store made before then does until its next append.

Bytecode is compiled for both trees before anything is timed (an installed package has it;
with PYTHONDONTWRITEBYTECODE set, every run would compile the modules it imports again).
The commands are run round-robin, ``--runs`` rounds after two warm-up rounds, so both
versions meet the same load. Wall time from the parent, CPU time (user + system) of the
child from ``os.wait4``. Target: status and search after at most 4x ``python -c pass`` in
both wall and CPU time (medians).

Time on a shared machine moves with its load (the same commands measured 5.1-6.6x one run and
5.5-7.7x the next), so with valgrind installed each command is also run once under its
cachegrind tool without cache simulation, which counts the instructions it executes in user
space: the same under any load (to within 1%), though blind to the time the kernel spends
on the files a command opens.

Writes ``bench/results/startup.txt`` with the machine and commit.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench._checkout import checkout
from bench._corpus import REPO, Report, cached, copy_store, corpus_file, import_store, machine
from bench._stats import load_average
from bench.search import search_store

RESULTS = REPO / "bench" / "results" / "startup.txt"
TARGET = 4.0
LAYERS = ("base", "eventlog", "projector", "capture", "query", "backscroll")
# What the console script does, with the tree's code first on the path: its function as the
# tree's pyproject.toml names it (``main`` before 2026-12-03, ``console`` since).
CONSOLE = "import sys; from {module} import {function}; sys.argv[0] = 'backscroll'; {function}()"

# Cachegrind without its cache simulation: the instruction count alone, no output file.
COUNT = ("valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null")

# Holds the views' lock, as a running daemon does, until its standard input closes.
HOLD = (
    "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR); "
    "fcntl.flock(fd, fcntl.LOCK_EX); print(flush=True); sys.stdin.read()"
)

# The daemon's meaning socket alone, on a home, until its standard input closes.
SERVE = (
    "import sys\n"
    "from backscroll.meaning_server import MeaningServer\n"
    "from backscroll.store import MemoryStore\n"
    "server = MeaningServer(MemoryStore(sys.argv[1], write=True, catch_up=False))\n"
    "server.start()\n"
    "print(flush=True)\n"
    "sys.stdin.read()\n"
    "server.close()\n"
)
# The meaning store's frames come from a small corpus: 30 days, so a search's months are few.
MEANING_CORPUS = (3000, 30, 1)

say = Report()


def environment(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return env | {"PYTHONPATH": str(tree)}


def compile_tree(tree: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", *(str(tree / p) for p in LAYERS)],
        check=True,
        env=environment(tree),
        stdout=subprocess.DEVNULL,
    )


def console(tree: Path) -> str:
    """The code that runs ``tree``'s console script, as ``python -c`` runs it."""
    scripts = tomllib.loads((tree / "pyproject.toml").read_text())["project"]["scripts"]
    module, function = scripts["backscroll"].split(":")
    return CONSOLE.format(module=module, function=function)


def check_code(tree: Path) -> None:
    """The interpreter run this way imports Backscroll from ``tree``, not from the one
    installed in the virtualenv."""
    done = subprocess.run(
        [sys.executable, "-c", "import backscroll, eventlog; print(backscroll.__file__)"],
        cwd=tree,
        env=environment(tree),
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(done.stdout.strip()).is_relative_to(tree), (tree, done.stdout)


def timed(argv: list[str], tree: Path) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one process."""
    start = time.perf_counter()
    child = subprocess.Popen(
        argv, cwd=tree, env=environment(tree), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    assert child.stderr is not None
    err = child.stderr.read()
    child.stderr.close()
    if child.returncode:
        raise RuntimeError(f"{argv} exited {child.returncode}: {err.decode(errors='replace')}")
    return wall, usage.ru_utime + usage.ru_stime


def instructions(argv: list[str], tree: Path) -> int:
    """User-space instructions one process executes (valgrind's count, ``I refs``)."""
    done = subprocess.run(
        [*COUNT, *argv],
        cwd=tree,
        env=environment(tree),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=True,
    )
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    assert found is not None, done.stderr
    return int(found.group(1).replace(",", ""))


def current_next(home: Path) -> bool:
    """``log/NEXT`` as this code writes it, with its checksum (6ef9f5b); True when it was
    not. A store cached before then holds the 8 bytes alone, which this code reads as no
    NEXT, finding the log's end by scanning the active segment: what such a store costs each
    status until its next append, not what a store of this code costs."""
    from base.fs import FileSystem
    from eventlog.folder import NEXT_NAME, write_next

    data = (home / "log" / NEXT_NAME).read_bytes()
    if len(data) != 8:
        return False
    write_next(FileSystem(), home / "log", int.from_bytes(data, "little"))
    return True


@contextlib.contextmanager
def catching_up(home: Path) -> Iterator[Path]:
    """``home`` as a daemon leaves it while it catches up: events in the log past the views,
    and the views' lock held (by a process of ours, for as long as this lasts)."""
    from eventlog.events import DaemonStarted
    from eventlog.log import Log

    log = Log(home / "log")
    for _ in range(3):
        log.append(DaemonStarted(pid=os.getpid(), ts_us=time.time_ns() // 1000))
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(home / "views" / "LOCK")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert holder.stdin is not None and holder.stdout is not None
    holder.stdout.readline()  # the lock is held
    try:
        yield home
    finally:
        holder.stdin.close()
        holder.wait()


def meaning_store(frames: int) -> tuple[Path, dict[str, Any]]:
    """The first ``frames`` frames of the small corpus, imported and embedded."""

    def build(home: Path) -> dict[str, Any]:
        from backscroll.store import MemoryStore

        say(f"building the meaning store: {frames:,} frames, embedded with the model")
        with open(corpus_file(*MEANING_CORPUS)) as lines:
            info = import_store(home, itertools.islice(lines, frames))
        start = time.perf_counter()
        with MemoryStore(home, write=True) as store:
            embedded = store.embed()
        return info | {"embedded": embedded, "embed_s": round(time.perf_counter() - start, 1)}

    from projector.embedder import MODEL_ID

    # Named for the model: a view another model made reads as none (projector.vectors).
    return cached(f"startup-meaning-n{frames}-{MODEL_ID}", build)


@contextlib.contextmanager
def meaning_socket(home: Path) -> Iterator[int]:
    """The daemon's meaning socket serving ``home``, from this tree; yields its pid."""
    server = subprocess.Popen(
        [sys.executable, "-c", SERVE, str(home)],
        cwd=REPO,
        env=environment(REPO),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert server.stdin is not None and server.stdout is not None
    server.stdout.readline()  # started: the model loads, then the socket is made
    socket_file = home / "run" / "meaning.sock"
    deadline = time.monotonic() + 120
    while not socket_file.exists():
        if time.monotonic() > deadline or server.poll() is not None:
            raise RuntimeError("the meaning socket did not come up")
        time.sleep(0.1)
    try:
        yield server.pid
    finally:
        server.stdin.close()
        server.wait()


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a running process so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="1a8df0e", help="git ref of the code before")
    parser.add_argument("--frames", type=int, default=130_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--word", default="error")
    parser.add_argument("--meaning-frames", type=int, default=300)
    args = parser.parse_args()

    for line in machine():
        say(line)
    say(
        f"$ .venv/bin/python -m bench.startup --before {args.before} --frames {args.frames} "
        f"--runs {args.runs} --word {args.word} --meaning-frames {args.meaning_frames}"
    )
    say(f"run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    words_store, info = search_store(args.frames)
    meaningful, meaning_info = meaning_store(args.meaning_frames)
    with (
        tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp,
        checkout(args.before) as old,
        catching_up(copy_store(words_store, Path(tmp) / "behind")) as behind,
        meaning_socket(copy_store(meaningful, Path(tmp) / "served")) as server,
    ):
        served, alone = Path(tmp) / "served", copy_store(meaningful, Path(tmp) / "alone")
        home = copy_store(words_store, Path(tmp) / "home")
        if current_next(home):
            say("the cache's log/NEXT predates its checksum: the copy's is written as now")
        active = max((home / "log").glob("*.seg"), default=None)
        size = active.stat().st_size / 2**20 if active else 0.0
        say(
            f"store: {info['frames']:,} frames ({info['disk_mb']:,.0f} MB, built "
            f"{info['built']}); active segment {size:.0f} MB of 64"
        )
        say(
            f"meaning store: {meaning_info['frames']:,} frames of the {MEANING_CORPUS[1]}-day "
            f"corpus, {meaning_info['embedded']:,} embedded in {meaning_info['embed_s']} s "
            f"(built {meaning_info['built']}); the daemon's meaning socket serves a copy"
        )
        rev = subprocess.run(
            ["git", "-C", str(old), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        say(f"before: {args.before} ({rev}) in a temporary worktree; after: {REPO}")
        trees = {"before": old, "after": REPO}
        for tree in trees.values():
            compile_tree(tree)
            check_code(tree)
        commands: dict[tuple[str, str], tuple[list[str], Path]] = {
            ("python -c pass", ""): ([sys.executable, "-c", "pass"], REPO)
        }
        for label, tree in trees.items():
            for extra in (["status"], ["search", args.word]):
                for where, suffix in ((home, ""), (behind, ", views behind")):
                    argv = [sys.executable, "-c", console(tree), *extra, "--home", str(where)]
                    commands[(f"backscroll {' '.join(extra)}{suffix}", label)] = (argv, tree)
        counted_commands = dict(commands)
        search = ["search", args.word]
        for name, label, where, extra in (
            (f"search {args.word}, meaning view, daemon", "after", served, []),
            (f"search {args.word} --words, meaning view", "after", served, ["--words"]),
            (f"search {args.word}, meaning view, no daemon", "fallback", alone, []),
        ):
            argv = [sys.executable, "-c", console(REPO), *search, *extra, "--home", str(where)]
            commands[(f"backscroll {name}", label)] = (argv, REPO)
        asked = ("backscroll " + f"search {args.word}, meaning view, daemon", "after")
        times: dict[tuple[str, str], list[tuple[float, float]]] = {key: [] for key in commands}
        say(f"load average at start: {load_average()}")
        server_cpu = 0.0
        for round_ in range(args.runs + 2):
            for key, (argv, tree) in commands.items():
                before_cpu = cpu_seconds(server)
                measured = timed(argv, tree)
                if round_ >= 2:  # two warm-up rounds
                    times[key].append(measured)
                    if key == asked:
                        server_cpu += cpu_seconds(server) - before_cpu
        say(f"load average at end: {load_average()}")
        say(
            f"the daemon's CPU for the questions it answered: {server_cpu / args.runs * 1e3:.1f} "
            f"ms a search (mean of {args.runs}; /proc/PID/stat, in clock ticks of "
            f"{1e3 / os.sysconf('SC_CLK_TCK'):.0f} ms)"
        )
        counted = (
            {key: instructions(argv, tree) for key, (argv, tree) in counted_commands.items()}
            if shutil.which("valgrind")
            else {}
        )
        say()
        report(times, args.runs)
        if counted:
            say()
            report_instructions(counted)
        say.write(RESULTS)


def report(times: dict[tuple[str, str], list[tuple[float, float]]], runs: int) -> None:
    base_wall = statistics.median(w for w, _ in times[("python -c pass", "")])
    base_cpu = statistics.median(c for _, c in times[("python -c pass", "")])
    say(f"median of {runs} runs, ms; x = the ratio to python -c pass in this run")
    say(f"{'command':50s} {'code':8s} {'wall':>8s} {'x':>6s} {'CPU':>8s} {'x':>6s}")
    worst = 0.0
    for (name, label), measured in times.items():
        wall = statistics.median(w for w, _ in measured)
        cpu = statistics.median(c for _, c in measured)
        ratios = (wall / base_wall, cpu / base_cpu)
        say(
            f"{name:50s} {label:8s} {wall * 1e3:8.1f} {ratios[0]:6.2f} {cpu * 1e3:8.1f} "
            f"{ratios[1]:6.2f}"
        )
        if label == "after":
            worst = max(worst, *ratios)
    for name in dict.fromkeys(name for name, label in times if (name, "before") in times):
        wall = [statistics.median(w for w, _ in times[(name, v)]) for v in ("after", "before")]
        cpu = [statistics.median(c for _, c in times[(name, v)]) for v in ("after", "before")]
        say(f"{name}: after / before {wall[0] / wall[1]:.2f} wall, {cpu[0] / cpu[1]:.2f} CPU")
    verdict = "met" if worst <= TARGET else "MISSED"
    say(
        f"target: after <= {TARGET:.0f}x python -c pass in wall and CPU time: {verdict} "
        f"(worst {worst:.2f}x; the fallback is not held to it)"
    )


def report_instructions(counted: dict[tuple[str, str], int]) -> None:
    base = counted[("python -c pass", "")]
    say(
        "instructions in user space (valgrind, one run each), millions; "
        "x = the ratio to python -c pass"
    )
    say(f"{'command':50s} {'code':8s} {'instr':>8s} {'x':>6s}")
    for (name, label), count in counted.items():
        say(f"{name:50s} {label:8s} {count / 1e6:8.1f} {count / base:6.2f}")


if __name__ == "__main__":
    main()
