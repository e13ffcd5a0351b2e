"""The bottom layer: what every other package may use, importing nothing of the project.

    base.errors   the one exception tree           base.home    where a store's parts live
    base.clock    the clock events are stamped by  base.config  the config and its rules
    base.tokens   the word definition (index and blind tokens)
    base.fs       the file layer every durable write goes through
    base.processes  whether a pid still runs
    base.jsontext   JSON from outside, its parser's limits one ValueError

Public API (imported lazily: importing ``base`` loads only ``base.fronts``)::

    from base import BackscrollError, Config, Layout, now_us, resolve_home
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from base.fronts import lazy_names

if TYPE_CHECKING:
    from base.clock import now_us
    from base.config import Config
    from base.errors import BackscrollError
    from base.home import Layout, resolve_home

__all__ = ["BackscrollError", "Config", "Layout", "now_us", "resolve_home"]

_WHERE = {
    "BackscrollError": "base.errors",
    "Config": "base.config",
    "Layout": "base.home",
    "now_us": "base.clock",
    "resolve_home": "base.home",
}


__getattr__ = lazy_names(__name__, _WHERE)
