"""Snippets: about ``SNIPPET_CHARS`` characters of a frame's text around the first match.

Made at query time from the decrypted text, so the index never holds an encrypted frame's
plaintext.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from functools import lru_cache

from base import tokens
from query.parse import Term

SNIPPET_CHARS = 160
_SPACES = re.compile(r"\s+")


def snippet(text: str, terms: list[Term]) -> str:
    """About ``SNIPPET_CHARS`` characters around the first match, whitespace folded, the
    matching words in [brackets] as in the spec's example output."""
    spans = _matches(text, terms)
    first = next(spans, None)
    lo = max(0, first[0] - SNIPPET_CHARS // 3) if first else 0
    hi = lo + SNIPPET_CHARS
    marked, at = [], lo
    for begin, end in itertools.chain([first] if first else [], spans):
        if end > hi:
            break
        if begin >= lo:
            marked += [text[at:begin], "[", text[begin:end], "]"]
            at = end
    piece = _SPACES.sub(" ", "".join([*marked, text[at:hi]])).strip()
    return ("… " if lo else "") + piece + (" …" if hi < len(text) else "")


def _matches(text: str, terms: list[Term]) -> Iterator[tuple[int, int]]:
    """Where ``terms``' words are in ``text``, in order: one regex over ASCII text (most
    screen text), else word by word through ``tokens.word_spans``."""
    if text.isascii():
        pattern = _ascii_pattern(tuple(terms))
        if pattern is not None:
            yield from (m.span() for m in pattern.finditer(text))
        return
    wanted = {w for t in terms for w in t.words}
    prefixes = tuple(t.words[0] for t in terms if t.prefix)
    for begin, end, word in tokens.word_spans(text):
        if word in wanted or (prefixes and word.startswith(prefixes)):
            yield begin, end


@lru_cache(maxsize=64)
def _ascii_pattern(terms: tuple[Term, ...]) -> re.Pattern[str] | None:
    """Whole words, and prefixes, that an ASCII text can hold; case-insensitive (ASCII
    case folding is what the analyzer's lowercasing does to ASCII)."""
    words = sorted({w for t in terms for w in t.words if w.isascii()}, key=len, reverse=True)
    prefixes = [t.words[0] for t in terms if t.prefix and t.words[0].isascii()]
    alternatives = [f"(?:{'|'.join(map(re.escape, words))})(?![A-Za-z0-9])"] if words else []
    if prefixes:
        alternatives.append(f"(?:{'|'.join(map(re.escape, prefixes))})[A-Za-z0-9]*")
    if not alternatives:
        return None
    return re.compile(f"(?<![A-Za-z0-9])(?:{'|'.join(alternatives)})", re.IGNORECASE)
