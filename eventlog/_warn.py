"""The log's warnings (damage found, a repair, a compaction finished after a crash), through
``logging`` under the module's name. ``logging`` is imported at the first one: they are rare,
and its import (with traceback, string and weakref) was ~5% of a ``status``'s start-up."""

from __future__ import annotations


def warn(logger: str, message: str, *args: object) -> None:
    import logging

    logging.getLogger(logger).warning(message, *args)
