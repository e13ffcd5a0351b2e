"""Secrets hidden in the pixels (issue 25 §3): real windows of the headless X11 desktop show
one secret of each kind of the spec's redaction table; the frame the camera takes is recorded
with its thumbnail encrypted, and that thumbnail, decrypted, upscaled and read by Tesseract,
holds none of them, while the words around them read as well as in a frame taken without
redaction.

The secrets and the lines around them are rows of ``tests/data/secrets.jsonl`` (see
``tests/data/PROVENANCE.md``), one of each kind. The thumbnails are as wide as the screen:
at the default 480 pixels no word of a 1920-pixel screen can be read back, secret or not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from backscroll.record import Recorder
from backscroll.store import MemoryStore
from base.config import Config
from capture.backends import backends
from capture.camera import Camera
from capture.probe import Frontmost
from capture.seen import Seen
from headless.x11 import WIDTH
from tests.desktop import Desktop

pytestmark = [pytest.mark.desktop, pytest.mark.ocr]

DATA = Path(__file__).parent / "data" / "secrets.jsonl"
# One row of each kind of the spec's table, short enough to be drawn on one screen.
ROWS = {
    "card": "s0230",
    "aws_key": "s0000",
    "github_token": "s0029",
    "anthropic_key": "s0061",
    "openai_key": "s0081",
    "slack_token": "s0092",
    "jwt": "s0170",
    "private_key": "s0212",
    "password": "s0306",
    "secret": "s0310",
}
SHARP = Config(thumbnail_width=WIDTH, thumbnail_quality=90, encrypt_thumbnails=True)


def rows() -> list[dict[str, object]]:
    wanted = set(ROWS.values())
    found = [json.loads(line) for line in DATA.read_text().splitlines()]
    return [row for row in found if row["id"] in wanted]


def secrets() -> list[str]:
    return [str(secret) for row in rows() for secret in row["secrets"]]  # type: ignore[attr-defined]


def plain_words(text: str) -> set[str]:
    """The words of four letters or more that are no part of a secret."""
    hidden = " ".join(secrets()).lower()
    return {word for word in re.findall(r"[a-z]{4,}", text.lower()) if word not in hidden}


def squashed(text: str) -> str:
    return re.sub(r"\s+", "", text).lower()


def left_of(secret: str, read: str) -> str | None:
    """A run of ``secret`` read back (the data set's rule: min(len, 16) characters, here
    without spaces, as OCR adds and drops them), or None."""
    run = min(len(squashed(secret)), 16)
    body, seen = squashed(secret), squashed(read)
    for start in range(len(body) - run + 1):
        if body[start : start + run] in seen:
            return body[start : start + run]
    return None


def read_back(jpeg: bytes) -> str:
    """The thumbnail as a person zooming in sees it: upscaled 2×, read by Tesseract."""
    import io

    from PIL import Image

    from capture.ocr import ocr_text

    image = Image.open(io.BytesIO(jpeg))
    return ocr_text(image.resize((image.width * 2, image.height * 2), Image.Resampling.LANCZOS))


@pytest.fixture
def desk(desktop: Desktop) -> Iterator[Desktop]:
    yield desktop
    desktop.close()


@pytest.fixture
def camera(desk: Desktop) -> Iterator[Camera]:
    opened = Camera(backends(environ=desk.env, system="linux"))
    yield opened
    opened.close()


@pytest.fixture
def store(backscroll_home: Path) -> Iterator[MemoryStore]:
    opened = MemoryStore(backscroll_home, write=True, catch_up=False)
    yield opened
    opened.close()


def in_front(desk: Desktop, camera: Camera, window_id: int) -> Frontmost:
    desk.activate(window_id)
    desk.settle()
    front = camera.frontmost()
    assert front is not None and front.window_id == window_id
    return front


def stored_thumbnail(store: MemoryStore, seen: Seen) -> bytes:
    frame = Recorder(store).record(seen, SHARP)
    assert frame is not None and frame.thumb_encrypted
    store.refresh()
    jpeg = store.thumbnail(frame.frame_id)
    assert jpeg is not None
    return jpeg


@pytest.mark.parametrize("accessible", [False, True], ids=["ocr", "atspi"])
def test_no_secret_of_the_table_can_be_read_in_the_stored_thumbnail(
    desk: Desktop, camera: Camera, store: MemoryStore, accessible: bool
) -> None:
    screen = "\n\n".join(str(row["text"]) for row in rows())
    window = desk.open_zenity_text(
        screen, "secrets", width=WIDTH - 100, height=1000, accessible=accessible
    )
    front = in_front(desk, camera, window.window_id)

    before = camera.take(front, "app_change", SHARP.replace(redact=False))
    seen = camera.take(front, "app_change", SHARP)
    assert isinstance(before, Seen) and isinstance(seen, Seen) and before.jpeg is not None
    assert seen.text_source == ("ax" if accessible else "ocr")
    from capture.redact import redact

    assert set(redact(seen.text).counts) >= set(ROWS), seen.text
    shown = read_back(before.jpeg)
    assert all(left_of(secret, shown) for secret in secrets()), "the window shows them all"

    kept = read_back(stored_thumbnail(store, seen))

    assert {secret: left_of(secret, kept) for secret in secrets()} == dict.fromkeys(secrets())
    legible_before = plain_words(shown) & plain_words(screen)
    legible_after = plain_words(kept) & plain_words(screen)
    assert len(legible_before - legible_after) <= 1, legible_before - legible_after
