"""One call per use case: a request of ``backscroll.contract`` in, its answer out.

The CLI, the agent tools (and through them the MCP server) and any later API call these and
only parse the arguments and render the answer. A read also gives the spec's text of its
answer, which every surface shows the same; a manage action gives its answer alone (each
surface says it in its own words). Each call works on a store its caller opened.

    with MemoryStore() as store:
        reply = search(store, parse(SearchRequest, {"query": "invoice"}))
    reply.answer.matches, reply.text
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Generic, NamedTuple, TypeVar

from backscroll.contract import (
    AuditEntry,
    ConfigAnswer,
    ConfigRequest,
    DeleteAnswer,
    DeleteRequest,
    DenyAnswer,
    DenyRequest,
    ExportAnswer,
    ExportRequest,
    Frame,
    ImportRequest,
    LogAnswer,
    LogRequest,
    Match,
    Origin,
    PauseAnswer,
    PauseRequest,
    ReindexRequest,
    ResumeAnswer,
    SearchAnswer,
    SearchRequest,
    ShowAnswer,
    ShowRequest,
    Status,
    TimelineAnswer,
    TimelineRequest,
    VerifyAnswer,
    local,
)
from base.errors import NotFoundError, UsageError

if TYPE_CHECKING:
    from backscroll.contract.archive import (
        ArchiveExportAnswer,
        ArchiveExportRequest,
        ArchiveImportAnswer,
        ArchiveImportRequest,
    )
    from backscroll.contract.summary import SummaryAnswer, SummaryRequest
    from backscroll.importer import ImportResult
    from backscroll.store import MemoryStore

A = TypeVar("A")

# What a kept memory's events hold of its content: the trail says what was kept, revised or
# forgotten, when and by whom (scopes, never content), as it never shows a frame's text.
KEPT_CONTENT = ("text", "value", "ciphertext", "blind_tokens", "request_hash")

# Changing one of these changes how new frames are stored, not the frames already stored.
PRIVACY = frozenset({"redact", "encrypt_text", "encrypt_thumbnails"})


class Reply(NamedTuple, Generic[A]):
    answer: A
    render: Callable[[], str]
    """Makes the spec's rendering of the answer, only for a caller that shows it: the view
    sends the answer alone (the text of a day of 2,000 frames took 13 of its 46 ms)."""

    @property
    def text(self) -> str:
        """The spec's rendering of the answer."""
        return self.render()


class Shown(NamedTuple):
    answer: ShowAnswer
    render: Callable[[], str]
    jpeg: bytes | None
    """The decrypted thumbnail, when asked for and readable."""

    @property
    def text(self) -> str:
        """The spec's rendering of the frame."""
        return self.render()


Span = tuple[datetime | None, datetime | None]


def time_span(since: str | None, until: str | None, before: str | None = None) -> Span:
    """The time expressions of a request as a span (None: unbounded)."""
    if since is None and until is None and before is None:
        return None, None  # without importing the phrases' patterns: 0.09x Python's start
    from query.when import resolve_span

    return resolve_span(since, until, before)


def search(store: MemoryStore, request: SearchRequest) -> Reply[SearchAnswer]:
    """The best moments first; when none has every term exactly, why nothing was found.
    Paged: ``next_cursor`` asks for the moments ranked below these, in the same snapshot
    (``backscroll/contract/paging.py``)."""
    from backscroll.contract import paging
    from query.render import search_text

    app, query = request.app, request.query
    asked = paging.asked(query, request.since, request.until, app, request.by)
    if request.cursor is not None:
        page = paging.decode(paging.SearchCursor, request.cursor, asked, "search")
        (start, end), upto, shown = page.span(), page.upto_id, page.shown
    else:
        start, end = time_span(request.since, request.until)
        upto, shown = store.snapshot_id(), 0
    # One more than shown: whether there is a next page.
    ranked = store.moments(
        query,
        start=start,
        end=end,
        app=app,
        limit=shown + request.limit + 1,
        upto_id=upto,
        by=request.by,
    )
    moments = ranked[shown : shown + request.limit]
    exact = bool(ranked) and not (ranked[0].hit.near_miss or ranked[0].hit.fuzzy)
    why = None if exact else store.why_empty(start, end, app)
    more = len(ranked) > shown + request.limit
    cursor = paging.SearchCursor(
        asked=asked, upto_id=upto, shown=shown + request.limit, **paging.spanned(start, end)
    )
    answer = SearchAnswer(
        start=_at(start),
        end=_at(end),
        app=app,
        query=query,
        ids=[m.hit.id for m in moments],
        matches=[Match.of_moment(m) for m in moments],
        why_empty=why,
        incomplete="; ".join(filter(None, [ranked.incomplete, store.views.incomplete()])) or None,
        next_cursor=paging.encode(cursor) if more else None,
        meaning_behind=ranked.meaning_note,
    )
    note = f"\nnote: {ranked.meaning_note}" if ranked.meaning_note else ""

    def text() -> str:
        return search_text(query, moments, start, end, app, why) + note

    return Reply(answer, lambda: _noted(text(), answer))


def timeline(store: MemoryStore, request: TimelineRequest) -> Reply[TimelineAnswer]:
    """Frames in time order; when there are none, why. Paged: ``next_cursor`` asks for the
    frames past these (later from the span's start, else earlier), keyed by the last one's
    time and id."""
    from backscroll.contract import paging
    from query.render import group_hits, timeline_text
    from query.search import position

    app, limit = request.app, request.limit
    asked = paging.asked(request.since, request.until, app)
    past = None
    if request.cursor is not None:
        page = paging.decode(paging.TimelineCursor, request.cursor, asked, "timeline")
        (start, end), past = page.span(), (page.ts_us, page.id)
    else:
        start, end = time_span(request.since, request.until)
    # One more than shown: whether there is a next page.
    hits = store.timeline(start=start, end=end, app=app, limit=limit + 1, past=past)
    newest_first = start is None
    shown = hits[-limit:] if newest_first else hits[:limit]
    cursor = None
    if len(hits) > limit:
        ts_us, last = position(shown[0] if newest_first else shown[-1])
        cursor = paging.TimelineCursor(
            asked=asked,
            newest_first=newest_first,
            ts_us=ts_us,
            id=last,
            **paging.spanned(start, end),
        )
    why = None if hits else store.why_empty(start, end, app)
    answer = TimelineAnswer(
        start=_at(start),
        end=_at(end),
        app=app,
        ids=[h.id for h in shown],
        frames=[Frame.of(h) for h in shown],
        groups=len(group_hits(shown)),
        why_empty=why,
        incomplete=store.views.incomplete(),
        next_cursor=paging.encode(cursor) if cursor else None,
    )
    return Reply(answer, lambda: _noted(timeline_text(shown, start, end, app, why), answer))


def summary(store: MemoryStore, request: SummaryRequest) -> Reply[SummaryAnswer]:
    """Time per app and per window or site over the span (default: today), longest first,
    and the strip of which app held the screen (``query.activity``)."""
    from backscroll.summary import answer_of, summary_text
    from base.clock import now_us
    from query.activity import frames_in, gap_for, summarize
    from query.search import TimeSpan

    start, end = time_span(request.since or "today", request.until)
    assert start is not None  # a since is always given
    now = datetime.fromtimestamp(now_us() / 1_000_000, UTC)
    end = end or now
    gap = gap_for(store.config.interval_seconds)
    frames = frames_in(store.views, TimeSpan(start, end))
    activity = summarize(frames, start, end, gap, request.app, now=now)
    why = None if activity.frames else store.why_empty(start, end, request.app)
    reply = answer_of(
        activity, start, end, request.app, request.limit, gap, why, store.views.incomplete()
    )
    return Reply(reply, lambda: _noted(summary_text(reply), reply))


def show(store: MemoryStore, request: ShowRequest) -> Shown:
    """A frame in full, with its decrypted thumbnail when asked for."""
    from query.render import show_text

    try:
        hit = store.get(request.id)
    except NotFoundError as exc:
        damaged = store.views.incomplete()
        if damaged is None:
            raise
        raise NotFoundError(f"{exc}, or in a damaged view: {damaged}") from None
    jpeg = store.thumbnail(hit) if request.include_image else None
    answer = ShowAnswer(**Frame.fields(hit), text=hit.text, problem=hit.problem)
    return Shown(answer, lambda: show_text(hit), jpeg)


def status(store: MemoryStore) -> Reply[Status]:
    from backscroll.status import collect, render

    info = collect(store)
    return Reply(info, lambda: render(info))


def audit_log(store: MemoryStore, request: LogRequest) -> LogAnswer:
    """The audit trail: control events newest first, each daemon run that never stopped
    marked ``crashed``."""
    import msgspec

    from backscroll.audit import audit, crashed_runs

    start, _ = time_span(request.since, None)
    kinds = sorted(set(request.kind)) if request.kind else None
    events = audit(store, start, set(kinds) if kinds else None)
    crashed = crashed_runs(store)
    entries = []
    for offset, event in events:
        detail = msgspec.to_builtins(event)
        kind, ts_us = detail.pop("k"), detail.pop("ts_us")
        detail.pop("v", None)  # the event's format version: the log's business, not the trail's
        for field in KEPT_CONTENT:
            detail.pop(field, None)
        entries.append(
            AuditEntry(
                offset=offset,
                kind=kind,
                time=local(datetime.fromtimestamp(ts_us / 1e6, UTC)),
                crashed=offset in crashed,
                detail=detail,
            )
        )
    return LogAnswer(since=_at(start), kinds=kinds, events=entries)


def verify(store: MemoryStore) -> VerifyAnswer:
    """Every segment, thumbnail and view checked against the log (``backscroll.verify``)."""
    from backscroll.verify import verify_store

    problems = verify_store(store)
    return VerifyAnswer(healthy=not problems, problems=problems)


def pause(store: MemoryStore, request: PauseRequest, origin: Origin) -> PauseAnswer:
    from backscroll.manage import pause as pause_
    from backscroll.manage import pause_until

    until = pause_until(request.duration)
    pause_(store, until, origin=origin)
    return PauseAnswer(until=local(until) if until else None)


def resume(store: MemoryStore, origin: Origin) -> ResumeAnswer:
    from backscroll.manage import resume as resume_

    resume_(store, origin=origin)
    return ResumeAnswer()


def deny(store: MemoryStore, request: DenyRequest, origin: Origin) -> DenyAnswer:
    """Add or remove a pattern (or neither: the list as it is)."""
    from backscroll.manage import deny as deny_

    if request.deny_add or request.deny_remove:
        deny_(store, request.deny_add, request.deny_remove, origin=origin)
    return DenyAnswer(
        deny_apps=list(store.config.deny_apps),
        added=request.deny_add,
        removed=request.deny_remove,
    )


def configure(store: MemoryStore, request: ConfigRequest, origin: Origin) -> ConfigAnswer:
    """Change the settings given (each change an event in the log); none: show them."""
    changes = request.changes()
    config = store.set_config(origin, **changes) if changes else store.config
    return ConfigAnswer(
        changed=sorted(changes), config=config, reindex_needed=bool(PRIVACY & changes.keys())
    )


def scope_text(
    start: datetime | None, end: datetime | None, app: str | None, ids: tuple[int, ...] = ()
) -> str:
    """A deletion's or export's scope in words, for a prompt or a refusal."""
    from query.render import span_text

    frames = f", frame(s) {', '.join(f'#{i}' for i in ids)}" if ids else ""
    return span_text(start, end) + (f", app~'{app}'" if app else "") + frames


def delete(
    store: MemoryStore, request: DeleteRequest, origin: Origin, span: Span | None = None
) -> DeleteAnswer:
    """Delete the frames in scope (no scope: every frame), once ``confirm`` is set; returns
    when the purge is complete, or raises ``StoreError`` saying why it cannot complete (the
    frames stay hidden). ``span``: the span as it was resolved when the person was asked, so
    that "2h" means the same two hours it meant then."""
    from backscroll.manage import check_scope
    from backscroll.manage import delete as delete_

    start, end = span or time_span(request.since, request.until, request.before)
    check_scope(start, end, request.app)
    ids = tuple(request.ids)
    if not request.confirm:
        shown = scope_text(start, end, request.app, ids)
        raise UsageError(f"delete needs confirm=true; nothing was deleted (scope: {shown})")
    from backscroll.keep import Keeper

    keeper = Keeper(store)
    citing = keeper.citing(start, end, request.app, ids)
    removed = delete_(store, start=start, end=end, app=request.app, ids=ids, origin=origin)
    forgotten = keeper.forget_citing(citing, origin) if request.forget_citing else []
    return DeleteAnswer(
        start=_at(start),
        end=_at(end),
        app=request.app,
        ids=list(ids),
        deleted=removed,
        cited_by=[] if request.forget_citing else [m.id for m in citing],
        memories_forgotten=forgotten,
    )


def export(store: MemoryStore, request: ExportRequest) -> ExportAnswer:
    """A decrypted copy of the frames in scope, in a new or empty folder (see ``export``)."""
    from backscroll.export import default_folder
    from backscroll.export import export as export_

    start, end = time_span(request.since, request.until)
    folder = Path(request.path) if request.path else default_folder()
    result = export_(
        store,
        folder,
        request.format,
        start=start,
        end=end,
        app=request.app,
        query=request.query,
        limit=request.limit,
        thumbnails=request.thumbnails,
    )
    return ExportAnswer(
        start=_at(start),
        end=_at(end),
        app=request.app,
        path=str(result.path),
        format=request.format,
        frames=result.frames,
        thumbnails=result.thumbnails,
        incomplete=store.views.incomplete(),
    )


def import_frames(
    store: MemoryStore,
    request: ImportRequest,
    lines: Iterable[str],
    progress: Callable[[int], None] | None = None,
) -> ImportResult:
    """Append the frames of ``lines``, read from ``request.source`` by the caller (which may
    be standard input), checked whole before any is appended (``importer``)."""
    from backscroll.importer import import_frames as import_

    return import_(store, lines, skip_bad=request.skip_bad, progress=progress)


def embed(store: MemoryStore, progress: Callable[[int, int], None] | None = None) -> int:
    """The meaning view caught up after an import or a reindex (``MemoryStore.embed``): the
    frames embedded. Interrupted, it keeps what it did and the daemon does the rest."""
    return store.embed(progress)


def reindex(
    store: MemoryStore,
    request: ReindexRequest,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, int]:
    """Rewrite every stored frame under the current config, or only rebuild the views; what
    changed, by kind (nothing for the views alone)."""
    from backscroll.reindex import reindex as reindex_

    return reindex_(store, views_only=request.views_only, progress=progress)


def _noted(text: str, answer: SearchAnswer | TimelineAnswer | SummaryAnswer) -> str:
    """The text, with the cursor of its next page, and the answer's note that it is
    incomplete last, where they are."""
    following = getattr(answer, "next_cursor", None)
    if following:
        text += f"\nmore: the next page is cursor {following}"
    return f"{text}\nincomplete: {answer.incomplete}" if answer.incomplete else text


def _at(when: datetime | None) -> datetime | None:
    return local(when) if when else None


def export_archive(
    store: MemoryStore,
    request: ArchiveExportRequest,
    progress: Callable[[int], None] | None = None,
) -> ArchiveExportAnswer:
    """The whole store in one new file sealed under the passphrase (``backscroll.archive``)."""
    from backscroll.archive import export_archive as export_
    from backscroll.archive import read_passphrase
    from backscroll.contract.archive import ArchiveExportAnswer

    passphrase = read_passphrase(Path(request.passphrase_file), new=True)
    result = export_(store, Path(request.archive), passphrase, progress=progress)
    return ArchiveExportAnswer(
        path=str(result.path),
        events=result.events,
        frames=result.frames,
        thumbnails=result.thumbnails,
        bytes=result.bytes,
        left_out=result.left_out,
        unreadable=result.unreadable,
    )


def import_archive(
    home: Path,
    request: ArchiveImportRequest,
    progress: Callable[[int], None] | None = None,
) -> ArchiveImportAnswer:
    """The archive restored into ``home``, a new store; nothing changed when it cannot be."""
    from backscroll.archive import import_archive as import_
    from backscroll.archive import read_passphrase
    from backscroll.contract.archive import ArchiveImportAnswer

    passphrase = read_passphrase(Path(request.passphrase_file))
    result = import_(home, Path(request.archive), passphrase, progress=progress)
    return ArchiveImportAnswer(
        home=str(result.home),
        events=result.events,
        frames=result.frames,
        thumbnails=result.thumbnails,
    )
