"""OCR of a window region with Tesseract, through pytesseract.

Measured on the test desktop (2 cores, a 1084×688 xterm region of 24 log lines, DejaVu
Sans Mono 11; ``python -m bench.capture`` has the current figures):

- ``OMP_THREAD_LIMIT=1``: Tesseract's own OpenMP threads made one region take 6.0 s
  instead of 1.2 s on 2 cores, so the variable is set for the tesseract process.
- ``--psm 4`` (one column of lines): the automatic layout (``--psm 3``) read the aligned
  timestamp columns of a log as separate blocks and found 67 % of its words; ``--psm 4``
  found 90 % in the same time. Prose in a GTK window read perfectly with either.
- Dark backgrounds are inverted first: Tesseract reads dark-on-light, and its own retry on
  inverted lines made a dark terminal take 1.43 s instead of 0.85 s, with the same words.
- No upscaling: 2× found 95 % of the log's words instead of 90 % (mostly ``v1`` read as
  ``vl``) but took 45 % longer; OCR is the one expensive step of a frame.
- pytesseract, not tesserocr: running Tesseract in-process saves the process start and
  model load each call pays (about a third of a region's time; ``python -m bench.capture``
  times both when tesserocr is installed), but takes a compiled dependency and puts
  Tesseract inside the daemon, where a crash would take capture down.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
from typing import TYPE_CHECKING

from base.errors import CaptureError

if TYPE_CHECKING:
    from PIL.Image import Image

log = logging.getLogger(__name__)

LANGUAGE = "eng"
CONFIG = "--psm 4"
INSTALL = (
    "install it: sudo apt-get install tesseract-ocr tesseract-ocr-eng "
    "(macOS: brew install tesseract)"
)
# A 4K region of dense text took about 5 s on the test machine; past this, give up on the
# frame's OCR rather than stall the daemon.
TIMEOUT_S = 30.0
# Below this mean gray level (of 255) a region is taken as light text on a dark background.
DARK_MEAN = 128


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
    import pytesseract

    # pytesseract starts tesseract with os.environ and takes no env argument; the variable
    # only matters to OpenMP programs, and a value the user set is kept.
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    try:
        text = pytesseract.image_to_string(
            prepare(image), lang=LANGUAGE, config=CONFIG, timeout=timeout
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
        return ""
    return tidy(text)


def prepare(image: Image) -> Image:
    """Grayscale, and dark-on-light (see the module docstring for the measurements)."""
    from PIL import ImageOps, ImageStat

    gray = image.convert("L")
    if ImageStat.Stat(gray.reduce(4)).mean[0] < DARK_MEAN:
        gray = ImageOps.invert(gray)
    return gray


def tidy(text: str) -> str:
    """Tesseract's output without trailing spaces, runs of blank lines and the form feed."""
    lines = [line.rstrip() for line in text.replace("\f", "\n").splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
