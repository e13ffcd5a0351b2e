"""The deny list: which windows are never grabbed, and which are blacked out beside the
active one."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from base.config import Config

if TYPE_CHECKING:
    from capture.probe import Geometry, VisibleWindow


def denied(config: Config, app: str, title: str, url: str = "") -> bool:
    """Whether a window matches the deny list (by app name, title or the page's address,
    ignoring case)."""
    places = (app.lower(), title.lower(), url.lower())
    return any(p.lower() in place for p in config.deny_apps for place in places)


def denied_beside(
    config: Config, windows: Iterable[VisibleWindow], active: int | None
) -> list[Geometry]:
    """The rectangles of the denied windows other than ``active``, to black out."""
    return [w.geometry for w in windows if w.window_id != active and denied(config, w.app, w.title)]
