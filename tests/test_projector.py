"""The views: incremental projection equals a rebuild, crash-resume, corrupt views rebuilt."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from backscroll.importer import import_frames
from backscroll.manage import delete, rebuild_views
from backscroll.store import MemoryStore
from eventlog.events import FrameCaptured
from eventlog.log import Log
from projector.schema import SCHEMA_VERSION
from tests.helpers import kill_after, run_time
from tests.residue import files_containing, index_doc_freq, stray_segment_files

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
WORDS += ["golf", "hotel", "india", "juliet", "kilo", "lima"]
NOW = datetime.now(UTC)


def lines(n: int, seed: int = 0, days: int = 60) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        when = NOW - timedelta(days=rng.uniform(0, days))
        app = rng.choice(["Terminal", "Firefox", "Slack", "Code"])
        text = " ".join(rng.choice(WORDS) for _ in range(30)) + f" unique{i}"
        out.append(
            json.dumps(
                {"ts": when.isoformat(), "app": app, "title": f"{app} {i % 7}", "text": text}
            )
        )
    return out


def snapshot(store: MemoryStore) -> tuple[object, ...]:
    queries = ["alpha", '"bravo charlie"', "kilo*", "unique7", "delta echo"]
    # Limits above the match counts: with ties at the cut, which of the tied frames make a
    # top 50 depends on segment layout, which a rebuild changes.
    results = tuple(tuple(h.id for h in store.search(q, limit=5000)) for q in queries)
    results += (tuple(h.id for h in store.search("golf", app="slack", limit=5000)),)
    timeline = tuple(h.id for h in store.timeline(limit=10_000))
    totals = store.state().totals()
    return results, timeline, totals.frames, dict(totals.text_sources)


@pytest.mark.slow
def test_incremental_projection_equals_a_rebuild_after_deletions_and_retention(
    backscroll_home: Path,
) -> None:
    with MemoryStore(write=True) as store:
        import_frames(store, lines(600))
        delete(store, app="slack")
        import_frames(store, lines(200, seed=1))
        delete(store, ids=(5, 6, 7))
        delete(store, end=NOW - timedelta(days=50))
        incremental = snapshot(store)
        rebuild_views(store)
        assert snapshot(store) == incremental
    shutil.rmtree(backscroll_home / "views")
    with MemoryStore(write=True) as store:
        assert snapshot(store) == incremental


def test_deleting_by_ids_leaves_no_trace(backscroll_home: Path) -> None:
    with MemoryStore(write=True) as store:
        import_frames(
            store,
            [
                *lines(50),
                json.dumps(
                    {
                        "ts": NOW.isoformat(),
                        "app": "Mail",
                        "title": "wibblequux",
                        "text": "zorbflat",
                    }
                ),
            ],
        )
        (target,) = store.search("zorbflat")
        delete(store, ids=(target.id,))
        assert store.search("zorbflat") == [] and len(store.timeline(limit=100)) == 50
    assert files_containing(backscroll_home, "zorbflat") == []
    assert files_containing(backscroll_home, "wibblequux") == []
    assert index_doc_freq(backscroll_home, "where", "wibblequux") == 0
    assert stray_segment_files(backscroll_home) == []


@pytest.mark.slow
def test_a_damaged_view_is_rebuilt_by_the_next_writer(backscroll_home: Path) -> None:
    with MemoryStore(write=True) as store:
        import_frames(store, lines(100))
        before = snapshot(store)
    search = backscroll_home / "views" / "search"
    (backscroll_home / "views" / "state.msgpack").write_bytes(b"garbage")
    (search / "manifest.json").write_text("{not json")
    with MemoryStore(write=True) as store:
        assert snapshot(store) == before
    partition = next(p for p in search.iterdir() if p.is_dir())
    shutil.rmtree(partition)
    with MemoryStore(write=True) as store:
        assert snapshot(store) == before
    # Views of an older schema (an upgrade) are rebuilt in the current one.
    manifest = json.loads((search / "manifest.json").read_text())
    (search / "manifest.json").write_text(json.dumps({**manifest, "schema": SCHEMA_VERSION - 1}))
    with MemoryStore(write=True) as store:
        assert snapshot(store) == before
    assert json.loads((search / "manifest.json").read_text())["schema"] == SCHEMA_VERSION


CATCH_UP = """
import sys
from projector.runner import Projector
from pathlib import Path

import pytest
with Projector(Path(sys.argv[1])) as projector:
    projector.catch_up()
"""


@pytest.mark.slow
def test_a_projector_killed_while_catching_up_always_resumes_consistent(
    backscroll_home: Path,
) -> None:
    frames = 20_000
    log = Log(backscroll_home / "log")
    with log.batch() as batch:
        base = int(NOW.timestamp() * 1e6)
        for i in range(frames):
            batch.append(
                FrameCaptured(
                    ts_us=base,
                    frame_id=batch.next_offset,
                    captured_us=base - i * 60_000_000,
                    app="App",
                    title=f"t{i % 50}",
                    text=f"{WORDS[i % 12]} w{i}",
                    text_source="ocr",
                )
            )
    shutil.copytree(backscroll_home, backscroll_home.parent / "whole")
    whole = run_time([sys.executable, "-c", CATCH_UP, str(backscroll_home.parent / "whole")])
    rng = random.Random(7)
    killed = 0
    for _ in range(20):
        child = subprocess.Popen([sys.executable, "-c", CATCH_UP, str(backscroll_home)])
        killed += kill_after(child, rng.uniform(0, whole))
    assert killed, "every catch-up ended before its kill: the test killed none"
    # The next writer resumes (the last child may have been killed inside a commit, between
    # the state and the search view it saves after it: a window as long as Tantivy's commit).
    with MemoryStore(write=True):
        pass
    with MemoryStore() as store:
        assert store.state().totals().frames == frames
        assert len(store.search("w12345")) == 1
        assert len(store.search("alpha", limit=5000)) == frames // 12 + (frames % 12 > 0)
        from backscroll.verify import verify_store

        assert verify_store(store) == []


def test_frames_applied_but_not_committed_are_indexed_once_after_their_writer_closes(
    backscroll_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An import interrupted between two batches closes its views' writer without the
    # catch-up that commits: Tantivy commits what was added all the same, past the
    # manifest's position, so the next writer must know to replace those frames.
    from projector import runner

    monkeypatch.setattr(runner, "BATCH_SECONDS", 3600.0)
    with MemoryStore(write=True) as store:
        import_frames(store, lines(10, days=5))
        with store.projector() as projector:
            import_frames(store, lines(30, days=5)[10:])  # the views are taken: appended only
            projector.apply_new()
    with MemoryStore(write=True) as store:
        assert [len(store.search(f"unique{i}")) for i in range(30)] == [1] * 30
        assert store.state().totals().frames == 30
    assert index_doc_freq(backscroll_home, "text", "unique25") == 1


def test_a_long_lived_reader_sees_new_commits_without_reopening(backscroll_home: Path) -> None:
    from query.search import Searcher
    from query.views import ViewReader

    with MemoryStore(write=True) as store:
        import_frames(store, lines(20))
        reader = Searcher(ViewReader(backscroll_home))
        assert reader.search("unique3") and not reader.search("unique25")
        import_frames(store, lines(30)[20:])
        assert reader.search("unique25")
