"""JSON from outside (an import line, a hand-edited config.json, a raw MCP request), parsed
with every limit of Python's parser turned into one ``ValueError`` that says which; and
Backscroll's own JSON files (daemon.json, keyinfo.json, the views' manifest), which a hand
edit or damage can fill with anything, decoded into their type by msgspec with the same care.

``json.loads`` raises ``JSONDecodeError`` for text that is not JSON, but a plain
``ValueError`` for an integer longer than the interpreter converts (4,300 digits) and
``RecursionError`` for nesting deeper than the stack: callers that caught the first ended in
a traceback on the other two. A value nested past ``MAX_DEPTH`` is refused too, even where
the parser managed it: the code that walks it later (an error message, a conversion) recurses
from deeper in the stack and would fail there instead.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")

MAX_DEPTH = 64
"""Deeper than any value Backscroll reads (an import line, the config, an MCP request: 6)."""


def parse(text: str | bytes) -> Any:
    """The value ``text`` holds; ``ValueError`` with a one-line reason when there is none."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError(f"not JSON that can be read (nested more than {MAX_DEPTH} deep)") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg})") from None
    except ValueError:
        # The one ValueError left: an integer past the interpreter's conversion limit.
        digits = sys.get_int_max_str_digits()
        raise ValueError(
            f"not JSON that can be read (a number of more than {digits:,} digits)"
        ) from None
    if _deeper_than(value, MAX_DEPTH):
        raise ValueError(f"not JSON that can be read (nested more than {MAX_DEPTH} deep)")
    return value


def _deeper_than(value: Any, limit: int) -> bool:
    # A loop, not recursion: the point is not to need the stack.
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in item)
    return False


def decode(data: bytes, into: type[T]) -> T:
    """``data`` as an ``into``; ``msgspec.DecodeError`` when it is not one. msgspec raises
    RecursionError for nesting past the stack, even under a field ``into`` does not have:
    callers that caught DecodeError for a damaged file ended in a traceback on it."""
    try:
        return msgspec.json.decode(data, type=into)
    except RecursionError:
        raise msgspec.DecodeError("JSON nested more than the stack holds") from None
