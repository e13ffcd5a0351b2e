"""Search, timeline and get over the views, with snippets computed after decryption.

Ranking: each month partition is searched with the same Tantivy query (BM25 over text,
title and app words, and over blind tokens for encrypted frames: a blind token occurs once
per frame by construction, so an encrypted frame ranks by the rarity of its words, not their
frequency). The partitions' top hits merge into one list by score. Each score uses its own
partition's statistics, which is close enough for months of similar text.

Every term must match. When no frame has them all, each word of four letters or more may
first match one edit away in OCR'd text (``query/_fuzzy.py``: OCR misreads a letter now and
then), still with every term; what that finds comes back newest first, marked as fuzzy.
When that finds nothing either, the query is retried with any of the terms (as the spec
says), and what that finds comes back marked as near misses.

The Tantivy queries are built in ``query/_queries.py``, snippets in ``query/snippets.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple, NewType, TypeVar

import msgspec

from base import tokens
from base.errors import DecryptionError, NotFoundError, QueryError, is_text
from eventlog.events import MAX_OFFSET, CaptureReason, TextSource
from projector.index import broken
from projector.schema import folded, frame_meta, frame_query
from projector.state import Deletion, matches
from query._fuzzy import forgivable, near_words
from query._queries import TimeSpan, app_filter, filters, forgiving, matching, months, utc_us
from query.parse import Term, parse_query
from query.snippets import SNIPPET_CHARS, snippet
from query.views import ViewReader

if TYPE_CHECKING:
    import tantivy

    from query.meaning import By, Meaning

Decrypt = Callable[[int, bytes], str]
Sealed = NewType("Sealed", bytes)
"""An encrypted frame's text as the index holds it."""
"""Decrypts a frame's text; raises DecryptionError when it does not open."""

__all__ = ["Decrypt", "Hit", "Searcher", "TimeSpan", "position"]

PHRASE_CHECKS = 64
SEARCH_THREADS = 2


class Hit(msgspec.Struct, kw_only=True):
    id: int
    when: datetime
    app: str
    title: str
    text_source: TextSource
    encrypted: bool
    reason: CaptureReason
    thumb: str | None = None
    thumb_encrypted: bool = False
    snippet: str = ""
    score: float = 0.0
    text: str | None = None
    """The frame's text, read by ``get`` (``show``); None in search and timeline answers."""
    problem: str | None = None
    """Why the text (or thumbnail) could not be read, when it could not."""
    near_miss: bool = False
    """Found by the retry with any of the query's terms: no frame had them all."""
    url: str = ""
    """The address of the page a browser showed ("" for other windows)."""
    fuzzy: bool = False
    """Found with a word one edit away in OCR'd text: no frame had every term exactly."""
    matched_by: tuple[str, ...] = ()
    """How a search found it: "words" (every term exactly), "meaning", or both; () for a
    near miss, a fuzzy hit and frames that no search found (timeline, show)."""
    passage: str | None = None
    """The passage of its text that matched by meaning, whitespace folded."""


class Searcher:
    def __init__(
        self,
        views: ViewReader,
        decrypt: Decrypt | None = None,
        blind: Callable[[str], bytes] | None = None,
        meaning: Meaning | None = None,
    ) -> None:
        self.views = views
        self.decrypt = decrypt
        self.blind = blind
        self.meaning = meaning
        """Search by meaning; None where it is off or its model is not installed."""
        self.incomplete: str | None = None
        """Why the last ``search`` may have left matching frames out; None when it did not."""
        self.meaning_note: str | None = None
        """Why the last ``search`` found by words alone what meaning might have found (the
        meaning view is behind, or off); None when it did not."""
        self._spans: dict[int, tuple[int, int]] = {}
        self._unsnipped: dict[int, _Found] = {}
        """The hits of the last ``search`` made without snippets, with their texts."""

    # -- queries ---------------------------------------------------------------------------

    def search(
        self,
        query: str,
        span: TimeSpan = TimeSpan(),
        app: str | None = None,
        limit: int = 15,
        *,
        fuzzy: bool = True,
        by: By = "both",
        snippets: bool = True,
    ) -> list[Hit]:
        """Best first: the exact word matches fused with the frames by meaning
        (``query.meaning``; ``by`` one of them alone). When neither finds a frame: the
        frames that have every term with a word one edit away in OCR'd text, newest first
        (``Hit.fuzzy``; not with ``fuzzy=False``), else near misses with some of them
        (``Hit.near_miss``). Without ``snippets`` the hits have none until ``snip`` gives them
        theirs."""
        _check_app(app)
        terms = parse_query(query)
        self.incomplete = self.meaning_note = None
        self._spans = {}
        self._unsnipped = {}
        found = [] if by == "meaning" else self._search(terms, span, app, limit, every=True)
        for each in found:
            each.hit.matched_by = ("words",)
        if by != "words":
            found = self._with_meaning(found, query, span, app, limit, by)
        if not found and by != "meaning" and fuzzy and any(forgivable(t) for t in terms):
            found = self._forgiving(terms, span, app, limit)
            for each in found:
                each.hit.fuzzy = True
        if not found and by != "meaning" and len(terms) > 1:
            found = self._search(terms, span, app, limit, every=False)
            for each in found:
                each.hit.near_miss = True
        if not snippets:
            self._unsnipped = {each.hit.id: each for each in found}
            return [each.hit for each in found]
        return [self._with_snippet(each, terms) for each in found]

    def _with_meaning(
        self, words: list[_Found], query: str, span: TimeSpan, app: str | None, limit: int, by: By
    ) -> list[_Found]:
        """``words`` fused with the frames by meaning (``by`` "both"), or those alone."""
        from query.meaning import fuse

        if self.meaning is None:
            if by == "meaning":
                raise QueryError(
                    "search by meaning is off (config: meaning false) or its model is not "
                    "installed (make install)"
                )
            return words
        self.meaning_note = self._behind()
        near = self._by_meaning(query, span, app, limit)
        if self.meaning.view.unreadable:
            why = min(self.meaning.view.unreadable.values())
            self.incomplete = "; ".join(
                filter(
                    None,
                    [
                        self.incomplete,
                        f"the meaning view does not read ({why}): its month was searched by "
                        "words alone; `backscroll reindex --views-only` rebuilds it",
                    ],
                )
            )
        if by == "meaning" or not words:
            return near
        found = {each.hit.id: each for each in near}
        for each in words:
            if each.hit.id in found:
                each.hit.matched_by = ("words", "meaning")
            found[each.hit.id] = each
        out = []
        for frame, score in fuse([w.hit.id for w in words], [n.hit.id for n in near])[:limit]:
            found[frame].hit.score = score
            out.append(found[frame])
        return out

    def _behind(self) -> str | None:
        assert self.meaning is not None
        done = self.meaning.view.manifest().frames
        total = self.views.state().totals().frames
        if done >= total:
            return None
        return (
            f"the meaning view is behind ({done:,} of {total:,} frames embedded): the rest "
            "are found by their words alone until the daemon (or an import, a reindex) "
            "embeds them"
        )

    def _by_meaning(self, query: str, span: TimeSpan, app: str | None, limit: int) -> list[_Found]:
        """The best ``limit`` visible frames by meaning in ``span`` and ``app``: the time and
        app filters are the words' own (one Tantivy query on the candidates' ids), and a
        tombstone not yet purged hides its frames here as there."""
        import tantivy

        assert self.meaning is not None
        hits = self.meaning.hits(query, span)
        indexes = self._indexes(span)
        if not hits or not indexes:
            return []
        state = self.views.state()
        pending = state.pending_deletions()
        schema = indexes[0].schema
        narrowed = filters(schema, span, app_filter(schema, app, state, span))
        searchers = [_Month(index, index.searcher()) for index in indexes]
        out: list[_Found] = []
        at, want = 0, limit + 8
        while at < len(hits) and len(out) < limit:
            batch = {h.frame_id: h for h in hits[at : at + want]}
            at, want = at + want, want * 4
            must = tantivy.Occur.Must
            parts = [(must, tantivy.Query.term_set_query(schema, "id", list(batch)))]
            if narrowed is not None:
                parts.append((must, narrowed))
            tq = tantivy.Query.boolean_query(parts)
            for month, found in zip(
                searchers, self._each_month(searchers, tq, len(batch)), strict=True
            ):
                for _, address in found:
                    each = self._doc(month, address, 0.0)
                    if each is None or not self._visible(each.hit, app, pending):
                        continue
                    hit = batch.get(each.hit.id)
                    if hit is None:
                        continue
                    each.hit.score, each.hit.matched_by = hit.score, ("meaning",)
                    self._spans[each.hit.id] = hit.span
                    out.append(each)
        out.sort(key=lambda f: (-f.hit.score, -f.hit.id))
        return out[:limit]

    def snip(self, hits: list[Hit], query: str) -> None:
        """Give ``hits``, of the last ``search`` made without ``snippets`` for ``query``, the
        snippets that search would have given them."""
        terms = parse_query(query)
        for hit in hits:
            self._with_snippet(self._unsnipped[hit.id], terms)

    def _search(
        self, terms: list[Term], span: TimeSpan, app: str | None, limit: int, *, every: bool
    ) -> list[_Found]:
        """The top ``limit`` frames with ``every`` term, or with any of them. Each month's
        index gives its top scores and addresses only; they merge by score, and documents are
        fetched for the global top alone (fetching every partition's top 15 would be most of
        the time at 17 partitions)."""
        state = self.views.state()
        pending = state.pending_deletions()
        indexes = self._indexes(span)
        if not indexes:
            return []
        import tantivy

        schema = indexes[0].schema  # one schema serves every partition
        narrowing = app_filter(schema, app, state, span)
        searchers = [_Month(index, index.searcher()) for index in indexes]
        check = _Check(terms, every) if any(len(t.words) > 1 for t in terms) else None
        if self.blind is None or all(len(t.words) == 1 for t in terms):
            tq = matching(schema, terms, span, narrowing, self.blind, every=every)
            found = self._top(searchers, tq, limit, app, pending, check)
        else:
            # A phrase: tantivy checks word order in plaintext text and titles itself, but
            # encrypted text matches on its words in any order and needs decrypting to
            # check. Kept apart, so common words in encrypted frames cannot crowd out real
            # phrase matches, and so neither query carries the other's clauses (a phrase of
            # common words over every partition's text cost 46 ms; the blind words, 8 ms).
            must = tantivy.Occur.Must
            encrypted = tantivy.Query.term_query(schema, "enc", 1)
            plain = matching(schema, terms, span, narrowing, None, every=every)
            plain = tantivy.Query.boolean_query([(must, plain), (tantivy.Occur.MustNot, encrypted)])
            sealed = matching(
                schema, terms, span, narrowing, self.blind, every=every, phrases=False
            )
            sealed = tantivy.Query.boolean_query([(must, sealed), (must, encrypted)])
            found = self._top(searchers, plain, limit, app, pending, None)
            found += self._top(searchers, sealed, limit, app, pending, check)
        if check is not None and check.left_out:
            self.incomplete = (
                f"{len(check.left_out):,} encrypted frame(s) with the words of the phrase were "
                f"not checked for it (a search decrypts at most {PHRASE_CHECKS}): another word "
                "or a narrower search finds them"
            )
        # Ties broken by frame id (newest first), not by where a segment put them, so the
        # same store answers the same way however its index was built.
        found.sort(key=lambda f: (-f.hit.score, -f.hit.id))
        return found[:limit]

    def _forgiving(
        self, terms: list[Term], span: TimeSpan, app: str | None, limit: int
    ) -> list[_Found]:
        """The newest ``limit`` OCR'd plaintext frames with every term, a forgivable word
        exactly or one edit away (plaintext only, so Tantivy checks phrases itself).

        Newest first, not by score: Tantivy scores every fuzzy match alike, so the scores
        of a one-word query all tie, and ``_top`` took every tied frame to break the ties by
        id (~100 documents fetched a search at 20,000 frames); ordered by capture time, it
        takes ``limit``. The hits carry no score."""
        state = self.views.state()
        indexes = self._indexes(span)
        if not indexes:
            return []
        schema = indexes[0].schema
        tq = forgiving(schema, terms, span, app_filter(schema, app, state, span))
        searchers = [_Month(index, index.searcher()) for index in indexes]
        found = self._top(searchers, tq, limit, app, state.pending_deletions(), None, newest=True)
        for each in found:
            each.hit.score = 0.0  # it held the capture time
        return found[:limit]

    def _top(
        self,
        searchers: list[_Month],
        query: tantivy.Query,
        limit: int,
        app: str | None,
        pending: list[Deletion],
        check: _Check | None,
        *,
        newest: bool = False,
    ) -> list[_Found]:
        """The best ``limit`` visible hits of ``query`` across the months (the ``newest``,
        when so asked). ``check`` (phrase checks by decryption) is None where none is needed;
        the checks are bounded, so past the budget the search stops widening."""
        want = limit + 8  # room for hits the checks below turn away
        while True:
            candidates: list[tuple[float, int, tantivy.DocAddress]] = []
            exhausted = True
            for i, hits in enumerate(self._each_month(searchers, query, want, newest)):
                exhausted &= len(hits) < want
                candidates += [(score, i, address) for score, address in hits]
            candidates.sort(key=lambda c: (-c[0], -c[1]))
            found: list[_Found] = []
            for score, i, address in candidates:
                if len(found) >= limit and score < found[-1].hit.score:
                    break  # past the cut; frames tied with the last one are still taken
                each = self._doc(searchers[i], address, score)
                if each is None:
                    continue
                if not self._visible(each.hit, app, pending):
                    continue
                if check is None or self._confirm(each, check):
                    found.append(each)
            spent = check is not None and len(check.done) >= PHRASE_CHECKS
            if len(found) >= limit or exhausted or spent:
                return found
            want *= 4

    def timeline(
        self,
        span: TimeSpan = TimeSpan(),
        app: str | None = None,
        limit: int = 50,
        past: tuple[int, int] | None = None,
    ) -> list[Hit]:
        """Frames in time order: the first ``limit`` from the span's start when it has one,
        else the latest ``limit``. ``past``: a frame's ``(capture µs, id)``; only frames
        strictly past it in that reading order (later from a start, else earlier) come:
        the next page of a timeline, which frames recorded meanwhile cannot shift."""
        import tantivy

        _check_app(app)
        newest_first = span.start is None
        if past is not None:
            # Narrowed to its capture time with a microsecond to spare (a hit's time went
            # through a float): frames of that same time with a larger (or smaller) id are
            # still to come, and ``_beyond`` says which.
            if span.start is None:
                end = _at_us(past[0] + 2)
                span = TimeSpan(None, min(end, span.end) if span.end else end, span.upto_id)
            else:
                start = max(_at_us(max(0, past[0] - 1)), span.start)
                span = TimeSpan(start, span.end, span.upto_id)
        indexes = self._indexes(span)
        if newest_first:
            indexes.reverse()
        if not indexes:
            return []
        order = tantivy.Order.Desc if newest_first else tantivy.Order.Asc
        state = self.views.state()
        pending = state.pending_deletions()
        schema = indexes[0].schema
        narrowing = app_filter(schema, app, state, span)
        tq = filters(schema, span, narrowing) or tantivy.Query.all_query()
        out: list[Hit] = []
        for index in indexes:
            month = _Month(index, index.searcher())
            wanted = min(limit * 2 + 8, max(1, month.searcher.num_docs))
            try:
                result = month.searcher.search(
                    tq, wanted, count=False, order_by_field="ts", order=order
                )
            except BaseException as exc:
                if not broken(exc):
                    raise
                self.views.broke(index, exc)
                continue
            for _, address in result.hits:
                found = self._doc(month, address, 0.0)
                if found is None or not self._visible(found.hit, app, pending):
                    continue
                if past is not None and not _beyond(found.hit, past, newest_first):
                    continue
                out.append(found.hit)
            if len(out) >= limit:
                break
        out.sort(key=lambda h: (h.when, h.id), reverse=newest_first)
        out = out[:limit]
        out.sort(key=lambda h: (h.when, h.id))
        return out

    def get(self, frame_id: int) -> Hit:
        if not 0 <= frame_id <= MAX_OFFSET:
            raise NotFoundError(f"no frame #{frame_id}: frame ids run from 0 to {MAX_OFFSET}")
        pending = self.views.state().pending_deletions()
        for index in self._indexes(TimeSpan()):
            month = _Month(index, index.searcher())
            q = frame_query(index.schema, frame_id)
            try:
                hits = month.searcher.search(q, 1, count=False).hits
            except BaseException as exc:
                if not broken(exc):
                    raise
                self.views.broke(index, exc)
                continue
            for _, address in hits:
                found = self._doc(month, address, 0.0)
                if found is not None and self._visible(found.hit, None, pending):
                    found.hit.text = self._text(found)
                    return found.hit
        raise NotFoundError(f"no frame #{frame_id} (it may have been deleted or expired)")

    def _indexes(self, span: TimeSpan) -> list[tantivy.Index]:
        return self.views.partitions(*months(span))

    # -- results ---------------------------------------------------------------------------

    def _doc(self, month: _Month, address: tantivy.DocAddress, score: float) -> _Found | None:
        """The hit at ``address``; None where its stored bytes do not read (the month is
        noted as damaged, and the answer from the rest says it is incomplete)."""
        try:
            return self._found(month.searcher.doc(address), score)
        except BaseException as exc:
            if not broken(exc):
                raise
            self.views.broke(month.partition, exc)
            return None

    def _each_month(
        self, months: list[_Month], query: tantivy.Query, want: int, newest: bool = False
    ) -> list[Scored]:
        """``_search_each`` of every month's searcher; a month whose index breaks the search
        gives nothing and is noted as damaged."""
        found = _search_each([m.searcher for m in months], query, want, newest)
        for month, hits in zip(months, found, strict=True):
            if isinstance(hits, BaseException):
                self.views.broke(month.partition, hits)
        return [[] if isinstance(hits, BaseException) else hits for hits in found]

    def _found(self, doc: tantivy.Document, score: float) -> _Found:
        d = doc.to_dict()
        source, reason, thumb, thumb_encrypted, app, title, url = frame_meta(bytes(d["meta"][0]))
        hit = Hit(
            id=d["id"][0],
            when=datetime.fromtimestamp(d["ts"][0] / 1_000_000, UTC),
            app=app,
            title=title,
            url=url,
            text_source=source,
            encrypted="cipher" in d,
            reason=reason,
            thumb=thumb,
            thumb_encrypted=thumb_encrypted,
            score=score,
        )
        return _Found(hit, _raw_text(d))

    def _visible(self, hit: Hit, app: str | None, pending: list[Deletion]) -> bool:
        """The exact ``app`` filter (the index query only narrows), and tombstones not yet
        purged, which hide their frames at once."""
        if app:
            needle = folded(app)
            if not any(needle in folded(place) for place in (hit.app, hit.title, hit.url)):
                return False
        if pending:
            probe = _FrameView(hit)
            return not any(matches(d.scope, probe) for d in pending)
        return True

    def _confirm(self, found: _Found, check: _Check) -> bool:
        """Blind tokens cannot check word order: re-check phrases after decryption.

        At most ``PHRASE_CHECKS`` frames are decrypted a search: a phrase of common words
        matched the blind tokens of 15,000 encrypted frames at 1M (1.5 s of decryption), and
        crowded out the plaintext frames that really hold the phrase. Past the budget, an
        encrypted frame that has the phrase's words but was not checked is left out.
        """
        hit = found.hit
        if not hit.encrypted:
            return True
        if hit.id not in check.done:
            if len(check.done) >= PHRASE_CHECKS:
                check.left_out.add(hit.id)
                return False
            text = self._decrypted(found)
            words = tokens.words(text) if text is not None else []
            check.done[hit.id] = check.holds(
                words, tokens.words(hit.app), tokens.words(hit.title), tokens.words(hit.url)
            )
        return check.done[hit.id]

    def _decrypted(self, found: _Found) -> str | None:
        """The frame's text; for an encrypted frame that does not open (no key, a wrong key,
        tampered or moved ciphertext) None, with the reason in ``hit.problem``."""
        hit, raw = found
        if not isinstance(raw, bytes):
            return raw
        if self.decrypt is None:
            hit.problem = f"frame {hit.id}: the encryption key is not available"
            return None
        try:
            return self.decrypt(hit.id, raw)
        except DecryptionError as exc:
            hit.problem = str(exc)
            return None

    def _text(self, found: _Found) -> str:
        return self._decrypted(found) or ""

    def _with_snippet(self, found: _Found, terms: list[Term]) -> Hit:
        text = self._text(found)
        hit = found.hit
        if hit.fuzzy:  # bracket what was found in place of what was asked
            terms = [*terms, *near_words(text, terms)]
        span = self._spans.get(hit.id)
        if span is not None:
            hit.passage = " ".join(text[span[0] : span[1]].split())
        if span is not None and "words" not in hit.matched_by:
            # Found by meaning alone: the words may be nowhere in it; show what matched.
            cut = hit.passage or ""
            hit.snippet = cut[:SNIPPET_CHARS] + (" …" if len(cut) > SNIPPET_CHARS else "")
        else:
            hit.snippet = snippet(text, terms)
        return hit


class _Month(NamedTuple):
    partition: tantivy.Index
    searcher: tantivy.Searcher


class _Found(NamedTuple):
    """A hit and its text as the index holds it: a frame's text, or its ciphertext."""

    hit: Hit
    raw: str | Sealed


class _Check:
    """Whether a decrypted frame has its phrases in order, in its text, app name or title:
    ``every`` term (the query made sure of its single words), or any term (a single word
    anywhere will do). ``done`` keeps the answers by frame id."""

    def __init__(self, terms: list[Term], every: bool) -> None:
        self.terms = terms
        self.every = every
        self.done: dict[int, bool] = {}
        self.left_out: set[int] = set()
        """Frames past the budget, not checked: they may have had the phrase."""

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
        self.captured_us = utc_us(hit.when)
        self.app = hit.app
        self.title = hit.title
        self.url = hit.url


def _at_us(us: int) -> datetime:
    """UTC microseconds as a datetime, exactly (a float of seconds could be a µs off)."""
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=us)


def position(hit: Hit) -> tuple[int, int]:
    """Where ``hit`` is in a timeline: its ``(capture µs, id)``, as ``timeline``'s ``past``
    takes it."""
    return utc_us(hit.when), hit.id


def _beyond(hit: Hit, past: tuple[int, int], backwards: bool) -> bool:
    """Whether ``hit`` comes strictly after ``past`` in the timeline's reading order."""
    here = position(hit)
    return here < past if backwards else here > past


def _raw_text(d: dict[str, Any]) -> str | Sealed:
    if d.get("cipher"):
        return Sealed(bytes(d["cipher"][0]))
    if d.get("body"):
        return bytes(d["body"][0]).decode()
    return str(d["text"][0]) if d.get("text") else ""


def _check_app(app: str | None) -> None:
    if app is not None and not is_text(app):
        raise QueryError("the app filter is not UTF-8 text")


Scored = list[tuple[float, "tantivy.DocAddress"]]


def _search_each(
    searchers: list[tantivy.Searcher], query: tantivy.Query, want: int, newest: bool = False
) -> list[Scored | BaseException]:
    """Each partition's top ``want`` ``(score, address)`` hits, or with ``newest`` its
    latest captured ``(capture time, address)`` (a later time sorts first, as a larger
    score does); the exception of a partition whose bytes break the search (``broken``).
    Tantivy releases the GIL while it searches, so the partitions are searched on two
    threads (a phrase of common words over 17 months at 1M frames: 46 ms on one, 21 ms on
    two)."""
    import tantivy

    def top(s: tantivy.Searcher) -> Scored | BaseException:
        # Never a top-N above the partition's documents: Tantivy sizes its heap by N.
        n = min(want, max(1, s.num_docs))
        try:
            if newest:
                order = tantivy.Order.Desc
                return s.search(query, n, count=False, order_by_field="ts", order=order).hits
            return s.search(query, n, count=False).hits
        except BaseException as exc:
            if not broken(exc):
                raise
            return exc

    if len(searchers) < 2:
        return [top(s) for s in searchers]
    return _on_threads(top, searchers)


T = TypeVar("T")
U = TypeVar("U")


def _on_threads(work: Callable[[T], U], items: list[T]) -> list[U]:
    """``work`` of each item, in order, on this thread and ``SEARCH_THREADS - 1`` more, each
    taking the next item when it is done; the first exception raised is raised here. Bare
    threads, not ``concurrent.futures``: it imports ``logging``, together 0.2x Python's own
    start, on every search's start-up path."""
    results: dict[int, U] = {}
    failures: list[BaseException] = []
    order = iter(range(len(items)))
    taking = threading.Lock()

    def drain() -> None:
        while not failures:
            with taking:
                i = next(order, None)
            if i is None:
                return
            try:
                results[i] = work(items[i])
            except BaseException as exc:
                failures.append(exc)

    helpers = [
        threading.Thread(target=drain, name=f"search-{n}", daemon=True)
        for n in range(1, SEARCH_THREADS)
    ]
    for helper in helpers:
        helper.start()
    drain()
    for helper in helpers:
        helper.join()
    if failures:
        raise failures[0]
    return [results[i] for i in range(len(items))]


def _contains(words: list[str], phrase: tuple[str, ...]) -> bool:
    n = len(phrase)
    return any(tuple(words[i : i + n]) == phrase for i in range(len(words) - n + 1))
