"""Kept memories: what a person or their agents decide to keep, on the store's own log.

One call per use case, a request of ``backscroll.contract.keep`` in, its answer out, as
``backscroll.answer`` does for the screen; the CLI (``backscroll keep``) and the MCP tools
``kept_memory`` and ``kept_memory_write`` only parse and render::

    with MemoryStore(write=True) as store:
        keeper = Keeper(store)
        keeper.keep(parse(KeepRequest, {"text": "Answers in Spanish.", "kind": "preference"}))

Every write is decided and appended under the log's append lock, against the log as it
stands (the view read again up to its last event), so writers in any number of processes
cannot race: a request key is honoured once, a stale ``expected_version`` is refused with the
current one, a claim is held by one memory per space. A write holding a secret is refused
before anything is appended (the redactor the frames use: its kinds, never its value). With
``encrypt_text`` on, a memory's text and claim value are sealed with the store's key, bound
to its id and version, and searched by blind tokens, as frames' text is.

``forget`` appends a tombstone, then compacts the memory's versions out of the log and the
bytes kept aside (a retry of the forget finishes a compaction a crash cut short). Reads serve
neither a proposed memory nor one past its idle expiry; reads write nothing.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec

from backscroll._keep_checks import Refused, checked, claim_of, refuse, when
from backscroll._keep_lines import frame_of, line, maybe_time, time_of
from backscroll.contract.keep import (
    ApproveRequest,
    DueRequest,
    ForgetAnswer,
    ForgetRequest,
    GetRequest,
    HistoryAnswer,
    HistoryRequest,
    Hit,
    KeepAnswer,
    KeepRequest,
    KeptSearchAnswer,
    KeptSearchRequest,
    KeptStatus,
    ListRequest,
    MemoriesAnswer,
    Memory,
    MemoryVersion,
    ResolveAnswer,
    ResolveRequest,
    ReviewRequest,
    ReviseRequest,
    Similar,
    SpaceAnswer,
    SpaceRequest,
    SpaceStatus,
)
from backscroll.contract.keep_words import MAX_KEPT_PAGE, RULES
from base.clock import now_us
from base.errors import KeyUnavailableError, NotFoundError, UsageError
from eventlog.events import (
    MAX_MEMORY_TEXT,
    MEMORY_TYPES,
    Event,
    MemoryForgotten,
    MemoryKept,
    MemoryReviewed,
    MemoryRevised,
    Origin,
    SpaceConfigured,
)
from projector.kept import Kept, KeptView, SpaceRule
from projector.state import State
from query.kept import KeptReader, Scored

if TYPE_CHECKING:
    from backscroll.store import MemoryStore


__all__ = ["Keeper", "Refused", "checked"]


class Keeper:
    """The kept memories of one store: the view as its writer saved it, kept up with the log.

    Open one per store and keep it (an agent's server does): each call reads only what the
    log gained since the last. ``refresh_views``: a writer store also catches its views up
    after each write, as every command that changes the store does.
    """

    def __init__(self, store: MemoryStore, *, refresh_views: bool = True) -> None:
        self.store = store
        self.refresh_views = refresh_views and store.writes
        saved = KeptView.load(store.layout.views)
        # Every memory event at or below the committed state's position is in the saved view
        # (the writer saves it first): read the log past the later of the two. (Not
        # ``store.state()``, which a reader moves on past the control events it applies.)
        committed = State.load(store.layout.views)
        state_position = committed.position if committed is not None else -1
        start = 0 if saved is None else max(saved.position, state_position) + 1
        self.reader = KeptReader(saved or KeptView(), self._blind)
        self._seen = start - 1
        self._erasing = False
        """A memory was forgotten under the lock: its text is erased once the lock is let go."""
        self.catch_up()

    @property
    def view(self) -> KeptView:
        return self.reader.view

    def catch_up(self) -> None:
        """Apply the memory events the log gained since the last call."""
        end = self.store.log.next_offset()
        if end <= self._seen + 1:
            return  # nothing appended: not even the active segment's index is read
        for offset, event in self.store.log.read(self._seen + 1, types=MEMORY_TYPES):
            self.reader.apply(offset, event)
        self._seen = max(self._seen, end - 1)

    # -- the writes ------------------------------------------------------------------------

    def keep(self, request: KeepRequest, origin: Origin = "cli") -> KeepAnswer:
        claimed = checked(request)
        due_us = when(request.due)
        valid_from, valid_until = when(request.valid_from), when(request.valid_until)
        digest = self._digest("keep", request)
        now = now_us()
        with self.store.log.locked():
            self.catch_up()
            replay = self._replayed(request.request_key, digest)
            if replay is not None:
                return self._kept_answer(replay, replayed=True)
            view = self.view
            if claimed:
                assert request.subject is not None and request.predicate is not None
                key = claim_of(request.space, request.subject, request.predicate, request.context)
                if key in view.blocked:
                    refuse(
                        "do_not_keep",
                        "this claim was forgotten and marked do not keep again in this space",
                        memory_id=view.blocked[key],
                    )
                held = view.claims.get(key)
                if held is not None and self._idle(view.memories[held], now):
                    self._expire(view.memories[held], now, origin)  # its claim is free again
                    held = None
                if held is not None:
                    refuse(
                        "claim_exists",
                        f"the claim is held by {held}: revise that memory",
                        memory_id=held,
                    )
            memory_id = f"m_{secrets.token_hex(8)}"
            sealed = self._sealed(memory_id, 1, request.text, request.value)
            rule = view.spaces.get(request.space, SpaceRule())
            event = MemoryKept(
                ts_us=now,
                memory_id=memory_id,
                space=request.space,
                kind=request.kind,
                subject=request.subject,
                predicate=request.predicate,
                context=request.context,
                source=request.source,
                due_us=due_us,
                valid_from_us=valid_from,
                valid_until_us=valid_until,
                proposed=rule.require_review,
                request_key=request.request_key,
                request_hash=digest,
                origin=origin,
                **sealed,
            )
            self._append(event)
        if self._erasing:
            self._erase()
        memory = self.view.memories[memory_id]
        self._views()
        return self._kept_answer(memory, similar=self.reader.similar(memory))

    def revise(self, request: ReviseRequest, origin: Origin = "cli") -> KeepAnswer:
        checked(request)
        due_us = when(request.due)
        digest = self._digest("revise", request)
        with self.store.log.locked():
            self.catch_up()
            replay = self._replayed(request.request_key, digest)
            if replay is not None:
                return self._kept_answer(replay, replayed=True)
            memory = self._memory(request.id)
            if request.expected_version != memory.version:
                refuse(
                    "version_conflict",
                    f"{memory.id} is at version {memory.version}, not "
                    f"{request.expected_version}: read it again and decide",
                    current_version=memory.version,
                    memory_id=memory.id,
                )
            if due_us is not None and memory.kind != "intention":
                refuse("invalid", "only an intention has due")
            text, value = self._open(memory)
            source, due = memory.source, memory.due_us
            if request.restore is not None:
                old = self._version(memory, request.restore)
                text, value, source, due = old.text, old.value, old.source, old.due_us
            text = request.text if request.text is not None else text
            value = request.value if request.value is not None else value
            version = memory.version + 1
            event = MemoryRevised(
                ts_us=now_us(),
                memory_id=memory.id,
                version=version,
                source=request.source if request.source is not None else source,
                valid_from_us=when(request.valid_from) or memory.valid_from_us,
                valid_until_us=when(request.valid_until) or memory.valid_until_us,
                due_us=due_us if due_us is not None else due,
                restored_from=request.restore,
                request_key=request.request_key,
                request_hash=digest,
                origin=origin,
                **self._sealed(memory.id, version, text, value),
            )
            self._append(event)
        self._views()
        return self._kept_answer(self.view.memories[request.id])

    def forget(
        self, request: ForgetRequest, origin: Origin = "cli", reason: Any = "user"
    ) -> ForgetAnswer:
        with self.store.log.locked():
            self.catch_up()
            key = request.request_key
            tomb = self.view.forgotten.get(request.id)
            if tomb is not None:
                # A retry: it answers as the first, and finishes an erasure a crash cut short.
                self._erase()
                return ForgetAnswer(
                    id=request.id,
                    version=tomb.version,
                    forgotten=time_of(tomb.forgotten_us),
                    replayed=True,
                )
            if key is not None and (key in self.view.keys or key in self.view.retired):
                refuse("key_reused", "this request key was used for another write")
            memory = self._memory(request.id, proposed=True)
            expected = request.expected_version
            if expected is not None and expected != memory.version:
                refuse(
                    "version_conflict",
                    f"{memory.id} is at version {memory.version}, not {expected}: read it "
                    "again and decide",
                    current_version=memory.version,
                    memory_id=memory.id,
                )
            now = now_us()
            claimed = request.do_not_keep and memory.subject is not None
            self._append(
                MemoryForgotten(
                    ts_us=now,
                    memory_id=memory.id,
                    version=memory.version,
                    space=memory.space,
                    request_keys=(*memory.keys, *((key,) if key else ())),
                    do_not_keep=request.do_not_keep,
                    subject=memory.subject if claimed else None,
                    predicate=memory.predicate if claimed else None,
                    context=memory.context if claimed else "",
                    reason=reason,
                    origin=origin,
                )
            )
        self._erase()
        self._views()
        return ForgetAnswer(
            id=memory.id,
            version=memory.version,
            forgotten=time_of(now),
            do_not_keep=request.do_not_keep,
        )

    def approve(self, request: ApproveRequest, origin: Origin = "cli") -> KeepAnswer:
        with self.store.log.locked():
            self.catch_up()
            memory = self._memory(request.id, proposed=True)
            if memory.proposed:
                self._append(
                    MemoryReviewed(
                        ts_us=now_us(), memory_id=memory.id, version=memory.version, origin=origin
                    )
                )
        self._views()
        return self._kept_answer(self.view.memories[request.id])

    def configure(self, request: SpaceRequest, origin: Origin = "cli") -> SpaceAnswer:
        if request.keep_forever and request.idle_days is not None:
            refuse("invalid", "give idle_days or keep_forever, not both")
        with self.store.log.locked():
            self.catch_up()
            rule = self.view.spaces.get(request.name, SpaceRule())
            review = (
                rule.require_review if request.require_review is None else request.require_review
            )
            idle = None if request.keep_forever else (request.idle_days or rule.idle_days)
            self._append(
                SpaceConfigured(
                    ts_us=now_us(),
                    space=request.name,
                    require_review=review,
                    idle_days=idle,
                    origin=origin,
                )
            )
        self._views()
        return SpaceAnswer(name=request.name, require_review=review, idle_days=idle)

    # -- the reads -------------------------------------------------------------------------

    def resolve(self, request: ResolveRequest) -> ResolveAnswer:
        self.catch_up()
        found = self.reader.resolve(
            request.subject, request.predicate, request.context, request.spaces, now_us()
        )
        if found is None:
            return ResolveAnswer(found=False)
        return ResolveAnswer(found=True, memory=self.memory(found))

    def search(self, request: KeptSearchRequest) -> KeptSearchAnswer:
        self.catch_up()
        hits, near = self.reader.search(
            request.query, request.spaces, request.min_score, request.limit, now_us()
        )
        return KeptSearchAnswer(
            memories=[self._hit(s) for s in hits], near_misses=[self._hit(s) for s in near]
        )

    def due(self, request: DueRequest) -> MemoriesAnswer:
        self.catch_up()
        return self._page(self.reader.due(request.spaces, now_us()), request.limit, request.cursor)

    def get(self, request: GetRequest) -> Memory:
        self.catch_up()
        return self.memory(self._memory(request.id))

    def memories(self, request: ListRequest) -> MemoriesAnswer:
        self.catch_up()
        memories = self.reader.newest(request.space, now_us())
        return self._page(memories, request.limit, request.cursor)

    def review(self, request: ReviewRequest) -> MemoriesAnswer:
        """The proposed queue: the person's, to approve or forget (no agent's read)."""
        self.catch_up()
        memories = self.reader.newest(request.space, now_us(), proposed=True)
        return self._page(memories, request.limit, request.cursor)

    def history(self, request: HistoryRequest) -> HistoryAnswer:
        self.catch_up()
        memory = self._memory(request.id)
        return HistoryAnswer(id=memory.id, versions=list(self._versions(memory)))

    def status(self) -> KeptStatus:
        """Counts per space, the limits and the rules."""
        self.catch_up()
        now = now_us()
        served, proposed, due = self.counts()
        spaces: dict[str, list[int]] = {}
        for memory in self.view.memories.values():
            counted = spaces.setdefault(memory.space, [0, 0])
            counted[0] += self.reader.served(memory, now)
            counted[1] += memory.proposed
        names = sorted(set(spaces) | set(self.view.spaces))
        return KeptStatus(
            memories=served,
            proposed=proposed,
            intentions_due=due,
            spaces=[
                SpaceStatus(
                    name=name,
                    memories=spaces.get(name, [0, 0])[0],
                    proposed=spaces.get(name, [0, 0])[1],
                    require_review=self.view.spaces.get(name, SpaceRule()).require_review,
                    idle_days=self.view.spaces.get(name, SpaceRule()).idle_days,
                )
                for name in names
            ],
            max_text=MAX_MEMORY_TEXT,
            max_page=MAX_KEPT_PAGE,
            rules=RULES,
        )

    def counts(self) -> tuple[int, int, int]:
        """(memories served, memories proposed, intentions due), for ``status``."""
        self.catch_up()
        now = now_us()
        memories = self.view.memories.values()
        served = sum(1 for m in memories if self.reader.served(m, now))
        proposed = sum(1 for m in memories if m.proposed)
        return served, proposed, len(self.reader.due([], now))

    def citing(
        self,
        start: datetime | None,
        end: datetime | None,
        app: str | None,
        ids: tuple[int, ...] = (),
    ) -> list[Kept]:
        """The memories (proposed ones too) whose source is a frame a deletion of this scope
        (``ids``: only these frames) covers: it would leave their source pointing at
        nothing."""
        from base.clock import to_us
        from eventlog.events import MAX_OFFSET
        from projector.state import Scope, matches

        self.catch_up()
        scope = Scope(MAX_OFFSET, ids, to_us(start), to_us(end), app)
        out = []
        for memory in self.view.memories.values():
            frame = frame_of(memory.source)
            if frame is None:
                continue
            try:
                hit = self.store.get(frame)
            except NotFoundError:
                continue  # gone already: said when it went
            seen = _Seen(frame, to_us(hit.when) or 0, hit.app, hit.title, hit.url)
            if matches(scope, seen):
                out.append(memory)
        return out

    def forget_citing(self, memories: list[Kept], origin: Origin) -> list[str]:
        """Forget these memories, whose source frames were deleted; their ids."""
        for memory in memories:
            self.forget(ForgetRequest(id=memory.id), origin, reason="source_deleted")
        return [m.id for m in memories]

    # -- answers ---------------------------------------------------------------------------

    def memory(self, memory: Kept) -> Memory:
        text, value = self._open(memory)
        until = self.view.kept_until(memory)
        return Memory(
            id=memory.id,
            version=memory.version,
            text=text,
            kind=memory.kind,  # type: ignore[arg-type]  # the event's Literal, as projected
            space=memory.space,
            status="proposed" if memory.proposed else "current",
            subject=memory.subject,
            predicate=memory.predicate,
            context=memory.context,
            value=value,
            source=memory.source,
            created=time_of(memory.created_us),
            updated=time_of(memory.updated_us),
            valid_from=maybe_time(memory.valid_from_us),
            valid_until=maybe_time(memory.valid_until_us),
            due_at=maybe_time(memory.due_us),
            kept_until=maybe_time(until),
            line=line(memory, text, value, until),
        )

    def _hit(self, scored: Scored) -> Hit:
        shown = msgspec.structs.asdict(self.memory(scored.memory))
        return Hit(**shown, score=round(scored.score, 3), matched_by="words")

    def _kept_answer(
        self, memory: Kept, *, replayed: bool = False, similar: list[Scored] | None = None
    ) -> KeepAnswer:
        return KeepAnswer(
            memory=self.memory(memory),
            replayed=replayed,
            similar=[
                Similar(
                    id=s.memory.id,
                    version=s.memory.version,
                    score=s.score,
                    line=self.memory(s.memory).line,
                )
                for s in similar or ()
            ],
        )

    def _page(self, memories: list[Kept], limit: int, cursor: str | None) -> MemoriesAnswer:
        start = int(cursor or 0)
        page = memories[start : start + limit]
        more = start + limit < len(memories)
        return MemoriesAnswer(
            memories=[self.memory(m) for m in page],
            next_cursor=str(start + limit) if more else None,
        )

    # -- helpers ---------------------------------------------------------------------------

    def _memory(self, memory_id: str, *, proposed: bool = False) -> Kept:
        """The memory, if a read may serve it (``proposed``: or it waits for review)."""
        memory = self.view.memories.get(memory_id)
        if memory is None or not (
            self.reader.served(memory, now_us()) or (proposed and memory.proposed)
        ):
            refuse("not_found", f"no memory {memory_id} (or it was forgotten)", memory_id=memory_id)
        return memory

    def _idle(self, memory: Kept, now: int) -> bool:
        until = self.view.kept_until(memory)
        return until is not None and now >= until

    def _expire(self, memory: Kept, now: int, origin: Origin) -> None:
        """Forget a memory past its idle expiry (under the lock; the caller erases)."""
        self._append(
            MemoryForgotten(
                ts_us=now,
                memory_id=memory.id,
                version=memory.version,
                space=memory.space,
                request_keys=tuple(memory.keys),
                reason="idle",
                origin=origin,
            )
        )
        self._erasing = True

    def _replayed(self, key: str | None, digest: bytes) -> Kept | None:
        """The memory a retry of this write made; None for a new key. Refuses a key used
        for another write, or retired with a forgotten memory."""
        if key is None:
            return None
        if key in self.view.retired:
            refuse(
                "key_retired", f"this request key's memory {self.view.retired[key]} was forgotten"
            )
        use = self.view.keys.get(key)
        if use is None:
            return None
        if use.request_hash != digest:
            refuse(
                "key_reused", "this request key was used for another write", memory_id=use.memory_id
            )
        return self.view.memories[use.memory_id]

    def _append(self, event: Event) -> None:
        offset = self.store.log.append(event)
        self.reader.apply(offset, event)

    def _views(self) -> None:
        if self.refresh_views:
            self.store.refresh()

    def _erase(self) -> None:
        """Compact the versions of every forgotten memory out of the log and the bytes it
        kept aside: this one's, and any a crash kept an earlier forget from erasing."""
        forgotten = set(self.view.forgotten)

        def wanted(event: Event) -> bool:
            return isinstance(event, MemoryKept | MemoryRevised) and event.memory_id in forgotten

        self.store.log.compact(lambda _, event: None if wanted(event) else event)
        self.store.log.remove_aside(wanted)
        self._erasing = False

    def _versions(self, memory: Kept) -> Iterator[MemoryVersion]:
        """Its versions, read in one pass over the log from the first."""
        wanted = set(memory.offsets)
        for at, event in self.store.log.read(memory.offsets[0], types=MEMORY_TYPES):
            if at in wanted and isinstance(event, MemoryKept | MemoryRevised):
                text, value = self._open_event(event)
                yield MemoryVersion(
                    version=event.version if isinstance(event, MemoryRevised) else 1,
                    text=text,
                    value=value,
                    source=event.source,
                    time=time_of(event.ts_us),
                    due_at=maybe_time(event.due_us),
                    restored_from=event.restored_from if isinstance(event, MemoryRevised) else None,
                )
            if at >= memory.offsets[-1]:
                break

    def _version(self, memory: Kept, version: int) -> _Old:
        if not 1 <= version <= len(memory.offsets):
            refuse("not_found", f"{memory.id} has no version {version}", memory_id=memory.id)
        event = self._event_at(memory.offsets[version - 1])
        text, value = self._open_event(event)
        return _Old(text, value, event.source, event.due_us)

    def _event_at(self, offset: int) -> MemoryKept | MemoryRevised:
        for at, event in self.store.log.read(offset, types=MEMORY_TYPES):
            if at == offset and isinstance(event, MemoryKept | MemoryRevised):
                return event
            break
        raise UsageError(f"the log no longer holds the version at #{offset}: run backscroll verify")

    def _open(self, memory: Kept) -> tuple[str, str]:
        if not memory.encrypted:
            return memory.text, memory.value
        return self._unseal(memory.id, memory.version, memory.ciphertext)

    def _open_event(self, event: MemoryKept | MemoryRevised) -> tuple[str, str]:
        if not event.encrypted:
            return event.text, event.value
        version = event.version if isinstance(event, MemoryRevised) else 1
        return self._unseal(event.memory_id, version, event.ciphertext)

    def _unseal(self, memory_id: str, version: int, blob: bytes) -> tuple[str, str]:
        crypto = self.store.crypto
        if crypto is None:
            raise KeyUnavailableError(
                f"memory {memory_id} is encrypted and the store's key is not available"
            )
        text, value = msgspec.msgpack.decode(crypto.decrypt_memory(memory_id, version, blob))
        return str(text), str(value)

    def _blind(self, word: str) -> bytes:
        crypto = self.store.crypto
        return crypto.blind_token(word) if crypto is not None else b""

    def _sealed(self, memory_id: str, version: int, text: str, value: str) -> dict[str, Any]:
        """The text fields of a version's event: plain, or sealed when ``encrypt_text``."""
        if not self.store.config.encrypt_text:
            return {"text": text, "value": value}
        crypto = self.store.ensure_crypto() if self.store.writes else self.store.crypto
        if crypto is None:
            raise KeyUnavailableError("encrypt_text is on and the store's key is not available")
        blob = crypto.encrypt_memory(memory_id, version, msgspec.msgpack.encode((text, value)))
        return {
            "ciphertext": blob,
            "encrypted": True,
            "blind_tokens": crypto.blind_tokens(f"{text} {value}"),
        }

    def _digest(self, what: str, request: msgspec.Struct) -> bytes:
        """A digest of the write, to tell its retry from another write with the same key;
        keyed with the store's key where text is encrypted (a bare hash of a short text is
        guessed by hashing guesses)."""
        fields = msgspec.structs.asdict(request)
        fields.pop("request_key", None)
        data = hashlib.sha256(msgspec.msgpack.encode([what, fields])).hexdigest()
        crypto = self.store.crypto if self.store.config.encrypt_text else None
        if crypto is not None:
            return crypto.blind_token(data)
        return bytes.fromhex(data)[:12]


class _Seen(NamedTuple):
    """A frame as a deletion's scope reads it (``projector.state.Framed``)."""

    frame_id: int
    captured_us: int
    app: str
    title: str
    url: str


class _Old(msgspec.Struct, array_like=True):
    text: str
    value: str
    source: str
    due_us: int | None
