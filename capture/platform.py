"""The capture backends of this platform, behind three small interfaces.

    found = backends()              # CaptureError saying what is unsupported, if so
    window = found.probe.frontmost()
    text = found.ax.window_text(window.pid) if window else ""

Only X11 sessions on Linux are implemented: python-xlib for the probe, AT-SPI for the
text, Tesseract for OCR (tesserocr in a worker process, pytesseract where tesserocr cannot
be imported: ``capture.ocr_worker``), mss for the screen (``capture.screen``, which works
wherever mss does). Nothing heavy is imported until ``backends()`` is called.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from base.errors import CaptureError

if TYPE_CHECKING:
    from PIL.Image import Image

    from capture.probe import Frontmost, VisibleWindow


class Probe(Protocol):
    """Which window is in front, and which windows are visible."""

    def frontmost(self) -> Frontmost | None: ...

    def visible_windows(self) -> list[VisibleWindow]: ...

    def close(self) -> None: ...


class TextReader(Protocol):
    """The focused window's text from the OS accessibility tree ("" when it has none)."""

    def window_text(
        self, pid: int | None, *, max_chars: int = 20000, timeout: float = 1.0
    ) -> str: ...

    def close(self) -> None: ...


class OcrEngine(Protocol):
    """Text recognised in an image of a window."""

    def check(self) -> None:
        """Raise CaptureError saying what to install when this engine cannot run."""
        ...

    def text(self, image: Image) -> str: ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Backends:
    name: str  # "x11"
    probe: Probe
    ax: TextReader
    ocr: OcrEngine
    display: str | None  # for capture.screen.grab(..., display=)

    def close(self) -> None:
        self.probe.close()
        self.ax.close()
        self.ocr.close()


def ocr_engine() -> OcrEngine:
    """Tesseract kept loaded in a worker process (``capture.ocr_worker``: 1.2-2× less CPU
    a window than starting the tesseract program each time, ``python -m bench.ocr``)."""
    from capture.ocr_worker import WorkerOcr

    return WorkerOcr()


def backends(*, environ: Mapping[str, str] | None = None, system: str | None = None) -> Backends:
    """The backends for this session (``environ``/``system`` default to the real ones)."""
    env = os.environ if environ is None else environ
    system = system or sys.platform
    if system == "darwin":
        raise CaptureError(
            "capture on macOS is not supported yet: this version of Backscroll captures "
            "Linux X11 sessions only"
        )
    if system in ("win32", "cygwin"):
        raise CaptureError(
            "capture on Windows is not supported yet: this version of Backscroll captures "
            "Linux X11 sessions only"
        )
    if not system.startswith("linux"):
        raise CaptureError(f"capture on {system} is not supported: only Linux X11 sessions are")
    display = env.get("DISPLAY")
    if not display and env.get("WAYLAND_DISPLAY"):
        raise CaptureError(
            "capture in a Wayland session is not supported: Wayland lets no program read "
            "other windows or the screen; log in to an X11 session (DISPLAY is not set)"
        )
    if not display:
        raise CaptureError("no display to capture: DISPLAY is not set (not a graphical session)")

    from capture.ax import AxReader
    from capture.probe import X11Probe

    probe = X11Probe(display)
    return Backends(
        "x11", probe, AxReader(env.get("DBUS_SESSION_BUS_ADDRESS")), ocr_engine(), display
    )
