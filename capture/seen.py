"""What one frame showed, as capture hands it to the app: ``Seen``, and its ``Likeness``."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from eventlog.events import CaptureReason, TextSource

if TYPE_CHECKING:
    from PIL.Image import Image


class Likeness(NamedTuple):
    """What a later frame is compared with to tell a duplicate: the window and its screen's
    128×72 signature (``capture.screen.signature``)."""

    window_id: int | None
    signature: bytes


class Seen(NamedTuple):
    """One moment on screen, before redaction and encryption (which the app does as it
    records it); an imported frame has no pixels and no likeness."""

    captured_us: int
    app: str
    title: str
    text: str
    text_source: TextSource
    reason: CaptureReason
    pid: int | None = None
    jpeg: bytes | None = None
    signature: bytes = b""
    """The event's 32×18 signature (``capture.camera.EVENT_SIGNATURE``)."""
    monitor: tuple[int, int, int, int, int] | None = None
    url: str = ""
    image: Image | None = None
    """The pixels, denied windows beside the active one blacked out and, with redaction on,
    the secrets found in the text painted over (``capture.blackout``)."""
    likeness: Likeness | None = None
