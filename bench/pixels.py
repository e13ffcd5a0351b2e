"""Secrets hidden in the pixels (issue 25 §3): the words around the secrets, still legible?
and what painting the secrets over costs a frame.

    .venv/bin/python -m bench.pixels [--rounds 40]

Starts the headless desktop of ``headless.x11`` (Xvfb 1920×1080, openbox, AT-SPI) and opens,
one at a time:

- ``ocr``: a zenity --text-info window without its accessibility bridge (its text is pixels
  only, read by OCR) showing one row of ``tests/data/secrets.jsonl`` of each kind of the
  spec's redaction table (the rows ``tests/test_blackout.py`` uses);
- ``atspi``: the same window with its bridge (its text from AT-SPI);
- ``chromium``: Chromium showing a local page whose address holds a token.

Legibility: the camera takes the window with redaction off (the baseline, "before") and on
("after"), thumbnails as wide as the screen (at the default 480 pixels no word of a 1920
pixel screen can be read back, secret or not); each thumbnail is upscaled 2× and read by
Tesseract, and the words of four letters or more of the window that are no part of a secret
are counted in it, with the secrets left (a run of 16 of their characters, the data set's
rule; 8 for the address's token). The same boxes painted black instead of tinted (the
choice not taken) are read too. Target: after = before.

Cost: the step alone (``Camera._hide_secrets``: the spans redaction finds in the text and
the title, their places, the painting), ``--rounds`` times on the frame's pixels, for each
window, and for a window of prose without a secret (what every frame pays: redaction's scan
of its text); beside it, in the same run, the whole ``Camera.take`` of that window with
redaction off (the baseline).

Writes ``bench/results/pixels.txt`` with the machine it ran on and the load before and after.
"""

from __future__ import annotations

import argparse
import io
import json
import platform
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench._stats import load_average, percentile
from headless import wait_for
from headless.x11 import WIDTH, Desktop, headless_desktop

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "secrets.jsonl"
RESULTS = ROOT / "bench" / "results" / "pixels.txt"
ROWS = ("s0230", "s0000", "s0029", "s0061", "s0081", "s0092", "s0170", "s0212", "s0306", "s0310")
TOKEN = "Zx8kQ2mP9vLr4TbNq7Wc"
PAGE = (
    "<!doctype html><html><head><meta charset=utf-8><title>Quokka notes</title></head><body>"
    "<h1>Marsupial field notes</h1><p>The quokka lives on Rottnest Island and smiles at the "
    "visitors who photograph it every summer.</p></body></html>"
)
PROSE = (
    "The greenhouse tomatoes ripened early this year. Water them every second morning and "
    "keep the vents open on warm afternoons so the leaves stay dry.\n"
) * 20


def rows() -> list[dict[str, Any]]:
    found = [json.loads(line) for line in DATA.read_text().splitlines()]
    return [row for row in found if row["id"] in ROWS]


def squashed(text: str) -> str:
    return re.sub(r"\s+", "", text).lower()


def left(secret: str, read: str, run: int) -> bool:
    body, seen = squashed(secret), squashed(read)
    run = min(run, len(body))
    return any(body[at : at + run] in seen for at in range(len(body) - run + 1))


def plain(text: str, secrets: list[str]) -> set[str]:
    hidden = " ".join(secrets).lower()
    return {w for w in re.findall(r"[a-z]{4,}", text.lower()) if w not in hidden}


def read_back(jpeg: bytes) -> str:
    from PIL import Image

    from capture.ocr import ocr_text

    image = Image.open(io.BytesIO(jpeg))
    return ocr_text(image.resize((image.width * 2, image.height * 2), Image.Resampling.LANCZOS))


@contextmanager
def black_boxes() -> Iterator[None]:
    """The boxes painted black, as first built: the choice the measurement turned down."""
    from capture import blackout

    def black(level: int) -> int:
        return 0

    tinted = blackout._tinted
    blackout._tinted = black
    try:
        yield
    finally:
        blackout._tinted = tinted


def timed(call: Callable[[], object], rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return times


def row(name: str, times: list[float], note: str = "") -> str:
    p50, p90, p99 = (percentile(times, q) for q in (0.5, 0.9, 0.99))
    cells = f"{len(times):>6} {p50:>9.2f} {p90:>9.2f} {p99:>9.2f} {max(times):>9.2f}"
    return f"{name:<44}{cells}  {note}".rstrip()


class Bench:
    def __init__(self, desk: Desktop, rounds: int) -> None:
        from base.config import Config
        from capture.backends import backends
        from capture.camera import Camera

        self.desk = desk
        self.rounds = rounds
        self.camera = Camera(backends(environ=desk.env, system="linux"))
        self.sharp = Config(thumbnail_width=WIDTH, thumbnail_quality=90)
        self.legible: list[str] = []
        self.costs: list[str] = []

    def front(self, window_id: int) -> Any:
        self.desk.activate(window_id)
        self.desk.settle()
        front = self.camera.frontmost()
        assert front is not None and front.window_id == window_id
        return front

    def window(self, name: str, window_id: int, text: str, secrets: list[str], run: int) -> None:
        from capture.seen import Seen

        front = self.front(window_id)
        before = self.camera.take(front, "app_change", self.sharp.replace(redact=False))
        after = self.camera.take(front, "app_change", self.sharp)
        with black_boxes():
            black = self.camera.take(front, "app_change", self.sharp)
        frames = (before, after, black)
        assert all(isinstance(f, Seen) and f.jpeg is not None for f in frames)
        words = plain(text, secrets)
        counts = []
        for label, frame in zip(("before", "after (tint)", "after (black)"), frames, strict=True):
            assert isinstance(frame, Seen) and frame.jpeg is not None
            read = read_back(frame.jpeg)
            found = plain(read, secrets) & words
            shown = sum(left(secret, read, run) for secret in secrets)
            counts.append(len(found))
            self.legible.append(
                f"{name:<10}{label:<15}{len(found):>4}/{len(words):<4}"
                f"{100 * len(found) / len(words):>7.1f}%{shown:>5}/{len(secrets)} secrets readable"
            )
        self.legible.append(f"{'':<10}target: after = before ({counts[1]} vs {counts[0]} words)")
        self.cost(name, front, before)

    def cost(self, name: str, front: Any, seen: Any) -> None:
        from concurrent.futures import Future

        from capture.seen import Seen

        camera = self.camera
        assert isinstance(seen, Seen) and seen.image is not None
        monitor = camera.backends.screen.grab(front.geometry)[1]
        ax = camera._ax_text(front.pid)
        done: Future[Any] = Future()
        done.set_result(ax)
        placed, _source = camera._text(self.sharp, front, done, seen.image, monitor)
        image = seen.image.copy()
        outer = next(
            w.geometry
            for w in camera.backends.probe.visible_windows()
            if w.window_id == front.window_id
        )
        times = timed(
            lambda: camera._hide_secrets(image, monitor, front, outer, placed, ax, seen.url),
            self.rounds,
        )
        self.costs.append(row(f"black-out step, {name}", times, f"{len(placed.text)} chars"))
        off = self.sharp.replace(redact=False)
        take = timed(lambda: camera.take(front, "app_change", off), max(5, self.rounds // 4))
        self.costs.append(row(f"  baseline: Camera.take, {name}, redact off", take))

    def close(self) -> None:
        self.camera.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    load_before = load_average()
    table = rows()
    secrets = [s for r in table for s in r["secrets"]]
    screen = "\n\n".join(r["text"] for r in table)
    with headless_desktop() as desk:
        bench = Bench(desk, args.rounds)
        try:
            for name, accessible in (("ocr", False), ("atspi", True)):
                w = desk.open_zenity_text(
                    screen, "secrets", width=WIDTH - 100, height=1000, accessible=accessible
                )
                bench.window(name, w.window_id, screen, secrets, 16)
                desk.close(w)
            folder = Path(tempfile.mkdtemp(prefix="bs-"))
            page = folder / "notes.html"
            page.write_text(PAGE)
            browser = desk.open_browser(
                "chromium",
                page.as_uri() + f"?token={TOKEN}&lang=en",
                flags=["--force-renderer-accessibility"],
            )
            reader = bench.camera.backends.ax
            wait_for(lambda: "Rottnest" in reader.window_text(browser.pid), "Chromium's tree")
            bench.front(browser.window_id)
            wait_for(lambda: reader.address_bar(browser.pid, ""), "the address bar's place")
            page_text = re.sub(r"<[^>]+>", " ", PAGE)
            bench.window("chromium", browser.window_id, page_text, [TOKEN], 8)
            desk.close(browser)
            shutil.rmtree(folder)
            prose = desk.open_zenity_text(PROSE, "notes", accessible=False)
            front = bench.front(prose.window_id)
            seen = bench.camera.take(front, "app_change", bench.sharp)
            bench.cost("prose, no secret (ocr)", front, seen)
        finally:
            bench.close()
    tesseract = subprocess.run(
        ["tesseract", "--version"], capture_output=True, text=True, check=False
    ).stdout.split("\n")[0]
    tree = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    lines = [
        f"machine: nproc {_nproc()}, Python {platform.python_version()}, {platform.system()} "
        f"{platform.release()}",
        f"{tesseract}, load average before {load_before}, after {load_average()}",
        f"tree: {tree}",
        "",
        f"$ .venv/bin/python -m bench.pixels --rounds {args.rounds}",
        "",
        "legibility of the words around the secrets, thumbnails 1920 px q90 read back at 2x",
        f"{'window':<10}{'frame':<15}{'words read':>9}",
        *bench.legible,
        "",
        f"{'cost (ms)':<44}{'count':>6} {'p50':>9} {'p90':>9} {'p99':>9} {'max':>9}",
        *bench.costs,
    ]
    report = "\n".join(lines) + "\n"
    print(report, end="")
    RESULTS.write_text(report)


def _nproc() -> int:
    import os

    return os.cpu_count() or 0


if __name__ == "__main__":
    main()
