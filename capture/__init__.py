"""What is on the screen: the frontmost window, its text, a grab of it, and when to take one.

Capture sees the screen and knows the event types, never the store: it hands back what it
saw, and the app records it. Public API (imported lazily, so importing one module of the
package, as the daemon does, loads nothing else)::

    from capture import Camera, Trigger
    camera = Camera.open()           # the probe, screen, text reader and OCR of this session
    seen = camera.take(camera.frontmost(), "app_change", config)   # a Seen, or why not

The screen grabs and OCR are modules (``capture.screen``, ``capture.ocr``); the redactor is
``capture.redact.redact``: the name ``redact`` on the package is its module once imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from base.fronts import lazy_names

if TYPE_CHECKING:
    from capture.ax import AxReader
    from capture.backends import (
        Backends,
        OcrEngine,
        Probe,
        Screen,
        Session,
        TextReader,
        backends,
        session,
    )
    from capture.camera import Camera
    from capture.hotkey import Hotkey
    from capture.probe import Frontmost, Geometry, VisibleWindow, X11Probe
    from capture.redact import KINDS, Redaction
    from capture.seen import Likeness, Seen
    from capture.trigger import Trigger
    from capture.wlroots import WlrootsProbe

__all__ = [
    "KINDS",
    "AxReader",
    "Backends",
    "Camera",
    "Frontmost",
    "Geometry",
    "Hotkey",
    "Likeness",
    "OcrEngine",
    "Probe",
    "Redaction",
    "Screen",
    "Seen",
    "Session",
    "TextReader",
    "Trigger",
    "VisibleWindow",
    "WlrootsProbe",
    "X11Probe",
    "backends",
    "session",
]

_WHERE = {
    "AxReader": "capture.ax",
    "Backends": "capture.backends",
    "Camera": "capture.camera",
    "Frontmost": "capture.probe",
    "Geometry": "capture.probe",
    "Hotkey": "capture.hotkey",
    "KINDS": "capture.redact",
    "Likeness": "capture.seen",
    "OcrEngine": "capture.backends",
    "Probe": "capture.backends",
    "Redaction": "capture.redact",
    "Screen": "capture.backends",
    "Seen": "capture.seen",
    "Session": "capture.backends",
    "TextReader": "capture.backends",
    "Trigger": "capture.trigger",
    "VisibleWindow": "capture.probe",
    "WlrootsProbe": "capture.wlroots",
    "X11Probe": "capture.probe",
    "backends": "capture.backends",
    "session": "capture.backends",
}


__getattr__ = lazy_names(__name__, _WHERE)
