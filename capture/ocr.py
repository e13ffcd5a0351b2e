"""OCR of a window region with Tesseract: the image prepared here, read by Tesseract.

Two ways to run Tesseract, the same preparation for both:

- ``capture.ocr_worker`` (the default): tesserocr, Tesseract 5.5 in-process from its
  manylinux wheel, kept loaded in one long-lived worker process (a fresh Python, so a crash
  in native code costs one frame's text, not the daemon), which reads only the text lines
  it has not seen before;
- ``ocr_text`` here (the fallback where tesserocr cannot be imported): pytesseract, which
  starts the tesseract program for every image (process start and model load each time).

Measured with ``python -m bench.ocr`` (``bench/results/ocr.txt``): xterm windows of 110×40
at xterm's default font and DejaVu Sans Mono 9 and 12 pt, light and dark, and a GTK text
window, showing man pages, the dpkg log, Debian changelogs and Python source; words of four
letters or more and two-word phrases found, CPU a window with child processes:

- Before (pytesseract, ``--psm 4``, no scaling): xterm's default font 83 % of words and 70 %
  of phrases, 0.58-0.60 s; DejaVu 9: 98.8 % / 98.5 %; DejaVu 12: 99.8 % / 100 %.
- Now: xterm's default font 97.3 % / 94.7 %, DejaVu 9 99.5 % / 99.4 %, DejaVu 12 99.8 % /
  100 %, GTK 99.6 % / 100 %; 0.53 s a window seen for the first time (0.72 s before), and
  0.17 s for a terminal that scrolled by 8 lines (0.76 s before).
- Small text is upscaled, large text is not: xterm's default font (the X core "fixed",
  6×13 pixels, ink lines 11-12 px high) read 86 % of its words as it is, 97-98 % at 2×;
  DejaVu Sans Mono 12 (15 px) read 99.7 % as it is, and 2× costs 60 % more CPU. So the
  text's height is measured from the row profile (``text_height``) and only regions whose
  lines are under ``SMALL_TEXT_PX`` are scaled (the figures for each font are there).
- The 2× is nearest-neighbour then a Gaussian blur of 1 px: the 1-pixel dots of a bitmap
  font's ``.`` and ``:`` survive it better (Lanczos 2× read ``05:57:46`` as ``05357346``:
  96.8 % of the words instead of 98.3 % on one set; a blur of 0.8 or 1.2 px, 3×, or a
  narrower 1.5× across were all worse). What the default font still loses: ``:`` read as
  ``z`` or ``t`` (``chromium-common:amd64``), narrow ``l`` and ``i`` taken for word breaks
  (``careful ly``).
- ``--psm 6`` (one block of text): it read the same words as ``--psm 4`` (one column of
  lines) at 1× and 2× for 10-30 % less CPU; the automatic layout (``--psm 3``) read a log's
  aligned timestamp columns as separate blocks (67 % of its words).
- Dark backgrounds are inverted first: Tesseract reads dark-on-light, and its own retry on
  inverted lines made a dark terminal take 1.43 s instead of 0.85 s, with the same words.
- ``OMP_THREAD_LIMIT=1``: Tesseract's own OpenMP threads made one region take 6.0 s
  instead of 1.2 s on 2 cores.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from base.errors import CaptureError

if TYPE_CHECKING:
    from PIL.Image import Image

log = logging.getLogger(__name__)

LANGUAGE = "eng"
PAGE_SEGMENTATION = 6  # one uniform block of text (see the module docstring)
CONFIG = f"--psm {PAGE_SEGMENTATION}"
INSTALL = (
    "install it: sudo apt-get install tesseract-ocr tesseract-ocr-eng "
    "(macOS: brew install tesseract)"
)
# A 4K region of dense text took about 5 s on the test machine; past this, give up on the
# frame's OCR rather than stall the daemon.
TIMEOUT_S = 30.0
# Below this mean gray level (of 255) a region is taken as light text on a dark background.
DARK_MEAN = 128
# Text lines whose ink is shorter than this (in pixels) are read at 2×: xterm's default
# font (11-12 px) read 86 % of its words at 1×, 97-98 % at 2×; DejaVu Sans Mono 9 (13 px)
# 98.6 % and 99.3 %; GTK's default font in a text view (14 px) 94 % of words and 92 % of
# phrases, and all of them at 2×; DejaVu Sans Mono 12 (15 px) read 99.7 % at 1×.
SMALL_TEXT_PX = 15
UPSCALE = 2
# A row holds ink when its darkest pixel (dark-on-light) is below this gray level.
INK_LEVEL = 128


Box = tuple[int, int, int, int]
"""A rectangle of an image's pixels: left, top, right, bottom (right and bottom excluded)."""


class Word(NamedTuple):
    """A word OCR read: where it is in the text read and where it is drawn in the image read
    (its pixels, right and bottom excluded). The camera paints a secret's words black."""

    start: int
    end: int
    left: int
    top: int
    right: int
    bottom: int


class Reading(NamedTuple):
    """What OCR read in an image: its text, and each word's place in the text and the image,
    from the same pass."""

    text: str
    words: tuple[Word, ...] = ()


def joined(lines: Iterable[Sequence[tuple[str, Box]]]) -> Reading:
    """Lines of words, each with its box, as one ``Reading``: a line of text per line, its
    words split by one space (as Tesseract gives a line's text), lines without words left out."""
    parts: list[str] = []
    words: list[Word] = []
    at = 0
    for line in lines:
        if not line:
            continue
        if parts:
            parts.append("\n")
            at += 1
        for n, (text, box) in enumerate(line):
            if n:
                parts.append(" ")
                at += 1
            parts.append(text)
            words.append(Word(at, at + len(text), *box))
            at += len(text)
    return Reading("".join(parts), tuple(words))


def check_ocr() -> None:
    """Raise ``CaptureError`` saying what to install when OCR cannot run."""
    try:
        import pytesseract  # noqa: F401
    except ImportError:
        raise CaptureError("OCR needs pytesseract: pip install 'backscroll[ocr]'") from None
    binary = shutil.which("tesseract")
    if binary is None:
        raise CaptureError(f"the tesseract program is not on PATH; {INSTALL}")
    try:
        listed = subprocess.run(
            [binary, "--list-langs"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CaptureError(f"tesseract does not run ({exc}); {INSTALL}") from None
    # The first line is a header ("List of available languages in ...").
    languages = {line.strip() for line in listed.stdout.splitlines()[1:]}
    if LANGUAGE not in languages:
        raise CaptureError(
            "tesseract has no English data (eng.traineddata); "
            "install it: sudo apt-get install tesseract-ocr-eng"
        )


def ocr_text(image: Image, *, timeout: float = TIMEOUT_S) -> str:
    """The text Tesseract reads in ``image`` ("" when it times out)."""
    return ocr_read(image, timeout=timeout).text


def ocr_read(image: Image, *, timeout: float = TIMEOUT_S) -> Reading:
    """The text and words Tesseract reads in ``image`` (nothing when it times out), each
    word's box in ``image``'s pixels."""
    import pytesseract

    # pytesseract starts tesseract with os.environ and takes no env argument; the variable
    # only matters to OpenMP programs, and a value the user set is kept.
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    gray = dark_on_light(image)
    scale = UPSCALE if is_small(text_height(gray)) else 1
    try:
        data = pytesseract.image_to_data(
            upscale(gray) if scale > 1 else gray,
            lang=LANGUAGE,
            config=CONFIG,
            timeout=timeout,
            output_type=pytesseract.Output.DICT,
        )
    except pytesseract.TesseractNotFoundError:
        raise CaptureError(f"the tesseract program is not on PATH; {INSTALL}") from None
    except pytesseract.TesseractError as exc:
        # Its message is tesseract's stderr, which never holds the image's text.
        raise CaptureError(f"tesseract failed: {exc.message}") from None
    except RuntimeError as exc:  # pytesseract's way of saying the timeout struck
        if "timeout" not in str(exc).lower():
            raise
        log.warning("OCR gave up after %.0f s", timeout)
        return Reading("")
    lines: dict[tuple[int, int, int], list[tuple[str, Box]]] = {}
    for n, text in enumerate(data["text"]):
        if not text.strip():
            continue
        left, top = data["left"][n], data["top"][n]
        box = (
            left // scale,
            top // scale,
            -(-(left + data["width"][n]) // scale),
            -(-(top + data["height"][n]) // scale),
        )
        line = (data["block_num"][n], data["par_num"][n], data["line_num"][n])
        lines.setdefault(line, []).append((text.strip(), box))
    return joined(lines.values())


def prepare(image: Image) -> Image:
    """The image Tesseract reads: grayscale, dark-on-light, small text upscaled (see the
    module docstring for the measurements)."""
    gray = dark_on_light(image)
    return upscale(gray) if is_small(text_height(gray)) else gray


def is_small(height: int | None) -> bool:
    """Whether text lines ``height`` pixels high are read upscaled."""
    return height is not None and height < SMALL_TEXT_PX


def dark_on_light(image: Image) -> Image:
    """Grayscale, inverted when the background is dark."""
    from PIL import ImageOps, ImageStat

    gray = image.convert("L")
    if ImageStat.Stat(gray.reduce(4)).mean[0] < DARK_MEAN:
        gray = ImageOps.invert(gray)
    return gray


# A whole desktop is cut into panels on cells of this many pixels a side; a patch of
# fewer cells than PANEL_MIN_CELLS (a dark button, a bold heading) joins what surrounds it.
PANEL_CELL = 16
PANEL_MIN_CELLS = 24


def panels(image: Image) -> list[Image]:
    """A frame of a whole desktop cut into its light and its dark regions, top to bottom,
    each alone on its own background (what surrounds it painted over): OCR turns each
    dark-on-light by itself. Read whole, a light window on a dark desktop was inverted with
    the desktop and read as noise (on GNOME, where no window has a known rectangle)."""
    return [panel for _corner, panel in placed_panels(image)]


def placed_panels(image: Image) -> list[tuple[tuple[int, int], Image]]:
    """``panels``, each with its top-left corner in ``image``."""
    from PIL import Image as PILImage

    gray = image.convert("L")
    cells = gray.reduce(PANEL_CELL)
    width, height = cells.size
    means = cells.tobytes()
    light = [value >= DARK_MEAN for value in means]
    groups = _regions(light, width, height)
    for members in groups:
        if len(members) < PANEL_MIN_CELLS:
            for cell in members:
                light[cell] = not light[cell]
    found = []
    for members in _regions(light, width, height):
        xs = [cell % width for cell in members]
        ys = [cell // width for cell in members]
        box = (
            min(xs) * PANEL_CELL,
            min(ys) * PANEL_CELL,
            min(image.width, (max(xs) + 1) * PANEL_CELL),
            min(image.height, (max(ys) + 1) * PANEL_CELL),
        )
        if box[2] - box[0] < 8 or box[3] - box[1] < 8:
            continue
        inside = bytearray(width * height)
        for cell in members:
            inside[cell] = 255
        mask = PILImage.frombytes("L", (width, height), bytes(inside))
        mask = mask.resize((width * PANEL_CELL, height * PANEL_CELL)).crop(box)
        values = sorted(means[cell] for cell in members)
        background = PILImage.new("L", mask.size, values[len(values) // 2])
        found.append((box[1], box[0], PILImage.composite(gray.crop(box), background, mask)))
    found.sort(key=lambda f: (f[0], f[1]))
    return [((left, top), panel) for top, left, panel in found]


def _regions(light: list[bool], width: int, height: int) -> list[list[int]]:
    """The 4-connected regions of cells of one kind (light or dark), as cell numbers."""
    seen = [False] * len(light)
    regions = []
    for start in range(len(light)):
        if seen[start]:
            continue
        seen[start] = True
        kind, stack, members = light[start], [start], []
        while stack:
            cell = stack.pop()
            members.append(cell)
            x = cell % width
            for near, ok in (
                (cell - 1, x > 0),
                (cell + 1, x < width - 1),
                (cell - width, cell >= width),
                (cell + width, cell < width * (height - 1)),
            ):
                if ok and not seen[near] and light[near] == kind:
                    seen[near] = True
                    stack.append(near)
        regions.append(members)
    return regions


def ink_runs(gray: Image) -> list[tuple[int, int]]:
    """The runs of rows holding ink (``INK_LEVEL``) in a dark-on-light region, as (top,
    bottom) row numbers, bottom excluded: its text lines, where no two lines touch."""
    width = gray.width
    if width == 0:
        return []
    raw = gray.tobytes()
    runs: list[tuple[int, int]] = []
    top = None
    for row, start in enumerate(range(0, len(raw), width)):
        if min(raw[start : start + width]) < INK_LEVEL:
            if top is None:
                top = row
        elif top is not None:
            runs.append((top, row))
            top = None
    if top is not None:
        runs.append((top, gray.height))
    return runs


def text_height(gray: Image) -> int | None:
    """The height in pixels of the region's text lines (None when it has no ink).

    Lines whose ink touches (a bitmap font's parentheses span the whole cell; a block
    cursor under a line) make runs of two lines or more: runs over 1.5× the median are left
    out. Of the rest the upper quartile is taken, so lines without ascenders or descenders
    do not pull the height down. Measured on 110×40 terminals (``python -m bench.ocr``):
    xterm's default font 11-12, DejaVu Sans Mono 9 13, DejaVu Sans Mono 12 15, GTK's text
    view 14.
    """
    runs = sorted(bottom - top for top, bottom in ink_runs(gray))
    if not runs:
        return None
    median = runs[len(runs) // 2]
    lines = [height for height in runs if height <= 1.5 * median]
    return lines[(3 * len(lines)) // 4]


def upscale(gray: Image) -> Image:
    """``UPSCALE``× nearest-neighbour, softened by a 1 px Gaussian blur."""
    from PIL import ImageFilter
    from PIL.Image import Resampling

    size = (gray.width * UPSCALE, gray.height * UPSCALE)
    return gray.resize(size, Resampling.NEAREST).filter(ImageFilter.GaussianBlur(1))


def tidy(text: str) -> str:
    """Tesseract's output without trailing spaces, runs of blank lines and the form feed."""
    lines = [line.rstrip() for line in text.replace("\f", "\n").splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
