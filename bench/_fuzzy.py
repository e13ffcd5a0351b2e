"""For ``bench.search``: the searches that reach the stage forgiving OCR (``query/_fuzzy.py``),
timed with it and without it (``fuzzy=False``) beside the exact searches of the same run, and
the table behind its minimum word length.

Queries, cut from the store's own log (seeded, cached with the store's other queries):

    fuzzy 1 word     a word of 4-12 letters of an OCR'd plaintext frame, one letter replaced
                     so that it is no word of any frame (text, decrypted text, title, app):
                     the exact search finds nothing, the fuzzy one the frames of the word
    fuzzy 2 words    that word and another word of the same frame, as it is
    absent word      8 random letters, two edits or more from every word of the store: the
                     exact and the fuzzy search both run and find nothing
    absent + word    an absent word and a word of a frame: exact, fuzzy, then the any-term
                     retry (near misses), every stage a search can take

The neighbour table: for the words of n letters in OCR'd text, how many have another word of
that text one edit away (a letter replaced, added or dropped, two neighbours swapped), and
how many such words there are on average: what one edit reaches besides a misreading.
"""

from __future__ import annotations

import json
import random
import string
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from bench._corpus import HEADER, cells
from bench._stats import percentile

KINDS = ("fuzzy 1 word", "fuzzy 2 words", "absent word", "absent + word")
PER_KIND = 100
LETTERS = string.ascii_lowercase


def choose(frames: Iterable[tuple[Any, str]], seed: int) -> dict[str, Any]:
    """Queries of every kind and the neighbour table, from ``(event, plaintext)`` pairs."""
    from base import tokens

    rng = random.Random(seed)
    vocab: set[str] = set()
    ocr_vocab: set[str] = set()
    sources: list[list[str]] = []  # candidate words of sampled OCR'd plaintext frames
    for event, text in frames:
        words = tokens.words(text)
        vocab.update(words)
        vocab.update(tokens.words(event.title))
        vocab.update(tokens.words(event.app))
        if event.text_source == "ocr" and not event.encrypted:
            ocr_vocab.update(words)
            if rng.random() < 0.002:
                picked = sorted({w for w in words if w.isalpha() and 4 <= len(w) <= 12})
                if len(picked) >= 2:
                    sources.append(picked)
    queries: list[dict[str, str]] = []
    for source in rng.sample(sources, min(len(sources), 4 * PER_KIND)):
        word = rng.choice(source)
        typo = _misread(rng, word, vocab)
        if typo is None:
            continue
        other = rng.choice([w for w in source if w != word])
        queries.append({"kind": "fuzzy 1 word", "text": typo})
        queries.append({"kind": "fuzzy 2 words", "text": f"{typo} {other}"})
        absent = _absent(rng, vocab)
        queries.append({"kind": "absent word", "text": absent})
        queries.append({"kind": "absent + word", "text": f"{absent} {other}"})
    kept = [q for kind in KINDS for q in [q for q in queries if q["kind"] == kind][:PER_KIND]]
    return {"queries": kept, "neighbours": neighbour_table(ocr_vocab), "ocr_words": len(ocr_vocab)}


def _misread(rng: random.Random, word: str, vocab: set[str]) -> str | None:
    """``word`` with one letter replaced by another, unless every try is a word already."""
    for _ in range(20):
        at = rng.randrange(len(word))
        typo = word[:at] + rng.choice(LETTERS.replace(word[at], "")) + word[at + 1 :]
        if typo not in vocab:
            return typo
    return None


def _absent(rng: random.Random, vocab: set[str]) -> str:
    while True:
        word = "".join(rng.choice(LETTERS) for _ in range(8))
        if not any(v in vocab for v in _one_edit_away(word)):
            return word


def _one_edit_away(word: str) -> set[str]:
    """``word`` and every string one edit from it over the ASCII letters and digits."""
    alphabet = LETTERS + string.digits
    out = {word}
    for i in range(len(word) + 1):
        out.update(word[:i] + c + word[i:] for c in alphabet)
        if i < len(word):
            out.add(word[:i] + word[i + 1 :])
            out.update(word[:i] + c + word[i + 1 :] for c in alphabet)
        if i < len(word) - 1:
            out.add(word[:i] + word[i + 1] + word[i] + word[i + 2 :])
    return out


def neighbour_table(words: set[str]) -> dict[int, list[float]]:
    """Per length n of 2 to 10: [words of n letters, % with another word of ``words`` one
    edit away, mean number of such words]. Deletion keys find them without trying every
    edit: two words one replacement apart lose the same position to the same string."""
    replaced: dict[tuple[str, int], set[str]] = defaultdict(set)
    shortened: dict[str, set[str]] = defaultdict(set)
    for w in words:
        for i in range(len(w)):
            cut = w[:i] + w[i + 1 :]
            replaced[cut, i].add(w)
            shortened[cut].add(w)
    counts: dict[int, list[int]] = defaultdict(list)
    for w in words:
        if not (w.isalpha() and 2 <= len(w) <= 10):
            continue
        near = set(shortened.get(w, ()))  # one letter longer
        for i in range(len(w)):
            cut = w[:i] + w[i + 1 :]
            near |= replaced[cut, i]
            if cut in words:  # one letter shorter
                near.add(cut)
            if i < len(w) - 1:
                swapped = w[:i] + w[i + 1] + w[i] + w[i + 2 :]
                if swapped in words:
                    near.add(swapped)
        near.discard(w)
        counts[len(w)].append(len(near))
    return {
        n: [len(c), 100 * sum(x > 0 for x in c) / len(c), sum(c) / len(c)]
        for n, c in sorted(counts.items())
    }


def load(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "fuzzy.json").read_text())
    return data


def measure(
    home: Path, chosen: dict[str, Any], per_kind: int, seed: int
) -> dict[str, dict[str, list[tuple[float, int, bool]]]]:
    """Per mode ("on", "off"), per kind: (ms, hits, marked fuzzy) of each query; both modes
    back to back on each query, in a shuffled order, after a warm-up pass."""
    from backscroll.store import MemoryStore

    store = MemoryStore(home)
    rng = random.Random(seed)
    queries = [
        q
        for kind in KINDS
        for q in rng.sample(
            [q for q in chosen["queries"] if q["kind"] == kind],
            min(per_kind, sum(q["kind"] == kind for q in chosen["queries"])),
        )
    ]
    for q in queries[::10]:
        store.search(q["text"], limit=15)
    out: dict[str, dict[str, list[tuple[float, int, bool]]]] = {"on": {}, "off": {}}
    rng.shuffle(queries)
    for q in queries:
        for mode in ("on", "off"):
            start = time.perf_counter()
            hits = store.search(q["text"], limit=15, fuzzy=mode == "on")
            ms = (time.perf_counter() - start) * 1e3
            marked = bool(hits) and hits[0].fuzzy
            out[mode].setdefault(q["kind"], []).append((ms, len(hits), marked))
    return out


def report(
    say: Callable[..., None],
    chosen: dict[str, Any],
    results: dict[str, dict[str, list[tuple[float, int, bool]]]],
    exact: list[float],
) -> None:
    """The table: each kind with the fuzzy stage and without, beside ``exact`` (the same
    run's plaintext queries, which find every term and never reach the stage)."""
    say(
        "queries that reach the fuzzy stage (MemoryStore.search, limit 15, snippets on), "
        "beside the exact searches of this run"
    )
    columns = f"{'hits%':>6s} {'fuzzy%':>6s} {'p99/exact':>9s}"
    say(f"{'ms per query':26s} {'fuzzy':6s} {HEADER} {columns}")
    p99_exact = percentile(sorted(exact), 0.99)
    say(f"{'exact (all plaintext)':26s} {'':6s} {cells(exact)} {100:6.0f} {0:6.0f} {1:9.2f}")
    for kind in KINDS:
        for mode in ("on", "off"):
            rows = results[mode].get(kind, [])
            if not rows:
                continue
            times = [t for t, _, _ in rows]
            found = 100 * sum(1 for _, n, _ in rows if n) / len(rows)
            marked = 100 * sum(1 for _, _, f in rows if f) / len(rows)
            ratio = percentile(sorted(times), 0.99) / p99_exact
            shown = kind if mode == "on" else ""
            say(f"{shown:26s} {mode:6s} {cells(times)} {found:6.0f} {marked:6.0f} {ratio:9.2f}")
    every = {m: [t for rows in results[m].values() for t, _, _ in rows] for m in ("on", "off")}
    say(
        f"all that reach it: p50 / p99 {percentile(sorted(every['on']), 0.5):.2f} / "
        f"{percentile(sorted(every['on']), 0.99):.2f} ms with the fuzzy stage, "
        f"{percentile(sorted(every['off']), 0.5):.2f} / "
        f"{percentile(sorted(every['off']), 0.99):.2f} ms without; exact searches "
        f"{percentile(sorted(exact), 0.5):.2f} / {p99_exact:.2f} ms"
    )
    say()
    say(
        f"one edit from a word of OCR'd text ({chosen['ocr_words']:,} distinct words): "
        "words of n letters, share with another word one edit away, mean number of them"
    )
    for n, (count, share, mean) in chosen["neighbours"].items():
        say(f"  {n:>2}  {int(count):7,d} words  {share:5.1f}%  {mean:6.2f}")
