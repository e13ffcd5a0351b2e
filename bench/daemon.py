"""The capture daemon as a whole process: CPU when idle, memory over many frames, bytes a frame.

    cd /work/main && .venv/bin/python -m bench.daemon
    (parts: --only idle,active,memory,bytes; shorter: --idle-seconds 20 --frames 1000
    --store-frames 30 --active-seconds 30)

Each part starts the private desktop of ``tests/desktop.py`` (Xvfb 1920×1080, openbox,
AT-SPI), a fresh home in a temporary folder, and the real daemon, ``python -m backscroll
start``, as a subprocess (the key goes to the file store, as for any home other than the
default one).

idle      An xterm of log lines and a zenity window of prose, nothing changing; the default
          config (poll 1 s, interval 30 s). Once the daemon has stored its first frame and
          2 s have passed, its CPU time (utime + stime of /proc/<pid>/stat, all threads) is
          read over ``--idle-seconds`` (60), with each thread's share from
          /proc/<pid>/task, named by ``py-spy dump`` when py-spy is on PATH or in
          ``--py-spy``. Baseline in the same 60 s: a bare python-xlib loop asking for the
          frontmost window once a second, the least a polling daemon can do. Then 30 s of
          ``py-spy record --gil`` say which functions the busy samples fall in. With the
          memory part, the same again after its last frame (5,000 frames in the log's open
          segment). Target <= 1 % of one core.
memory    ``config --poll 0.2 --min-interval 0``; four zenity windows of different documents
          (AX text, no OCR: frames are cheap) activated in turn every 0.12 s with ``xdotool
          windowactivate``, so every poll sees another title, until ``--frames`` (5,000)
          frames are stored. VmRSS (and RssAnon) from /proc/<pid>/status at 1, 500, 1,000,
          ..., frames, with the whole daemon's CPU and minor page faults per frame since the
          mark before, and resident memory by kind of mapping (/proc/<pid>/smaps). Target:
          RSS at 5,000 <= 1.2 × RSS at 500. When no frame is stored
          for 30 s while the windows keep switching, the daemon is stuck: its threads' stacks
          (``py-spy dump``) are printed and the run is repeated with the daemon started
          through ``import Xlib.threaded`` first (python-xlib with real locks), and says so.
bytes     ``config --poll 0.2 --min-interval 0.5``, the default thumbnails (480 px, q60,
          encrypted) and text (plain, redacted). Two xterms (``dpkg -l`` and ``man bash``, a
          new page written before each visit: OCR) and three zenity windows (excerpts of
          GPL-3, Apache-2.0 and GFDL-1.3 from /usr/share/common-licenses: AT-SPI) are visited
          in turn, xterm and zenity alternating, so each frame is an app change, until
          ``--store-frames`` (100) frames are stored. After the daemon stops, bytes under
          thumbs/, log/ and views/ (as ``status`` counts them, and as allocated on disk) over
          the frame count, beside the same at half the frames (the growth from there on is
          the cost of one more frame without the fixed start-up files) and the spec's own
          status example, 38.0 MB for 1,842 frames. Also: the log as it will be once its
          segment is sealed (zstd, at the next UTC day), the views by kind of Tantivy file, and
          the same screens' thumbnails at other sizes, qualities and in WebP. Target <= 10 KB
          a frame.

active    A person reading with search by meaning on (the default config, the model
          installed): a new page every ``VISIT_SECONDS`` (10 s) for ``--active-seconds``
          (120), each a zenity window of the next ~2.5 KB of the licences in
          /usr/share/common-licenses (AT-SPI text, so every page has passages to embed),
          the one before closed. Once the daemon has embedded its first frame (the model
          loaded), the whole daemon's CPU over the session, and its embedding thread's (the
          one at nice 19), with the frames stored and embedded. Target <= 2.5 % of a core.

Writes ``bench/results/daemon.txt`` with the machine and the load average before and after;
this machine is shared (2 cores), so loads above 2 mean the figures include waiting for a CPU.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench._proc import cpu_seconds
from bench._stats import load_average, percentile
from bench.capture import LOG_LINES, PROSE, machine, tree
from headless import Desktop, Window, headless_desktop, wait_for

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "daemon.txt"
LICENCES = Path("/usr/share/common-licenses")
SPEC_BYTES, SPEC_FRAMES = 38.0e6, 1842  # the spec's status example

say_lines: list[str] = []


def say(line: str = "") -> None:
    """Print a line of the report now (the runs are long) and keep it for the file."""
    print(line, flush=True)
    say_lines.append(line)


# -- /proc -----------------------------------------------------------------------------------


def minor_faults(pid: int) -> int:
    """Minor page faults of a process so far (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])


def threads(pid: int) -> dict[int, float]:
    """CPU seconds of each thread of ``pid`` so far."""
    found = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            found[int(tid)] = cpu_seconds(f"{pid}/task/{tid}")
    return found


def memory(pid: int) -> dict[str, int]:
    """VmRSS, RssAnon, RssFile and VmHWM of ``pid`` in kB."""
    values = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
                values[key] = int(rest.split()[0])
    return values


def rss_by_mapping(pid: int, home: Path) -> dict[str, int]:
    """Resident kB of ``pid`` by kind of mapping, from /proc/<pid>/smaps."""
    kinds: dict[str, int] = {}
    kind = "other"
    views = str(home / "views")
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split(maxsplit=5)
            if len(head) >= 5 and "-" in head[0] and ":" in head[3]:  # a mapping's header
                path = head[5].strip() if len(head) > 5 else ""
                if not path or path.startswith("[anon"):
                    kind = "anonymous (malloc arenas, Rust heaps)"
                elif path == "[heap]":
                    kind = "[heap] (main arena)"
                elif path.startswith(views):
                    kind = "views/ files (Tantivy mmap)"
                elif ".so" in path:
                    kind = "shared libraries"
                else:
                    kind = "other (stacks, files)"
            elif line.startswith("Rss:"):
                kinds[kind] = kinds.get(kind, 0) + int(line.split()[1])
    return kinds


# -- the daemon ------------------------------------------------------------------------------


class Running:
    """``python -m backscroll start`` on a desktop whose environment is ``env`` (X11's
    ``desk.env``, or a sway desktop's ``daemon_env``), with its home and log file."""

    def __init__(self, env: dict[str, str], folder: Path, *config: str) -> None:
        self.home = folder / "home"
        self.log = folder / "daemon.log"
        caller = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
        self.env = {**caller, **env, "BACKSCROLL_HOME": str(self.home)}
        self.process: subprocess.Popen[bytes] | None = None
        if config:
            self.cli("config", *config)

    def cli(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "backscroll", *args],
            env=self.env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"backscroll {' '.join(args)} failed: {done.stderr.strip()}")
        return done.stdout

    def start(self, *, xlib_threaded: bool = False) -> int:
        """Start the daemon; ``xlib_threaded`` first imports ``Xlib.threaded``, which gives
        python-xlib real locks, so threads may share one X connection (see memory_run)."""
        command = ["-m", "backscroll", "start"]
        if xlib_threaded:
            command = [
                "-c",
                "import Xlib.threaded; from backscroll.cli import main; main()",
                "start",
            ]
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, *command],
                env=self.env,
                cwd=REPO,
                stdout=log,
                stderr=log,
            )
        wait_for(lambda: self.beat() is not None, "the daemon's heartbeat", 30)
        return self.process.pid

    def beat(self) -> dict[str, Any] | None:
        """The heartbeat (None until written, or while half written)."""
        try:
            data: dict[str, Any] = json.loads((self.home / "daemon.json").read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        return data

    def frames(self) -> int:
        """Frames stored by this run (the heartbeat's per-run reason counts)."""
        beat = self.beat()
        if self.process is not None and self.process.poll() is not None:
            raise SystemExit(f"the daemon exited ({self.process.returncode}); see {self.log}")
        return sum(beat.get("reasons", {}).values()) if beat else 0

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def status(self) -> dict[str, Any]:
        result: dict[str, Any] = json.loads(self.cli("status", "--json"))
        return result


@contextlib.contextmanager
def daemon_on(desk: Desktop, *config: str) -> Iterator[Running]:
    with tempfile.TemporaryDirectory(prefix="bench-daemon-") as folder:
        running = Running(desk.env, Path(folder), *config)
        try:
            yield running
        finally:
            running.stop()


def more_frames(daemon: Running, than: int) -> bool:
    return daemon.frames() > than


def settle_windows(desk: Desktop) -> None:
    # A GTK window takes the focus a moment after it maps: let the desktop settle, or it
    # steals the activation made next (as tests/test_daemon.py does).
    time.sleep(1.0)
    desk.settle()


# -- idle CPU --------------------------------------------------------------------------------

PROBE_LOOP = """
import sys, time
from capture.probe import X11Probe
probe = X11Probe(sys.argv[1])
deadline = time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline:
    probe.frontmost()
    time.sleep(1.0)
"""


def idle(seconds: float, py_spy: str | None) -> None:
    say(f"## CPU while the screen does not change for {seconds:.0f} s (target <= 1 % of a core)")
    say()
    with headless_desktop() as desk, daemon_on(desk) as daemon:
        term = desk.open_xterm(LOG_LINES, title="server log")
        dialog = desk.open_zenity_text(PROSE, title="notes")
        desk.activate(term.window_id)
        desk.activate(dialog.window_id)
        settle_windows(desk)
        daemon.start()
        wait_for(lambda: daemon.frames() >= 1, "the first frame", 60)
        time.sleep(2.0)
        percent = measure_idle(desk, daemon, seconds, py_spy)
    say(f"RESULT idle CPU {percent:.2f} % of one core, fresh home (target <= 1 %)")
    say()


def measure_idle(desk: Desktop, daemon: Running, seconds: float, py_spy: str | None) -> float:
    """The daemon's CPU over ``seconds`` of a still screen, by thread, beside a bare probe
    loop run over the same seconds; then where its time goes, by ``py-spy record``."""
    assert daemon.process is not None
    pid = daemon.process.pid
    python_threads = thread_names(py_spy, pid)
    names = dict(python_threads)
    frames_before = daemon.frames()
    baseline = subprocess.Popen(
        [sys.executable, "-c", PROBE_LOOP, desk.display, str(seconds + 5)],
        env={**os.environ, **desk.env},
        cwd=REPO,
    )
    time.sleep(0.5)  # past its imports
    log_start = daemon.log.stat().st_size
    before, base_before, tasks_before = cpu_seconds(pid), cpu_seconds(baseline.pid), threads(pid)
    started = time.monotonic()
    samples = []  # CPU % of each 5 s stretch: is the cost steady, or bursts?
    last, last_t = before, started
    while time.monotonic() - started < seconds:
        time.sleep(min(5.0, seconds - (time.monotonic() - started)))
        now, now_t = cpu_seconds(pid), time.monotonic()
        samples.append(100 * (now - last) / (now_t - last_t))
        last, last_t = now, now_t
    elapsed = time.monotonic() - started
    after, base_after, tasks_after = cpu_seconds(pid), cpu_seconds(baseline.pid), threads(pid)
    for tid in tasks_after:
        names.setdefault(tid, comm(pid, tid))
    baseline.wait()
    frames_after = daemon.frames()
    beat = daemon.beat() or {}
    with open(daemon.log, "rb") as log:
        log.seek(log_start)
        events = [line.decode(errors="replace").split(": ", 1)[-1].strip() for line in log]
    percent = 100 * (after - before) / elapsed
    say(f"{'process':44s} {'CPU s':>8s} {'% core':>8s}")
    say(f"{'daemon (all threads)':44s} {after - before:8.2f} {percent:8.2f}  over {elapsed:.1f} s")
    base = 100 * (base_after - base_before) / elapsed
    say(f"{'baseline: bare probe loop, 1 s':44s} {base_after - base_before:8.2f} {base:8.2f}")
    say()
    say(f"{'daemon thread (tid name)':44s} {'CPU s':>8s} {'% core':>8s}")
    ended = 0.0
    for tid, used in sorted(tasks_after.items(), key=lambda item: -item[1]):
        spent = used - tasks_before.get(tid, 0.0)
        if spent > 0 or tid in python_threads:
            say(f"{f'{tid} {names[tid]}':44s} {spent:8.2f} {100 * spent / elapsed:8.2f}")
    ended = (after - before) - sum(
        used - tasks_before.get(tid, 0.0) for tid, used in tasks_after.items()
    )
    say(f"{'threads that ended within the window':44s} {ended:8.2f} {100 * ended / elapsed:8.2f}")
    say(f"(threads started within it: {len(set(tasks_after) - set(tasks_before))})")
    ordered = sorted(samples)
    say()
    say(
        f"per 5 s: p50 {percentile(ordered, 0.5):.2f} %, p90 {percentile(ordered, 0.9):.2f} %, "
        f"max {ordered[-1]:.2f} %: " + " ".join(f"{s:.1f}" for s in samples)
    )
    say(f"frames stored during the window: {frames_after - frames_before} (expected 0)")
    say(f"daemon log lines during the window: {len(events)} {sorted(set(events))[:4]}")
    say(f"last outcome: {beat.get('last_outcome')}; poll {beat.get('poll_seconds')} s")
    if py_spy:
        profile(py_spy, pid, min(30.0, seconds))
    return percent


def profile(py_spy: str, pid: int, seconds: float) -> None:
    """Where the busy samples of ``py-spy record`` fall, by function (after the window, so
    sampling does not add to the CPU measured)."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "raw.txt"
        subprocess.run(
            [
                *(py_spy, "record", "--pid", str(pid), "--duration", str(int(seconds))),
                *("--rate", "200", "--format", "raw", "--output", str(out), "--threads", "--gil"),
            ],
            capture_output=True,
            check=False,
        )
        stacks = out.read_text().splitlines() if out.exists() else []
    inclusive: dict[str, int] = {}
    own: dict[str, int] = {}
    busy = 0
    for line in stacks:
        stack, _, count_text = line.rpartition(" ")
        count = int(count_text)
        frames = [_frame(f) for f in stack.split(";") if not f.startswith(_PLUMBING)]
        if not frames:
            continue
        busy += count
        own[frames[-1]] = own.get(frames[-1], 0) + count
        for frame in set(frames):
            inclusive[frame] = inclusive.get(frame, 0) + count
    say()
    say(
        f"py-spy record --gil, {seconds:.0f} s at 200 Hz: {busy} samples holding the GIL "
        f"({busy / 200:.2f} s)"
    )
    say(f"{'function (inclusive)':78s} {'samples':>8s} {'share':>6s}")
    for frame, count in sorted(inclusive.items(), key=lambda i: -i[1])[:14]:
        say(f"{frame[:78]:78s} {count:8d} {100 * count / max(1, busy):5.0f}%")
    say(f"{'function (self)':78s}")
    for frame, count in sorted(own.items(), key=lambda i: -i[1])[:8]:
        say(f"{frame[:78]:78s} {count:8d} {100 * count / max(1, busy):5.0f}%")


# Frames every stack shares (thread start-up, the CLI's dispatch): no information.
_PLUMBING: tuple[str, ...] = ("process ", "thread (", "Thread.", "Thread._", "<module>", "_run_")
_PLUMBING += ("main (typer", "Typer.", "Command.", "Context.", "BaseCommand.", "Group.")


def _frame(text: str) -> str:
    # py-spy's raw frames are "function (file.py:line)"; lines differ within one function.
    name, _, where = text.partition(" (")
    return f"{name} ({where.rsplit(':', 1)[0]})" if where else name


def thread_names(py_spy: str | None, pid: int) -> dict[int, str]:
    """Python thread names by native thread id, from ``py-spy dump`` (empty without py-spy)."""
    if not py_spy:
        return {}
    done = subprocess.run(
        [py_spy, "dump", "--pid", str(pid)], capture_output=True, text=True, check=False
    )
    names = {}
    for line in done.stdout.splitlines():
        # Thread 9706 (idle): "MainThread"
        if line.startswith("Thread "):
            parts = line.split()
            with contextlib.suppress(ValueError, IndexError):
                tid = int(parts[1], 0)
                names[tid] = line.split('"')[1] if '"' in line else parts[2]
    return names


def comm(pid: int, tid: int) -> str:
    try:
        with open(f"/proc/{pid}/task/{tid}/comm") as f:
            return f.read().strip()
    except FileNotFoundError:
        return "(ended)"


# -- memory ----------------------------------------------------------------------------------

SWITCH_SECONDS = 0.12  # under the 0.2 s poll: every poll sees another of the four windows


def documents() -> list[tuple[str, str]]:
    """Four real documents (title, text) of about 5 KB, for zenity windows."""
    found = []
    for name in ("GPL-3", "Apache-2.0", "GFDL-1.3", "Artistic"):
        path = LICENCES / name
        text = path.read_text(errors="replace")[:5000] if path.exists() else PROSE
        found.append((f"{name.split('-')[0]} licence notes", text))
    return found


# -- an active session, embedding on ----------------------------------------------------------

VISIT_SECONDS = 10.0
PAGE_CHARS = 2500


def licence_pages() -> list[tuple[str, str]]:
    """The licences' text in pages of ~``PAGE_CHARS``, cut at a line, each its own title."""
    found: list[tuple[str, str]] = []
    for name in ("GPL-3", "Apache-2.0", "GFDL-1.3", "Artistic", "LGPL-3", "MPL-2.0"):
        path = LICENCES / name
        if not path.exists():
            continue
        text, page = path.read_text(errors="replace"), ""
        for line in text.splitlines(keepends=True):
            page += line
            if len(page) >= PAGE_CHARS:
                found.append((f"{name} page {len(found) + 1}", page))
                page = ""
    return found


def nice(pid: int, tid: int) -> int:
    with open(f"/proc/{pid}/task/{tid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[16])


def active(seconds: float) -> None:
    say(
        f"## CPU over an active session, search by meaning on: a new page every "
        f"{VISIT_SECONDS:.0f} s for {seconds:.0f} s (target <= 2.5 % of a core)"
    )
    say()
    book = licence_pages()
    with headless_desktop() as desk, daemon_on(desk) as daemon:
        shown = desk.open_zenity_text(book[0][1], book[0][0])
        settle_windows(desk)
        pid = daemon.start()
        wait_for(lambda: daemon.status().get("meaning_frames", 0) >= 1, "the first vectors", 120)
        frames0, embedded0 = daemon.frames(), daemon.status()["meaning_frames"]
        before, tasks_before = cpu_seconds(pid), threads(pid)
        started = time.monotonic()
        visits = 0
        while time.monotonic() - started < seconds:
            visits += 1
            title, text = book[visits % len(book)]
            old, shown = shown, desk.open_zenity_text(text, title)
            desk.close(old)
            time.sleep(max(0.0, started + visits * VISIT_SECONDS - time.monotonic()))
        elapsed = time.monotonic() - started
        after, tasks_after = cpu_seconds(pid), threads(pid)
        # What the last pages left to embed, waited for outside the window: each page's
        # work is then counted once, in the window or not at all.
        time.sleep(5.0)
        frames, embedded = daemon.frames() - frames0, daemon.status()["meaning_frames"] - embedded0
        lowest = [tid for tid in tasks_after if nice(pid, tid) == 19]
    spent = after - before
    meaning = sum(tasks_after[t] - tasks_before.get(t, 0.0) for t in lowest)
    say(f"{'process':44s} {'CPU s':>8s} {'% core':>8s}")
    share, part = 100 * spent / elapsed, 100 * meaning / elapsed
    say(f"{'daemon (all threads)':44s} {spent:8.2f} {share:8.2f}  over {elapsed:.1f} s")
    say(f"{'of which the embedding thread (nice 19)':44s} {meaning:8.2f} {part:8.2f}")
    say()
    say(
        f"{visits} pages shown; {frames} frames stored and {embedded} embedded in the window; "
        f"{meaning * 1000 / max(embedded, 1):.0f} ms of the embedding thread a frame"
    )
    say(f"RESULT active CPU {share:.2f} % of a core with embedding on (target <= 2.5 %)")
    say()


STALL_SECONDS = 30.0  # no new frame for this long while windows keep switching: stuck


def memory_run(frames: int, idle_seconds: float, py_spy: str | None) -> None:
    say(f"## Resident memory over {frames:,} frames (target RSS at 5,000 <= 1.2 x at 500)")
    say()
    if memory_attempt(frames, idle_seconds, py_spy, xlib_threaded=False):
        return
    # The daemon shares one python-xlib connection between the probe loop (frontmost) and
    # the capture worker (visible_windows), and python-xlib's locks are no-ops unless
    # Xlib.threaded is imported first: a reply read by the wrong thread leaves the other
    # waiting forever. Measure the memory with that one import added, and say so.
    say()
    say("### again, the daemon started with `import Xlib.threaded` first (real locks)")
    say()
    memory_attempt(frames, idle_seconds, py_spy, xlib_threaded=True)


def memory_attempt(
    frames: int, idle_seconds: float, py_spy: str | None, xlib_threaded: bool
) -> bool:
    """One run to ``frames`` frames; False (with the daemon's stacks) when it got stuck."""
    marks = sorted(m for m in {1, 100, 500, *range(1000, frames + 1, 1000), frames} if m <= frames)
    with (
        headless_desktop() as desk,
        daemon_on(desk, "--poll", "0.2", "--min-interval", "0") as daemon,
    ):
        windows = [desk.open_zenity_text(text, title) for title, text in documents()]
        for window in windows:
            desk.activate(window.window_id)
        settle_windows(desk)
        pid = daemon.start(xlib_threaded=xlib_threaded)
        say(
            f"{'frames':>7s} {'VmRSS kB':>9s} {'RssAnon':>9s} {'RssFile':>9s} {'s':>7s} "
            f"{'/s':>6s} {'CPU ms/frame':>13s} {'faults/frame':>13s}"
        )
        started = time.monotonic()
        rss: dict[int, int] = {}
        mappings: dict[int, dict[str, int]] = {}
        switches = 0
        last_print = (0, started, cpu_seconds(pid), minor_faults(pid))
        next_mark = 0
        progress = (0, started)
        while next_mark < len(marks):
            desk.activate(windows[switches % len(windows)].window_id)
            switches += 1
            time.sleep(SWITCH_SECONDS)
            stored = daemon.frames()
            now = time.monotonic()
            if stored > progress[0]:
                progress = (stored, now)
            elif now - progress[1] > STALL_SECONDS:
                stuck(daemon, py_spy, stored, now - started, switches)
                return False
            while next_mark < len(marks) and stored >= marks[next_mark]:
                values = memory(pid)
                used, faulted = cpu_seconds(pid), minor_faults(pid)
                # The whole daemon's CPU and page faults since the last mark, per frame:
                # capture, indexing and the probe loop together.
                new = max(1, stored - last_print[0])
                rate = (stored - last_print[0]) / max(1e-9, now - last_print[1])
                cpu_ms = (used - last_print[2]) * 1000 / new
                faults = (faulted - last_print[3]) / new
                last_print = (stored, now, used, faulted)
                rss[marks[next_mark]] = values["VmRSS"]
                mappings[marks[next_mark]] = rss_by_mapping(pid, daemon.home)
                say(
                    f"{stored:7d} {values['VmRSS']:9d} {values['RssAnon']:9d} "
                    f"{values['RssFile']:9d} {now - started:7.0f} {rate:6.2f} "
                    f"{cpu_ms:13.1f} {faults:13,.0f}"
                )
                next_mark += 1
        elapsed = time.monotonic() - started
        final = memory(pid)
        stored = daemon.frames()
        lag = daemon.status()
        say()
        say(
            f"{stored:,} frames in {elapsed:.0f} s ({stored / elapsed:.2f}/s) from {switches:,} "
            f"window switches; VmHWM {final['VmHWM']} kB; views trail the log by "
            f"{lag.get('views_lag', '?')} events"
        )
        low = 500 if 500 in rss else min(rss)
        ratio = rss[marks[-1]] / rss[low]
        say()
        say(f"{'resident kB by mapping':44s} " + " ".join(f"{m:>8,d}" for m in mappings))
        for kind in sorted(mappings[marks[-1]], key=lambda k: -mappings[marks[-1]][k]):
            say(f"{kind:44s} " + " ".join(f"{by.get(kind, 0):8,d}" for by in mappings.values()))
        say()
        say(
            f"RESULT RSS {rss[marks[-1]] / 1024:.1f} MB at {marks[-1]:,} frames / "
            f"{rss[low] / 1024:.1f} MB at {low:,} = {ratio:.3f} (target <= 1.2)"
        )
        if idle_seconds:
            # The same still screen as the idle part, now with thousands of frames in the
            # log's open segment: the default poll again, and the views caught up.
            daemon.cli("config", "--poll", "1", "--min-interval", "2")
            time.sleep(5.0)
            say()
            say(f"### CPU while still, {stored:,} frames in the log, default poll 1 s")
            say()
            segments = [f for f in (daemon.home / "log").iterdir() if f.is_file()]
            size = sum(f.stat().st_size for f in segments)
            say(f"log folder: {size:,} bytes in {len(segments)} files")
            say()
            percent = measure_idle(desk, daemon, idle_seconds, py_spy)
            say(f"RESULT idle CPU {percent:.2f} % of a core with {stored:,} frames (target <= 1 %)")
    say()
    return True


def stuck(daemon: Running, py_spy: str | None, stored: int, seconds: float, switches: int) -> None:
    beat = daemon.beat() or {}
    age = (time.time() * 1e6 - int(beat.get("last_tick_us", 0))) / 1e6
    say()
    say(
        f"STUCK: no new frame for {STALL_SECONDS:.0f} s after {stored:,} frames "
        f"({seconds:.0f} s, {switches:,} switches); the probe loop last ticked {age:.0f} s ago"
    )
    if py_spy and daemon.process is not None:
        dump = subprocess.run(
            [py_spy, "dump", "--pid", str(daemon.process.pid)],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.splitlines()
        # Each thread's header and its innermost frames: where it waits.
        shown = 0
        for line in dump:
            if line.startswith("Thread "):
                shown = 0
                say(line)
            elif line.startswith("    ") and shown < 7:
                say(line)
                shown += 1


# -- bytes per frame -------------------------------------------------------------------------


def pages(argv: list[str], env: dict[str, str], rows: int) -> list[list[str]]:
    """The output of ``argv`` cut into screens of ``rows`` lines (120 columns)."""
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    lines = [line[:118] for line in done.stdout.splitlines()]
    return [lines[i : i + rows] for i in range(0, max(1, len(lines) - rows), rows)]


def usage(home: Path) -> dict[str, tuple[int, int]]:
    """Bytes (apparent, allocated) under thumbs/, log/ and views/."""
    found = {}
    for part in ("thumbs", "log", "views"):
        apparent = allocated = 0
        for root, _, files in os.walk(home / part):
            for name in files:
                with contextlib.suppress(FileNotFoundError):
                    st = os.lstat(os.path.join(root, name))
                    apparent += st.st_size
                    allocated += st.st_blocks * 512
        found[part] = (apparent, allocated)
    return found


def sealed_log_bytes(home: Path) -> tuple[int, int]:
    """(bytes of the open segments, bytes they will take once sealed): the log seals a
    segment at the first append of a new UTC day, as zstd-3 blocks (eventlog/format.py)."""
    from eventlog.format import HEADER, KIND_ACTIVE
    from eventlog.segment import Header, encode_sealed, scan_records

    open_bytes = sealed = 0
    for path in sorted((home / "log").glob("*.seg")):
        data = path.read_bytes()
        base = int(path.name.split(".")[0])
        records = [record for _, record in scan_records(data, HEADER.size, path.name).records]
        end = records[-1].offset + 1 if records else base
        open_bytes += len(data)
        sealed += len(encode_sealed(Header(KIND_ACTIVE, base, 0, end_offset=end), records))
    return open_bytes, sealed


THUMB_VARIANTS = (
    ("JPEG 480 q60 (the default)", "JPEG", 480, 60),
    ("JPEG 480 q50", "JPEG", 480, 50),
    ("JPEG 480 q40", "JPEG", 480, 40),
    ("JPEG 400 q60", "JPEG", 400, 60),
    ("JPEG 320 q60", "JPEG", 320, 60),
    ("JPEG 480 q60 grayscale", "L", 480, 60),
    ("WebP 480 q60", "WEBP", 480, 60),
    ("WebP 480 q50", "WEBP", 480, 50),
    ("WebP 400 q50", "WEBP", 400, 50),
)


def thumb_sizes(image: Any) -> dict[str, int]:
    """Bytes of the screen's thumbnail in other formats and settings, for comparison."""
    import io

    from capture import screen

    sizes = {}
    for name, kind, width, quality in THUMB_VARIANTS:
        if kind == "JPEG":
            sizes[name] = len(screen.thumbnail(image, width, quality))
            continue
        height = round(image.height * width / image.width)
        small = image.reduce(max(1, image.width // width)).resize((width, height))
        out = io.BytesIO()
        if kind == "L":
            small.convert("L").save(out, format="JPEG", quality=quality, optimize=True)
        else:
            small.save(out, format="WEBP", quality=quality, method=4)
        sizes[name] = len(out.getvalue())
    return sizes


def by_suffix(folder: Path) -> list[tuple[str, int]]:
    """Bytes under ``folder`` by file suffix (Tantivy's .store, .idx, .pos, .term, ...),
    largest first."""
    sizes: dict[str, int] = {}
    for root, _, files in os.walk(folder):
        for name in files:
            suffix = Path(name).suffix or name
            with contextlib.suppress(FileNotFoundError):
                sizes[suffix] = sizes.get(suffix, 0) + os.lstat(os.path.join(root, name)).st_size
    return sorted(sizes.items(), key=lambda item: -item[1])


def bytes_run(frames: int) -> None:
    from capture import screen

    say(f"## Bytes stored per frame, {frames} frames of real windows (target <= 10 KB)")
    say()
    env = {**os.environ, "MANWIDTH": "118", "COLUMNS": "118", "MAN_KEEP_FORMATTING": ""}
    screens = {
        "dpkg": pages(["dpkg", "-l"], env, 34),
        "man": pages(["man", "-P", "cat", "bash"], env, 34),
    }
    variants: dict[str, list[int]] = {name: [] for name, *_ in THUMB_VARIANTS}
    with (
        headless_desktop() as desk,
        daemon_on(desk, "--poll", "0.2", "--min-interval", "0.5") as daemon,
    ):
        terms = {
            name: desk.open_xterm(screens[name][0], title=title)
            for name, title in (("dpkg", "dpkg -l"), ("man", "man bash"))
        }
        docs = [
            desk.open_zenity_text(text, title)
            for (title, text) in documents()[:3]  # GPL-3, Apache-2.0, GFDL-1.3
        ]
        settle_windows(desk)
        daemon.start()
        wait_for(lambda: daemon.frames() >= 1, "the first frame", 60)
        half: dict[str, tuple[int, int]] | None = None
        half_frames = 0
        visits = misses = 0
        started = time.monotonic()
        try:
            while daemon.frames() < frames:
                window: Window
                if visits % 2 == 0:
                    name = ("dpkg", "man")[(visits // 2) % 2]
                    window = terms[name]
                    page = screens[name][(visits // 4 + 1) % len(screens[name])]
                    window.write("\x1b[2J\x1b[H" + "\n".join(page) + "\n")
                else:
                    window = docs[(visits // 2) % len(docs)]
                before = daemon.frames()
                desk.activate(window.window_id)
                visits += 1
                # OCR of an xterm takes 1-2 s on this machine: wait for this visit's frame.
                with contextlib.suppress(SystemExit):
                    wait_for(functools.partial(more_frames, daemon, before), "the frame", 15)
                misses = 0 if daemon.frames() > before else misses + 1
                if misses >= 4:
                    stuck(daemon, None, daemon.frames(), time.monotonic() - started, visits)
                    break
                image, _ = screen.grab(None, display=desk.display)
                for name, size in thumb_sizes(image).items():
                    variants[name].append(size)
                time.sleep(0.6)  # past min_interval, so the next visit is not debounced
                if half is None and daemon.frames() >= frames // 2:
                    time.sleep(3.0)  # the projector indexes new frames within 2 s
                    half, half_frames = usage(daemon.home), daemon.frames()
        finally:
            screen.close()
        elapsed = time.monotonic() - started
        daemon.stop()
        status = daemon.status()
        end = usage(daemon.home)
        open_log, sealed_log = sealed_log_bytes(daemon.home)
        views = by_suffix(daemon.home / "views")
    stored = status["frames"]
    sources = status["text_sources"]
    say(
        f"{stored} frames ({sources}) from {visits} visits in {elapsed:.0f} s; "
        f"status says {status['total_bytes'] / 1e6:.2f} MB"
    )
    say()
    header = f"{'part':10s} {'bytes':>11s} {'B/frame':>9s} {'on disk':>11s} {'B/frame':>9s}"
    say(header + f" {'growth/frame after ' + str(half_frames):>28s}")
    total = [0, 0, 0]
    for part in ("thumbs", "log", "views"):
        apparent, allocated = end[part]
        grown = (apparent - half[part][0]) / max(1, stored - half_frames) if half else 0.0
        total[0] += apparent
        total[1] += allocated
        total[2] += apparent - (half[part][0] if half else 0)
        say(
            f"{part:10s} {apparent:11,d} {apparent / stored:9,.0f} {allocated:11,d} "
            f"{allocated / stored:9,.0f} {grown:28,.0f}"
        )
    growth = total[2] / max(1, stored - half_frames)
    say(
        f"{'total':10s} {total[0]:11,d} {total[0] / stored:9,.0f} {total[1]:11,d} "
        f"{total[1] / stored:9,.0f} {growth:28,.0f}"
    )
    spec = SPEC_BYTES / SPEC_FRAMES
    say(f"{'baseline: the spec status example, 38.0 MB / 1,842 frames':60s} {spec:9,.0f} B/frame")
    sealed_total = total[0] - open_log + sealed_log
    say(
        f"log once sealed (zstd-3 blocks, as at the next UTC day): {open_log:,} -> "
        f"{sealed_log:,} B ({sealed_log / stored:,.0f} B/frame); total then "
        f"{sealed_total / stored:,.0f} B/frame"
    )
    say(
        "views by kind of file: "
        + ", ".join(f"{suffix} {size / stored:,.0f}" for suffix, size in views[:8])
        + " B/frame"
    )
    say()
    say(f"thumbnail of the same screens, {len(variants[THUMB_VARIANTS[0][0]])} grabs")
    say(f"{'format':32s} {'mean B':>8s} {'p50':>8s} {'p90':>8s} {'max':>8s}")
    for name, sizes in variants.items():
        ordered = sorted(sizes)
        if ordered:
            say(
                f"{name:32s} {sum(ordered) / len(ordered):8,.0f} {percentile(ordered, 0.5):8,d} "
                f"{percentile(ordered, 0.9):8,d} {ordered[-1]:8,d}"
            )
    say(
        f"RESULT {total[0] / stored / 1024:.1f} KB a frame ({total[0] / stored:,.0f} B; "
        f"{growth / 1024:.1f} KB each after the first {half_frames}; "
        f"{sealed_total / stored / 1024:.1f} KB once the log is sealed) vs spec "
        f"{spec / 1024:.1f} KB (target <= 10 KB)"
    )
    say()


# -- main ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.daemon", description=__doc__)
    parser.add_argument("--only", default="idle,active,memory,bytes", help="parts, comma-separated")
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--frames", type=int, default=5000, help="frames for the memory part")
    parser.add_argument("--store-frames", type=int, default=100, help="frames for bytes a frame")
    parser.add_argument("--active-seconds", type=float, default=120.0)
    parser.add_argument("--py-spy", default=shutil.which("py-spy"), help="py-spy binary")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    parts = set(args.only.split(","))
    lines = [*machine(), tree()]
    for line in lines:
        say(line)
    say()
    say("$ .venv/bin/python -m bench.daemon " + " ".join(argv or sys.argv[1:]))
    say()
    if "idle" in parts:
        idle(args.idle_seconds, args.py_spy)
    if "bytes" in parts:
        bytes_run(args.store_frames)
    if "active" in parts:
        active(args.active_seconds)
    if "memory" in parts:
        memory_run(args.frames, args.idle_seconds if "idle" in parts else 0, args.py_spy)
    say(f"load average after: {load_average()}")
    if os.getloadavg()[0] > (os.cpu_count() or 1):
        say("(more runnable work than cores: the figures include waiting for a CPU)")
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text("\n".join(say_lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
