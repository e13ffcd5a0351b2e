"""Kept memories under crashes: a power cut (``tests/faultfs.py``: whatever an fsync had not
made durable is lost, which a kill -9 cannot show) at every single file-system call of a
keep, a revise and a forget. After each, the same write retried with its request key
happened once: the memory exists once with one version more, or is forgotten with its text
gone from the log, and the retry answers as the first would have."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from backscroll.contract import parse
from backscroll.contract.keep import ForgetRequest, KeepRequest, ReviseRequest
from backscroll.keep import Keeper
from backscroll.keep_upkeep import verify_kept
from backscroll.store import MemoryStore
from tests.faultfs import FaultFS, PowerCut, installed
from tests.residue import files_containing

FIRST = "The staging database resets on Sundays."
Write = Callable[[Keeper], Any]


def keep(keeper: Keeper) -> Any:
    request = {"text": "Deploys freeze on Fridays.", "request_key": "k-keep"}
    return keeper.keep(parse(KeepRequest, request))


def revise(keeper: Keeper) -> Any:
    memory_id = next(iter(keeper.view.memories))
    request = {
        "id": memory_id,
        "expected_version": 1,
        "text": "It resets on Saturdays now.",
        "request_key": "k-revise",
    }
    return keeper.revise(parse(ReviseRequest, request))


def forget(keeper: Keeper) -> Any:
    memory_id = next(iter(keeper.view.memories), None) or next(iter(keeper.view.forgotten))
    return keeper.forget(parse(ForgetRequest, {"id": memory_id, "request_key": "k-forget"}))


def prepared(folder: Path) -> Path:
    """A store holding one memory (kept with key k0), views caught up."""
    with MemoryStore(folder, write=True) as store:
        Keeper(store).keep(parse(KeepRequest, {"text": FIRST, "request_key": "k0"}))
    return folder


def calls_of(write: Write, home: Path) -> int:
    fs = FaultFS()
    with installed(fs), MemoryStore(home, write=True) as store:
        keeper = Keeper(store)
        start = fs.calls
        write(keeper)
        return fs.calls - start


def crashed(write: Write, home: Path, at: int) -> bool:
    """Run ``write`` with the power cut at its ``at``th call; whether it returned."""
    fs = FaultFS()
    try:
        with installed(fs), MemoryStore(home, write=True) as store:
            keeper = Keeper(store)
            fs.crash_at = fs.calls + at
            write(keeper)
            return True
    except PowerCut:
        fs.power_cut()
        return False


@pytest.mark.parametrize("write", [keep, revise, forget], ids=lambda w: w.__name__)
def test_a_write_cut_at_any_call_happened_once_or_not_at_all(write: Write, tmp_path: Path) -> None:
    template = prepared(tmp_path / "template")
    total = calls_of(write, shutil.copytree(template, tmp_path / "count"))
    assert total > 5  # the scenario does reach the disk
    for at in range(1, total + 1):
        home = shutil.copytree(template, tmp_path / f"cut-{at}")
        crashed(write, home, at)
        with MemoryStore(home, write=True) as store:
            keeper = Keeper(store)
            answer = write(keeper)  # the retry, with the same key
            again = write(Keeper(store))
            where = f"power cut at call {at} of {total}"
            check = CHECKS[write.__name__]
            check(keeper, answer, again, where)
            assert verify_kept(store) == [], where
        if write is forget:
            assert files_containing(home, "staging database") == [], where
        shutil.rmtree(home)


def _kept(keeper: Keeper, answer: Any, again: Any, where: str) -> None:
    memories = list(keeper.view.memories.values())
    assert len(memories) == 2, where  # the first one and this one, once
    assert again.replayed and again.memory.id == answer.memory.id, where
    assert keeper.view.keys["k-keep"].memory_id == answer.memory.id, where


def _revised(keeper: Keeper, answer: Any, again: Any, where: str) -> None:
    [memory] = keeper.view.memories.values()
    assert memory.version == 2 and answer.memory.version == 2, where
    assert answer.memory.text == again.memory.text == "It resets on Saturdays now.", where
    assert again.replayed, where


def _forgotten(keeper: Keeper, answer: Any, again: Any, where: str) -> None:
    assert keeper.view.memories == {}, where
    assert again.replayed and again.id == answer.id, where
    assert "k0" in keeper.view.retired, where


CHECKS: dict[str, Callable[[Keeper, Any, Any, str], None]] = {
    "keep": _kept,
    "revise": _revised,
    "forget": _forgotten,
}
