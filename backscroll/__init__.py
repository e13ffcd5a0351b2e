"""Backscroll: a local, private, searchable memory of what you saw on your screen.

Public API (imported lazily, so ``backscroll --help`` and ``status`` start fast)::

    from backscroll import MemoryStore, parse_when, redact
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from base.fronts import lazy_names

if TYPE_CHECKING:
    from backscroll.store import MemoryStore
    from base.config import Config
    from base.errors import BackscrollError
    from capture.redact import Redaction, redact
    from query.search import Hit
    from query.when import parse_when

__all__ = ["BackscrollError", "Config", "Hit", "MemoryStore", "Redaction", "parse_when", "redact"]

_WHERE = {
    "BackscrollError": "base.errors",
    "Config": "base.config",
    "Hit": "query.search",
    "MemoryStore": "backscroll.store",
    "Redaction": "capture.redact",
    "parse_when": "query.when",
    "redact": "capture.redact",
}


__getattr__ = lazy_names(__name__, _WHERE)
