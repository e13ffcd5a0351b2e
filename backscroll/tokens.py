"""The one definition of a word, shared by the search index, the blind tokens and queries.

A word is a run of Unicode word characters (``\\w+``, the same pattern in Python's ``re`` and
in Tantivy's Rust regex tokenizer), after NFKC normalisation, lowercased, and shorter than
``MAX_TOKEN_BYTES`` in UTF-8 (longer runs are base64 blobs and hashes: they bloat the term
dictionary and nobody searches for them). Text is NFKC-normalised in Python before Tantivy
sees it, so the index and this module agree on every word.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tantivy

ANALYZER_NAME = "backscroll_words"
WORD_PATTERN = r"\w+"
MAX_TOKEN_BYTES = 64

_WORD = re.compile(WORD_PATTERN)


def normalize(text: str) -> str:
    """NFKC, with a fast path for ASCII (which NFKC leaves unchanged)."""
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def _keep(word: str) -> bool:
    return len(word) < MAX_TOKEN_BYTES and len(word.encode()) < MAX_TOKEN_BYTES


def words(text: str) -> list[str]:
    """The words of ``text`` in order, normalised and lowercased."""
    # Split first, then lowercase each word: the order Tantivy's analyzer uses (lowercasing
    # "İ" yields a combining mark that would otherwise split the word).
    return [w for w in (m.lower() for m in _WORD.findall(normalize(text))) if _keep(w)]


def word_spans(text: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, word)`` for each word of ``text``, as str offsets into ``text`` itself.

    Offsets are only exact when NFKC leaves the text's length alone, which holds for the text
    we display (snippets fall back gracefully otherwise).
    """
    for match in _WORD.finditer(text):
        word = normalize(match.group()).lower()
        if _keep(word):
            yield match.start(), match.end(), word


def analyzer() -> tantivy.TextAnalyzer:
    """The Tantivy analyzer with the same definition; register it on every index open."""
    import tantivy

    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(WORD_PATTERN))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.remove_long(MAX_TOKEN_BYTES))
        .build()
    )
