"""Capture: the cost of each step of a frame, on the headless test desktop.

    cd /work/main && .venv/bin/python -m bench.capture

Starts the private desktop of ``tests/desktop.py`` (Xvfb 1920×1080, openbox, AT-SPI),
opens an xterm of 36 log lines and a zenity --text-info window of prose, and times each
step the daemon takes for a frame: the probe, the 1080p grab, the signature and its
comparison, the thumbnail (with its size), the accessibility read and OCR of a window
region. Baselines run in the same process: one bare X round trip (what the probe is made
of) and Tesseract on a blank 40×20 image (process start and model load, paid by every
OCR call). When ``tesserocr`` is importable (it is not a dependency) it is timed too.
Writes the report to ``bench/results/capture.txt`` with the machine it ran on; this
machine is shared, so the load average is recorded before and after.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Before anything can load OpenMP (tesserocr links it in-process): see capture/ocr.py.
os.environ.setdefault("OMP_THREAD_LIMIT", "1")

from capture import ocr, screen
from capture.ax import AxReader
from capture.probe import Geometry, X11Probe
from tests.desktop import Desktop, headless_desktop

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "capture.txt"

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


def percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def timed(step: Callable[[], Any], count: int, warmup: int = 2) -> tuple[list[float], Any]:
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
    model = "unknown"
    with open("/proc/cpuinfo") as info:
        for line in info:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    tesseract = subprocess.run(
        ["tesseract", "--version"], capture_output=True, text=True, check=False
    ).stdout.splitlines()[:1]
    return [
        f"machine: nproc {os.cpu_count()}, CPU {model}, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}",
        f"{' '.join(tesseract)}, load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}",
    ]


def bench(rounds: int, ocr_rounds: int) -> list[str]:
    lines = [*machine(), "", "$ .venv/bin/python -m bench.capture", ""]
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
            times, _ = timed(x.get_input_focus, rounds)
            x.close()
            lines.append(row("baseline: one X round trip", times))
            times, _ = timed(probe.frontmost, rounds)
            lines.append(row("probe.frontmost()", times))
            times, found = timed(probe.visible_windows, rounds)
            lines.append(row("probe.visible_windows()", times, f"{len(found)} windows"))

            times, (image, _monitor) = timed(
                lambda: screen.grab(front.geometry, display=desk.display), rounds // 5
            )
            lines.append(row("grab 1920x1080 (mss + RGB image)", times))
            times, sig = timed(lambda: screen.signature(image), rounds // 5)
            lines.append(row("signature 128x72", times))
            other = bytes(reversed(sig))
            times, _ = timed(lambda: screen.difference(sig, other), rounds)
            lines.append(row("difference", times))
            times, jpeg = timed(lambda: screen.thumbnail(image), rounds // 5)
            lines.append(row("thumbnail JPEG 480 q60", times, f"{len(jpeg)} bytes"))

            times, text = timed(lambda: reader.window_text(front.pid), rounds)
            lines.append(row("AX read, zenity --text-info", times, f"{len(text)} chars"))
            times, _ = timed(lambda: reader.window_text(term_front.pid), rounds)
            lines.append(row("AX read, xterm (no AT-SPI)", times, '"" as expected'))

            blank = screen_blank()
            times, _ = timed(lambda: ocr.ocr_text(blank), ocr_rounds, warmup=1)
            lines.append(row("baseline: tesseract on a blank 40x20", times))
            for name, window in (("xterm", term_front), ("zenity", front)):
                region = crop(desk, window.geometry)
                size = f"{region.width}x{region.height}"
                times, text = timed(lambda r=region: ocr.ocr_text(r), ocr_rounds, warmup=1)
                lines.append(row(f"OCR {name} {size} (pytesseract)", times, f"{len(text)} chars"))
                tesserocr_row = time_tesserocr(region, ocr_rounds)
                if tesserocr_row:
                    lines.append(row(f"OCR {name} {size} (tesserocr)", *tesserocr_row))
        finally:
            reader.close()
            probe.close()
            screen.close()
    if have_tesserocr():
        import tesserocr

        version = str(tesserocr.tesseract_version()).splitlines()[0]
        lines.append(f"(tesserocr {tesserocr.__version__}, bundling {version}; not a dependency)")
    else:
        lines.append("(tesserocr is not installed: pip install tesserocr to time it too)")
    load = os.getloadavg()
    lines += ["", f"load average after: {' '.join(f'{v:.2f}' for v in load)}"]
    if load[0] > (os.cpu_count() or 1):
        lines.append("(more runnable work than cores: the figures include waiting for a CPU)")
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

        times, text = timed(read, rounds, warmup=1)
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
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    lines = bench(args.rounds, args.ocr_rounds)
    report = "\n".join(lines) + "\n"
    sys.stdout.write(report)
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
