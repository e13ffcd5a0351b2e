"""The kept memories' view: every current memory, claims per space, spaces' rules, the
request keys in use and retired, and the tombstones of forgotten memories.

One MessagePack file (``views/kept.msgpack``) written atomically by the views' writer with
the log position it reflects, only when a memory event was applied (a day of frames does not
rewrite it). The invariant readers rely on: every memory event at or below the state view's
position is in this file, since the writer saves it before the state at every commit; so a
reader applies what the log holds past the later of the two positions, and reads nothing
twice. Text stays as the log holds it: sealed when ``encrypt_text`` is on (nothing decrypted
is written to disk), with the blind tokens that search it.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from base.fs import write_atomic
from eventlog.events import (
    Event,
    MemoryForgotten,
    MemoryKept,
    MemoryReviewed,
    MemoryRevised,
    SpaceConfigured,
)

KEPT_FILE = "kept.msgpack"
DAY_US = 86_400_000_000


class Kept(msgspec.Struct, kw_only=True, array_like=True, gc=False):
    """One memory as it stands: its latest version. Stored as an array, and untracked by the
    garbage collector (it holds strings, numbers and lists of them, never a cycle): a view
    of 100k memories decodes without the collector walking them all again and again."""

    id: str
    space: str
    kind: str
    version: int
    text: str
    value: str
    ciphertext: bytes
    encrypted: bool
    blind_tokens: tuple[bytes, ...]
    subject: str | None
    predicate: str | None
    context: str
    source: str
    valid_from_us: int | None
    valid_until_us: int | None
    due_us: int | None
    created_us: int
    updated_us: int
    proposed: bool
    keys: list[str]
    """The request keys of its writes, retired with it when it is forgotten."""
    offsets: list[int]
    """Where its versions are in the log, oldest first (``history``)."""
    words: tuple[str, ...] = ()
    """The distinct words of its plain text and value, as the words index takes them (made
    once, as it is written: the analyzer costs ~0.1 ms a memory, 10 s for 100k at each
    start of a reader otherwise). Empty when encrypted: its blind tokens serve."""

    def claim(self) -> str | None:
        if self.subject is None or self.predicate is None:
            return None
        return claim_key(self.space, self.subject, self.predicate, self.context)


class KeyUse(msgspec.Struct, array_like=True, gc=False):
    """What a request key wrote: the memory, the digest of the write, the version it made."""

    memory_id: str
    request_hash: bytes
    version: int


class Tombstone(msgspec.Struct, array_like=True, gc=False):
    forgotten_us: int
    version: int
    origin: str
    reason: str


class SpaceRule(msgspec.Struct, kw_only=True):
    require_review: bool = False
    idle_days: int | None = None
    changed_us: int = 0


class KeptView(msgspec.Struct, kw_only=True):
    position: int = -1
    memories: dict[str, Kept] = {}
    claims: dict[str, str] = {}
    """``claim_key`` → the id of its one current (or proposed) memory."""
    spaces: dict[str, SpaceRule] = {}
    keys: dict[str, KeyUse] = {}
    retired: dict[str, str] = {}
    """Request keys of forgotten memories → the memory's id."""
    forgotten: dict[str, Tombstone] = {}
    blocked: dict[str, str] = {}
    """Claims marked "do not keep again" → the forgotten memory that held them."""

    def apply(self, offset: int, event: Event) -> None:
        """Apply one event (others are ignored); an event of a forgotten memory, which an
        import or a retry could bring, changes nothing."""
        match event:
            case MemoryKept() if event.memory_id not in self.forgotten:
                if event.memory_id in self.memories:
                    return
                memory = Kept(
                    id=event.memory_id,
                    space=event.space,
                    kind=event.kind,
                    version=1,
                    text=event.text,
                    value=event.value,
                    ciphertext=event.ciphertext,
                    encrypted=event.encrypted,
                    blind_tokens=event.blind_tokens,
                    subject=event.subject,
                    predicate=event.predicate,
                    context=event.context,
                    source=event.source,
                    valid_from_us=event.valid_from_us,
                    valid_until_us=event.valid_until_us,
                    due_us=event.due_us,
                    created_us=event.ts_us,
                    updated_us=event.ts_us,
                    proposed=event.proposed,
                    keys=[],
                    offsets=[offset],
                    words=_words(event.text, event.value, event.encrypted),
                )
                self.memories[memory.id] = memory
                claim = memory.claim()
                if claim is not None:
                    self.claims[claim] = memory.id
                self._key(event.request_key, memory.id, event.request_hash, 1)
            case MemoryRevised() if event.memory_id in self.memories:
                memory = self.memories[event.memory_id]
                if event.version != memory.version + 1:
                    return  # a revision of a version the log no longer holds
                memory.version = event.version
                memory.text, memory.value = event.text, event.value
                memory.ciphertext, memory.encrypted = event.ciphertext, event.encrypted
                memory.blind_tokens = event.blind_tokens
                memory.words = _words(event.text, event.value, event.encrypted)
                memory.source = event.source
                memory.valid_from_us, memory.valid_until_us = (
                    event.valid_from_us,
                    event.valid_until_us,
                )
                memory.due_us = event.due_us
                memory.updated_us = event.ts_us
                memory.offsets.append(offset)
                self._key(event.request_key, memory.id, event.request_hash, event.version)
            case MemoryForgotten():
                gone = self.memories.pop(event.memory_id, None)
                if gone is not None:
                    claim = gone.claim()
                    if claim is not None and self.claims.get(claim) == gone.id:
                        del self.claims[claim]
                for key in (*event.request_keys, *(gone.keys if gone else ())):
                    self.keys.pop(key, None)
                    self.retired[key] = event.memory_id
                self.forgotten[event.memory_id] = Tombstone(
                    event.ts_us, event.version, event.origin, event.reason
                )
                if event.do_not_keep and event.subject and event.predicate:
                    blocked = claim_key(event.space, event.subject, event.predicate, event.context)
                    self.blocked[blocked] = event.memory_id
            case MemoryReviewed() if event.memory_id in self.memories:
                self.memories[event.memory_id].proposed = False
            case SpaceConfigured():
                self.spaces[event.space] = SpaceRule(
                    require_review=event.require_review,
                    idle_days=event.idle_days,
                    changed_us=event.ts_us,
                )
        self.position = max(self.position, offset)

    def _key(self, key: str | None, memory_id: str, digest: bytes, version: int) -> None:
        if key is None:
            return
        self.keys[key] = KeyUse(memory_id, digest, version)
        self.memories[memory_id].keys.append(key)

    def kept_until(self, memory: Kept) -> int | None:
        """When idle expiry forgets it, unless written to before; None: kept until forgotten.
        An intention's idle days start at its due time."""
        rule = self.spaces.get(memory.space)
        if rule is None or rule.idle_days is None:
            return None
        start = max(memory.updated_us, memory.due_us or 0)
        return start + rule.idle_days * DAY_US

    def save(self, root: Path) -> None:
        write_atomic(root / KEPT_FILE, msgspec.msgpack.encode(self))

    @classmethod
    def load(cls, root: Path) -> KeptView | None:
        """The saved view; None when there is none, or it does not decode (then it is built
        again from the log)."""
        try:
            return msgspec.msgpack.decode((root / KEPT_FILE).read_bytes(), type=cls)
        except FileNotFoundError:
            return None
        except msgspec.DecodeError:
            return None


def _words(text: str, value: str, encrypted: bool) -> tuple[str, ...]:
    if encrypted:
        return ()
    from base.tokens import words

    return tuple(sorted(set(words(f"{text} {value}"))))


def fold(part: str) -> str:
    """A claim's subject or context as 003 matches them: case and extra spaces ignored."""
    return " ".join(part.casefold().split())


def claim_key(space: str, subject: str, predicate: str, context: str) -> str:
    return "\x1f".join((space, fold(subject), predicate, fold(context)))
