"""One call from "this window is in front" to what was seen: ``Camera.take``.

    camera = Camera.open(config.capture_backend)
    front = camera.frontmost()
    seen = camera.take(front, "app_change", config, after=last.likeness)

``take`` runs every step of a frame in order: the page's address checked against the deny
list before any pixel is read; the AT-SPI text read beside the grab; the grab; denied
windows beside the active one blacked out; the duplicate check; OCR when the text is too
short; the secrets redaction finds in the text, the page's address and the title painted
over in the pixels (``capture.blackout``); the thumbnail and the event's signature. It returns a
``Seen``, or why nothing was seen (``"denied"``, ``"duplicate"``). Redaction of the text,
encryption and the append are the app's (``backscroll.record``). A new backend is a
``capture.backends.Backends``; a new step goes here.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

from base.clock import now_us
from base.config import Config
from base.errors import BackscrollError
from capture import screen
from capture.ax import AxText
from capture.blackout import Placed, paint, screen_boxes, secret_spans, shifted, words_over
from capture.deny import denied, denied_beside
from capture.ocr import placed_panels
from capture.probe import Geometry
from capture.redact import redact, redact_url
from capture.seen import Likeness, Seen
from eventlog.events import CaptureReason, TextSource

if TYPE_CHECKING:
    from PIL.Image import Image

    from capture.backends import Backends
    from capture.probe import Frontmost
    from capture.screen import Monitor

log = logging.getLogger("backscroll.capture")

EVENT_SIGNATURE = (32, 18)  # what the event keeps: 576 bytes, enough to compare later
MAX_AX_CHARS = 20000

Unseen = Literal["denied", "duplicate"]


class Camera:
    """The session's backends, taking one frame at a time.

    ``frontmost`` runs on the probe loop's thread and ``take`` on the worker's: the probe's
    one X connection is not thread-safe, so the two take turns on it (without the lock, one
    hung in the middle of the X protocol after ~5,000 frames).
    """

    def __init__(self, backends: Backends) -> None:
        self.backends = backends
        self._lock = threading.Lock()
        # The AT-SPI read mostly waits on the window's app: it runs beside the grab,
        # signature and thumbnail instead of after them (3 ms off a frame's wall time).
        self._reader = ThreadPoolExecutor(1, thread_name_prefix="ax-read")

    @classmethod
    def open(cls, choice: str = "auto") -> Camera:
        """The backends of this session (``choice``: the config's ``capture_backend``),
        their OCR engine checked; ``CaptureError`` saying what is missing."""
        from capture.backends import backends

        found = backends(choice=choice)
        try:
            found.ocr.check()
        except BaseException:
            found.close()
            raise
        return cls(found)

    def reopen(self, choice: str = "auto") -> None:
        """New backends in place of the old ones (the display came back); ``CaptureError``
        while it has not. The old ones are closed only once new ones are open: a frame may
        still be reading a window's text through them."""
        from capture.backends import backends

        fresh = backends(choice=choice)
        with self._lock:
            stale, self.backends = self.backends, fresh
        stale.close()

    def close(self) -> None:
        self._reader.shutdown()
        self.backends.close()

    def close_thread(self) -> None:
        """Close the connections the calling thread opened to grab (X connections are one a
        thread, ``capture.screen``): the thread that took frames calls it as it ends."""
        screen.close()

    def frontmost(self) -> Frontmost | None:
        with self._lock:
            return self.backends.probe.frontmost()

    def forget(self) -> None:
        """Have the OCR engine drop the text it keeps of lines it has read (they may be
        deleted frames'): now, or when the read it may be doing ends."""
        self.backends.ocr.forget()

    def take(
        self,
        front: Frontmost,
        reason: CaptureReason,
        config: Config,
        *,
        after: Likeness | None = None,
    ) -> Seen | Unseen:
        """What ``front`` shows now, or why nothing is kept: it or its page is denied, or it
        shows what ``after`` (the last frame kept) showed. Only a frame of the same window can be a
        duplicate: on a tiling compositor two windows side by side make the same screen
        whichever has the focus, yet a switch between them is a new frame of the other's
        text."""
        captured_us = now_us()
        if denied(config, front.app, front.title):
            return "denied"
        # Read before any pixel: a denied site, or a private window that only its accessible
        # name tells (Chromium's "(Incognito)"), is never grabbed.
        name, url = self._page(front.pid)
        if (name or url) and denied(config, front.app, name, url):
            return "denied"
        ax_text = self._reader.submit(self._ax_text, front.pid)
        image, monitor = self.backends.screen.grab(front.geometry)
        with self._lock:
            visible = self.backends.probe.visible_windows()
        beside = denied_beside(config, visible, front.window_id)
        if beside:
            # Beyond the spec: a password manager beside the active window is blacked out
            # before OCR and the thumbnail ever see it.
            screen.black_out(image, beside, origin=monitor.origin, scale=monitor.scale)
        likeness = Likeness(front.window_id, screen.signature(image))
        if (
            reason != "app_change"
            and after is not None
            and after.window_id == front.window_id
            and screen.difference(likeness.signature, after.signature) < config.dedupe_threshold
        ):
            return "duplicate"
        placed, source = self._text(config, front, ax_text, image, monitor)
        text = placed.text
        if config.redact:
            outer = next((w.geometry for w in visible if w.window_id == front.window_id), None)
            self._hide_secrets(image, monitor, front, outer, placed, ax_text.result(), url)
        return Seen(
            captured_us=captured_us,
            app=front.app,
            title=front.title,
            text=text,
            text_source=source,
            reason=reason,
            pid=front.pid,
            jpeg=screen.thumbnail(image, config.thumbnail_width, config.thumbnail_quality),
            signature=event_signature(likeness.signature),
            monitor=(monitor.index, monitor.left, monitor.top, monitor.width, monitor.height),
            url=url,
            image=image,
            likeness=likeness,
        )

    def _page(self, pid: int | None) -> tuple[str, str]:
        if not pid:
            return "", ""
        try:
            return self.backends.ax.window_page(pid)
        except BackscrollError as exc:
            log.info("page address unavailable: %s", exc)
            return "", ""

    def _ax_text(self, pid: int | None) -> AxText:
        if not pid:
            return AxText("")
        try:
            return self.backends.ax.window_read(pid, max_chars=MAX_AX_CHARS)
        except BackscrollError as exc:
            log.info("accessibility text unavailable: %s", exc)
            return AxText("")

    def _text(
        self,
        config: Config,
        front: Frontmost,
        ax_text: Future[AxText],
        image: Image,
        monitor: Monitor,
    ) -> tuple[Placed, TextSource]:
        text = ax_text.result().text
        ax = Placed(text, ax_end=len(text))
        if len(text.strip()) >= config.ax_min_chars and config.ocr_backend != "always":
            return ax, "ax"
        box = window_box(image, front.geometry, monitor)
        region = image if box is None else image.crop(box)
        corner = (0, 0) if box is None else box[:2]
        # A window whose rectangle nobody gives (GNOME) is the whole desktop: each of its
        # light and dark regions is read alone (capture.ocr.panels).
        whole = tuple(front.geometry) == (monitor.left, monitor.top, monitor.width, monitor.height)
        ocr, words = "", []
        try:
            for (left, top), part in placed_panels(region) if whole else [((0, 0), region)]:
                reading = self.backends.ocr.read(part)
                if not reading.text:
                    continue
                if ocr:
                    ocr += "\n"
                corner_in_frame = (corner[0] + left, corner[1] + top)
                words += shifted(reading.words, len(ocr), corner_in_frame)
                ocr += reading.text
        except BackscrollError as exc:
            log.warning("OCR failed on one frame: %s", exc)
            ocr, words = "", []
        if len(text.strip()) >= config.ax_min_chars:
            # The accessible text has no space at its start (capture.ax strips each part).
            both = (text + "\n" + ocr).strip()
            return Placed(both, tuple(shifted(words, len(text) + 1, (0, 0))), len(text)), "ax"
        if ocr.strip():
            return Placed(ocr, tuple(words)), "ocr"
        return ax, "ax" if text.strip() else "none"

    def _hide_secrets(
        self,
        image: Image,
        monitor: Monitor,
        front: Frontmost,
        outer: Geometry | None,
        placed: Placed,
        ax: AxText,
        url: str,
    ) -> None:
        """Paint over where the frame's text, its page's address or its title (in the frame
        ``outer`` the window manager draws around the window) shows a secret."""
        spans = secret_spans(placed.text)
        boxes = words_over(placed.text, placed.words, spans)
        in_ax = [(s, min(e, placed.ax_end)) for s, e in spans if s < placed.ax_end]
        rects: list[Geometry] | None = []
        if in_ax:
            # AT-SPI's screen coordinates are the root window's on X11 only: a Wayland app
            # has no place on a screen it knows.
            rects = self.backends.ax.extents(ax, in_ax) if self.backends.name == "x11" else None
        if url and redact_url(url).counts and rects is not None:
            host = urlsplit(url).hostname or ""
            bar = self.backends.ax.address_bar(front.pid, host) if front.pid else []
            rects = rects + bar if bar else None
        if rects is None:  # a secret whose place is not known: the whole window is painted
            rects = [front.geometry]
        boxes += screen_boxes(rects, monitor, within=front.geometry)
        if outer is not None and outer.y < front.geometry.y and redact(front.title).counts:
            # The window manager draws the title above the window: its whole bar.
            title = Geometry(outer.x, outer.y, outer.width, front.geometry.y - outer.y)
            boxes += screen_boxes([title], monitor)
        paint(image, boxes)


def event_signature(sig: bytes) -> bytes:
    """The 128x72 duplicate signature cut to what an event keeps."""
    from PIL import Image

    image = Image.frombytes("L", screen.SIGNATURE_SIZE, sig)
    return image.resize(EVENT_SIGNATURE, Image.Resampling.BOX).tobytes()


def window_region(image: Image, geometry: Geometry, monitor: Monitor) -> Image:
    """The window's part of a grab of its monitor (the whole grab if that part is tiny)."""
    box = window_box(image, geometry, monitor)
    return image if box is None else image.crop(box)


def window_box(
    image: Image, geometry: Geometry, monitor: Monitor
) -> tuple[int, int, int, int] | None:
    """The box of ``window_region`` in the grab (None: the whole grab)."""
    scale = monitor.scale
    left, top = geometry.x - monitor.left, geometry.y - monitor.top
    box = (
        max(0, round(left * scale)),
        max(0, round(top * scale)),
        min(image.width, round((left + geometry.width) * scale)),
        min(image.height, round((top + geometry.height) * scale)),
    )
    if box[2] - box[0] < 8 or box[3] - box[1] < 8:
        return None
    return box


def keep_freed_memory() -> None:
    """Keep freed memory in the heap instead of giving each 8 MB screenshot buffer back
    (process-wide: call once, before the first grab).

    Measured (bench/results/capture.txt): with glibc's defaults every grab page-faulted ~6,000
    fresh pages and a frame cost 33.6 ms; with these thresholds, 16.0 ms.
    """
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not name:
        return
    try:
        libc = ctypes.CDLL(name)
        libc.mallopt(-3, 64 << 20)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 256 << 20)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        return  # not glibc: its allocator's defaults stay
