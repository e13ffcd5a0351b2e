"""The deny list: which windows are never grabbed, and which are blacked out beside the
active one."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from typing import TYPE_CHECKING

from base.config import Config

if TYPE_CHECKING:
    from capture.probe import Geometry, VisibleWindow


def denied(config: Config, app: str, title: str, url: str = "") -> bool:
    """Whether a window matches the deny list (by app name, title or the page's address),
    both sides read as ``fold`` reads them."""
    places = (fold(app), fold(title), fold(url))
    return any(p in place for p in _patterns(config.deny_apps) for place in places)


def fold(text: str) -> str:
    """Text as a person means it: punycode labels decoded (``xn--bcher-kva`` is ``bücher``),
    compatibility forms unified (NFKC: full-width letters, ligatures), case folded beyond
    ASCII (``STRASSE`` is ``straße``), the ends stripped. A pattern matched raw let through
    a window whose address its browser gave in the other form, or a pattern typed padded."""
    decoded = _ACE_LABEL.sub(_decode_label, text)
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", decoded).casefold()).strip()


_ACE_LABEL = re.compile(r"(?<![\w-])xn--[a-z0-9-]+", re.IGNORECASE)


def _decode_label(match: re.Match[str]) -> str:
    try:
        return match.group().encode("ascii").decode("idna")
    except UnicodeError:  # not valid punycode: matched as it is written
        return match.group()


@functools.lru_cache(maxsize=8)
def _patterns(patterns: tuple[str, ...]) -> tuple[str, ...]:
    """The deny list folded once, not at every probe (the config changes rarely)."""
    return tuple(folded for folded in map(fold, patterns) if folded)  # "" would match all


def denied_beside(
    config: Config, windows: Iterable[VisibleWindow], active: int | None
) -> list[Geometry]:
    """The rectangles of the denied windows other than ``active``, to black out."""
    return [w.geometry for w in windows if w.window_id != active and denied(config, w.app, w.title)]
