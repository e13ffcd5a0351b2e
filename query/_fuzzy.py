"""A search that forgives OCR: which query words may match one edit away, and which words of
a frame's text did.

OCR misreads a letter now and then ("argunents" for "arguments", "uhen" for "when"). When no
frame has every term exactly, each single word of at least ``MIN_CHARS`` letters (and
nothing else) is also tried at one edit (a character replaced, added or dropped, or two
neighbours swapped: people mistype queries too) against the text of OCR'd plaintext frames.
The index cannot do this for encrypted text: a blind token is a keyed hash of the whole word,
and a word one letter off has an unrelated token.
"""

from __future__ import annotations

import re

from base import tokens
from query.parse import Term

MIN_CHARS = 4
"""Measured on the OCR'd frames of the 1M-frame benchmark store (16,290 distinct words;
``bench/search.py`` prints the table): one edit from a word of 2 letters reaches 44 other
words of that text on average, from 3 letters 18, from 4 letters 7.4, from 5 letters 3.7,
from 6 letters 2.5. Below four letters a fuzzy match is a dozen unrelated words or more;
from four it is a handful, which every other term of the query narrows, and which comes back
marked. Four letters is also the shortest word the recall benchmark of issue 17 searches,
and the misreadings it reported include words of four ("uhen" for "when", "NAHE")."""


def forgivable(term: Term) -> bool:
    """Whether ``term`` is also tried one edit away: a single word (a phrase or a prefix is
    taken as it is), long enough, and of letters only: a word with a digit is a number, a
    version or an identifier, where one character off is another one (port 5433, ``v2``,
    ``build25`` against ``build2``), not a misreading worth showing."""
    if term.prefix or len(term.words) != 1:
        return False
    word = term.words[0]
    return len(word) >= MIN_CHARS and word.isalpha()


def near_words(text: str, terms: list[Term]) -> list[Term]:
    """The words of ``text`` one edit from a forgivable term's word (and not that word), as
    terms, so a snippet brackets what was found in place of what was asked."""
    wanted = [t.words[0] for t in terms if forgivable(t)]
    if not wanted:
        return []
    sizes = {len(q) + d for q in wanted for d in (-1, 0, 1)}
    words = {w for w in _distinct_words(text) if len(w) in sizes}
    found = {w for w in words if any(one_edit(w, q) for q in wanted)}
    return [Term((w,)) for w in sorted(found - set(wanted))]


_ASCII_WORD = re.compile(r"[a-z0-9]+")


def _distinct_words(text: str) -> set[str]:
    """The words of ``text`` as snippets find them (``tokens.word_spans``), by one regex
    over ASCII text: the analyzer, then a check of every word, took 4 ms of a 10 ms
    search at 20,000 frames for 15 hits."""
    if text.isascii():
        return set(_ASCII_WORD.findall(text.lower()))
    return {word for _, _, word in tokens.word_spans(text)}


def one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are at most one edit apart, counting an adjacent swap as one
    (what Tantivy's fuzzy term query with ``transposition_cost_one`` matches)."""
    if a == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        if len(diff) == 1:
            return True
        i = diff[0]
        return len(diff) == 2 and diff[1] == i + 1 and a[i] == b[i + 1] and a[i + 1] == b[i]
    short, long = (a, b) if len(a) < len(b) else (b, a)
    i = 0
    while i < len(short) and short[i] == long[i]:
        i += 1
    return short[i:] == long[i + 1 :]
