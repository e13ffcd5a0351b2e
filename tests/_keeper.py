"""A child process for the kept memories' concurrency test: it writes and reports.

    python tests/_keeper.py HOME WORKER COUNT SEED

It prints ``ready`` and waits for a line on stdin (so that all start together), then makes
COUNT writes, each of one of three kinds: a memory of its own (retried with its key at
random, as an agent retries after a lost answer), a memory of one of ten claims every worker
contends for, or a revision of one of them with the version it read. It prints one JSON line
per acknowledged write or refusal, then ``done``.
"""

from __future__ import annotations

import json
import random
import sys

from backscroll.contract import parse
from backscroll.contract.keep import KeepRequest, ResolveRequest, ReviseRequest
from backscroll.keep import Keeper, Refused
from backscroll.store import MemoryStore

CLAIMS = 10


def main(home: str, worker: int, count: int, seed: int) -> None:
    rng = random.Random(seed)
    print("ready", flush=True)
    sys.stdin.readline()
    with MemoryStore(home, write=True, catch_up=False) as store:
        # The views are caught up by the test afterwards, as the daemon would: a writer that
        # caught them up at every write would measure the projector, not the writes.
        keeper = Keeper(store, refresh_views=False)
        for i in range(count):
            roll = rng.random()
            try:
                if roll < 0.5:
                    report(own(keeper, worker, i, retries=rng.randint(0, 2)))
                elif roll < 0.75:
                    report(claim(keeper, worker, i, rng.randrange(CLAIMS)))
                else:
                    report(revision(keeper, worker, i, rng.randrange(CLAIMS)))
            except Refused as refused:
                report({"refused": refused.refusal.error, "i": i})
    print("done", flush=True)


def own(keeper: Keeper, worker: int, i: int, retries: int) -> dict[str, object]:
    key = f"w{worker}-{i}"
    request = parse(KeepRequest, {"text": f"Note {key} of worker {worker}.", "request_key": key})
    first = keeper.keep(request)
    for _ in range(retries):
        again = keeper.keep(request)
        assert again.replayed and again.memory.id == first.memory.id, key
    return {"kept": key, "id": first.memory.id}


def claim(keeper: Keeper, worker: int, i: int, n: int) -> dict[str, object]:
    arguments = {
        "text": f"Claim {n} as worker {worker} saw it.",
        "subject": "team",
        "predicate": f"claim_{n}",
        "request_key": f"c{worker}-{i}",
    }
    kept = keeper.keep(parse(KeepRequest, arguments))
    return {"claimed": n, "id": kept.memory.id}


def revision(keeper: Keeper, worker: int, i: int, n: int) -> dict[str, object]:
    found = keeper.resolve(parse(ResolveRequest, {"subject": "team", "predicate": f"claim_{n}"}))
    if found.memory is None:
        return {"skipped": i}
    arguments = {
        "id": found.memory.id,
        "expected_version": found.memory.version,
        "text": f"Claim {n} revised by worker {worker} at {i}.",
        "request_key": f"r{worker}-{i}",
    }
    revised = keeper.revise(parse(ReviseRequest, arguments))
    return {"revised": revised.memory.id, "version": revised.memory.version}


def report(line: dict[str, object]) -> None:
    print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
