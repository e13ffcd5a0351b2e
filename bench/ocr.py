"""OCR: words and phrases read, and CPU a window, today's setting beside the daemon's engine.

    cd /work/main && .venv/bin/python -m bench.ocr

Starts the private headless desktop (``headless/x11.py``) and shows real text from
this machine (man pages, the dpkg log, Debian changelogs, Python source) in real xterm
windows of 110×40 at xterm's default font (the X core "fixed", 6×13) and at DejaVu Sans
Mono 9 and 12 pt, each light and dark, and in a GTK ``zenity --text-info`` window. Each
window is grabbed once and the same image is read by:

- ``today``: the setting before issue 17 (pytesseract, ``--psm 4``, grayscale,
  dark-on-light, no scaling);
- ``fallback``: pytesseract with the new preparation (``capture.ocr.ocr_text``);
- ``engine``: the daemon's engine (``capture.ocr_worker.WorkerOcr``: tesserocr kept loaded
  in a worker process, which keeps the text of the lines it has read).

Each terminal is then read again after ``SCROLL`` more lines were printed to it (it
scrolled), as the daemon reads a terminal whose output grows: today's setting reads it
whole, the engine reads only the lines it has not seen.

CPU is counted wherever it is spent: this process, the tesseract programs pytesseract
starts (their rusage once reaped) and the worker (its /proc stat). Ground truth is every
word of four or more letters of the text shown, and every pair of adjacent such words in
a line, after the index's own tokenizer (``base.tokens.words``); a word is found when the
OCR text has it, a phrase when the two words are adjacent in it.

Writes the table to ``bench/results/ocr.txt``; ``--quick`` reads one text per window kind.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import os
import resource
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Before anything can load OpenMP: see capture/ocr.py.
os.environ.setdefault("OMP_THREAD_LIMIT", "1")

from base.tokens import words
from bench._corpus import Report, machine
from bench._proc import cpu_seconds
from bench._stats import load_average, percentile
from capture import ocr, screen
from capture.ocr_worker import WorkerOcr
from capture.probe import X11Probe
from headless.x11 import Desktop, Window, headless_desktop, require

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "ocr.txt"

COLUMNS, ROWS = 110, 40
FONTS = {
    "default": [],  # xterm's own: the X core font "fixed"
    "dejavu9": ["-fa", "DejaVu Sans Mono", "-fs", "9"],
    "dejavu12": ["-fa", "DejaVu Sans Mono", "-fs", "12"],
}
COLOURS = {"light": ["-bg", "white", "-fg", "black"], "dark": ["-bg", "black", "-fg", "gray90"]}
# zenity's 900×600 text view holds about 28 lines of 100 characters at GTK's default font;
# fewer and shorter, so every line shown is wholly visible and nothing wraps.
GTK_COLUMNS, GTK_ROWS = 80, 24
ENGINES = ("today", "fallback", "engine")
SCROLL = 8  # lines printed after the first read: the terminal scrolls by as many
MIN_LETTERS = 4


def man_page(name: str) -> str:
    done = subprocess.run(
        ["man", "-P", "cat", name],
        capture_output=True,
        text=True,
        env={**os.environ, "MANWIDTH": str(COLUMNS), "LANG": "C", "MAN_KEEP_FORMATTING": ""},
        check=False,
    )
    return done.stdout


def texts(quick: bool) -> list[tuple[str, str]]:
    """(name, text) read from this machine, the same ones on every run of one image."""
    changelogs = sorted(Path("/usr/share/doc").glob("*/changelog.Debian.gz"))
    stdlib = Path(sysconfig.get_paths()["stdlib"])

    def changelog(path: Path) -> tuple[str, str]:
        with gzip.open(path, "rt", errors="replace") as file:
            return f"changelog {path.parent.name}", file.read()

    found = [
        ("man tar", man_page("tar")),
        ("dpkg.log", Path("/var/log/dpkg.log").read_text(errors="replace")[-30000:]),
        changelog(changelogs[len(changelogs) // 2]),
        ("shutil.py", (stdlib / "shutil.py").read_text()[8000:]),
        ("man grep", man_page("grep")[3000:]),
        changelog(changelogs[len(changelogs) // 3]),
        ("argparse.py", (stdlib / "argparse.py").read_text()[20000:]),
    ]
    found = [(name, text) for name, text in found if len(text) > 400]
    return found[:1] if quick else found


def screenful(text: str, columns: int, rows: int) -> list[str]:
    """The lines a terminal of ``columns`` shows, wrapped as it wraps them (printable ASCII:
    the core font has no other glyphs), the first ``rows`` of them."""
    lines: list[str] = []
    for line in text.expandtabs(8).splitlines():
        shown = "".join(c for c in line if " " <= c <= "~").rstrip()
        while len(shown) > columns:
            lines.append(shown[:columns])
            shown = shown[columns:]
        lines.append(shown)
        if len(lines) >= rows:
            break
    return lines[:rows]


def truth(lines: list[str]) -> tuple[set[str], set[tuple[str, str]]]:
    found_words: set[str] = set()
    phrases: set[tuple[str, str]] = set()
    for line in lines:
        tokens = words(line)
        long = [t for t in tokens if len(t) >= MIN_LETTERS and t.isalpha()]
        found_words.update(long)
        phrases.update(
            (a, b)
            for a, b in itertools.pairwise(tokens)
            if a in long and b in long and len(a) >= MIN_LETTERS and len(b) >= MIN_LETTERS
        )
    return found_words, phrases


def read(text: str) -> tuple[set[str], set[tuple[str, str]]]:
    tokens = words(text)
    return set(tokens), set(itertools.pairwise(tokens))


def open_terminal(desk: Desktop, lines: list[str], title: str, style: list[str]) -> Window:
    """An xterm showing ``lines`` (``Desktop.open_xterm``, with the font and colours given)."""
    fifo = Path(tempfile.mkdtemp(prefix="term-", dir=desk.root)) / "feed"
    os.mkfifo(fifo, 0o600)
    feed = os.open(fifo, os.O_RDWR)
    argv = [require("xterm"), "-T", title, "+bc", *style]
    argv += ["-geometry", f"{COLUMNS}x{ROWS}+40+40", "-e", "cat", str(fifo)]
    window = desk._open("xterm", argv, title)
    window.feed = feed
    window.write("\n".join(lines) + "\n")
    return window


def window_image(desk: Desktop, probe: X11Probe, window: Window) -> Any:
    desk.activate(window.window_id)
    desk.settle()
    front = probe.frontmost()
    assert front is not None
    geometry = front.geometry
    image, monitor = screen.grab(geometry, display=desk.display)
    left, top = geometry.x - monitor.left, geometry.y - monitor.top
    return image.crop((left, top, left + geometry.width, top + geometry.height))


def cpu_spent(
    step: Callable[[Any], str], image: Any, worker: WorkerOcr | None
) -> tuple[str, float]:
    """``step(image)``'s result and the CPU seconds it cost this process, its reaped children
    and the OCR worker."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = time.process_time()
    pid = worker.pid if worker is not None else None
    before = cpu_seconds(pid) if pid else 0.0
    text = step(image)
    spent = time.process_time() - own
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent += after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    if pid:
        spent += cpu_seconds(pid) - before
    return text, spent


def today(image: Any) -> str:
    """The setting before issue 17: pytesseract, --psm 4, no scaling."""
    import pytesseract

    prepared = ocr.dark_on_light(image)
    return ocr.tidy(pytesseract.image_to_string(prepared, lang=ocr.LANGUAGE, config="--psm 4"))


@dataclass
class Tally:
    words: int = 0
    words_found: int = 0
    phrases: int = 0
    phrases_found: int = 0
    cpu: list[float] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)

    def add(self, truth_: tuple[set[str], set[Any]], text: str, cpu: float) -> None:
        got_words, got_phrases = read(text)
        self.words += len(truth_[0])
        self.words_found += len(truth_[0] & got_words)
        self.phrases += len(truth_[1])
        self.phrases_found += len(truth_[1] & got_phrases)
        self.cpu.append(cpu)
        self.misses += sorted(truth_[0] - got_words)

    def cells(self) -> str:
        words_pc = 100 * self.words_found / max(1, self.words)
        phrases_pc = 100 * self.phrases_found / max(1, self.phrases)
        return f"{words_pc:6.1f} {phrases_pc:6.1f} {percentile(sorted(self.cpu), 0.5):6.2f}"


FIRST = "a window seen for the first time"
SCROLLED = f"the same terminal after {SCROLL} more lines were printed (it scrolled)"


def bench(quick: bool) -> Report:
    report = Report()
    for line in [*machine(), "", f"$ .venv/bin/python -m bench.ocr{' --quick' * quick}"]:
        report(line)
    tallies: dict[str, dict[str, dict[str, Tally]]] = {FIRST: {}, SCROLLED: {}}
    engine = WorkerOcr()
    engine.check()
    report(f"engine: {engine.engine}, worker pid {engine.pid}")
    sources = texts(quick)
    steps: dict[str, tuple[Callable[[Any], str], WorkerOcr | None]] = {
        "today": (today, None),
        "fallback": (ocr.ocr_text, None),
        "engine": (engine.text, engine),
    }

    def measure(section: str, kind: str, lines: list[str], image: Any, engines: Any) -> None:
        row = tallies[section].setdefault(kind, {e: Tally() for e in ENGINES})
        for label in engines:
            step, worker = steps[label]
            read_text, cpu = cpu_spent(step, image, worker)
            row[label].add(truth(lines), read_text, cpu)

    with headless_desktop() as desk:
        probe = X11Probe(desk.display)
        try:
            for font, font_style in FONTS.items():
                for colour, colour_style in COLOURS.items():
                    kind = f"xterm {font} {colour}"
                    for name, text in sources:
                        lines = screenful(text, COLUMNS, ROWS - 1 + SCROLL)
                        window = open_terminal(
                            desk, lines[: ROWS - 1], name, font_style + colour_style
                        )
                        image = window_image(desk, probe, window)
                        measure(FIRST, kind, lines[: ROWS - 1], image, ENGINES)
                        window.write("\n".join(lines[ROWS - 1 :]) + "\n")
                        image = window_image(desk, probe, window)
                        desk.close(window)
                        measure(SCROLLED, kind, lines[SCROLL:], image, ("today", "engine"))
                        print(f"{kind:22s} {name:28s} done", file=sys.stderr)
            for name, text in sources:
                lines = screenful(text, GTK_COLUMNS, GTK_ROWS)
                window = desk.open_zenity_text("\n".join(lines), name)
                image = window_image(desk, probe, window)
                desk.close(window)
                measure(FIRST, "zenity (GTK)", lines, image, ENGINES)
                print(f"{'zenity (GTK)':22s} {name:28s} done", file=sys.stderr)
        finally:
            probe.close()
            engine.close()
    for section, rows in tallies.items():
        report("")
        report(
            f"{section}: words and two-word phrases found (%), median CPU seconds a window; "
            f"{len(sources)} text(s) a kind, {COLUMNS}×{ROWS} terminals"
        )
        table(report, rows)
    report("")
    report("a sample of the words the engine missed, by window kind (first sight):")
    for kind, row in tallies[FIRST].items():
        sample = ", ".join(row["engine"].misses[:12])
        report(f"  {kind}: {sample or '-'}")
    report(f"load average after: {load_average()}")
    return report


def table(report: Report, rows: dict[str, dict[str, Tally]]) -> None:
    engines = [e for e in ENGINES if any(row[e].cpu for row in rows.values())]
    head = " ".join(f"{e + ' words':>13s} {'phrases':>6s} {'cpu':>6s}" for e in engines)
    report(f"{'window':22s} {head}  {'cpu today/engine':>16s}")
    total = {e: Tally() for e in engines}
    for kind, row in [*rows.items(), ("all", total)]:
        if kind != "all":
            for e in engines:
                for attr in ("words", "words_found", "phrases", "phrases_found"):
                    setattr(total[e], attr, getattr(total[e], attr) + getattr(row[e], attr))
                total[e].cpu += row[e].cpu
        ratio = percentile(sorted(row["today"].cpu), 0.5) / percentile(
            sorted(row["engine"].cpu), 0.5
        )
        cells = " ".join(f"{'':6s} {row[e].cells()}" for e in engines)
        report(f"{kind:22s} {cells}  {ratio:16.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one text per window kind")
    args = parser.parse_args()
    report = bench(args.quick)
    if not args.quick:
        report.write(RESULTS)
        print(f"written to {RESULTS}")


if __name__ == "__main__":
    main()
