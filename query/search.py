"""Search, timeline and get over the views, with snippets computed after decryption.

Ranking: each month partition is searched with the same Tantivy query (BM25 over text,
title and app words, and over blind tokens for encrypted frames: a blind token occurs once
per frame by construction, so an encrypted frame ranks by the rarity of its words, not their
frequency). The partitions' top hits merge into one list by score. Each score uses its own
partition's statistics, which is close enough for months of similar text.

Every term must match; when no frame has them all, the query is retried with any of them
(as the spec says), and what that finds comes back marked as near misses.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import msgspec

from base import tokens
from base.errors import DecryptionError, NotFoundError, QueryError, is_text
from eventlog.events import MAX_OFFSET
from projector.schema import folded, frame_meta, frame_query, partition_of
from projector.state import Deletion, State, matches
from query.parse import Term, parse_query
from query.views import ViewReader

if TYPE_CHECKING:
    import tantivy

Decrypt = Callable[[int, bytes], str]
"""Decrypts a frame's text; raises DecryptionError when it does not open."""

SNIPPET_CHARS = 160
PHRASE_CHECKS = 64
SEARCH_THREADS = 2
_SPACES = re.compile(r"\s+")


class Hit(msgspec.Struct, kw_only=True):
    id: int
    when: datetime
    app: str
    title: str
    text_source: str
    encrypted: bool
    reason: str = ""
    thumb: str | None = None
    thumb_encrypted: bool = False
    snippet: str = ""
    score: float = 0.0
    text: str | None = None
    problem: str | None = None
    """Why the text (or thumbnail) could not be read, when it could not."""
    near_miss: bool = False
    """Found by the retry with any of the query's terms: no frame had them all."""


class Window(msgspec.Struct, frozen=True):
    start: datetime | None = None
    end: datetime | None = None


class Searcher:
    def __init__(
        self,
        views: ViewReader,
        decrypt: Decrypt | None = None,
        blind: Callable[[str], bytes] | None = None,
    ) -> None:
        self.views = views
        self.decrypt = decrypt
        self.blind = blind

    # -- queries ---------------------------------------------------------------------------

    def search(
        self, query: str, window: Window = Window(), app: str | None = None, limit: int = 15
    ) -> list[Hit]:
        """Best first; near misses (``Hit.near_miss``) when no frame has every term."""
        _check_app(app)
        terms = parse_query(query)
        found = self._search(terms, window, app, limit, every=True)
        if not found and len(terms) > 1:
            found = self._search(terms, window, app, limit, every=False)
            for hit in found:
                hit.near_miss = True
        return [self._with_snippet(h, terms) for h in found]

    def _search(
        self, terms: list[Term], window: Window, app: str | None, limit: int, *, every: bool
    ) -> list[Hit]:
        """The top ``limit`` frames with ``every`` term, or with any of them. Each month's
        index gives its top scores and addresses only; they merge by score, and documents are
        fetched for the global top alone (fetching every partition's top 15 was most of the
        time at 17 partitions)."""
        state = self.views.state()
        pending = state.pending_deletions()
        indexes = self._indexes(window)
        if not indexes:
            return []
        import tantivy

        schema = indexes[0].schema  # one schema serves every partition
        app_filter = self._app_filter(schema, app, state, window)
        searchers = [index.searcher() for index in indexes]
        check = _Check(terms, every) if any(len(t.words) > 1 for t in terms) else None
        if self.blind is None or all(len(t.words) == 1 for t in terms):
            tq = self._query(schema, terms, window, app_filter, self.blind, every=every)
            found = self._top(searchers, tq, limit, app, pending, check)
        else:
            # A phrase: tantivy checks word order in plaintext text and titles itself, but
            # encrypted text matches on its words in any order and needs decrypting to
            # check. Kept apart, so common words in encrypted frames cannot crowd out real
            # phrase matches, and so neither query carries the other's clauses (a phrase of
            # common words over every partition's text cost 46 ms; the blind words, 8 ms).
            must = tantivy.Occur.Must
            encrypted = tantivy.Query.term_query(schema, "enc", 1)
            plain = self._query(schema, terms, window, app_filter, None, every=every)
            plain = tantivy.Query.boolean_query([(must, plain), (tantivy.Occur.MustNot, encrypted)])
            sealed = self._query(
                schema, terms, window, app_filter, self.blind, every=every, phrases=False
            )
            sealed = tantivy.Query.boolean_query([(must, sealed), (must, encrypted)])
            found = self._top(searchers, plain, limit, app, pending, None)
            found += self._top(searchers, sealed, limit, app, pending, check)
        # Ties broken by frame id (newest first), not by where a segment put them, so the
        # same store answers the same way however its index was built.
        found.sort(key=lambda h: (-h.score, -h.id))
        return found[:limit]

    def _top(
        self,
        searchers: list[Any],
        query: tantivy.Query,
        limit: int,
        app: str | None,
        pending: list[Deletion],
        check: _Check | None,
    ) -> list[Hit]:
        """The best ``limit`` visible hits of ``query`` across the months. ``check`` (phrase
        checks by decryption) is None where none is needed; the checks are bounded, so past
        the budget the search stops widening."""
        want = limit + 8  # room for hits the checks below turn away
        while True:
            candidates: list[tuple[float, int, Any]] = []
            exhausted = True
            for i, hits in enumerate(_search_each(searchers, query, want)):
                exhausted &= len(hits) < want
                candidates += [(score, i, address) for score, address in hits]
            candidates.sort(key=lambda c: (-c[0], -c[1]))
            found: list[Hit] = []
            for score, i, address in candidates:
                if len(found) >= limit and score < found[-1].score:
                    break  # past the cut; frames tied with the last one are still taken
                hit = self._hit(searchers[i].doc(address), score)
                if not self._visible(hit, app, pending):
                    continue
                if check is None or self._confirm(hit, check):
                    found.append(hit)
            spent = check is not None and len(check.done) >= PHRASE_CHECKS
            if len(found) >= limit or exhausted or spent:
                return found
            want *= 4

    def timeline(
        self, window: Window = Window(), app: str | None = None, limit: int = 50
    ) -> list[Hit]:
        """Frames in time order: the first ``limit`` from the window's start when it has one,
        else the latest ``limit``."""
        import tantivy

        _check_app(app)
        newest_first = window.start is None
        indexes = self._indexes(window)
        if newest_first:
            indexes.reverse()
        if not indexes:
            return []
        order = tantivy.Order.Desc if newest_first else tantivy.Order.Asc
        state = self.views.state()
        pending = state.pending_deletions()
        schema = indexes[0].schema
        app_filter = self._app_filter(schema, app, state, window)
        tq = self._filters(schema, window, app_filter) or tantivy.Query.all_query()
        out: list[Hit] = []
        for index in indexes:
            searcher = index.searcher()
            wanted = min(limit * 2 + 8, max(1, searcher.num_docs))
            result = searcher.search(tq, wanted, count=False, order_by_field="ts", order=order)
            for _, address in result.hits:
                hit = self._hit(searcher.doc(address), 0.0)
                if self._visible(hit, app, pending):
                    out.append(hit)
            if len(out) >= limit:
                break
        out.sort(key=lambda h: (h.when, h.id), reverse=newest_first)
        out = out[:limit]
        out.sort(key=lambda h: (h.when, h.id))
        for hit in out:
            hit.text = None
        return out

    def get(self, frame_id: int) -> Hit:
        if not 0 <= frame_id <= MAX_OFFSET:
            raise NotFoundError(f"no frame #{frame_id}: frame ids run from 0 to {MAX_OFFSET}")
        pending = self.views.state().pending_deletions()
        for index in self._indexes(Window()):
            searcher = index.searcher()
            q = frame_query(index.schema, frame_id)
            for _, address in searcher.search(q, 1, count=False).hits:
                doc = searcher.doc(address)
                hit = self._hit(doc, 0.0)
                if self._visible(hit, None, pending):
                    hit.text = self._text(hit)
                    return hit
        raise NotFoundError(f"no frame #{frame_id} (it may have been deleted or expired)")

    # -- building queries ------------------------------------------------------------------

    def _indexes(self, window: Window) -> list[tantivy.Index]:
        return self.views.partitions(*self._months(window))

    @staticmethod
    def _months(window: Window) -> tuple[str | None, str | None]:
        lo = partition_of(_us(window.start)) if window.start else None
        hi = partition_of(_us(window.end) - 1) if window.end else None
        return lo, hi

    def _query(
        self,
        schema: tantivy.Schema,
        terms: list[Term],
        window: Window,
        app_filter: tantivy.Query | None,
        blind: Callable[[str], bytes] | None,
        *,
        every: bool,
        phrases: bool = True,
    ) -> tantivy.Query:
        """``every`` one of ``terms`` (or any of them) in the window, passing ``app_filter``
        (when given)."""
        import tantivy

        must = tantivy.Occur.Must
        occur = must if every else tantivy.Occur.Should
        query = tantivy.Query.boolean_query(
            [(occur, _term_query(schema, term, blind, phrases)) for term in terms]
        )
        filters = self._filters(schema, window, app_filter)
        return tantivy.Query.boolean_query([(must, query), (must, filters)]) if filters else query

    def _filters(
        self, schema: tantivy.Schema, window: Window, app_filter: tantivy.Query | None
    ) -> tantivy.Query | None:
        import tantivy

        parts = []
        if window.start or window.end:
            rq = tantivy.Query.range_query(
                schema,
                "ts",
                tantivy.FieldType.Unsigned,
                _us(window.start) if window.start else 0,
                _us(window.end) if window.end else 2**64 - 1,
                include_lower=True,
                include_upper=window.end is None,
            )
            parts.append((tantivy.Occur.Must, rq))
        if app_filter is not None:
            parts.append((tantivy.Occur.Must, app_filter))
        return tantivy.Query.boolean_query(parts) if parts else None

    def _app_filter(
        self, schema: tantivy.Schema, app: str | None, state: State, window: Window
    ) -> tantivy.Query | None:
        """The app filter's query (None without one), built once a search: the app names are
        those the state view counts in the window's months."""
        if not app:
            return None
        lo, hi = self._months(window)
        names = {
            name
            for month, stats in state.partitions.items()
            if (lo is None or month >= lo) and (hi is None or month <= hi)
            for name in stats.apps
        }
        return _app_query(schema, app, names)

    # -- results ---------------------------------------------------------------------------

    def _hit(self, doc: tantivy.Document, score: float) -> Hit:
        d = doc.to_dict()
        source, reason, thumb, thumb_encrypted, app, title = frame_meta(bytes(d["meta"][0]))
        return Hit(
            id=d["id"][0],
            when=datetime.fromtimestamp(d["ts"][0] / 1_000_000, UTC),
            app=app,
            title=title,
            text_source=source,
            encrypted="cipher" in d,
            reason=reason,
            thumb=thumb,
            thumb_encrypted=thumb_encrypted,
            score=score,
            text=_raw_text(d),
        )

    def _visible(self, hit: Hit, app: str | None, pending: list[Deletion]) -> bool:
        """The exact ``app`` filter (the index query only narrows), and tombstones not yet
        purged, which hide their frames at once."""
        if app:
            needle = folded(app)
            if needle not in folded(hit.app) and needle not in folded(hit.title):
                return False
        if pending:
            probe = _FrameView(hit)
            return not any(matches(d.scope, probe) for d in pending)  # type: ignore[arg-type]
        return True

    def _confirm(self, hit: Hit, check: _Check) -> bool:
        """Blind tokens cannot check word order: re-check phrases after decryption.

        At most ``PHRASE_CHECKS`` frames are decrypted a search: a phrase of common words
        matched the blind tokens of 15,000 encrypted frames at 1M (1.5 s of decryption), and
        crowded out the plaintext frames that really hold the phrase. Past the budget, an
        encrypted frame that has the phrase's words but was not checked is left out.
        """
        if not hit.encrypted:
            return True
        if hit.id not in check.done:
            if len(check.done) >= PHRASE_CHECKS:
                return False
            text = self._decrypted(hit)
            words = tokens.words(text) if text is not None else []
            check.done[hit.id] = check.holds(words, tokens.words(hit.app), tokens.words(hit.title))
        return check.done[hit.id]

    def _decrypted(self, hit: Hit) -> str | None:
        """The frame's text; for an encrypted frame that does not open (no key, a wrong key,
        tampered or moved ciphertext) None, with the reason in ``hit.problem``."""
        if not isinstance(hit.text, bytes):
            return hit.text
        if self.decrypt is None:
            hit.problem = f"frame {hit.id}: the encryption key is not available"
            return None
        try:
            return self.decrypt(hit.id, hit.text)
        except DecryptionError as exc:
            hit.problem = str(exc)
            return None

    def _text(self, hit: Hit) -> str:
        return self._decrypted(hit) or "" if hit.encrypted else (hit.text or "")

    def _with_snippet(self, hit: Hit, terms: list[Term]) -> Hit:
        text = self._decrypted(hit) if hit.encrypted else hit.text
        hit.snippet = snippet(text or "", terms)
        hit.text = None
        return hit


class _Check:
    """Whether a decrypted frame has its phrases in order, in its text, app name or title:
    ``every`` term (the query made sure of its single words), or any term (a single word
    anywhere will do). ``done`` keeps the answers by frame id."""

    def __init__(self, terms: list[Term], every: bool) -> None:
        self.terms = terms
        self.every = every
        self.done: dict[int, bool] = {}

    def holds(self, *places: list[str]) -> bool:
        def has(term: Term) -> bool:
            if len(term.words) == 1:
                return any(term.words[0] in words for words in places)
            return any(_contains(words, term.words) for words in places)

        if self.every:
            return all(len(t.words) == 1 or has(t) for t in self.terms)
        return any(has(t) for t in self.terms)


class _FrameView:
    """Duck-typed like FrameCaptured for ``matches``."""

    def __init__(self, hit: Hit) -> None:
        self.frame_id = hit.id
        self.captured_us = _us(hit.when)
        self.app = hit.app
        self.title = hit.title


def _raw_text(d: dict[str, Any]) -> Any:
    if d.get("cipher"):
        return bytes(d["cipher"][0])
    if d.get("body"):
        return bytes(d["body"][0]).decode()
    return d["text"][0] if d.get("text") else ""


def _check_app(app: str | None) -> None:
    if app is not None and not is_text(app):
        raise QueryError("the app filter is not UTF-8 text")


_pool: ThreadPoolExecutor | None = None


def _search_each(searchers: list[Any], query: tantivy.Query, want: int) -> list[list[Any]]:
    """Each partition's top ``want`` ``(score, address)`` hits. Tantivy releases the GIL
    while it searches, so the partitions are searched on two threads (a phrase of common
    words over 17 months at 1M frames: 46 ms on one, 21 ms on two)."""
    global _pool

    def top(s: Any) -> list[Any]:
        # Never a top-N above the partition's documents: Tantivy sizes its heap by N.
        return s.search(query, min(want, max(1, s.num_docs)), count=False).hits

    if len(searchers) < 2:
        return [top(s) for s in searchers]
    if _pool is None:
        _pool = ThreadPoolExecutor(SEARCH_THREADS, thread_name_prefix="search")
    return list(_pool.map(top, searchers))


def _term_query(
    schema: tantivy.Schema, term: Term, blind: Callable[[str], bytes] | None, phrases: bool
) -> tantivy.Query:
    """``term`` over the text and the app and title words, and over blind tokens when
    ``blind`` is given; without ``phrases``, a phrase in the text is its blind words
    (encrypted frames, checked after decryption)."""
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


def _contains(words: list[str], phrase: tuple[str, ...]) -> bool:
    n = len(phrase)
    return any(tuple(words[i : i + n]) == phrase for i in range(len(words) - n + 1))


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


def _us(when: datetime) -> int:
    """UTC microseconds, exactly (a float of seconds holds them to within 0.3 µs today)."""
    return max(0, round(when.timestamp() * 1_000_000))
