"""The meaning view's index: 4-bit rows, each month's map of binary codes (the chunks past
it read as they are), candidates by every code's Hamming distance and scored by their 4-bit
rows; sealed, purged, rebuilt, and damage answered from the chunks."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from backscroll.manage import delete, rebuild_views
from backscroll.store import MemoryStore
from projector import embedder as model
from projector._codes import ROW_BYTES, codes, quantise
from projector.vectors import FORMAT, Manifest, MeaningHit, MeaningView, read_chunk, read_rows
from tests.helpers import ago, populate
from tests.residue import readable_bytes

pytestmark = [
    pytest.mark.meaning,
    pytest.mark.skipif(not model.available(), reason="the meaning model is not installed"),
]

SCREENS = [
    ("Thunderbird", "Invoice 4471 from Nordhafen Logistics for pallets to Lyon, due Friday."),
    ("Firefox", "Lufthansa booking confirmed: LH 1034 Frankfurt to Lisbon, seat 14C."),
    ("Terminal", "def parse_query(text): return [word for word in text.split() if word]"),
    ("Firefox", "Recipe: bake the sourdough loaf at 230 degrees for forty minutes."),
    ("Slack", "Standup moved to 10:30 tomorrow, the release review is after lunch."),
    ("Firefox", "Weather in Hamburg: rain all week, wind from the north-west at 40 km/h."),
    ("Thunderbird", "Your electricity bill for November: 84.20 EUR, debited on the 15th."),
    ("Terminal", "git rebase -i HEAD~3 then force-push the feature branch to origin."),
    ("Firefox", "Apartment for rent: two rooms near the park, 1,150 EUR a month, no pets."),
    ("Slack", "Can you review my pull request on the payment retry logic before Monday?"),
    ("Firefox", "Train tickets Paris to Lyon, TGV 6611, coach 4, seat 52, departs 08:12."),
    ("Thunderbird", "Dentist appointment reminder: Tuesday 9:00, please bring your card."),
]
QUESTIONS = ["the invoice from the shipping company", "my flight reservation", "dinner bread"]


@pytest.fixture(autouse=True)
def small_maps(monkeypatch: pytest.MonkeyPatch) -> None:
    """A map from 4 rows on, so a dozen screens make one (8,192 rows in a real store)."""
    monkeypatch.setattr("projector.meaning.MAP_MIN", 4)


def store_of(screens: list[tuple[str, str]], minutes: float = 600) -> None:
    populate(
        [
            {"ts": ago(minutes - i), "app": app, "title": app, "text": text}
            for i, (app, text) in enumerate(screens)
        ]
    )
    with MemoryStore(write=True) as store:
        assert store.embed() == len(screens)


def view_root(home: Path) -> Path:
    return home / "views" / "meaning"


def cipher_of() -> object:
    with MemoryStore() as store:
        return store.crypto


def answers(home: Path) -> list[list[MeaningHit]]:
    """Each question's hits, by a fresh reader."""
    view = MeaningView(view_root(home), cipher_of())  # type: ignore[arg-type]
    return [view.search(model.embedder().query(q), None, None, None, None) for q in QUESTIONS]


def code_of(frame_text: str) -> bytes:
    """The binary code of ``frame_text``'s one passage, as the view keeps it."""
    e = model.embedder()
    return bytes(codes(quantise(e.embed(e.passages(frame_text))))[0])


def test_a_months_chunks_go_into_its_map_and_the_chunks_past_it_are_read_as_they_are(
    backscroll_home: Path,
) -> None:
    store_of(SCREENS)
    manifest = Manifest.load(view_root(backscroll_home))
    ((month, held),) = manifest.maps.items()
    assert held.rows == manifest.month_rows(month) == len(SCREENS)
    assert held.chunks == len(manifest.months[month])
    assert (view_root(backscroll_home) / held.name).read_bytes()[:1] == b"P"
    found = answers(backscroll_home)
    assert found[0][0].frame_id == 1 and found[1][0].frame_id == 2
    # One more row: fewer than a quarter of the map's, so its chunk stays past the map.
    store_of([("Slack", "The quarterly tax return is due, file it with the accountant.")], 5)
    manifest = Manifest.load(view_root(backscroll_home))
    assert manifest.maps[month].rows == len(SCREENS) < manifest.month_rows(month)
    tax = model.embedder().query("paying taxes")
    found_tax = MeaningView(view_root(backscroll_home)).search(tax, None, None, None, None)
    assert found_tax[0].frame_id == len(SCREENS) + 1


def test_a_hits_score_is_its_passages_cosine_to_within_the_4_bit_rows_error(
    backscroll_home: Path,
) -> None:
    store_of(SCREENS)
    e = model.embedder()
    question = e.query("a message from a colleague at work")
    found = MeaningView(view_root(backscroll_home)).search(question, None, None, None, None, -1)
    assert len(found) == len(SCREENS)
    for hit in found:
        text = SCREENS[hit.frame_id - 1][1]
        assert hit.span == (0, len(text))
        exact = float(e.embed(e.passages(text))[0] @ question)
        # 0.02: the 4-bit rows' cosine was off by at most 0.0225 over 200 × 2,609 pairs of
        # the corpus's passages (projector._codes.SCALE), 0.0030 on average.
        assert abs(hit.score - exact) < 0.025


def test_a_chunks_rows_are_read_alone_plain_and_sealed(backscroll_home: Path) -> None:
    for encrypt in (False, True):
        with MemoryStore(write=True) as store:
            store.set_config(encrypt_text=encrypt)
        store_of(SCREENS[:3], minutes=600 if encrypt else 900)
        cipher = cipher_of()
        manifest = Manifest.load(view_root(backscroll_home))
        name = next(n for names in manifest.months.values() for n in names[::-1])
        assert (view_root(backscroll_home) / name).read_bytes()[:1] == (b"E" if encrypt else b"P")
        whole = read_chunk(view_root(backscroll_home), name, cipher)  # type: ignore[arg-type]
        every = np.frombuffer(whole.vectors, np.uint8).reshape(-1, ROW_BYTES)
        picked = np.array([2, 0])
        alone = read_rows(
            view_root(backscroll_home),
            name,
            len(every),
            picked,
            cipher,  # type: ignore[arg-type]
        )
        assert np.array_equal(alone, every[picked])


def test_a_plain_map_is_mapped_from_its_file_not_read_into_memory(
    backscroll_home: Path,
) -> None:
    store_of(SCREENS)
    (held,) = Manifest.load(view_root(backscroll_home)).maps.values()
    view = MeaningView(view_root(backscroll_home))
    assert view.search(model.embedder().query(QUESTIONS[0]), None, None, None, None)
    mapped = Path("/proc/self/maps").read_text()
    assert str(view_root(backscroll_home) / held.name) in mapped


def test_a_span_keeps_every_answer_inside_it(backscroll_home: Path) -> None:
    store_of(SCREENS[:6], minutes=600)
    store_of(SCREENS[6:], minutes=60)
    start = int(datetime.fromisoformat(ago(120)).timestamp() * 1e6)
    question = model.embedder().query("a message from a colleague at work")
    view = MeaningView(view_root(backscroll_home))
    everything = view.search(question, None, None, None, None, cutoff=-1.0)
    late = {h.frame_id for h in everything if h.frame_id > 6}
    assert len(late) == 6 and len(everything) == len(SCREENS)
    found = view.search(question, None, None, start, None, cutoff=-1.0)
    assert {h.frame_id for h in found} == late
    # One candidate: the nearest row inside the span, never one outside it.
    (best,) = view.search(question, None, None, start, None, cutoff=-1.0, candidates=1)
    assert best.frame_id in late


def test_an_encrypted_store_seals_its_maps(backscroll_home: Path) -> None:
    with MemoryStore(write=True) as store:
        store.set_config(encrypt_text=True)
    store_of(SCREENS)
    manifest = Manifest.load(view_root(backscroll_home))
    (held,) = manifest.maps.values()
    assert (view_root(backscroll_home) / held.name).read_bytes()[:1] == b"E"
    code = code_of(SCREENS[1][1])
    assert not any(code in data for _, data in readable_bytes(backscroll_home))
    with MemoryStore() as store:
        (flight,) = store.search("Lufthansa", by="words")
    assert answers(backscroll_home)[1][0].frame_id == flight.id


def test_a_deleted_frames_code_leaves_the_map_which_is_made_again_without_it(
    backscroll_home: Path,
) -> None:
    store_of(SCREENS)
    code = code_of(SCREENS[1][1])
    assert any(code in data for _, data in readable_bytes(backscroll_home))
    (before,) = Manifest.load(view_root(backscroll_home)).maps.values()
    with MemoryStore(write=True) as store:
        delete(store, app="Firefox")
    assert not (view_root(backscroll_home) / before.name).exists()
    assert not any(code in data for _, data in readable_bytes(backscroll_home))
    assert all(h.frame_id != 2 for h in answers(backscroll_home)[1])
    with MemoryStore(write=True) as store:
        store.embed()  # nothing to embed: the writer tends the month's map again
    manifest = Manifest.load(view_root(backscroll_home))
    ((month, held),) = manifest.maps.items()
    assert held.rows == manifest.month_rows(month) == 7
    assert not any(code in data for _, data in readable_bytes(backscroll_home))


def test_reindex_builds_the_same_maps_and_answers(backscroll_home: Path) -> None:
    store_of(SCREENS)
    before = answers(backscroll_home)
    (old,) = Manifest.load(view_root(backscroll_home)).maps.values()
    with MemoryStore(write=True) as store:
        rebuild_views(store)
        assert not list(view_root(backscroll_home).glob("*.map"))
        assert store.embed() == len(SCREENS)
    assert answers(backscroll_home) == before
    (held,) = Manifest.load(view_root(backscroll_home)).maps.values()
    assert held.rows == len(SCREENS) and held.chunks == old.chunks


def test_a_damaged_map_is_read_around_named_by_verify_and_made_again(
    backscroll_home: Path,
) -> None:
    from backscroll.verify import verify_store

    store_of(SCREENS)
    before = answers(backscroll_home)
    (held,) = Manifest.load(view_root(backscroll_home)).maps.values()
    path = view_root(backscroll_home) / held.name
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    assert answers(backscroll_home) == before  # the month's chunks read instead
    with MemoryStore() as store:
        (problem,) = verify_store(store)
    assert held.name in problem and "reindex" in problem
    more = [(app, f"{text} Seen again.") for app, text in SCREENS[:4]]
    store_of(more, minutes=30)  # rows enough for the writer to tend the month
    (again,) = Manifest.load(view_root(backscroll_home)).maps.values()
    assert again.rows == len(SCREENS) + 4 and not path.exists()
    with MemoryStore() as store:
        assert verify_store(store) == []


def test_a_view_of_the_format_before_maps_is_built_again(backscroll_home: Path) -> None:
    store_of(SCREENS[:6])
    root = view_root(backscroll_home)
    path = root / "manifest.json"
    old = json.loads(path.read_bytes())
    # A manifest as format 2 wrote it (int8 rows, a month's HNSW graph), with its graph.
    old["format"] = 2
    old["graphs"] = {month: ["2026-01.000099.graph", 6] for month in old.pop("maps")}
    path.write_text(json.dumps(old))
    (root / "2026-01.000099.graph").write_bytes(b"P" + bytes(64))
    with MemoryStore() as store:
        assert store.search("invoice", by="meaning") == []  # read as no view at all
    with MemoryStore(write=True) as store:
        assert store.embed() == 6
    manifest = Manifest.load(root)
    assert manifest.format == FORMAT and manifest.month_rows(next(iter(manifest.months))) == 6
    named = {n for names in manifest.months.values() for n in names}
    assert {p.name for p in root.glob("*.vec")} == named
    assert not list(root.glob("*.graph"))
