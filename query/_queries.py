"""The Tantivy queries of a search or timeline: terms, the time span and the app filter.

Only builders: nothing here opens an index or runs a query, so ``query.search`` reads as
what it asks, and this module as how Tantivy is asked it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

import msgspec

from base import tokens
from projector.schema import folded, partition_of
from projector.state import State
from query._fuzzy import forgivable
from query.parse import Term

if TYPE_CHECKING:
    import tantivy


class TimeSpan(msgspec.Struct, frozen=True):
    """The half-open ``[start, end)`` a search or timeline looks in; None is unbounded.
    ``upto_id``: only frames up to that id (a search's snapshot, which its later pages
    keep); None: every frame."""

    start: datetime | None = None
    end: datetime | None = None
    upto_id: int | None = None


def months(span: TimeSpan) -> tuple[str | None, str | None]:
    """The first and last month partitions ``span`` touches (None: unbounded)."""
    lo = partition_of(utc_us(span.start)) if span.start else None
    hi = partition_of(utc_us(span.end) - 1) if span.end else None
    return lo, hi


def matching(
    schema: tantivy.Schema,
    terms: list[Term],
    span: TimeSpan,
    app_filter: tantivy.Query | None,
    blind: Callable[[str], bytes] | None,
    *,
    every: bool,
    phrases: bool = True,
) -> tantivy.Query:
    """``every`` one of ``terms`` (or any of them) in ``span``, passing ``app_filter``
    (when given)."""
    import tantivy

    must = tantivy.Occur.Must
    occur = must if every else tantivy.Occur.Should
    query = tantivy.Query.boolean_query(
        [(occur, _term_query(schema, term, blind, phrases)) for term in terms]
    )
    narrowed = filters(schema, span, app_filter)
    return tantivy.Query.boolean_query([(must, query), (must, narrowed)]) if narrowed else query


def forgiving(
    schema: tantivy.Schema, terms: list[Term], span: TimeSpan, app_filter: tantivy.Query | None
) -> tantivy.Query:
    """Every one of ``terms`` in an OCR'd plaintext frame, each forgivable word exactly or
    one edit away in its text (``query/_fuzzy.py``), in ``span``, passing ``app_filter``.

    Only OCR'd frames: accessibility text, app names and titles are what the app put there,
    and an encrypted frame's blind tokens match whole words only. Such a frame with every
    term exactly was already found by ``matching``. A fuzzy term query scores every match
    alike (a constant): the searcher takes these frames newest first."""
    import tantivy

    must = tantivy.Occur.Must
    words = [(must, _term_query(schema, term, None, True, fuzzy=True)) for term in terms]
    # Scored 0: a term query's score is its rarity in a month, and the share of OCR'd frames
    # in a month says nothing of how well a frame matches.
    ocr = tantivy.Query.const_score_query(tantivy.Query.term_query(schema, "ocr", 1), 0.0)
    parts = [*words, (must, ocr)]
    narrowed = filters(schema, span, app_filter)
    if narrowed:
        parts.append((must, narrowed))
    return tantivy.Query.boolean_query(parts)


def filters(
    schema: tantivy.Schema, span: TimeSpan, app_filter: tantivy.Query | None
) -> tantivy.Query | None:
    """The time span (with its ``upto_id``) and the app filter as one query; None when
    there is neither."""
    import tantivy

    parts = []
    if span.start or span.end:
        rq = tantivy.Query.range_query(
            schema,
            "ts",
            tantivy.FieldType.Unsigned,
            utc_us(span.start) if span.start else 0,
            utc_us(span.end) if span.end else 2**64 - 1,
            include_lower=True,
            include_upper=span.end is None,
        )
        parts.append((tantivy.Occur.Must, rq))
    if span.upto_id is not None:
        # On the fast field: a search over 18 months took no longer with it (1.6 against
        # 2.3 ms), where a term walk over every id below it would read them all.
        upto = tantivy.Query.range_query(
            schema, "id", tantivy.FieldType.Unsigned, 0, max(0, span.upto_id)
        )
        parts.append((tantivy.Occur.Must, upto))
    if app_filter is not None:
        parts.append((tantivy.Occur.Must, app_filter))
    return tantivy.Query.boolean_query(parts) if parts else None


def app_filter(
    schema: tantivy.Schema, app: str | None, state: State, span: TimeSpan
) -> tantivy.Query | None:
    """The app filter's query (None without one), built once a search: the app names are
    those the state view counts in the span's months."""
    if not app:
        return None
    lo, hi = months(span)
    names = {
        name
        for month, stats in state.partitions.items()
        if (lo is None or month >= lo) and (hi is None or month <= hi)
        for name in stats.apps
    }
    return _app_query(schema, app, names)


def _term_query(
    schema: tantivy.Schema,
    term: Term,
    blind: Callable[[str], bytes] | None,
    phrases: bool,
    *,
    fuzzy: bool = False,
) -> tantivy.Query:
    """``term`` over the text and the app and title words, and over blind tokens when
    ``blind`` is given; without ``phrases``, a phrase in the text is its blind words
    (encrypted frames, checked after decryption); with ``fuzzy``, a forgivable word also
    one edit away in the text."""
    import tantivy

    should = tantivy.Occur.Should
    plain: list[tuple[tantivy.Occur, tantivy.Query]]
    if term.prefix:
        word = term.words[0]
        pattern = re.escape(word) + ".*"
        plain = [
            (should, tantivy.Query.regex_query(schema, field, pattern))
            for field in ("text", "where")
        ]
    elif len(term.words) == 1:
        word = term.words[0]
        plain = [
            (should, tantivy.Query.term_query(schema, field, word)) for field in ("text", "where")
        ]
        if fuzzy and forgivable(term):
            near = tantivy.Query.fuzzy_term_query(
                schema, "text", word, distance=1, transposition_cost_one=True
            )
            plain.append((should, near))
    else:  # encrypted frames' app names and titles are plaintext, their text is not
        plain = [
            (should, tantivy.Query.phrase_query(schema, field, list(term.words)))
            for field in (("text", "where") if phrases else ("where",))
        ]
    if blind is not None:
        # Encrypted frames: the exact word (a prefix cannot be blinded); a phrase's words
        # must all occur, and their order is re-checked after decryption.
        must = tantivy.Occur.Must
        words = [
            (must, tantivy.Query.term_query(schema, "btok", blind(word).hex()))
            for word in term.words
        ]
        plain.append((should, tantivy.Query.boolean_query(words)))
    return tantivy.Query.boolean_query(plain)


def _app_query(schema: tantivy.Schema, app: str, names: set[str]) -> tantivy.Query:
    """The frames that may pass the ``app`` filter, narrowed in the index; the exact
    substring is then checked on the stored strings.

    Where an app name or title contains ``app``'s text, a single word of it starts a suffix
    of one of their words (the ``within`` field holds them all); of several words, the first
    ends a word (is a whole suffix), those between are words and the last starts one.
    ``app`` without words ("—") can only be told by the app names that contain it
    (``names``, the state view's), asked for as phrases of their words.
    """
    import tantivy

    words = tokens.words(app)
    if words:
        *inner, last = words
        pieces = [
            tantivy.Query.regex_query(
                schema, "within" if not inner else "where", _regex_literal(last) + ".*"
            )
        ]
        if inner:
            pieces.append(tantivy.Query.term_query(schema, "within", inner[0]))
            pieces += [tantivy.Query.term_query(schema, "where", word) for word in inner[1:]]
        return tantivy.Query.boolean_query([(tantivy.Occur.Must, q) for q in pieces])
    needle = folded(app)
    phrases = sorted(
        {tuple(tokens.words(name)) for name in {folded(n) for n in names} if needle in name} - {()}
    )
    named = [(tantivy.Occur.Should, _words_query(schema, "where", p)) for p in phrases]
    return tantivy.Query.boolean_query(named)  # none: matches nothing


def _words_query(schema: tantivy.Schema, field: str, words: tuple[str, ...]) -> tantivy.Query:
    """``words`` in a row in ``field`` (a phrase query needs two words at least)."""
    import tantivy

    if len(words) == 1:
        return tantivy.Query.term_query(schema, field, words[0])
    return tantivy.Query.phrase_query(schema, field, list(words))


def _regex_literal(text: str) -> str:
    r"""``text`` as a literal in Tantivy's (Rust) regex syntax: alphanumerics as they are,
    everything else as ``\x{…}``, which that syntax accepts for any character."""
    return "".join(c if c.isalnum() else f"\\x{{{ord(c):x}}}" for c in text)


def utc_us(when: datetime) -> int:
    """UTC microseconds, exactly (a float of seconds holds them to within 0.3 µs today)."""
    return max(0, round(when.timestamp() * 1_000_000))
