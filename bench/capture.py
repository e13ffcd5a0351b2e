"""Capture: the cost of each step of a frame, on the headless test desktop.

    cd /work/main && .venv/bin/python -m bench.capture

Starts the private desktop of ``tests/desktop.py`` (Xvfb 1920×1080, openbox, AT-SPI),
opens an xterm of 36 log lines and a zenity --text-info window of prose, and times each
step the daemon takes for a frame: the probe, the 1080p grab, the signature and its
comparison, the thumbnail (with its size), the accessibility read and OCR of a window
region. Baselines run in the same process: one bare X round trip (what the probe is made
of) and Tesseract on a blank 40×20 image (process start and model load, paid by every
OCR call). When ``tesserocr`` is importable (the ``ocr`` extra installs it) it is timed too,
in this process (``python -m bench.ocr`` times the daemon's OCR engine itself).

Then a whole frame without OCR, end to end, on the zenity window (its text comes from
AT-SPI, so no OCR runs): ``X11Probe.frontmost()``, the daemon's own ``Camera.take`` (grab,
deny-list black-out check, signature, AX read, thumbnail) and ``Recorder.record``
(redaction, encryption, the thumbnail file and the ``FrameCaptured`` append, each
fsynced), in a fresh home with the default config (thumbnails encrypted) and again with
``encrypt_text`` on. As the daemon's capture worker takes them: in a fresh process, on a
thread of its own, frames 0.1 s apart (see FRAME_GAP_S for why this matters). Each step
is timed inside those same frames by wrapping the functions the daemon calls, with the
thread's CPU time, its page faults and the CPU the desktop's processes spent on the
frame; the baseline is a bare grab on the same kind of thread and spacing, and the
default frame again without the daemon's allocator set-up (glibc's defaults put every
grab's buffers on fresh pages), which shows what those page faults cost. Then the parts
alone:
``FrameCrypto.encrypt_thumb`` of the thumbnail, ``encrypt_text`` and ``blind_tokens`` of
2 KB of text, redaction, and ``record_frame`` inside ``Log.batch``, beside one fsynced
write of the same size to the same disk. Target: median <= 15 ms.

The code before (``--before REV``, default BEFORE: the commit before a frame was taken in
one call; "none" skips it) is checked out into a temporary ``git worktree`` and its own
frame benchmark run there, in a fresh process on the same desktop, in the same run. The
machine is shared and its load moves within a run (one run's p50 was twice another's), so
the two alternate, before-now-now-before, ... (``--pairs`` 4: eight runs of
``--frame-rounds`` frames a config): the first run of each is printed whole, then every
run's default frame (wall p50, its thread's CPU p50, the bare grab p50) and the ratios of
the medians now / before.

Writes the report to ``bench/results/capture.txt`` with the machine it ran on; this
machine is shared, so the load average is recorded before and after.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import itertools
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._checkout import checkout
from bench._proc import live_cpu_seconds
from bench._stats import percentile

# Before anything can load OpenMP (tesserocr links it in-process): see capture/ocr.py.
os.environ.setdefault("OMP_THREAD_LIMIT", "1")

from bench._corpus import cpu_model
from capture import ocr, screen
from capture.ax import AxReader
from capture.probe import Geometry, X11Probe
from headless import Desktop, headless_desktop, marked_processes

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "capture.txt"
BEFORE = "1a8df0e"  # the daemon that drove each step of a frame itself (backscroll/grabs.py)
DEFAULT_FRAME = "frame, thumb encrypted (default)"
BARE_GRAB = "baseline: a bare grab, same spacing"
FRAME_CPU = "  its CPU time in its thread"  # the first: the default frame's

LOG_LINES = [
    f"2026-09-01 16:42:{n:02d} ERROR request {n} failed: connect ECONNREFUSED 127.0.0.1:5432"
    if n % 4 == 0
    else f"2026-09-01 16:42:{n:02d} INFO  GET /api/v1/items?page={n} 200 in {3 * n} ms"
    for n in range(36)
]
PROSE = (
    "Backscroll keeps a private memory of what you saw on your screen. It captures a frame "
    "when the frontmost window changes, reads its text through the accessibility tree, and "
    "falls back to OCR when an application publishes nothing. Frames are encrypted at rest "
    "and never leave this machine.\n\n"
) * 6


def timed_ms(step: Callable[[], Any], count: int, warmup: int = 2) -> tuple[list[float], Any]:
    """``count`` timings of ``step`` in milliseconds (ascending) and its last result."""
    result = None
    for _ in range(warmup):
        result = step()
    times = []
    for _ in range(count):
        start = time.perf_counter()
        result = step()
        times.append((time.perf_counter() - start) * 1000)
    return sorted(times), result


def row(name: str, times: list[float], note: str = "") -> str:
    p50, p90, p99 = (percentile(times, q) for q in (0.5, 0.9, 0.99))
    figures = f"{len(times):6d} {p50:9.2f} {p90:9.2f} {p99:9.2f} {times[-1]:9.2f}"
    return f"{name:40s} {figures}  {note}".rstrip()


def crop(desk: Desktop, geometry: Geometry) -> Any:
    image, monitor = screen.grab(geometry, display=desk.display)
    left, top = geometry.x - monitor.left, geometry.y - monitor.top
    return image.crop((left, top, left + geometry.width, top + geometry.height))


def machine() -> list[str]:
    model = cpu_model()
    tesseract = subprocess.run(
        ["tesseract", "--version"], capture_output=True, text=True, check=False
    ).stdout.splitlines()[:1]
    return [
        f"machine: nproc {os.cpu_count()}, CPU {model}, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}",
        f"{' '.join(tesseract)}, load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}",
    ]


def tree() -> str:
    """The commit measured, and the tracked files changed on top of it (this repository is
    worked on by several people at once: the figures are of the working tree)."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
        return done.stdout.rstrip("\n")

    changed = [line[3:] for line in git("status", "--short").splitlines() if line[:2] != "??"]
    code = [path for path in changed if path.endswith(".py") and not path.startswith("bench/")]
    return f"tree: {git('rev-parse', '--short', 'HEAD')}" + (
        f" + uncommitted changes to {', '.join(code)}" if code else ""
    )


def bench(
    rounds: int, ocr_rounds: int, frame_rounds: int, before: str, pairs: int, command: str
) -> list[str]:
    lines = [*machine(), tree(), "", f"$ .venv/bin/python -m bench.capture {command}".rstrip(), ""]
    header = f"{'step (ms)':40s} {'count':>6s} {'p50':>9s} {'p90':>9s} {'p99':>9s} {'max':>9s}"
    lines.append(header)
    with headless_desktop() as desk:
        term = desk.open_xterm(LOG_LINES, title="server log")
        dialog = desk.open_zenity_text(PROSE, title="notes")
        probe = X11Probe(desk.display)
        reader = AxReader(desk.bus_address)
        try:
            desk.activate(term.window_id)
            desk.settle()
            term_front = probe.frontmost()
            desk.activate(dialog.window_id)
            desk.settle()
            front = probe.frontmost()
            assert term_front is not None and front is not None

            from Xlib import display

            x = display.Display(desk.display)
            times, _ = timed_ms(x.get_input_focus, rounds)
            x.close()
            lines.append(row("baseline: one X round trip", times))
            times, _ = timed_ms(probe.frontmost, rounds)
            lines.append(row("probe.frontmost()", times))
            times, found = timed_ms(probe.visible_windows, rounds)
            lines.append(row("probe.visible_windows()", times, f"{len(found)} windows"))

            times, (image, _monitor) = timed_ms(
                lambda: screen.grab(front.geometry, display=desk.display), rounds // 5
            )
            lines.append(row("grab 1920x1080 (mss + RGB image)", times))
            times, sig = timed_ms(lambda: screen.signature(image), rounds // 5)
            lines.append(row("signature 128x72", times))
            other = bytes(reversed(sig))
            times, _ = timed_ms(lambda: screen.difference(sig, other), rounds)
            lines.append(row("difference", times))
            times, jpeg = timed_ms(lambda: screen.thumbnail(image), rounds // 5)
            lines.append(row("thumbnail JPEG 480 q60", times, f"{len(jpeg)} bytes"))

            times, text = timed_ms(lambda: reader.window_text(front.pid), rounds)
            lines.append(row("AX read, zenity --text-info", times, f"{len(text)} chars"))
            times, _ = timed_ms(lambda: reader.window_text(term_front.pid), rounds)
            lines.append(row("AX read, xterm (no AT-SPI)", times, '"" as expected'))

            blank = screen_blank()
            times, _ = timed_ms(lambda: ocr.ocr_text(blank), ocr_rounds, warmup=1)
            lines.append(row("baseline: tesseract on a blank 40x20", times))
            for name, window in (("xterm", term_front), ("zenity", front)):
                region = crop(desk, window.geometry)
                size = f"{region.width}x{region.height}"
                times, text = timed_ms(
                    functools.partial(ocr.ocr_text, region), ocr_rounds, warmup=1
                )
                lines.append(row(f"OCR {name} {size} (pytesseract)", times, f"{len(text)} chars"))
                tesserocr_row = time_tesserocr(region, ocr_rounds)
                if tesserocr_row:
                    lines.append(row(f"OCR {name} {size} (tesserocr)", *tesserocr_row))

            lines += ["", "a frame without OCR, zenity in front (AX text), target p50 <= 15 ms", ""]
            lines.append(header)
            if before == "none":
                lines += frame_rows_in_child(desk, frame_rounds)
            else:
                nows, thens = [], []
                with checkout(before) as code:
                    for n in range(pairs * 2):
                        if n % 4 in (0, 3):
                            thens.append(frame_rows_in_child(desk, frame_rounds, code=code))
                        else:
                            nows.append(frame_rows_in_child(desk, frame_rounds))
                lines += nows[0]
                lines += ["", f"the same, the code before ({before}), in its own worktree", ""]
                lines.append(header)
                lines += thens[0]
                lines += ["", *before_and_after(before, thens, nows)]
            lines += ["", "baseline: the default frame with glibc's allocator defaults (before"]
            lines += ["the daemon kept freed memory: every grab's buffers on fresh pages)", ""]
            lines.append(header)
            lines += frame_rows_in_child(desk, frame_rounds, "glibc-defaults")
        finally:
            reader.close()
            probe.close()
            screen.close()
    if have_tesserocr():
        import tesserocr

        version = str(tesserocr.tesseract_version()).splitlines()[0]
        lines.append(f"(tesserocr {tesserocr.__version__}, bundling {version})")
    else:
        lines.append("(tesserocr is not installed: pip install tesserocr to time it too)")
    load = os.getloadavg()
    lines += ["", f"load average after: {' '.join(f'{v:.2f}' for v in load)}"]
    if load[0] > (os.cpu_count() or 1):
        lines.append("(more runnable work than cores: the figures include waiting for a CPU)")
    return lines


class Steps:
    """Times the functions the capture path calls, per frame, by wrapping them in place.

    ``wrap(owner, "name", label)`` replaces ``owner.name`` (a module global or an instance
    attribute the daemon looks up at call time) until ``restore``; each frame's time in a
    label is summed between ``end_frame`` calls.
    """

    def __init__(self) -> None:
        self.times: dict[str, list[float]] = {}
        self._frame: dict[str, float] = {}
        self._undo: list[tuple[Any, str, Any]] = []

    def wrap(self, owner: Any, attr: str, label: str) -> None:
        original = getattr(owner, attr)

        def call(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.add(label, (time.perf_counter() - start) * 1000)

        self._undo.append((owner, attr, owner.__dict__.get(attr, _MISSING)))
        setattr(owner, attr, call)

    def wrap_context(self, owner: Any, attr: str, label: str) -> None:
        """The same for a context manager: the time from entering it to leaving it."""
        original = getattr(owner, attr)

        @contextlib.contextmanager
        def call(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                with original(*args, **kwargs) as value:
                    yield value
            finally:
                self.add(label, (time.perf_counter() - start) * 1000)

        self._undo.append((owner, attr, owner.__dict__.get(attr, _MISSING)))
        setattr(owner, attr, call)

    def add(self, label: str, ms: float) -> None:
        self._frame[label] = self._frame.get(label, 0.0) + ms

    def discard_frame(self) -> None:
        self._frame = {}

    def end_frame(self) -> None:
        for label, ms in self._frame.items():
            self.times.setdefault(label, []).append(ms)
        self._frame = {}

    def restore(self) -> None:
        for owner, attr, before in reversed(self._undo):
            if before is _MISSING:
                delattr(owner, attr)
            else:
                setattr(owner, attr, before)
        self._undo = []


_MISSING = object()

# The breakdown of a frame, in the order the daemon takes the steps; indented labels are
# inside the one above them. "log write + fsync" is Log.batch less record_frame.
FRAME_STEPS = (
    "probe.frontmost()",
    "screen.grab 1920x1080",
    "visible_windows (deny black-out)",
    "screen.signature",
    "AX read (AT-SPI)",
    "screen.thumbnail",
    "event signature 32x18",
    "Log.batch (lock, record, fsync)",
    "  record_frame",
    "    redact text + title",
    "    encrypt_thumb",
    "    encrypt_text",
    "    blind_tokens",
    "    write_thumbnail (2 fsyncs)",
    "  log write + fsync",
)
TOP_LEVEL = [step for step in FRAME_STEPS if not step.startswith(" ")]


def real_text(size: int) -> str:
    """``size`` characters of real prose: the GPL's preamble, else the window's prose."""
    licence = Path("/usr/share/common-licenses/GPL-3")
    text = licence.read_text() if licence.exists() else PROSE * 4
    return text[:size]


# Whole frames are timed as the daemon takes them: in a fresh process set up as Daemon.run
# sets up its own, on a worker thread, at least poll_seconds (>= 0.2 s) apart; 0.1 s here.
# It matters: whether a frame's ~22 MB of buffers (mss's copy of the screen, its bytes(),
# the RGB image) land on pages already mapped depends on what the process did before. With
# glibc's defaults they did not in 7 of 8 fresh processes (~6,000 page faults a frame, as
# bench.daemon read from a daemon's /proc), while frames run in this process after the
# per-step timings above took none, and half the time.
FRAME_GAP_S = 0.1


def in_worker(job: Callable[[], Any]) -> Any:
    """``job()`` on a thread of its own, as the daemon's capture worker runs a frame."""
    result: list[Any] = []

    def run() -> None:
        try:
            result.append(job())
        except BaseException as exc:  # re-raised on the calling thread
            result.append(exc)
        finally:
            screen.close()  # this thread's mss connection

    thread = threading.Thread(target=run, name="bench-worker")
    thread.start()
    thread.join()
    if isinstance(result[0], BaseException):
        raise result[0]
    return result[0]


def faults() -> int:
    """Minor page faults of the calling thread so far."""
    return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt


def time_frames(
    camera: Any,
    recorder: Any,
    probe: X11Probe,
    config: Any,
    steps: Steps,
    rounds: int,
    desk_pids: list[int],
) -> tuple[list[float], list[float], list[int], list[float]]:
    """``rounds`` frames of the zenity window through ``Camera.take`` and
    ``Recorder.record``, FRAME_GAP_S apart: wall ms, this thread's CPU ms, page faults, and
    the desktop's CPU ms of each."""
    totals: list[float] = []
    cpu: list[float] = []
    faulted: list[int] = []
    outside: list[float] = []
    for n in range(rounds + 2):
        time.sleep(FRAME_GAP_S)
        desk_before, faults_before = live_cpu_seconds(desk_pids), faults()
        start, start_cpu = time.perf_counter(), time.thread_time()
        front = probe.frontmost()
        steps.add("probe.frontmost()", (time.perf_counter() - start) * 1000)
        assert front is not None
        seen = camera.take(front, "app_change", config)
        assert not isinstance(seen, str) and seen.text_source == "ax", seen
        recorder.record(seen, config)
        elapsed = (time.perf_counter() - start) * 1000
        del seen  # its pixels, freed as the daemon's worker frees them, before the next grab
        if n < 2:  # warm-up
            steps.discard_frame()
            continue
        totals.append(elapsed)
        cpu.append((time.thread_time() - start_cpu) * 1000)
        faulted.append(faults() - faults_before)
        outside.append((live_cpu_seconds(desk_pids) - desk_before) * 1000)
        steps.end_frame()
    return totals, cpu, faulted, outside


def frame_rows_in_child(
    desk: Desktop, rounds: int, variant: str = "daemon", code: Path = REPO
) -> list[str]:
    """``frame_rows`` in a fresh process, set up as ``Daemon.run`` sets up its own: the
    grabs and images of the steps above leave this process's allocator in a state a daemon
    does not start from. ``variant`` "glibc-defaults" skips the daemon's allocator set-up
    and times the default config alone: what the page faults cost. ``code``: the tree whose
    bench and code run (another revision's worktree: ``--before``)."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.capture", "--frame-child", str(rounds), desk.token, variant],
        env={**os.environ, **desk.env, "PYTHONPATH": str(code)},
        cwd=code,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the frame benchmark failed:\n{done.stderr[-4000:]}")
    lines: list[str] = json.loads(done.stdout)
    return lines


def before_and_after(rev: str, thens: list[list[str]], nows: list[list[str]]) -> list[str]:
    """Each run's default frame (wall and CPU p50) beside its bare grab, in the order run,
    and the ratios of the medians now / before."""

    def p50(lines: list[str], name: str) -> float:
        found = next(line for line in lines if line.startswith(name))
        return float(found[len(name) :].split()[1])

    def figures(lines: list[str]) -> tuple[float, float, float]:
        return p50(lines, DEFAULT_FRAME), p50(lines, FRAME_CPU), p50(lines, BARE_GRAB)

    rows = [
        "a frame without OCR, default config: the code before and now, alternating, same",
        "desktop, same run (p50 ms of each run; CPU: the frame's own thread)",
        "",
        f"{'run':24s} {'frame':>8s} {'CPU':>8s} {'bare grab':>10s} {'frame / grab':>13s}",
    ]
    runs = {"before": [figures(t) for t in thens], "now": [figures(n) for n in nows]}
    order = iter(["before", "now", "now", "before"] * len(thens))
    taken = {"before": iter(runs["before"]), "now": iter(runs["now"])}
    for name in itertools.islice(order, len(thens) + len(nows)):
        frame, cpu, grab = next(taken[name])
        label = f"before ({rev})" if name == "before" else "now"
        rows.append(f"{label:24s} {frame:8.2f} {cpu:8.2f} {grab:10.2f} {frame / grab:13.2f}")
    medians = {
        name: [statistics.median(run[i] for run in found) for i in range(3)]
        for name, found in runs.items()
    }
    then, now = medians["before"], medians["now"]
    rows += [
        "",
        f"medians: before {then[0]:.2f} ms (CPU {then[1]:.2f}), now {now[0]:.2f} ms (CPU "
        f"{now[1]:.2f}); now / before: frame {now[0] / then[0]:.2f}, CPU {now[1] / then[1]:.2f}, "
        f"frame / grab {(now[0] / now[2]) / (then[0] / then[2]):.2f}",
    ]
    return rows


def frame_child(rounds: int, token: str, variant: str) -> list[str]:
    """The child's side: the same desktop, found through the environment it was given."""
    from types import SimpleNamespace

    from capture.camera import keep_freed_memory

    if variant == "daemon":
        keep_freed_memory()  # the first thing Daemon.run does
    display = os.environ["DISPLAY"]
    desk = SimpleNamespace(display=display, env=dict(os.environ), token=token)
    probe = X11Probe(display)
    try:
        return frame_rows(desk, probe, rounds, variant)  # type: ignore[arg-type]
    finally:
        probe.close()


def frame_rows(desk: Desktop, probe: X11Probe, rounds: int, variant: str = "daemon") -> list[str]:
    """The daemon's own capture path timed end to end, then its parts (see the docstring)."""
    import backscroll.record
    import capture.camera
    import capture.redact
    from backscroll.crypto import FrameCrypto
    from backscroll.record import Recorder
    from backscroll.store import MemoryStore
    from capture.backends import backends
    from capture.camera import Camera

    lines = []
    front = probe.frontmost()
    assert front is not None and front.app == "Zenity", front
    desk_pids = marked_processes(desk.token)

    def bare_grabs() -> tuple[list[float], list[int]]:
        times, faulted = [], []
        for _ in range(rounds // 2 + 2):
            time.sleep(FRAME_GAP_S)
            before, start = faults(), time.perf_counter()
            screen.grab(front.geometry, display=desk.display)
            times.append((time.perf_counter() - start) * 1000)
            faulted.append(faults() - before)
        return sorted(times[2:]), sorted(faulted[2:])

    with tempfile.TemporaryDirectory(prefix="bench-frame-") as folder:
        store = MemoryStore(Path(folder) / "home", catch_up=False)
        camera = Camera(backends(environ=desk.env))
        recorder = Recorder(store)
        try:
            base = store.config
            crypto = store.ensure_crypto()
            assert isinstance(crypto, FrameCrypto)
            configs = [
                ("thumb encrypted (default)", base),
                ("thumb + text encrypted", base.replace(encrypt_text=True)),
            ]
            if variant == "glibc-defaults":
                configs = [("default, glibc defaults", base)]
            else:
                floor, floor_faults = in_worker(bare_grabs)
                note = f"{percentile(floor_faults, 0.5)} page faults (p50)"
                lines.append(row("baseline: a bare grab, same spacing", floor, note))
            for name, config in configs:
                steps = Steps()
                steps.wrap(screen, "grab", "screen.grab 1920x1080")
                steps.wrap(camera.backends.probe, "visible_windows", FRAME_STEPS[2])
                steps.wrap(screen, "signature", "screen.signature")
                steps.wrap(camera.backends.ax, "window_text", "AX read (AT-SPI)")
                steps.wrap(screen, "thumbnail", "screen.thumbnail")
                steps.wrap(capture.camera, "event_signature", "event signature 32x18")
                steps.wrap_context(store.log, "batch", "Log.batch (lock, record, fsync)")
                steps.wrap(backscroll.record, "record_frame", "  record_frame")
                steps.wrap(capture.redact, "redact", "    redact text + title")
                steps.wrap(crypto, "encrypt_thumb", "    encrypt_thumb")
                steps.wrap(crypto, "encrypt_text", "    encrypt_text")
                steps.wrap(crypto, "blind_tokens", "    blind_tokens")
                steps.wrap(backscroll.record, "write_thumbnail", "    write_thumbnail (2 fsyncs)")
                try:
                    job = functools.partial(
                        time_frames, camera, recorder, probe, config, steps, rounds, desk_pids
                    )
                    totals, cpu, faulted, outside = in_worker(job)
                finally:
                    steps.restore()
                desk_ms = sum(outside) / len(outside)
                batch = steps.times["Log.batch (lock, record, fsync)"]
                record = steps.times["  record_frame"]
                steps.times["  log write + fsync"] = [
                    b - r for b, r in zip(batch, record, strict=True)
                ]
                others = [
                    total - sum(steps.times[step][i] for step in TOP_LEVEL)
                    for i, total in enumerate(totals)
                ]
                note = f"wall clock; {percentile(sorted(faulted), 0.5)} page faults (p50)"
                lines.append(row(f"frame, {name}", sorted(totals), note))
                lines.append(row("  its CPU time in its thread", sorted(cpu), "thread_time"))
                for step in FRAME_STEPS:
                    if step in steps.times:
                        lines.append(row(f"  {step}", sorted(steps.times[step])))
                lines.append(row("    other (counters, Seen, ...)", sorted(others)))
                own = sum(cpu) / len(cpu)
                lines.append(
                    f"  CPU a frame, means: its thread {own:.1f} ms + the desktop's processes "
                    f"(Xvfb, AT-SPI, zenity) {desk_ms:.1f} ms = {own + desk_ms:.1f} ms"
                )

            if variant == "glibc-defaults":
                return lines
            lines += ["", "the same steps alone, on 2 KB of real text (the GPL-3 preamble)", ""]
            # Grabbed only now: an image held while the frames ran changed what the
            # allocator gave them (no page faults, half the time), unlike in the daemon.
            image, _monitor = screen.grab(front.geometry, display=desk.display)
            jpeg = screen.thumbnail(image)
            text = real_text(2048)
            times, sealed = timed_ms(lambda: crypto.encrypt_thumb(7, jpeg), rounds)
            note = f"{len(jpeg)} -> {len(sealed)} B, p50 {times[len(times) // 2] * 1000:.0f} us"
            lines.append(row("FrameCrypto.encrypt_thumb", times, note))
            times, sealed = timed_ms(lambda: crypto.encrypt_text(7, text), rounds)
            note = f"2048 -> {len(sealed)} B, p50 {times[len(times) // 2] * 1000:.0f} us"
            lines.append(row("FrameCrypto.encrypt_text, 2 KB", times, note))
            times, tokens = timed_ms(lambda: crypto.blind_tokens(text), rounds)
            lines.append(row("FrameCrypto.blind_tokens, 2 KB", times, f"{len(tokens)} tokens"))
            times, _ = timed_ms(lambda: capture.redact.redact(text), rounds)
            lines.append(row("redact, 2 KB", times))
            lines += record_rows(store, crypto, jpeg, text, rounds)
        finally:
            camera.close()
            store.close()
    return lines


def record_rows(store: Any, crypto: Any, jpeg: bytes, text: str, rounds: int) -> list[str]:
    """``record_frame`` in ``Log.batch`` (3 fsyncs: file, folder, log) beside bare fsyncs."""
    from backscroll.record import record_frame
    from capture.seen import Seen

    base = store.config
    seen = Seen(
        captured_us=time.time_ns() // 1000,
        app="Zenity",
        title="notes",
        text=text,
        text_source="ax",
        reason="app_change",
        jpeg=jpeg,
        signature=bytes(576),
    )

    def append(config: Any) -> None:
        with store.log.batch() as batch:
            record_frame(batch, seen, config, crypto, store.home)

    lines = []
    times, _ = timed_ms(lambda: append(base), rounds)
    lines.append(row("record_frame in Log.batch", times, "thumb encrypted"))
    times, _ = timed_ms(lambda: append(base.replace(encrypt_text=True)), rounds)
    lines.append(row("record_frame in Log.batch, text too", times))
    target = store.home / "fsync-baseline"
    payload = os.urandom(len(jpeg))

    def fsynced_write() -> None:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, payload)
            os.fsync(fd)
        finally:
            os.close(fd)

    times, _ = timed_ms(fsynced_write, rounds)
    lines.append(row("baseline: 1 fsynced write, thumb size", times, "same disk"))
    return lines


def screen_blank() -> Any:
    from PIL import Image

    return Image.new("RGB", (40, 20), "white")


def have_tesserocr() -> bool:
    try:
        import tesserocr  # noqa: F401
    except ImportError:
        return False
    return True


def time_tesserocr(region: Any, rounds: int) -> tuple[list[float], str] | None:
    if not have_tesserocr():
        return None
    import tesserocr

    tessdata = _tessdata()
    with tesserocr.PyTessBaseAPI(path=tessdata, lang="eng", psm=tesserocr.PSM.SINGLE_COLUMN) as api:

        def read() -> str:
            api.SetImage(ocr.prepare(region))
            return str(api.GetUTF8Text())

        times, text = timed_ms(read, rounds, warmup=1)
    return times, f"{len(text)} chars, in-process"


def _tessdata() -> str:
    for folder in sorted(Path("/usr/share/tesseract-ocr").glob("*/tessdata"), reverse=True):
        if (folder / "eng.traineddata").exists():
            return str(folder) + "/"
    binary = shutil.which("tesseract") or "tesseract"
    raise SystemExit(f"no eng.traineddata beside {binary}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.capture", description=__doc__)
    parser.add_argument("--rounds", type=int, default=500, help="timings of the cheap steps")
    parser.add_argument("--ocr-rounds", type=int, default=10, help="timings of each OCR step")
    parser.add_argument("--frame-rounds", type=int, default=200, help="timings of whole frames")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument(
        "--before", default=BEFORE, help='the git rev measured beside this tree, or "none"'
    )
    parser.add_argument("--pairs", type=int, default=4, help="before-and-now pairs of runs")
    parser.add_argument("--frame-child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.frame_child:
        rounds, token, variant = args.frame_child
        sys.stdout.write(json.dumps(frame_child(int(rounds), token, variant)))
        return 0
    command = " ".join(sys.argv[1:] if argv is None else argv)
    lines = bench(args.rounds, args.ocr_rounds, args.frame_rounds, args.before, args.pairs, command)
    report = "\n".join(lines) + "\n"
    sys.stdout.write(report)
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
