"""Search by meaning: the view built, searched, fused with the words, deleted and rebuilt."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from backscroll.manage import delete, rebuild_views
from backscroll.store import MemoryStore
from projector import embedder as model
from projector._codes import quantise
from projector.vectors import Manifest
from tests.helpers import ago, kill_after, populate, run, run_time
from tests.residue import readable_bytes
from tests.test_startup import loaded_after

pytestmark = [
    pytest.mark.meaning,
    pytest.mark.skipif(not model.available(), reason="the meaning model is not installed"),
]

BILL = (
    "From: billing@nordhafen-logistik.de. Nordhafen Logistics GmbH. Invoice 4471 for the "
    "transport of 12 pallets from Hamburg to Lyon. Amount due: 1,840.00 EUR by 15 December."
)
FLIGHT = (
    "Lufthansa. Booking confirmed. LH 1034 FRA to LIS, Tuesday 06:40, seat 14C. "
    "Passenger: J. Doe. Baggage: 1 x 23 kg."
)
CODE = "def parse_query(text): return [word for word in text.split() if word]"
STORE = [
    {"ts": ago(300), "app": "Thunderbird", "title": "Inbox", "text": BILL},
    {"ts": ago(200), "app": "Firefox", "title": "Lufthansa", "text": FLIGHT},
    {"ts": ago(100), "app": "Terminal", "title": "vim search.py", "text": CODE},
]
FREIGHT = "the invoice from the shipping company"
TRIP = "my flight reservation"


def embedded() -> None:
    populate(STORE)
    with MemoryStore(write=True) as store:
        assert store.embed() == len(STORE)


def search(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    code, out, err = run(capsys, "search", *args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_a_paraphrase_finds_its_screen_by_meaning_and_says_which_passage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    embedded()
    for question, app in [(FREIGHT, "Thunderbird"), (TRIP, "Firefox")]:
        found = search(capsys, question)
        best = found["matches"][0]
        assert best["app"] == app, question
        assert best["matched_by"] == ["meaning"]
        assert best["passage"] and best["passage"] in " ".join(
            next(r["text"] for r in STORE if r["app"] == app).split()
        )
        assert found["why_empty"] is None and found["meaning_behind"] is None


def test_a_literal_query_keeps_its_screen_first_and_is_found_by_both(
    capsys: pytest.CaptureFixture[str],
) -> None:
    embedded()
    found = search(capsys, "invoice 4471")
    assert found["matches"][0]["app"] == "Thunderbird"
    assert found["matches"][0]["matched_by"] == ["words", "meaning"]
    words = search(capsys, "invoice 4471", "--words")
    assert [m["matched_by"] for m in words["matches"]] == [["words"]]
    assert words["matches"][0]["passage"] is None


def test_meaning_hits_hold_to_the_app_and_the_time_asked_for(
    capsys: pytest.CaptureFixture[str],
) -> None:
    embedded()
    # The flight is what the question is about; the other screens may still answer it
    # weakly (the invoice scores 0.11), and must be all an answer holds.
    for outside in (["--app", "Thunderbird"], ["--since", "150m"], ["--until", "250m"]):
        found = search(capsys, TRIP, "--meaning", *outside)["matches"]
        assert "Firefox" not in [m["app"] for m in found], outside
    inside = search(capsys, TRIP, "--meaning", "--since", "250m", "--until", "150m")
    assert [m["app"] for m in inside["matches"]] == ["Firefox"]


def test_an_unrelated_question_is_no_hit_and_the_answer_says_why(
    capsys: pytest.CaptureFixture[str],
) -> None:
    embedded()
    found = search(capsys, "a recipe for lemon cake with almonds", "--meaning")
    assert found["matches"] == [] and found["why_empty"]


def test_words_and_meaning_are_one_choice(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "search", "x", "--words", "--meaning")
    assert code == 2 and "--words and --meaning" in err


def test_while_the_view_is_behind_search_answers_by_words_and_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    embedded()
    populate([{"ts": ago(50), "app": "Mail", "title": "Receipt", "text": "Your receipt 981"}])
    found = search(capsys, "receipt")
    # The invoice may answer by meaning; the frame not embedded yet answers by its words.
    assert [m["matched_by"] for m in found["matches"] if m["app"] == "Mail"] == [["words"]]
    assert "3 of 4 frames" in found["meaning_behind"]
    code, out, _ = run(capsys, "search", "receipt")
    assert code == 0 and "the meaning view is behind" in out


def test_near_duplicate_frames_share_their_vectors(backscroll_home: Path) -> None:
    ticking = [
        {"ts": ago(10 - i), "app": "Terminal", "title": "top", "text": FLIGHT} for i in range(5)
    ]
    populate(ticking)
    with MemoryStore(write=True) as store:
        assert store.embed() == 5
    view = backscroll_home / "views" / "meaning"
    manifest = Manifest.load(view)
    assert manifest.frames == 5
    vectors = sum(
        len(_chunk(view / name).keys) for names in manifest.months.values() for name in names
    )
    assert vectors == 1  # one passage, embedded once


def _chunk(path: Path):  # type: ignore[no-untyped-def]
    from projector.vectors import read_chunk

    return read_chunk(path.parent, path.name, None)


def test_a_deleted_frames_vectors_leave_the_files(
    backscroll_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    embedded()
    e = model.embedder()
    mine = quantise(e.embed(e.passages(FLIGHT)))
    assert any(mine[0].tobytes() in data for _, data in readable_bytes(backscroll_home))
    with MemoryStore(write=True) as store:
        delete(store, app="Firefox")
    assert "Firefox" not in [m["app"] for m in search(capsys, TRIP, "--meaning")["matches"]]
    assert not any(mine[0].tobytes() in data for _, data in readable_bytes(backscroll_home))
    assert Manifest.load(backscroll_home / "views" / "meaning").frames == 2
    assert search(capsys, FREIGHT)["matches"][0]["app"] == "Thunderbird"  # the rest stays


def test_reindex_rebuilds_the_same_answers(
    backscroll_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    embedded()
    before = [search(capsys, q)["matches"] for q in (FREIGHT, TRIP, "parse_query")]
    with MemoryStore(write=True) as store:
        rebuild_views(store)
        assert Manifest.load(backscroll_home / "views" / "meaning").frames == 0
        assert store.embed() == len(STORE)
    assert [search(capsys, q)["matches"] for q in (FREIGHT, TRIP, "parse_query")] == before
    code, _, err = run(capsys, "reindex", "--views-only")
    assert code == 0, err
    assert Manifest.load(backscroll_home / "views" / "meaning").frames == len(STORE)


def test_import_embeds_before_it_returns_unless_told_not_to(
    backscroll_home: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in STORE))
    assert run(capsys, "import", str(source), "--no-meaning")[0] == 0
    assert Manifest.load(backscroll_home / "views" / "meaning").frames == 0
    assert run(capsys, "import", str(source))[0] == 0
    assert Manifest.load(backscroll_home / "views" / "meaning").frames == 2 * len(STORE)


def test_an_encrypted_store_seals_its_vectors_and_keys_its_passages(
    backscroll_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from projector.vectors import plain_key

    with MemoryStore(write=True) as store:
        store.set_config(encrypt_text=True)
    embedded()
    view = backscroll_home / "views" / "meaning"
    chunks = list(view.glob("*.vec"))
    assert chunks and all(c.read_bytes()[:1] == b"E" for c in chunks)
    plain = plain_key(BILL)
    assert not any(plain in data for _, data in readable_bytes(backscroll_home))
    assert search(capsys, FREIGHT)["matches"][0]["app"] == "Thunderbird"


def test_turned_off_nothing_is_embedded_and_search_is_by_words(
    backscroll_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with MemoryStore(write=True) as store:
        store.set_config(meaning=False)
    populate(STORE)
    with MemoryStore(write=True) as store:
        assert store.embed() == 0
    assert search(capsys, TRIP)["matches"] == [] or all(
        m["matched_by"] != ["meaning"] for m in search(capsys, TRIP)["matches"]
    )
    code, _, err = run(capsys, "search", TRIP, "--meaning")
    assert code != 0 and "meaning" in err


def test_an_orphan_chunk_or_map_of_a_crash_is_removed_by_the_next_writer(
    backscroll_home: Path,
) -> None:
    embedded()
    view = backscroll_home / "views" / "meaning"
    orphans = [view / "2026-01.999999.vec", view / "2026-01.999998.map"]
    for orphan in orphans:
        orphan.write_bytes(b"P" + b"left by a crash")
    (view / "manifest.json").write_bytes(b"{not json")
    with MemoryStore(write=True) as store:
        assert not any(orphan.exists() for orphan in orphans)
        assert store.embed() == len(STORE)  # a damaged manifest: the view is made again
    assert Manifest.load(view).frames == len(STORE)


def test_a_view_another_model_made_is_searched_by_no_one_and_made_again(
    backscroll_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    embedded()
    view = backscroll_home / "views" / "meaning"
    # What the MiniLM release left: its model's name, 384-dimension rows.
    old = json.loads((view / "manifest.json").read_text())
    old["model"] = "all-MiniLM-L6-v2-onnx-int8"
    (view / "manifest.json").write_text(json.dumps(old))
    junk = b"P" + b"\x00" * 384 * 7
    for chunk in view.glob("*.vec"):
        chunk.write_bytes(junk)
    found = search(capsys, FREIGHT)
    assert not any("meaning" in m["matched_by"] for m in found["matches"])
    assert "0 of 3 frames" in found["meaning_behind"]
    assert json.loads(run(capsys, "status", "--json")[1])["meaning_frames"] == 0
    with MemoryStore(write=True) as store:
        assert store.embed() == len(STORE)
    assert all(chunk.read_bytes() != junk for chunk in view.glob("*.vec"))
    assert Manifest.load(view).model == model.MODEL_ID
    assert search(capsys, FREIGHT)["matches"][0]["app"] == "Thunderbird"


def test_a_words_search_and_a_status_load_no_model() -> None:
    for args in (["search", "invoice", "--words"], ["status"]):
        modules = loaded_after(
            "import sys\n"
            "from backscroll.cli import main\n"
            f"sys.argv = ['backscroll', *{args!r}]\n"
            "try:\n"
            "    main()\n"
            "except SystemExit:\n"
            "    pass"
        )
        assert not {"onnxruntime", "onnxruntime_extensions", "numpy"} & modules, args


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs: apt-get install -y strace")
def test_a_search_by_meaning_opens_no_network_socket(backscroll_home: Path, tmp_path: Path) -> None:
    embedded()
    log = tmp_path / "trace"
    strace = ["strace", "-f", "-qq", "-e", "trace=socket,connect", "-o", str(log)]
    done = subprocess.run(
        [*strace, sys.executable, "-m", "backscroll", "search", TRIP, "--meaning"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Lufthansa" in done.stdout  # it did search by meaning
    calls = [line for line in log.read_text().splitlines() if "AF_INET" in line]
    assert calls == []


def test_status_shows_the_backlog_without_loading_the_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    embedded()
    populate([{"ts": ago(50), "app": "Mail", "title": "Receipt", "text": "Your receipt 981"}])
    code, out, _ = run(capsys, "status", "--json")
    shown = json.loads(out)
    assert code == 0 and shown["meaning_frames"] == 3
    assert shown["meaning"].startswith("3 of 4 frames embedded")
    code, out, _ = run(capsys, "status")
    assert "meaning:   3 of 4 frames embedded" in out


def test_verify_reads_the_meaning_view_and_finds_vectors_of_frames_gone_from_the_log(
    backscroll_home: Path,
) -> None:
    import msgspec

    from backscroll.verify import verify_store
    from projector.vectors import PLAIN, Chunk

    embedded()
    with MemoryStore() as store:
        assert verify_store(store) == []
    view = backscroll_home / "views" / "meaning"
    manifest = Manifest.load(view)
    stray = Chunk([999_999], [0], [[]], [[]], [], b"")
    (view / "2026-01.000099.vec").write_bytes(PLAIN + msgspec.msgpack.encode(stray))
    manifest.months.setdefault("2026-01", []).append("2026-01.000099.vec")
    (view / "manifest.json").write_bytes(msgspec.json.encode(manifest))
    with MemoryStore() as store:
        (problem,) = verify_store(store)
    assert "no longer has (#999999)" in problem and "reindex" in problem


EMBED = """
import sys
from backscroll.store import MemoryStore
with MemoryStore(sys.argv[1], write=True) as store:
    store.embed()
"""


@pytest.mark.slow
def test_embedding_killed_at_any_moment_resumes_consistent(backscroll_home: Path) -> None:
    """SIGKILL while batches commit: the next writer finds every chunk the manifest names,
    no orphan, and embeds exactly what is left."""
    from backscroll.verify import verify_store

    texts = [BILL, FLIGHT, CODE]
    populate(
        [
            {
                "ts": ago(500 - i),
                "app": f"App{i % 7}",
                "title": f"w{i}",
                "text": f"{i} {texts[i % 3]}",
            }
            for i in range(240)
        ]
    )
    shutil.copytree(backscroll_home, backscroll_home.parent / "whole")
    whole = run_time([sys.executable, "-c", EMBED, str(backscroll_home.parent / "whole")])
    rng = random.Random(3)
    killed = 0
    for _ in range(6):
        child = subprocess.Popen([sys.executable, "-c", EMBED, str(backscroll_home)])
        killed += kill_after(child, rng.uniform(0, whole))
    assert killed, "every embedding ended before its kill: the test killed none"
    view = backscroll_home / "views" / "meaning"
    with MemoryStore(write=True) as store:
        store.embed()
        manifest = Manifest.load(view)
        named = {n for names in manifest.months.values() for n in names}
        assert {p.name for p in view.glob("*.vec")} == named
        assert manifest.frames == 240
        ids = [i for n in named for i in _chunk(view / n).ids]
        assert sorted(ids) == sorted(set(ids))  # no frame embedded twice
        assert verify_store(store) == []


def test_a_damaged_chunk_is_said_by_search_and_dropped_by_the_next_writer(
    backscroll_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    embedded()
    view = backscroll_home / "views" / "meaning"
    (chunk,) = view.glob("*.vec")
    chunk.write_bytes(b"P" + b"\xff" * 40)
    found = search(capsys, FREIGHT)
    assert "meaning view does not read" in found["incomplete"]
    populate([{"ts": ago(5), "app": "Mail", "title": "Receipt", "text": "Your receipt 981"}])
    with MemoryStore(write=True) as store:
        store.embed()
    assert Manifest.load(view).frames == 1  # the damaged month's vectors went with it
    assert search(capsys, FREIGHT)["incomplete"] is None


def test_a_long_lived_reader_lets_go_of_a_deleted_frames_vectors(backscroll_home: Path) -> None:
    from projector.vectors import MeaningView

    embedded()
    view = MeaningView(backscroll_home / "views" / "meaning")
    question = model.embedder().query(TRIP)
    assert view.search(question, None, None, None, None)
    with MemoryStore(write=True) as store:
        delete(store, app="Firefox")
    assert all(h.frame_id != 2 for h in view.search(question, None, None, None, None))
    held = [int(i) for month in view._months.values() for part in month.parts for i in part.ids]
    assert 2 not in held and len(held) == 2
