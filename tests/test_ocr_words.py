"""Each word OCR reads comes with its box, from the same pass (``capture.ocr.Reading``): the
camera paints a secret's words over from them (``capture.blackout``). The boxes must be where
the words are drawn, small text read upscaled included, and still so for a line the worker
knew already, read again further up a terminal that scrolled."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from PIL import Image, ImageDraw, ImageFont

from capture import ocr
from capture.ocr_worker import WorkerOcr
from headless.processes import TERMINAL_FONT

pytestmark = pytest.mark.ocr

WORDS = [
    "orchard lantern pebble",
    "meadow harbour violin",
    "copper thistle ember",
    "walnut canyon ribbon",
    "falcon marble saddle",
    "juniper beacon parcel",
]


def drawn(lines: list[str], px: int) -> tuple[Image.Image, dict[str, tuple[int, int, int, int]]]:
    """``lines`` drawn as a terminal draws them, and where each word's ink is."""
    font = ImageFont.truetype(str(TERMINAL_FONT), px)
    pitch = int(px * 1.5)
    image = Image.new("RGB", (px * 40, pitch * (len(lines) + 2)), "white")
    draw = ImageDraw.Draw(image)
    where: dict[str, tuple[float, float, float, float]] = {}
    for n, line in enumerate(lines):
        x, y = px, pitch * (n + 1)
        draw.text((x, y), line, font=font, fill="black")
        for word in line.split():
            at = line.index(word)
            left = x + draw.textlength(line[:at], font=font)
            where[word] = draw.textbbox((left, y), word, font=font)
    # The ink itself: a font's box holds its side bearings too.
    return image, {word: _ink(image, box) for word, box in where.items()}


def _ink(image: Image.Image, box: tuple[float, float, float, float]) -> tuple[int, int, int, int]:
    left, top = int(box[0]) - 1, int(box[1]) - 1
    area = image.crop((left, top, int(box[2]) + 2, int(box[3]) + 2)).convert("L")
    ink = area.point(lambda level: 255 if level < 128 else 0).getbbox()
    assert ink is not None
    return ink[0] + left, ink[1] + top, ink[2] + left, ink[3] + top


def placed(reading: ocr.Reading) -> dict[str, tuple[int, int, int, int]]:
    return {
        reading.text[w.start : w.end]: (w.left, w.top, w.right, w.bottom) for w in reading.words
    }


def assert_at(
    found: dict[str, tuple[int, int, int, int]], where: dict[str, tuple[int, int, int, int]]
) -> None:
    assert set(found) >= set(where), (sorted(found), sorted(where))
    for word, (left, top, right, bottom) in where.items():
        got = found[word]
        # Within 2 pixels of the ink on every side: PAD in capture.blackout covers that.
        assert all(abs(a - b) <= 2 for a, b in zip(got, (left, top, right, bottom), strict=True)), (
            word,
            got,
            (left, top, right, bottom),
        )


@pytest.fixture(scope="module")
def engine() -> Iterator[WorkerOcr]:
    opened = WorkerOcr()
    yield opened
    opened.close()


READERS: dict[str, Callable[[WorkerOcr, Image.Image], ocr.Reading]] = {
    "worker": lambda engine, image: engine.read(image),
    "pytesseract": lambda _engine, image: ocr.ocr_read(image),
}


@pytest.mark.parametrize("reader", READERS.values(), ids=READERS.keys())
@pytest.mark.parametrize("px", [10, 16], ids=["small-upscaled", "large"])
def test_each_word_comes_with_the_box_it_is_drawn_in(
    engine: WorkerOcr, reader: Callable[[WorkerOcr, Image.Image], ocr.Reading], px: int
) -> None:
    engine.forget()
    image, where = drawn(WORDS, px)
    reading = reader(engine, image)
    assert reading.text.split() == " ".join(WORDS).split()
    assert_at(placed(reading), where)


def test_a_known_line_scrolled_up_is_placed_where_it_is_now(engine: WorkerOcr) -> None:
    engine.forget()
    first, _ = drawn(WORDS, 16)
    engine.read(first)
    scrolled = [*WORDS[2:], "hazel tunnel mitten", "quiver sparrow lemon"]
    image, where = drawn(scrolled, 16)
    reading = engine.read(image)  # four of six lines known: only two are read
    assert reading.text.split() == " ".join(scrolled).split()
    assert_at(placed(reading), where)
