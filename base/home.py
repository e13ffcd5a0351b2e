"""Where a store lives on disk, and where each of its parts lives under it."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_HOME = Path("~/.backscroll")


def resolve_home(home: str | os.PathLike[str] | None = None) -> Path:
    """The store folder: ``home`` if given, else ``$BACKSCROLL_HOME``, else ``~/.backscroll``."""
    chosen = home if home is not None else os.environ.get("BACKSCROLL_HOME") or DEFAULT_HOME
    return Path(chosen).expanduser().absolute()


def is_default_home(home: Path) -> bool:
    return home == DEFAULT_HOME.expanduser().absolute()


class Layout:
    """Where each part of a store lives under its home."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.log = home / "log"
        self.views = home / "views"
        self.search = self.views / "search"
        self.thumbs = home / "thumbs"
        self.run = home / "run"
        """The daemon's sockets, 0700: made and cleared by the daemon alone."""
