"""Kept memories written by several processes at once, with retries and conflicts: no
duplicate, no acknowledged write lost, every conflict reported (``tests/_keeper.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from backscroll.contract import parse
from backscroll.contract.keep import HistoryRequest
from backscroll.keep import Keeper
from backscroll.keep_upkeep import verify_kept
from backscroll.store import MemoryStore
from tests.conftest import REPO

WORKER = Path(__file__).with_name("_keeper.py")


def race(home: Path, workers: int, count: int) -> list[dict[str, object]]:
    children = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(home), str(w), str(count), str(w)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        for w in range(workers)
    ]
    for child in children:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    lines: list[dict[str, object]] = []
    for child in children:
        out, _ = child.communicate(timeout=1800)
        assert child.returncode == 0 and out.endswith("done\n"), out[-500:]
        lines += [json.loads(line) for line in out.splitlines()[:-1]]
    return lines


def check(home: Path, lines: list[dict[str, object]]) -> None:
    with MemoryStore(home, write=True) as store:
        keeper = Keeper(store)
        view = keeper.view
        # No duplicate: each key made one memory; each claim is held by one.
        kept = {str(line["kept"]): line["id"] for line in lines if "kept" in line}
        assert all(view.keys[key].memory_id == memory_id for key, memory_id in kept.items())
        assert all(memory_id in view.memories for memory_id in kept.values())
        texts = Counter(keeper.memory(m).text for m in view.memories.values())
        assert max(texts.values()) == 1
        holders = {line["claimed"]: line["id"] for line in lines if "claimed" in line}
        for n, memory_id in holders.items():
            assert view.claims[f"default\x1fteam\x1fclaim_{n}\x1f"] == memory_id
        # Every claim kept once: the other attempts were each told claim_exists.
        refused = Counter(str(line["refused"]) for line in lines if "refused" in line)
        claimed = sum(1 for line in lines if "claimed" in line)
        assert claimed == len(holders) <= 10
        assert set(refused) <= {"claim_exists", "version_conflict"}
        # No acknowledged revision lost: each is one version of its memory, none twice.
        revised = [(str(line["revised"]), line["version"]) for line in lines if "revised" in line]
        assert len(set(revised)) == len(revised)
        versions = {
            memory_id: {
                v.version for v in keeper.history(parse(HistoryRequest, {"id": memory_id})).versions
            }
            for memory_id in {m for m, _ in revised}
        }
        assert all(version in versions[memory_id] for memory_id, version in revised)
        for memory_id in set(holders.values()):
            done = sum(1 for m, _ in revised if m == memory_id)
            assert view.memories[str(memory_id)].version == done + 1
        assert verify_kept(store) == []
    assert refused["claim_exists"] > 0  # the workers did contend


def test_four_processes_writing_at_once_lose_nothing_and_duplicate_nothing(
    backscroll_home: Path,
) -> None:
    lines = race(backscroll_home, workers=4, count=60)
    check(backscroll_home, lines)


@pytest.mark.slow
def test_eight_processes_of_a_thousand_writes_each(backscroll_home: Path) -> None:
    lines = race(backscroll_home, workers=8, count=1000)
    assert len(lines) == 8000
    check(backscroll_home, lines)
