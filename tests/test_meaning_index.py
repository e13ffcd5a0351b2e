"""The meaning view's index: each month's binary codes in a usearch graph, the rows past it
searched exactly, candidates scored by their int8 vectors; sealed, purged, rebuilt, and
damage answered by an exact search."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from backscroll.manage import delete, rebuild_views
from backscroll.store import MemoryStore
from projector import embedder as model
from projector.vectors import Manifest, MeaningHit, MeaningView, read_chunk
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
def small_graphs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A graph from 4 rows on, so a dozen screens make one (8,192 rows in a real store)."""
    monkeypatch.setattr("projector.meaning.GRAPH_MIN", 4)


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


def answers(home: Path, **options: object) -> list[list[MeaningHit]]:
    """Each question's hits, by a fresh reader."""
    with MemoryStore() as store:
        cipher = store.crypto
    view = MeaningView(view_root(home), cipher, **options)  # type: ignore[arg-type]
    return [view.search(model.embedder().query(q), None, None, None, None) for q in QUESTIONS]


def codes_of(home: Path, frame_text: str) -> bytes:
    """The binary code of ``frame_text``'s one passage, as the view keeps it."""
    from projector._codes import codes

    with MemoryStore() as store:
        cipher = store.crypto
    root = view_root(home)
    manifest = Manifest.load(root)
    e = model.embedder()
    mine = np.clip(np.rint(e.embed(e.passages(frame_text))[0] * 127), -127, 127).astype(np.int8)
    for names in manifest.months.values():
        for name in names:
            chunk = read_chunk(root, name, cipher)
            matrix = np.frombuffer(chunk.vectors, np.int8).reshape(-1, model.DIMENSIONS)
            for row in matrix:
                if np.array_equal(row, mine):
                    return bytes(codes(row[None, :])[0])
    raise AssertionError("no row of that text")


def test_a_months_rows_go_into_its_graph_which_finds_what_an_exact_search_finds(
    backscroll_home: Path,
) -> None:
    store_of(SCREENS)
    manifest = Manifest.load(view_root(backscroll_home))
    ((month, graph),) = manifest.graphs.items()
    assert graph.rows == manifest.month_rows(month) == len(SCREENS)
    assert (view_root(backscroll_home) / graph.name).read_bytes()[:1] == b"P"
    by_graph = answers(backscroll_home)
    assert by_graph == answers(backscroll_home, graphs=False)
    assert by_graph[0][0].frame_id == 1 and by_graph[1][0].frame_id == 2
    # One more row: fewer than a quarter of the graph's, so it stays past it, searched exactly.
    store_of([("Slack", "The quarterly tax return is due, file it with the accountant.")], 5)
    manifest = Manifest.load(view_root(backscroll_home))
    assert manifest.graphs[month].rows == len(SCREENS) < manifest.month_rows(month)
    tax = model.embedder().query("paying taxes")
    found = MeaningView(view_root(backscroll_home)).search(tax, None, None, None, None)
    assert found[0].frame_id == len(SCREENS) + 1


def test_a_span_keeps_every_answer_inside_it_through_the_graph_and_without(
    backscroll_home: Path,
) -> None:
    store_of(SCREENS[:6], minutes=600)
    store_of(SCREENS[6:], minutes=60)
    start = int(datetime.fromisoformat(ago(120)).timestamp() * 1e6)
    question = model.embedder().query("a message from a colleague at work")
    root = view_root(backscroll_home)
    everything = MeaningView(root).search(question, None, None, None, None, cutoff=-1.0)
    late = {h.frame_id for h in everything if h.frame_id > 6}
    assert len(late) == 6 and len(everything) == len(SCREENS)
    exact, through_graph = MeaningView(root), MeaningView(root, exact_rows=0)
    for view in (exact, through_graph):
        found = view.search(question, None, None, start, None, cutoff=-1.0)
        assert {h.frame_id for h in found} == late
    # One candidate: the nearest row inside the span, never one outside it.
    (best,) = exact.search(question, None, None, start, None, cutoff=-1.0, candidates=1)
    assert best.frame_id in late


def test_an_encrypted_store_seals_its_graphs(backscroll_home: Path) -> None:
    with MemoryStore(write=True) as store:
        store.set_config(encrypt_text=True)
    store_of(SCREENS)
    manifest = Manifest.load(view_root(backscroll_home))
    (graph,) = manifest.graphs.values()
    assert (view_root(backscroll_home) / graph.name).read_bytes()[:1] == b"E"
    code = codes_of(backscroll_home, SCREENS[1][1])
    assert not any(code in data for _, data in readable_bytes(backscroll_home))
    with MemoryStore() as store:
        (flight,) = store.search("Lufthansa", by="words")
    assert answers(backscroll_home)[1][0].frame_id == flight.id


def test_a_deleted_frames_code_leaves_the_graph_which_is_made_again_without_it(
    backscroll_home: Path,
) -> None:
    store_of(SCREENS)
    code = codes_of(backscroll_home, SCREENS[1][1])
    assert any(code in data for _, data in readable_bytes(backscroll_home))
    (before,) = Manifest.load(view_root(backscroll_home)).graphs.values()
    with MemoryStore(write=True) as store:
        delete(store, app="Firefox")
    assert not (view_root(backscroll_home) / before.name).exists()
    assert not any(code in data for _, data in readable_bytes(backscroll_home))
    assert answers(backscroll_home)[1] == [] or all(
        h.frame_id != 2 for h in answers(backscroll_home)[1]
    )
    with MemoryStore(write=True) as store:
        store.embed()  # nothing to embed: the writer tends the month's graph again
    manifest = Manifest.load(view_root(backscroll_home))
    ((month, graph),) = manifest.graphs.items()
    assert graph.rows == manifest.month_rows(month) == 7
    assert not any(code in data for _, data in readable_bytes(backscroll_home))


def test_reindex_builds_the_same_graphs_and_answers(backscroll_home: Path) -> None:
    store_of(SCREENS)
    before = answers(backscroll_home)
    with MemoryStore(write=True) as store:
        rebuild_views(store)
        assert not list(view_root(backscroll_home).glob("*.graph"))
        assert store.embed() == len(SCREENS)
    assert answers(backscroll_home) == before
    (graph,) = Manifest.load(view_root(backscroll_home)).graphs.values()
    assert graph.rows == len(SCREENS)


def test_a_damaged_graph_is_searched_around_named_by_verify_and_made_again(
    backscroll_home: Path,
) -> None:
    from backscroll.verify import verify_store

    store_of(SCREENS)
    before = answers(backscroll_home)
    (graph,) = Manifest.load(view_root(backscroll_home)).graphs.values()
    path = view_root(backscroll_home) / graph.name
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    assert answers(backscroll_home) == before  # every row searched exactly instead
    with MemoryStore() as store:
        (problem,) = verify_store(store)
    assert graph.name in problem and "reindex" in problem
    more = [(app, f"{text} Seen again.") for app, text in SCREENS[:4]]
    store_of(more, minutes=30)  # rows enough for the writer to tend the month
    (again,) = Manifest.load(view_root(backscroll_home)).graphs.values()
    assert again.rows == len(SCREENS) + 4 and not path.exists()
    with MemoryStore() as store:
        assert verify_store(store) == []


def test_a_view_of_the_format_before_graphs_is_built_again(backscroll_home: Path) -> None:
    import json

    from projector.vectors import FORMAT

    store_of(SCREENS[:6])
    path = view_root(backscroll_home) / "manifest.json"
    old = json.loads(path.read_bytes())
    for field in ("format", "rows", "graphs"):
        del old[field]  # a manifest as the view without graphs wrote it
    path.write_text(json.dumps(old))
    with MemoryStore() as store:
        assert store.search("invoice", by="meaning") == []  # read as no view at all
    with MemoryStore(write=True) as store:
        assert store.embed() == 6
    manifest = Manifest.load(view_root(backscroll_home))
    assert manifest.format == FORMAT and manifest.month_rows(next(iter(manifest.months))) == 6
    named = {n for names in manifest.months.values() for n in names}
    assert {p.name for p in view_root(backscroll_home).glob("*.vec")} == named
