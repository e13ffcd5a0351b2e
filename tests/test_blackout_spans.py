"""Where a frame's secrets are, in its text and its pixels (``capture.redact.secret_spans``,
``capture.blackout``), without a desktop: the real windows are in tests/test_blackout.py."""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image

from capture.blackout import TINT, paint, words_over
from capture.ocr import Word
from capture.redact import redact, secret_spans

DATA = Path(__file__).resolve().parent / "data" / "secrets.jsonl"  # see data/PROVENANCE.md


def test_every_secret_of_the_evaluation_set_lies_inside_the_spans_found_in_its_own_text() -> None:
    for line in DATA.read_text().splitlines():
        row = json.loads(line)
        text = row["text"]
        spans = secret_spans(text)
        counts: dict[str, int] = {}
        for _start, _end, kind in spans:
            counts[kind] = counts.get(kind, 0) + 1
        assert counts == redact(text).counts, row["id"]
        covered = set().union(*(range(start, end) for start, end, _ in spans))
        for secret in row["secrets"]:
            at = text.find(secret)
            if at >= 0 and row["kinds"]:
                assert covered >= set(range(at, at + len(secret))), (row["id"], secret)


def test_spans_found_after_an_earlier_scan_are_placed_in_the_text_as_it_was() -> None:
    text = 'key=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 and password: "hunter two" end'
    found = [(text[start:end], kind) for start, end, kind in secret_spans(text)]
    assert found == [
        ("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", "github_token"),
        ("hunter two", "password"),
    ]


def test_a_quoted_value_read_by_ocr_with_curly_quotes_is_redacted_whole() -> None:
    assert redact('password = “value with spaces"').text == 'password = “[REDACTED:password]"'
    assert redact("api_key: ‘value with spaces’").text == "api_key: ‘[REDACTED:secret]’"


def test_a_word_holding_a_label_and_a_secret_keeps_the_label_and_one_ending_early_goes_whole() -> (
    None
):
    text = "KEY=sk-abc123 tail"
    word = Word(0, 13, 100, 10, 230, 24)  # 10 px a character
    (box,) = words_over(text, [word], [(4, 13)])
    assert box == (100 + (4 - 2) * 10, 10, 230, 24)
    (box,) = words_over(text, [word], [(4, 9)])  # a token OCR cut short: its rest goes too
    assert box[2] == 230
    (box,) = words_over("abcdef", [Word(0, 6, 0, 0, 60, 10)], [(3, 6)])  # inside a token
    assert box[0] == 0


def test_a_box_is_painted_one_flat_tint_of_its_background_and_nothing_outside_it() -> None:
    image = Image.new("RGB", (60, 30), "white")
    image.paste((0, 0, 0), (20, 10, 30, 20))  # ink
    painted = paint(image, [(18, 8, 32, 22)], pad=0)
    assert painted == 1
    inside = image.crop((18, 8, 32, 22))
    assert inside.getextrema() == ((255 - TINT, 255 - TINT),) * 3
    assert image.getpixel((17, 8)) == image.getpixel((32, 22)) == (255, 255, 255)
    dark = Image.new("L", (20, 20), 20)
    paint(dark, [(5, 5, 15, 15)], pad=0)
    assert dark.getpixel((10, 10)) == 20 + TINT
