"""The recall benchmark's own rules (``bench/recall.py``): what counts as seen, what a word
is, and the windows it relies on (a GTK window with and without accessibility)."""

from __future__ import annotations

import time

import pytest

from base import tokens
from bench.recall import Shown, terms
from capture.ax import AxReader
from capture.probe import X11Probe
from tests.desktop import Desktop, Window, desktop

__all__ = ["desktop"]


def shown_with(*segments: tuple[float, float, tuple[str, ...]]) -> Shown:
    shown = Shown("test", Window("test", 1, None, "t"))  # type: ignore[arg-type]
    shown.segments.extend(segments)
    return shown


def test_a_frame_within_one_screen_is_scored_on_all_of_it() -> None:
    shown = shown_with((10.0, 20.0, ("alpha line", "beta line")))
    assert shown.truth(12.0) == ["alpha line", "beta line"]


def test_a_frame_taken_while_the_screen_changed_counts_only_the_rows_on_both() -> None:
    shown = shown_with(
        (10.0, 20.0, ("alpha line", "beta line")),
        (20.2, 30.0, ("beta line", "gamma line")),
    )
    assert shown.truth(19.9) == ["beta line"]  # the grab may have seen either screen
    assert shown.truth(20.05) == ["beta line"]  # in the gap between the two
    assert shown.truth(25.0) == ["beta line", "gamma line"]


def test_a_frame_before_anything_was_shown_is_not_scored() -> None:
    assert shown_with((10.0, 20.0, ("alpha",))).truth(5.0) is None


def test_words_have_four_letters_and_phrases_are_adjacent_words() -> None:
    words, phrases = terms(["GET /api/v1/items failed: connection refused (errno 111)"])
    assert words == {"items", "failed", "connection", "refused", "errno"}
    assert "connection refused" in phrases
    assert "items failed" in phrases
    assert not any("111" in p or "v1" in p for p in phrases)  # a number breaks adjacency


def test_the_benchmarks_words_are_the_index_words_on_ascii_text() -> None:
    line = "dpkg: warning: while removing libfoo_2.3-1+b1, directory '/usr/lib/x86_64' not empty"
    words, _ = terms([line])
    index_words = {w for w in tokens.words(line) if w.isalpha() and len(w) >= 4}
    assert words == index_words


@pytest.mark.desktop
def test_a_gtk_window_without_its_accessibility_bridge_publishes_no_text(desk: Desktop) -> None:
    text = "Recall benchmark: the same words for the accessibility tree and for OCR."
    probe, reader = X11Probe(desk.display), AxReader(desk.bus_address)
    try:
        for accessible in (True, False):
            window = desk.open_zenity_text(text, "recall", accessible=accessible)
            desk.activate(window.window_id)
            front = probe.frontmost()
            assert front is not None and front.window_id == window.window_id
            read = reader.window_text(front.pid)
            deadline = time.monotonic() + 10  # a GTK app registers a moment after it maps
            while accessible and text not in read and time.monotonic() < deadline:
                time.sleep(0.1)
                read = reader.window_text(front.pid)
            assert (text in read) is accessible
            desk.close(window)
    finally:
        probe.close()
        reader.close()


@pytest.mark.desktop
def test_an_xterm_at_the_servers_default_font_in_dark_colours_opens(desk: Desktop) -> None:
    window = desk.open_xterm(["some text"], "plain", columns=40, rows=5, font=None, dark=True)
    argv = desk.run(["ps", "-o", "args=", "-p", str(window.pid)])
    assert "-fa" not in argv.split()
    assert "black" in argv and argv.index("-bg") < argv.index("black")
