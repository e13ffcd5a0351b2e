"""The capture backends side by side: X11 (Xvfb + openbox), wlroots (headless sway) and
GNOME (headless GNOME Shell).

    cd /work/main && .venv/bin/python -m bench.backends [--frames 60] [--idle 30]
        [--rss-frames 5000] [--quick]

``--quick`` (20 frames, 10 s idle, RSS over 500 frames) checks that the script runs; the
committed result is of the defaults.

For each backend, on its own private desktop (``headless.x11``,
``headless.sway`` with sway and its windows run by an unprivileged user, and
``headless.gnome`` likewise), one zenity --text-info window of prose, focused,
with a foot or xterm terminal beside it (on GNOME, the zenity window alone: the frame is
the whole desktop whatever else it shows):

- **a frame without OCR**: the daemon's own ``Camera.take`` and ``Recorder.record`` (grab
  of the window's monitor, the visible windows for the deny-list black-out, signature,
  AT-SPI text, thumbnail, encryption, the fsynced append) after ``Camera.frontmost()``,
  ``--frames`` times, reason ``app_change`` so that no frame is skipped as a duplicate; the
  bare grab (``backends.screen.grab``) is timed alone beside it;
- **idle CPU**: ``backscroll start`` on the unchanged screen, its CPU over ``--idle`` seconds
  once its first frame is stored (target <= 1 % of a core on every backend);
- **resident memory over ``--rss-frames`` (5,000) frames**: ``backscroll start`` with
  ``config --poll 0.2 --min-interval 0`` and four zenity windows of documents (AT-SPI text,
  no OCR: frames are cheap), focused in turn every 0.12 s (xdotool on X11, swaymsg on sway,
  Alt+Tab on GNOME, which swaps the two most recent)
  until that many frames are stored; VmRSS (``bench.daemon.memory``) at 100, 500, every
  1,000 and the last frame. Target, as ``bench.daemon``'s: RSS at 5,000 <= 1.2 x RSS at 500
  (the ratio to 100 frames is printed beside it). The timed parts above run first, for both
  backends, so that this long part shares the machine with nothing of the run's own;
- on sway, **OCR at scale 1 and 2**: a foot terminal of real words, its window region grabbed
  with the output at scale 1, then 2 (the same text drawn with twice the pixels), read by
  Tesseract as the daemon reads it: the share of the distinct words found, and the OCR time.

The backends run in the same process one after the other, so the X11 rows are the baseline
of the sway and GNOME rows. Writes ``bench/results/backends.txt``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench._corpus import cpu_model
from bench._proc import cpu_seconds
from bench._stats import percentile
from bench.daemon import Running, documents, memory
from headless import gnome_desktop, headless_desktop, sway_desktop, wait_for
from headless.gnome import ALT, TAB

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results" / "backends.txt"
PROSE = (
    "The quarterly invoice from Acme Corporation totals 4,200 euros and is due on Friday. "
    "Payment terms are thirty days; late fees apply after the second reminder.\n"
) * 12
LOG_LINES = [f"2026-12-02 06:{i:02d}:00 db: connect ECONNREFUSED 127.0.0.1:5432" for i in range(30)]


def say(line: str, out: list[str]) -> None:
    print(line, flush=True)
    out.append(line)


@contextlib.contextmanager
def x11_desktop() -> Iterator[tuple[dict[str, str], Any]]:
    with headless_desktop() as desk:
        desk.open_xterm(LOG_LINES, "server log")
        notes = desk.open_zenity_text(PROSE, "notes")
        desk.activate(notes.window_id)
        desk.settle()
        yield {**desk.env}, desk


@contextlib.contextmanager
def wayland_desktop() -> Iterator[tuple[dict[str, str], Any]]:
    with sway_desktop() as desk:
        desk.open_foot(LOG_LINES, "server log")
        notes = desk.open_zenity_text(PROSE, "notes")
        desk.focus(notes)
        time.sleep(1.0)  # GTK's first redraws
        yield desk.daemon_env, desk


@contextlib.contextmanager
def gnome_desktop_here() -> Iterator[Any]:
    """A GNOME desktop whose PipeWire pipewiresrc finds, in this process (``frame_costs``)
    and in the daemons it starts, for as long as the desktop runs."""
    with gnome_desktop() as desk:
        os.environ["PIPEWIRE_RUNTIME_DIR"] = str(desk.run_dir)
        try:
            yield desk
        finally:
            del os.environ["PIPEWIRE_RUNTIME_DIR"]


@contextlib.contextmanager
def gnome() -> Iterator[tuple[dict[str, str], Any]]:
    with gnome_desktop_here() as desk:
        desk.open_zenity_text(PROSE, "notes")
        time.sleep(1.0)  # GTK's first redraws
        yield desk.daemon_env, desk


@contextlib.contextmanager
def x11_switching() -> Iterator[tuple[dict[str, str], Callable[[int], None]]]:
    """The four document windows on X11, and a function that focuses the n-th (mod 4)."""
    with headless_desktop() as desk:
        windows = [desk.open_zenity_text(text, title) for title, text in documents()]
        time.sleep(1.0)  # GTK takes the focus a moment after it maps
        desk.settle()

        def focus(n: int) -> None:
            desk.activate(windows[n % len(windows)].window_id)

        yield {**desk.env}, focus


@contextlib.contextmanager
def wayland_switching() -> Iterator[tuple[dict[str, str], Callable[[int], None]]]:
    with sway_desktop() as desk:
        windows = [desk.open_zenity_text(text, title) for title, text in documents()]
        time.sleep(1.0)

        def focus(n: int) -> None:
            desk.swaymsg(f"[con_id={windows[n % len(windows)].window_id}] focus")

        yield desk.daemon_env, focus


@contextlib.contextmanager
def gnome_switching() -> Iterator[tuple[dict[str, str], Callable[[int], None]]]:
    with gnome_desktop_here() as desk:
        for title, text in documents():
            desk.open_zenity_text(text, title)

        def focus(_n: int) -> None:
            desk.press(ALT, TAB)

        yield desk.daemon_env, focus


SWITCH_SECONDS = 0.12  # under the 0.2 s poll, as bench.daemon: every poll sees another title
STALL_SECONDS = 60.0  # no new frame for this long while the windows keep switching: stuck


def rss_growth(
    env: dict[str, str], focus: Callable[[int], None], frames: int
) -> tuple[dict[int, int], float]:
    """VmRSS (kB) of the daemon at each mark up to ``frames`` stored frames, and the
    seconds it took."""
    marks = sorted(m for m in {100, 500, *range(1000, frames + 1, 1000), frames} if m <= frames)
    with tempfile.TemporaryDirectory(prefix="bench-backends-") as folder:
        daemon = Running(env, Path(folder), "--poll", "0.2", "--min-interval", "0")
        try:
            pid = daemon.start()
            started = time.monotonic()
            rss: dict[int, int] = {}
            switches, progress = 0, (0, started)
            while len(rss) < len(marks):
                focus(switches)
                switches += 1
                time.sleep(SWITCH_SECONDS)
                stored, now = daemon.frames(), time.monotonic()
                if stored > progress[0]:
                    progress = (stored, now)
                elif now - progress[1] > STALL_SECONDS:
                    raise SystemExit(f"no new frame for {STALL_SECONDS:.0f} s after {stored}")
                for mark in marks:
                    if stored >= mark and mark not in rss:
                        rss[mark] = memory(pid)["VmRSS"]
            return rss, time.monotonic() - started
        finally:
            daemon.stop()


def frame_costs(env: dict[str, str], frames: int) -> tuple[list[float], list[float]]:
    """(whole frames, bare grabs) in ms, in a fresh home with the default config."""
    from backscroll.record import Recorder
    from backscroll.store import MemoryStore
    from capture.backends import backends
    from capture.camera import Camera

    with tempfile.TemporaryDirectory() as folder:
        store = MemoryStore(Path(folder) / "home", catch_up=False)
        config = store.config
        camera = Camera(backends(environ=env))
        recorder = Recorder(store)
        try:
            whole, bare = [], []
            for i in range(frames + 2):
                started = time.perf_counter()
                front = camera.frontmost()
                assert front is not None, "no focused window"
                seen = camera.take(front, "app_change", config)
                assert not isinstance(seen, str), seen
                recorder.record(seen, config)
                elapsed = (time.perf_counter() - started) * 1000
                started = time.perf_counter()
                camera.backends.screen.grab(front.geometry)
                grab = (time.perf_counter() - started) * 1000
                if i >= 2:  # the first frames load modules and the key
                    whole.append(elapsed)
                    bare.append(grab)
            return whole, bare
        finally:
            camera.close()
            store.close()


# Real prose of a terminal session: 60 distinct words, long and short.
_SENTENCES = (
    "the kernel reported an unexpected interrupt while the scheduler balanced runnable tasks",
    "between cores during heavy compilation of the documentation package and its manuals",
    "postgres refused connections because the listener on port 5432 was never started",
    "retry with exponential backoff after checking firewall rules and certificate expiry",
    "deployment succeeded for eleven services although three health probes timed out",
)
WORDS = " ".join(_SENTENCES).split()


def ocr_at_scales(desk: Any) -> list[str]:
    """Words found by OCR in one foot window at output scale 1 and 2 (see the docstring)."""
    from capture.backends import backends
    from capture.camera import window_region

    lines = list(_SENTENCES) * 4
    term = desk.open_foot(lines, "words")
    desk.focus(term)
    rows = []
    try:
        for scale in (1, 2):
            desk.swaymsg(f"output HEADLESS-1 scale {scale}")
            desk.focus(term)
            time.sleep(1.0)  # foot redraws at the new scale
            found = backends(environ=desk.daemon_env)
            try:
                front = found.probe.frontmost()
                assert front is not None
                image, monitor = found.screen.grab(front.geometry)
                region = window_region(image, front.geometry, monitor)
                started = time.perf_counter()
                text = found.ocr.read(region).text.lower()
                ms = (time.perf_counter() - started) * 1000
            finally:
                found.close()
            read = {w.strip(".,;:") for w in text.split()}
            hits = sum(1 for w in set(WORDS) if w in read)
            rows.append(
                f"scale {scale}: window {region.width}x{region.height} px, "
                f"{hits}/{len(set(WORDS))} distinct words found, OCR {ms:.0f} ms"
            )
    finally:
        desk.swaymsg("output HEADLESS-1 scale 1")
        desk.close(term)
    return rows


def idle_cpu(env: dict[str, str], seconds: float) -> tuple[float, int]:
    """The daemon's CPU (% of one core) over ``seconds`` of an unchanged screen, and the
    frames it stored meanwhile."""
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        base = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
        run_env = base | env | {"BACKSCROLL_HOME": str(home)}
        with open(Path(folder) / "daemon.log", "wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "backscroll", "start"],
                env=run_env,
                cwd=REPO,
                stdout=log,
                stderr=log,
            )
        try:
            wait_for(lambda: _frames(run_env) >= 1, "the first frame", 60)
            time.sleep(3.0)
            before, frames_before = cpu_seconds(process.pid), _frames(run_env)
            time.sleep(seconds)
            used = cpu_seconds(process.pid) - before
            return 100 * used / seconds, _frames(run_env) - frames_before
        finally:
            process.terminate()
            process.wait(timeout=30)


def _frames(env: dict[str, str]) -> int:
    done = subprocess.run(
        [sys.executable, "-m", "backscroll", "status", "--json"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        return 0
    import json

    return int(json.loads(done.stdout)["frames"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=60)
    parser.add_argument("--idle", type=float, default=30.0)
    parser.add_argument("--rss-frames", type=int, default=5000)
    parser.add_argument("--quick", action="store_true", help="a short run, not for results")
    args = parser.parse_args(argv)
    if args.quick:
        args.frames, args.idle, args.rss_frames = 20, 10.0, 500
    out: list[str] = []
    say(f"# bench.backends, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", out)
    say(f"machine: {cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}", out)
    say(f"code: {_commit()}", out)
    say(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", out)
    say(
        f"command: python -m bench.backends --frames {args.frames} --idle {args.idle:g} "
        f"--rss-frames {args.rss_frames}",
        out,
    )
    say("", out)
    say(
        "backend   frame w/o OCR p50 / p90 ms   bare grab p50 / p90 ms   idle CPU   frames idle",
        out,
    )
    rows: dict[str, tuple[float, float]] = {}
    idle: dict[str, float] = {}
    for name, desktop in (("x11", x11_desktop), ("wlroots", wayland_desktop), ("gnome", gnome)):
        with desktop() as (env, _desk):
            whole, bare = frame_costs(env, args.frames)
            idle[name], extra = idle_cpu(env, args.idle)
        p50, p90 = percentile(whole, 0.5), percentile(whole, 0.9)
        rows[name] = (p50, p90)
        say(
            f"{name:<9} {p50:>10.1f} / {p90:<10.1f}        "
            f"{percentile(bare, 0.5):>7.1f} / {percentile(bare, 0.9):<7.1f}        "
            f"{idle[name]:>5.2f} %   {extra}",
            out,
        )
    say("", out)
    say(f"Resident memory (VmRSS, MB) of the daemon over {args.rss_frames:,} frames:", out)
    growth: dict[str, float] = {}
    for name, switching in (
        ("x11", x11_switching),
        ("wlroots", wayland_switching),
        ("gnome", gnome_switching),
    ):
        with switching() as (env, focus):
            rss, seconds = rss_growth(env, focus, args.rss_frames)
        last = max(rss)
        low = 500 if 500 in rss and last > 500 else min(rss)
        growth[name] = rss[last] / rss[low]
        say(
            f"  {name:<9} "
            + "  ".join(f"{mark:,}: {kb / 1024:.1f}" for mark, kb in rss.items())
            + f"  ({last:,} frames in {seconds:.0f} s); at {last:,} / at {low:,} = "
            f"{growth[name]:.3f}, / at 100 = {rss[last] / rss[min(rss)]:.3f}",
            out,
        )
    say("", out)
    say("OCR of a foot window (DejaVu Sans Mono 11) on sway, output scale 1 then 2:", out)
    with sway_desktop() as desk:
        for line in ocr_at_scales(desk):
            say(f"  {line}", out)
    say("", out)
    for name in rows:
        say(
            f"RESULT {name}: frame w/o OCR p50 {rows[name][0]:.1f} ms, p90 {rows[name][1]:.1f} "
            f"ms; idle CPU {idle[name]:.2f} % of a core (target <= 1 %); RSS growth "
            f"{growth[name]:.3f}x (target <= 1.2x)",
            out,
        )
    for name, shown in (("wlroots", "sway"), ("gnome", "GNOME")):
        ratio = rows[name][0] / rows["x11"][0]
        say(f"RESULT {shown} frame p50 is {ratio:.2f}x the X11 frame p50 in the same run", out)
    say(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", out)
    if not args.quick:
        RESULTS.write_text("\n".join(out) + "\n")
    return 0


def _commit() -> str:
    done = subprocess.run(
        ["git", "-C", str(REPO), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or "unknown"


if __name__ == "__main__":
    raise SystemExit(main())
