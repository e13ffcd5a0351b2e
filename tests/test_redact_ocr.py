"""Redaction of what OCR reads: secrets drawn in real windows of the headless desktop, read by
real Tesseract, then redacted (issue 24, case 14).

Tesseract does not give a token back as it was drawn: it puts spaces after the dots of a JWT
and around the hyphens of a Slack token, reads a dot as a comma and ``eyJ`` as ``eyI`` or
``eyz``, and splits a long run of letters. Clean strings cannot show that; these windows do.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import pytest

from capture.ocr_worker import WorkerOcr
from capture.probe import X11Probe
from capture.redact import redact
from tests.desktop import Desktop, desktop
from tests.test_ocr import window_region

__all__ = ["desktop"]  # the session fixture, until tests/conftest.py imports it

pytestmark = [pytest.mark.desktop, pytest.mark.ocr]


def _b64(value: dict[str, object]) -> str:
    encoded = json.dumps(value, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(encoded).rstrip(b"=").decode()


SHORT_JWT = (
    f"{_b64({'alg': 'HS256'})}.{_b64({'sub': '42'})}.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk"
)
JWT = (
    f"{_b64({'alg': 'HS256', 'typ': 'JWT'})}."
    f"{_b64({'sub': '1234567890', 'name': 'John Doe', 'iat': 1516239022})}."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
BOT_TOKEN = "xoxb-263594206564-2643817255233-FGqddMF8t08v8N7Oq4i57vs1"
USER_TOKEN = "xoxp-1234567890123-1234567890123-1234567890123-0123456789abcdef0123456789abcdef"
# Of the same class: an API key's prefix read with a space before its hyphen, a long key
# split by a space.
OPENAI_KEY = "sk-proj-a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0"
ANTHROPIC_KEY = "sk-ant-api03-Xy9a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0uvwxyzAA"
GITHUB_TOKEN = "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"
AWS_KEY = "AKIAQXRYONJ3DYBVZXG2"
# One secret a line between plain words, as a terminal shows them: the two JWTs are longer
# than the terminal is wide and wrap onto the next line.
LINES = [
    f"header {SHORT_JWT} done",
    f"token {JWT}",
    f"bot {BOT_TOKEN} done",
    f"user {USER_TOKEN} done",
    f"key {OPENAI_KEY} done",
    f"ant {ANTHROPIC_KEY} done",
    f"gh {GITHUB_TOKEN} done",
    f"aws {AWS_KEY} done",
]
KINDS = {
    "jwt": 2,
    "slack_token": 2,
    "openai_key": 1,
    "anthropic_key": 1,
    "github_token": 1,
    "aws_key": 1,
}
PLAIN = {"header", "token", "bot", "user", "key", "ant", "gh", "aws", "done"}
# xterm's own bitmap font, light and dark, and DejaVu Sans Mono small and large.
STYLES = {
    "fixed": {"font": None},
    "fixed-dark": {"font": None, "dark": True},
    "dejavu9": {"font_size": 9},
    "dejavu12": {"font_size": 12},
}


@pytest.fixture(scope="module")
def engine() -> Iterator[WorkerOcr]:
    opened = WorkerOcr()
    yield opened
    opened.close()


@pytest.mark.parametrize("style", STYLES.values(), ids=STYLES.keys())
def test_secrets_read_by_ocr_from_a_terminal_are_redacted(
    desktop: Desktop, engine: WorkerOcr, style: dict[str, object]
) -> None:
    window = desktop.open_xterm(LINES, "secrets", columns=100, rows=14, **style)  # type: ignore[arg-type]
    probe = X11Probe(desktop.display)
    try:
        read = engine.text(window_region(desktop, probe, window))
    finally:
        probe.close()
        desktop.close(window)

    result = redact(read)

    assert result.counts == KINDS, (read, result.text)
    # What is left of the secrets: the words that are neither a marker nor a plain word of
    # the screen. A wrapped token's last character or two may stay on its own (too short to
    # be found by a search or to be of use); a whole token, or most of one, may not.
    left = [
        word
        for word in result.text.split()
        if not word.startswith("[REDACTED:") and word.strip(":,.").lower() not in PLAIN
    ]
    assert sum(map(len, left)) <= 4, (read, result.text)
    assert result.text.count("done") == read.count("done"), "a plain word was redacted"
