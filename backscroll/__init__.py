"""Backscroll: a local, private, searchable memory of what you saw on your screen.

Public API (imported lazily, so ``backscroll --help`` and ``status`` start fast)::

    from backscroll import MemoryStore, parse_when, redact
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from backscroll.store import MemoryStore
    from base.config import Config
    from base.errors import BackscrollError
    from capture.redact import Redaction, redact
    from query.phrases import parse_when
    from query.search import Hit

__all__ = ["BackscrollError", "Config", "Hit", "MemoryStore", "Redaction", "parse_when", "redact"]

_WHERE = {
    "BackscrollError": "base.errors",
    "Config": "base.config",
    "Hit": "query.search",
    "MemoryStore": "backscroll.store",
    "Redaction": "capture.redact",
    "parse_when": "query.phrases",
    "redact": "capture.redact",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'backscroll' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_WHERE[name]), name)
