"""Damaged views (issue 24, case 6): a month's Tantivy files, the search view's manifest or
the state damaged on disk. A reader never shows a traceback and never answers less without
saying so: it answers from what it can read, says in one line which view is damaged and
which command rebuilds it, and the next writer rebuilds it from the log."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from backscroll.contract.screen_memory import ContextRequest, StretchesRequest
from backscroll.mcp_server import build_server
from backscroll.screen_memory import recent_context, recent_stretches
from backscroll.store import MemoryStore
from projector.index import Manifest
from tests.helpers import ago, populate, run
from tests.test_read_only import answered, cli, read_only, snapshot

MONTHS = ("2026-09", "2026-10", "2026-11")
PER_MONTH = 10
REBUILD = "backscroll reindex --views-only"


@pytest.fixture
def months(backscroll_home: Path) -> Path:
    """Ten frames in each of three months, each of its own window, all holding "invoice"."""
    with MemoryStore(write=True) as store:
        store.set_config(retention_days=36_500)
    frames = []
    for m, month in enumerate(MONTHS):
        year, number = map(int, month.split("-"))
        for i in range(PER_MONTH):
            when = datetime(year, number, 5, 10, tzinfo=UTC) + timedelta(minutes=10 * i)
            words = f"invoice number {m} {i} " + "lorem ipsum " * 30
            frames.append(
                {"ts": when.isoformat(), "app": f"app{i}", "title": f"w{m}-{i}", "text": words}
            )
    populate(frames)
    return backscroll_home


def month_folder(home: Path, month: str) -> Path:
    manifest = Manifest.load(home / "views" / "search")
    assert manifest is not None
    return home / "views" / "search" / manifest.partitions[month]


def damage_store_file(home: Path, month: str, where: str) -> None:
    """Bytes of the month's largest ``.store`` file (its frames' stored text) overwritten:
    in its body (the month opens, and reading some of its frames fails) or in its footer
    (the month no longer opens)."""
    path = max(month_folder(home, month).glob("*.store"), key=lambda p: p.stat().st_size)
    data = bytearray(path.read_bytes())
    at = 20 if where == "body" else len(data) - 6
    data[at : at + 4] = b"\xff\xff\xff\xff"
    path.write_bytes(bytes(data))


def searched(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code, out, err = run(capsys, "search", "invoice", "--json", "--limit", "50", *args)
    assert code == 0 and "Traceback" not in err, err
    answer: dict[str, Any] = json.loads(out)
    return answer


@pytest.mark.parametrize("where", ["body", "footer"])
def test_a_damaged_month_is_said_by_search_timeline_show_and_verify_in_one_line(
    months: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    damage_store_file(months, "2026-10", where)
    found = searched(capsys)
    titles = {m["title"] for m in found["matches"]}
    assert {f"w0-{i}" for i in range(PER_MONTH)} | {f"w2-{i}" for i in range(PER_MONTH)} <= titles
    assert len(titles) < 3 * PER_MONTH  # some of October's frames do not read
    assert "the search view of 2026-10 is damaged" in found["incomplete"]
    assert ".store fails its checksum" in found["incomplete"]
    assert REBUILD in found["incomplete"]
    code, out, err = run(capsys, "search", "invoice")
    assert code == 0 and out.splitlines()[-1].startswith("incomplete: the search view of 2026-10")
    code, out, err = run(capsys, "timeline", "--json")
    assert code == 0 and "Traceback" not in err
    assert REBUILD in json.loads(out)["incomplete"]
    shown = [run(capsys, "show", str(frame_id)) for frame_id in range(11, 21)]
    refused = [err for code, _, err in shown if code]
    assert refused, "some of October's frames do not read"
    for err in refused:
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
        assert "2026-10 is damaged" in err and REBUILD in err
    code, out, _ = run(capsys, "verify")
    assert code == 1
    assert (
        out.splitlines()
        == [
            out.splitlines()[0],
            "1 problem(s)",
        ]
        and out.startswith("search view of 2026-10 damaged (")
        and REBUILD in out
    )


def test_the_next_writer_rebuilds_a_damaged_month_from_the_log(
    months: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    damage_store_file(months, "2026-10", "body")
    with MemoryStore() as reader:  # a long-lived reader, as an agent's server may hold
        reader.moments("invoice", limit=50)
        assert "2026-10" in (reader.views.incomplete() or "")
        with MemoryStore(write=True):
            pass
        assert len(reader.moments("invoice", limit=50)) == 3 * PER_MONTH
        assert reader.views.incomplete() is None
    found = searched(capsys)
    assert len(found["matches"]) == 3 * PER_MONTH and found["incomplete"] is None
    assert run(capsys, "verify")[:2] == (0, "healthy\n")


def test_damage_a_writer_cannot_see_is_rebuilt_by_the_command_a_reader_names(
    months: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bit rot leaves a file's time as it was: the writer's start-up check reads only files
    changed since its last commit, and passes it; the reader names the command, which works."""
    folder = month_folder(months, "2026-10")
    times = {p: p.stat().st_mtime_ns for p in folder.iterdir()}
    damage_store_file(months, "2026-10", "body")
    for path, mtime in times.items():
        os.utime(path, ns=(mtime, mtime))
    with MemoryStore(write=True):
        pass
    assert REBUILD in searched(capsys)["incomplete"]
    assert run(capsys, "reindex", "--views-only")[0] == 0
    found = searched(capsys)
    assert len(found["matches"]) == 3 * PER_MONTH and found["incomplete"] is None


@pytest.mark.parametrize("view", ["views/state.msgpack", "views/search/manifest.json"])
def test_a_damaged_state_or_manifest_is_said_by_reads_and_rebuilt_by_the_next_writer(
    months: Path, capsys: pytest.CaptureFixture[str], view: str
) -> None:
    (months / view).write_bytes(b"\x93not what it was")
    found = searched(capsys)
    assert "is damaged (it does not decode)" in found["incomplete"]
    assert REBUILD in found["incomplete"]
    code, out, _ = run(capsys, "status", "--json")
    assert code == 0 and REBUILD in json.loads(out)["views_damaged"]
    code, out, _ = run(capsys, "verify")
    assert code == 1 and "damaged (it does not decode)" in out
    with MemoryStore(write=True):
        pass
    found = searched(capsys)
    assert len(found["matches"]) == 3 * PER_MONTH and found["incomplete"] is None


def test_the_agent_is_told_a_search_is_incomplete_not_given_an_error(months: Path) -> None:
    damage_store_file(months, "2026-10", "body")

    async def ask() -> Any:
        async with Client(build_server(months)) as client:
            return await client.call_tool("memory", {"action": "search", "query": "invoice"})

    result = asyncio.run(ask())
    assert not result.is_error
    assert "2026-10 is damaged" in result.structured_content["incomplete"]
    text = "".join(getattr(block, "text", "") for block in result.content)
    assert "incomplete: the search view of 2026-10 is damaged" in text


def test_a_damaged_month_on_a_read_only_mount_is_said_and_nothing_is_written(
    months: Path, tmp_path: Path
) -> None:
    """Issue 24, case 7 (a read-only home could not be searched: the views' lock file) is
    fixed by reads never writing (``test_read_only.py``); with a damaged month as well, the
    reader answers, says so, and still writes nothing."""
    damage_store_file(months, "2026-10", "body")
    before = snapshot(months)
    with read_only(months, tmp_path / "ro") as home:
        done = answered(cli(home, "search", "invoice", "--json", "--limit", "50"))
        found = json.loads(done)
        assert len(found["matches"]) >= 2 * PER_MONTH and REBUILD in found["incomplete"]
        assert "1 problem(s)" in answered(cli(home, "verify"), codes=(1,))
    assert snapshot(months) == before


@pytest.mark.parametrize("how", ["meta.json damaged", "folder removed"])
def test_a_month_that_does_not_open_is_said_and_rebuilt_by_the_next_writer(
    months: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    folder = month_folder(months, "2026-10")
    if how == "folder removed":
        shutil.rmtree(folder)
    else:
        (folder / "meta.json").write_text('{"segm')
    found = searched(capsys)
    assert len(found["matches"]) == 2 * PER_MONTH
    assert found["incomplete"].startswith("the search view of 2026-10 is damaged (")
    assert run(capsys, "verify")[0] == 1
    with MemoryStore(write=True):
        pass
    found = searched(capsys)
    assert len(found["matches"]) == 3 * PER_MONTH and found["incomplete"] is None


def test_a_month_whose_damaged_fast_fields_panic_tantivy_is_said_not_a_traceback(
    months: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Damaged fast fields (the capture times a timeline sorts by) make Tantivy's Rust code
    panic as it opens the month, which pyo3 raises past ``except Exception``."""
    path = max(month_folder(months, "2026-10").glob("*.fast"), key=lambda p: p.stat().st_size)
    data = bytearray(path.read_bytes())
    for at in range(8, len(data) - 120, 7):
        data[at] ^= 0x5A
    path.write_bytes(bytes(data))
    found = searched(capsys)
    assert len(found["matches"]) == 2 * PER_MONTH
    assert ".fast fails its checksum" in found["incomplete"]
    code, out, _ = run(capsys, "timeline", "--json")
    assert code == 0 and REBUILD in json.loads(out)["incomplete"]
    with MemoryStore(write=True):
        pass
    assert len(searched(capsys)["matches"]) == 3 * PER_MONTH


def test_an_export_from_a_damaged_view_says_it_is_incomplete(
    months: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    damage_store_file(months, "2026-10", "footer")
    out = tmp_path / "out"
    code, said, err = run(capsys, "export", "--out", str(out), "--format", "json")
    assert code == 0 and "exported 20 frame(s)" in said
    assert err.startswith("incomplete: the search view of 2026-10 is damaged") and REBUILD in err
    assert len(json.loads((out / "frames.json").read_text())["frames"]) == 2 * PER_MONTH


def test_the_recent_context_tools_say_when_a_damaged_month_hid_windows(
    backscroll_home: Path,
) -> None:
    populate([{"ts": ago(5), "app": "Terminal", "title": "zsh", "text": "make test"}])
    manifest = Manifest.load(backscroll_home / "views" / "search")
    assert manifest is not None
    [month] = manifest.partitions
    damage_store_file(backscroll_home, month, "footer")
    context = recent_context(backscroll_home, ContextRequest(minutes=60))
    stretches = recent_stretches(backscroll_home, StretchesRequest(minutes=60))
    for answer in (context, stretches):
        assert answer.incomplete is not None
        assert f"the search view of {month} is damaged" in answer.incomplete
        assert REBUILD in answer.incomplete
