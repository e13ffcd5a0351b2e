"""Backscroll's query language, parsed with the views' tokenizer.

    error connection        every term must match (in the text, title or app name)
    "connection refused"    a phrase: its words contiguous
    invoice*                a prefix (plaintext frames; the exact word on encrypted ones)

No input ever reaches Tantivy's own query parser: queries are built in code.
"""

from __future__ import annotations

from typing import NamedTuple

from base import tokens
from base.errors import QueryError

MAX_QUERY_CHARS = 1000
MAX_TERMS = 32


class Term(NamedTuple):
    words: tuple[str, ...]
    """One word, or the words of a phrase (also of a token like ``127.0.0.1``)."""
    prefix: bool = False


def parse_query(text: str) -> list[Term]:
    """The terms of ``text``; raises ``QueryError`` with one clear line."""
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(f"query is too long ({len(text)} characters; at most {MAX_QUERY_CHARS})")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # bytes that were not UTF-8 in argv arrive as surrogates
        raise QueryError("query is not UTF-8 text") from None
    if text.count('"') % 2:
        raise QueryError('unbalanced quote in query: close the phrase with "')
    terms: list[Term] = []
    for i, part in enumerate(text.split('"')):
        if i % 2:
            words = tuple(tokens.words(part))
            if words:
                terms.append(Term(words))
            continue
        for chunk in part.split():
            prefix = chunk.endswith("*")
            words = tuple(tokens.words(chunk.rstrip("*")))
            if prefix and not words:
                raise QueryError(f"'{chunk}' has no word before '*' (write e.g. invoice*)")
            if words:
                terms.append(Term(words, prefix and len(words) == 1))
    if not terms:
        raise QueryError("query has no words to search for")
    if len(terms) > MAX_TERMS:
        raise QueryError(f"query has {len(terms)} terms; at most {MAX_TERMS}")
    return terms
