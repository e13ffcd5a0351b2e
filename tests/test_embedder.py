"""The meaning model: passages over a frame's text, vectors that find a paraphrase, no network."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from projector import embedder as model
from projector.embedder import OVERLAP_TOKENS, PASSAGE_TOKENS, Embedder, embedder

pytestmark = [
    pytest.mark.meaning,
    pytest.mark.skipif(not model.available(), reason="the meaning model is not installed"),
]


@pytest.fixture(scope="module")
def e() -> Embedder:
    return embedder()


def test_a_long_text_is_cut_into_overlapping_passages_that_cover_it(e: Embedder) -> None:
    text = " ".join(f"word{i} alpha" for i in range(400))
    passages = e.passages(text)
    assert len(passages) > 2
    assert all(len(p.ids) <= PASSAGE_TOKENS for p in passages)
    assert passages[0].start == 0 and passages[-1].end == len(text)
    for before, after in pairwise(passages):
        assert after.start < before.end  # they overlap
        assert before.ids[-OVERLAP_TOKENS:] == after.ids[:OVERLAP_TOKENS]


def test_a_text_without_words_has_no_passage(e: Embedder) -> None:
    assert e.passages("   \n ") == []


def test_vectors_are_normalised_and_do_not_depend_on_their_batch(e: Embedder) -> None:
    texts = ["a short one", "a somewhat longer passage about trains and their timetables"]
    alone = np.stack([e.embed(e.passages(t))[0] for t in texts])
    together = e.embed([e.passages(t)[0] for t in texts])
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert np.allclose(alone, together, atol=1e-4)


def test_a_paraphrase_is_nearer_its_screen_than_other_screens(e: Embedder) -> None:
    screens = [
        "LH 1034 FRA to LIS, seat 14C, boarding 06:40. Your booking is confirmed.",
        "Electricity bill for November: 84.20 EUR due on December 15",
        "def parse_query(text): return [word for word in text.split()]",
    ]
    vectors = e.embed([e.passages(s)[0] for s in screens])
    for question, screen in [
        ("that flight I booked", 0),
        ("how much I owe the power company", 1),
        ("source code that splits a search into terms", 2),
    ]:
        assert int(np.argmax(vectors @ e.query(question))) == screen, question


def test_the_model_file_is_checked_before_it_is_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    from base.errors import StoreError

    monkeypatch.setattr(model, "MODEL_SHA256", "0" * 64)
    with pytest.raises(StoreError, match="not the one pinned"):
        Embedder.load()
