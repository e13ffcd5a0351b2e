"""Secrets hidden in the pixels: where redaction finds a secret in a frame's text, the frame's
pixels are painted over there, before its thumbnail is made (``Camera.take``), with a flat
block of the background's colour, tinted (``TINT``: black blocks cost the words beside them).

The text's secrets (``capture.redact.secret_spans``, the same scans that replace them in the
stored text) are placed on the screen by what gave the text:

- OCR: the words Tesseract read, each with its box from the same pass (``capture.ocr.Word``);
  every word a secret touches is painted, so a token split into pieces by OCR goes whole;
- AT-SPI: the text's own extents, asked of the app only for the secrets' characters
  (``AxReader.extents``: a box a row, a box a character where the app wrapped them);
- a page's address that redaction changes: the browser's address bar (``AxReader.address_bar``).

Where a secret's place cannot be told (the app did not answer, or a Wayland desktop, whose
AT-SPI coordinates are not the screen's), the whole window is painted: the frame and its text
are kept, the window is painted over in its picture. Each box is widened by ``PAD`` pixels: OCR's
boxes end at the ink, and a glyph's antialiased edge lies beside it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from capture.ocr import Box, Word

if TYPE_CHECKING:
    from PIL.Image import Image

    from capture.probe import Geometry
    from capture.screen import Monitor

PAD = 2
MARGIN_CHARS = 2
# The fill: the box's own background moved this far towards mid-gray, a flat block a person
# sees, which Tesseract still takes for background. Measured (bench/results/pixels.txt) on a
# window of the secrets' rows: black boxes made Tesseract drop the whole line a box sits on
# (5 of the 45 words around the secrets were no longer read), a light tint none.
TINT = 48


class Placed(NamedTuple):
    """A frame's text and what is known of where it is drawn: OCR's words (their offsets in
    ``text``, their boxes in the frame's pixels) and the span of ``text`` that came from the
    accessibility tree (its secrets are asked of the app)."""

    text: str
    words: tuple[Word, ...] = ()
    ax_end: int = 0
    """``text[:ax_end]`` is the accessibility text; 0 when there is none."""


def secret_spans(text: str) -> list[tuple[int, int]]:
    """Where redaction finds secrets in ``text``: ``(start, end)`` of each."""
    from capture.redact import secret_spans as spans

    return [(start, end) for start, end, _kind in spans(text)]


def words_over(text: str, words: Sequence[Word], spans: Sequence[tuple[int, int]]) -> list[Box]:
    """The boxes of the words ``spans`` touch: the whole word, but for a word a secret starts
    inside after a separator (``API_KEY=sk-…`` read as one word), which keeps its part before
    the separator. That part is told by the word's mean character width, less
    ``MARGIN_CHARS``: a label of narrow letters before a token of wide ones would otherwise
    leave the token's first characters out. A word is never cut where a span ends inside it:
    OCR's misreadings end a token early (a ``3`` read as ``}3``), and its rest is the token's."""
    boxes: list[Box] = []
    for word in words:
        for start, end in spans:
            if not (start < word.end and word.start < end):
                continue
            left = word.left
            if start > word.start and not text[start - 1].isalnum():
                width = (word.right - word.left) / max(1, word.end - word.start)
                left += math.floor(max(0, start - word.start - MARGIN_CHARS) * width)
            boxes.append((left, word.top, word.right, word.bottom))
    return boxes


def shifted(words: Iterable[Word], at: int, corner: tuple[int, int]) -> list[Word]:
    """``words`` of a text that starts at ``at`` of the frame's, read in a part of the frame
    whose top-left corner is ``corner``: their offsets and boxes in the frame's."""
    dx, dy = corner
    return [
        Word(w.start + at, w.end + at, w.left + dx, w.top + dy, w.right + dx, w.bottom + dy)
        for w in words
    ]


def screen_boxes(
    rects: Iterable[Geometry], monitor: Monitor, within: Geometry | None = None
) -> list[Box]:
    """Rectangles in root coordinates as boxes of the frame's pixels (the frame is a grab of
    ``monitor``), cut to ``within`` (the window: its text is drawn nowhere else; a part of
    it scrolled out of view is given outside it), rounded outwards."""
    boxes: list[Box] = []
    for rect in rects:
        left, top = rect.x, rect.y
        right, bottom = rect.x + rect.width, rect.y + rect.height
        if within is not None:
            left, top = max(left, within.x), max(top, within.y)
            right = min(right, within.x + within.width)
            bottom = min(bottom, within.y + within.height)
        if right <= left or bottom <= top:
            continue
        boxes.append(
            (
                math.floor((left - monitor.left) * monitor.scale),
                math.floor((top - monitor.top) * monitor.scale),
                math.ceil((right - monitor.left) * monitor.scale),
                math.ceil((bottom - monitor.top) * monitor.scale),
            )
        )
    return boxes


def paint(image: Image, boxes: Iterable[Box], pad: int = PAD) -> int:
    """Paint ``boxes`` (the image's pixels, right and bottom excluded) over in place, each
    widened by ``pad``, with one flat colour: their background, tinted (``TINT``); how many
    were painted. Every box's colour is taken before any is painted."""
    from PIL import ImageDraw, ImageStat

    fills: list[tuple[Box, tuple[int, ...] | int]] = []
    for left, top, right, bottom in boxes:
        box = (
            max(0, left - pad),
            max(0, top - pad),
            min(image.width, right + pad),
            min(image.height, bottom + pad),
        )
        if box[2] > box[0] and box[3] > box[1]:
            median = ImageStat.Stat(_ring(image, box)).median
            tinted = tuple(_tinted(level) for level in median)
            fills.append((box, tinted if len(tinted) > 1 else tinted[0]))
    draw = ImageDraw.Draw(image)
    for (left, top, right, bottom), fill in fills:
        draw.rectangle((left, top, right - 1, bottom - 1), fill=fill)
    return len(fills)


def _ring(image: Image, box: Box) -> Image:
    """The pixels just around ``box``, in one row: its background, where the ink inside a
    tight box of bold text may be most of it."""
    from PIL import Image as PILImage

    left, top = max(0, box[0] - 1), max(0, box[1] - 1)
    right, bottom = min(image.width, box[2] + 1), min(image.height, box[3] + 1)
    strips = [
        image.crop((left, top, right, top + 1)),
        image.crop((left, bottom - 1, right, bottom)),
        image.crop((left, top, left + 1, bottom)).rotate(90, expand=True),
        image.crop((right - 1, top, right, bottom)).rotate(90, expand=True),
    ]
    row = PILImage.new(image.mode, (sum(strip.width for strip in strips), 1))
    at = 0
    for strip in strips:
        row.paste(strip, (at, 0))
        at += strip.width
    return row


def _tinted(level: int) -> int:
    return level - TINT if level >= 128 else level + TINT
