"""Reads of the kept memories: resolve, search, due, pages; and the rule every one of them
keeps: a proposed memory (written into a space that requires review, not approved yet) and
one past its idle expiry are served by none.

Search is by words, in an index built in memory from the view the first time it is asked
(the words the view holds of plain text; the blind tokens of encrypted text, which a query's
words are turned into with the store's key, as frames are searched), each word's memories
kept by space: a search of some spaces and a write's similar memories (of its own space)
walk only those. A score is the share of the query's distinct words a memory holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

from base.tokens import words
from eventlog.events import Event, MemoryForgotten, MemoryKept, MemoryRevised
from projector.kept import Kept, KeptView, claim_key

Blind = Callable[[str], bytes]
"""A query word's blind token under the store's key."""
Index = dict[str | bytes, dict[str, set[str]]]
"""A word (or blind token): the ids of the memories holding it, by space."""

NEAR_MISSES = 3
COMMON = 1_000
"""A word in more memories of a space than this is left out of ``similar`` (``the``, ``we``)."""
SIMILAR = 0.5
"""A new memory sharing half its words with one in its space is reported as similar: 003's
cut-off for a match, and two phrasings of one fact share about that many."""


class Scored(NamedTuple):
    memory: Kept
    score: float


class KeptReader:
    """The view, with the rule of what is served, and its words index."""

    def __init__(self, view: KeptView, blind: Blind | None = None) -> None:
        self.view = view
        self.blind = blind
        self._index: Index | None = None
        self._tokens: dict[str, frozenset[str | bytes]] = {}
        """Each indexed memory's words (or blind tokens), as the index holds them."""
        self._asked = False
        """A search (or a write's similar) was answered: the next builds the index."""

    # -- keeping up ------------------------------------------------------------------------

    def apply(self, offset: int, event: Event) -> None:
        """Apply an event to the view, keeping the index (if built) in step."""
        memory_id = getattr(event, "memory_id", None)
        indexed = self._index is not None and memory_id in self.view.memories
        if indexed and isinstance(event, MemoryRevised | MemoryForgotten):
            self._unindex(self.view.memories[str(memory_id)])
        self.view.apply(offset, event)
        if self._index is not None and isinstance(event, MemoryKept | MemoryRevised):
            after = self.view.memories.get(str(memory_id))
            if after is not None:
                self._add(after)

    def served(self, memory: Kept, now_us: int) -> bool:
        if memory.proposed:
            return False
        until = self.view.kept_until(memory)
        return until is None or now_us < until

    # -- reads -----------------------------------------------------------------------------

    def resolve(
        self, subject: str, predicate: str, context: str, spaces: Iterable[str], now_us: int
    ) -> Kept | None:
        """The memory of the claim in the first space that holds it; never a guess."""
        for space in spaces:
            memory_id = self.view.claims.get(claim_key(space, subject, predicate, context))
            memory = self.view.memories.get(memory_id) if memory_id else None
            if memory is not None and self.served(memory, now_us):
                return memory
        return None

    def search(
        self, query: str, spaces: list[str], min_score: float, limit: int, now_us: int
    ) -> tuple[list[Scored], list[Scored]]:
        """(hits at or above ``min_score``, best first; the closest below it when none)."""
        wanted = sorted(set(words(query)))
        if not wanted:
            return [], []
        indexed = self._asked or self._index is not None
        counts = self._counts(wanted, spaces) if indexed else self._scan(wanted, spaces)
        self._asked = True
        rank = {space: i for i, space in enumerate(spaces)}
        # Best first by how many of the query's words a memory holds: only the buckets a
        # page reaches are ranked (at 100k memories a common word is in hundreds).
        buckets: dict[int, list[Kept]] = {}
        for memory_id, n in counts.items():
            buckets.setdefault(n, []).append(self.view.memories[memory_id])
        hits: list[Scored] = []
        near: list[Scored] = []
        for n in sorted(buckets, reverse=True):
            score = n / len(wanted)
            if score >= min_score:
                shown, room = hits, limit - len(hits)
            elif hits:
                break
            else:
                shown, room = near, NEAR_MISSES - len(near)
            if room <= 0:
                break
            served = [
                m for m in buckets[n] if (not spaces or m.space in rank) and self.served(m, now_us)
            ]
            served.sort(key=lambda m: (rank.get(m.space, 0), -m.updated_us))
            shown += [Scored(m, score) for m in served[:room]]
        return hits, near

    def _counts(self, wanted: list[str], spaces: list[str]) -> dict[str, int]:
        """How many of the query's words each memory holds, from the index."""
        index = self._built()
        counts: dict[str, int] = {}
        for word in wanted:
            keys: list[str | bytes] = [word] if self.blind is None else [word, self.blind(word)]
            found: set[str] = set()
            for key in keys:
                held = index.get(key, {})
                for space in spaces or held:
                    found |= held.get(space, set())
            for memory_id in found:
                counts[memory_id] = counts.get(memory_id, 0) + 1
        return counts

    def _scan(self, wanted: list[str], spaces: list[str]) -> dict[str, int]:
        """The same counts read off each memory's words: a reader's first search (the CLI's
        only one) does not wait for the index to be built (at 100k memories in 20 spaces a
        scan cost 50-100 ms of CPU, building the index 3.0-3.4 s); the next one builds it."""
        plain = frozenset(wanted)
        blind = frozenset(self.blind(w) for w in wanted) if self.blind is not None else plain
        counts: dict[str, int] = {}
        for memory in self.view.memories.values():
            if spaces and memory.space not in spaces:
                continue
            held = blind.intersection(memory.blind_tokens) if memory.encrypted else None
            n = len(held) if held is not None else len(plain.intersection(memory.words))
            if n:
                counts[memory.id] = n
        return counts

    def similar(self, memory: Kept) -> list[Scored]:
        """Served memories of its space holding at least ``SIMILAR`` of its words (a
        rephrasing adds or drops a few; the share of both memories' words would call it
        new). A word most memories of the space hold says nothing about which one this
        repeats, and walking its memories made a write at 100k cost ~10 ms: only words fewer
        than ``COMMON`` memories of the space hold are compared. Only its space's memories
        are walked: walking every space's cost a write 6 ms of CPU at 100k in 20 spaces. A
        reader's first (the CLI's one write) reads its space's memories' words instead of
        building the index (2.6 s of CPU at 100k)."""
        keys = self._keys(memory)
        if self._asked or self._index is not None:
            index = self._built()
            held = [index.get(key, {}).get(memory.space, set()) for key in keys]
        else:
            held = self._holders(memory.space, keys)
        self._asked = True
        mine = [ids for ids in held if len(ids) <= COMMON]
        if not mine:
            return []
        counts: dict[str, int] = {}
        for ids in mine:
            for other_id in ids:
                counts[other_id] = counts.get(other_id, 0) + 1
        least = SIMILAR * len(mine)
        out = []
        for other_id, shared in counts.items():
            if shared < least or other_id == memory.id:
                continue
            other = self.view.memories[other_id]
            if not other.proposed:
                out.append(Scored(other, round(shared / len(mine), 3)))
        out.sort(key=lambda s: -s.score)
        return out[:NEAR_MISSES]

    def _holders(self, space: str, keys: set[str | bytes]) -> list[set[str]]:
        """Each key's memories in ``space``, read off the memories' words."""
        held: dict[str | bytes, set[str]] = {key: set() for key in keys}
        for other in self.view.memories.values():
            if other.space == space:
                for key in keys.intersection(
                    other.blind_tokens if other.encrypted else other.words
                ):
                    held[key].add(other.id)
        return list(held.values())

    def due(self, spaces: list[str], now_us: int) -> list[Kept]:
        """Served intentions whose time has come, earliest first."""
        return sorted(
            (
                m
                for m in self.view.memories.values()
                if m.due_us is not None
                and m.due_us <= now_us
                and (not spaces or m.space in spaces)
                and self.served(m, now_us)
            ),
            key=lambda m: (m.due_us or 0, m.id),
        )

    def newest(self, space: str | None, now_us: int, proposed: bool = False) -> list[Kept]:
        """Served memories (``proposed``: only those waiting for review), newest first."""
        return sorted(
            (
                m
                for m in self.view.memories.values()
                if (space is None or m.space == space)
                and (m.proposed if proposed else self.served(m, now_us))
            ),
            key=lambda m: (-m.updated_us, m.id),
        )

    # -- the index -------------------------------------------------------------------------

    def _built(self) -> Index:
        if self._index is None:
            self._index = {}
            for memory in self.view.memories.values():
                self._add(memory)
        return self._index

    def _keys(self, memory: Kept) -> set[str | bytes]:
        return set(memory.blind_tokens if memory.encrypted else memory.words)

    def _add(self, memory: Kept) -> None:
        assert self._index is not None
        keys = self._tokens[memory.id] = frozenset(self._keys(memory))
        space = memory.space
        for key in keys:
            held = self._index.get(key)
            if held is None:
                held = self._index[key] = {}
            ids = held.get(space)
            if ids is None:
                ids = held[space] = set()
            ids.add(memory.id)

    def _unindex(self, memory: Kept) -> None:
        assert self._index is not None
        for key in self._tokens.pop(memory.id, frozenset()):
            held = self._index.get(key, {})
            ids = held.get(memory.space)
            if ids is not None:
                ids.discard(memory.id)
                if not ids:
                    del held[memory.space]
                if not held:
                    del self._index[key]
