"""Hotkey matching, with key objects shaped like pynput's (importing pynput needs a display;
the daemon test presses the real hotkey on the real desktop)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from base.config import parse_hotkey
from capture.hotkey import Hotkey, key_name

CTRL = SimpleNamespace(name="ctrl_l")
SHIFT = SimpleNamespace(name="shift")
META_L = SimpleNamespace(name=None, char=None, vk=0xFFE7)
CAPITAL_P = SimpleNamespace(name=None, char="P", vk=None)


def test_the_spec_hotkey_parses_into_modifiers_and_a_key() -> None:
    assert parse_hotkey("<ctrl>+<shift>+<alt>+p") == ({"ctrl", "shift", "alt"}, "p")
    with pytest.raises(ValueError, match="one key"):
        parse_hotkey("<ctrl>+pp")


def test_shift_alt_arriving_as_meta_and_a_capital_still_fires() -> None:
    fired: list[int] = []
    hotkey = Hotkey("<ctrl>+<shift>+<alt>+p", lambda: fired.append(1))
    for key in (CTRL, SHIFT, META_L):
        hotkey.press(key)
    hotkey.press(CAPITAL_P)
    assert fired == [1]
    hotkey.release(CTRL)
    hotkey.press(CAPITAL_P)
    assert fired == [1]
    assert key_name(SimpleNamespace(name="alt_gr")) == "alt"
