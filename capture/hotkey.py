"""The global pause hotkey, through pynput's keyboard listener.

pynput's own ``GlobalHotKeys`` never fired on the test desktop: with Shift held, X maps Alt
to ``Meta_L`` (keysym 0xffe7) and the letter to its capital, so ``<ctrl>+<shift>+<alt>+p``
arrived as ctrl, shift, <65511>, 'P'. Matching here folds both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from base.config import MODIFIERS, parse_hotkey

# X keysyms that are Alt (and its Meta twin, which Shift+Alt produces) or Super.
_KEYSYM_NAMES = {0xFFE7: "alt", 0xFFE8: "alt", 0xFFE9: "alt", 0xFFEA: "alt", 0xFFEB: "cmd"}


def key_name(key: Any) -> str | None:
    name = getattr(key, "name", None)
    if name:
        return str(name).removesuffix("_l").removesuffix("_r").replace("alt_gr", "alt")
    char = getattr(key, "char", None)
    if char:
        return str(char).lower()
    return _KEYSYM_NAMES.get(getattr(key, "vk", None) or 0)


class Hotkey:
    def __init__(self, spec: str, callback: Callable[[], None]) -> None:
        self.modifiers, self.key = parse_hotkey(spec)
        self.callback = callback
        self.pressed: set[str] = set()
        self.listener: Any = None

    def start(self) -> None:
        from pynput import keyboard

        self.listener = keyboard.Listener(on_press=self.press, on_release=self.release)
        self.listener.daemon = True
        self.listener.start()

    def stop(self) -> None:
        if self.listener is not None:
            self.listener.stop()

    def press(self, key: Any) -> None:
        name = key_name(key)
        if name in MODIFIERS:
            self.pressed.add(name)
        elif name == self.key and self.pressed == self.modifiers:
            self.callback()

    def release(self, key: Any) -> None:
        self.pressed.discard(key_name(key) or "")
