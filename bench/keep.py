"""Kept memories at 100k in 20 spaces: resolve and search in process, a fsynced write, and
an MCP round trip of a resolve over stdio, each beside its target (issue 27 §6) and a
baseline measured in the same run.

    cd /work/main && .venv/bin/python -m bench.keep [--memories 100000] [--spaces 20]
        [--runs 2000] [--writes 200] [--mcp 200]

About 3 minutes at the default size on this machine. The store is made in a temporary folder:
``--memories`` memories appended in batches of 1,000 (setup, not measured), one in two with
a claim (``subject`` one of 50, ``predicate`` one of 40, a context of 0-9: 20,000 claims per
space), their text four to twelve words drawn from a 2,000-word vocabulary, then the views
caught up by a writer (``views/kept.msgpack``).

- resolve: ``Keeper.resolve`` of a random claim that is held, over a precedence list of two
  spaces (the first holding it half the time), after a warm-up.
- search: ``Keeper.search`` of two to three words of a random memory, over all spaces; a
  reader's first search reads the memories' words without an index (the CLI's one search),
  its second builds the words index (each reported apart: once per process).
- write: ``Keeper.keep`` of a new memory with a claim and a request key, fsynced, views not
  caught up per write (the daemon or the next writer does); baseline: the log's own fsynced
  append of an event of the same size (``Log.append``).
Each in-process row also gives the CPU time of the call (``time.process_time``), which a
loaded machine does not stretch as it stretches the wall clock.

- MCP: ``kept_memory`` resolve over stdio from the SDK's client to ``backscroll mcp``, one
  call after another, after a warm-up; baseline: ``screen_memory_status`` the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._stats import load_average, percentile

VOCABULARY = 2_000
SUBJECTS = 50
PREDICATES = 40
CONTEXTS = 10


def words(rng: random.Random, n: int) -> str:
    return " ".join(f"w{rng.randrange(VOCABULARY)}" for _ in range(n))


def build(home: Path, memories: int, spaces: int, rng: random.Random) -> list[tuple[str, ...]]:
    """The store; the claims it holds as (space, subject, predicate, context)."""
    from backscroll.store import MemoryStore
    from base.clock import now_us
    from eventlog.events import MemoryKept

    claims: list[tuple[str, ...]] = []
    taken: set[tuple[str, ...]] = set()
    with MemoryStore(home, write=True) as store:
        for start in range(0, memories, 1_000):
            with store.log.batch() as batch:
                for i in range(start, min(memories, start + 1_000)):
                    space = f"space{i % spaces}"
                    claim: dict[str, Any] = {}
                    if i % 2 == 0:
                        key = (
                            space,
                            f"subject{rng.randrange(SUBJECTS)}",
                            f"predicate_{rng.randrange(PREDICATES)}",
                            f"context {rng.randrange(CONTEXTS)}",
                        )
                        if key not in taken:
                            taken.add(key)
                            claims.append(key)
                            claim = {"subject": key[1], "predicate": key[2], "context": key[3]}
                            claim["value"] = f"value{i}"
                    batch.append(
                        MemoryKept(
                            ts_us=now_us(),
                            memory_id=f"m_{i:016x}",
                            space=space,
                            kind="fact",
                            text=f"Memory {i}: {words(rng, rng.randint(4, 12))}.",
                            **claim,
                        )
                    )
        store.refresh()
    return claims


CPU: dict[int, list[float]] = {}
"""The CPU time of each in-process measurement (keyed by its wall list's id): on a shared
machine a wall-clock percentile is mostly the scheduler's; the CPU time is the work."""


def timed(call: Callable[[], object], runs: int) -> list[float]:
    wall, cpu = [], []
    for _ in range(runs):
        start, used = time.perf_counter(), time.process_time()
        call()
        wall.append((time.perf_counter() - start) * 1_000)
        cpu.append((time.process_time() - used) * 1_000)
    CPU[id(wall)] = cpu
    return wall


def row(name: str, values: list[float], target: str, baseline: str = "") -> str:
    p50, p90, p99 = (percentile(values, q) for q in (0.5, 0.9, 0.99))
    cpu = CPU.get(id(values))
    work = (
        f"{percentile(cpu, 0.5):>7.3f} {percentile(cpu, 0.99):>7.3f}"
        if cpu
        else f"{'-':>7} {'-':>7}"
    )
    return (
        f"{name:<36} {len(values):>6} {p50:>8.3f} {p90:>8.3f} {p99:>8.3f} {max(values):>8.3f}"
        f" {work}  {target:<13} {baseline}"
    )


def mcp_round_trips(home: Path, calls: int, claim: tuple[str, ...]) -> tuple[list[float], ...]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "backscroll", "mcp", "--home", str(home)],
        env={**os.environ},
    )
    resolve = {
        "action": "resolve",
        "subject": claim[1],
        "predicate": claim[2],
        "context": claim[3],
        "spaces": [claim[0]],
    }

    async def run() -> tuple[list[float], list[float]]:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            kept, status = [], []
            for _ in range(5):  # warm-up: the server's keeper loads the view once
                await session.call_tool("kept_memory", resolve)
                await session.call_tool("screen_memory_status", {})
            for _ in range(calls):
                start = time.perf_counter()
                result = await session.call_tool("kept_memory", resolve)
                kept.append((time.perf_counter() - start) * 1_000)
                assert result.structured_content and result.structured_content["found"]
                start = time.perf_counter()
                await session.call_tool("screen_memory_status", {})
                status.append((time.perf_counter() - start) * 1_000)
            return kept, status

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--spaces", type=int, default=20)
    parser.add_argument("--runs", type=int, default=2_000)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--mcp", type=int, default=200)
    args = parser.parse_args()

    from backscroll.contract import parse
    from backscroll.contract.keep import KeepRequest, KeptSearchRequest, ResolveRequest
    from backscroll.keep import Keeper
    from backscroll.store import MemoryStore
    from base.clock import now_us
    from eventlog.events import ConfigChanged

    rng = random.Random(1)
    lines = []
    with tempfile.TemporaryDirectory(prefix="bench-keep-") as folder:
        home = Path(folder) / "home"
        started = time.perf_counter()
        claims = build(home, args.memories, args.spaces, rng)
        built = time.perf_counter() - started

        with MemoryStore(home) as store:
            started = time.perf_counter()
            keeper = Keeper(store)
            opened = (time.perf_counter() - started) * 1_000

            def resolve() -> None:
                space, subject, predicate, context = rng.choice(claims)
                other = f"space{rng.randrange(args.spaces)}"
                spaces = [space, other] if rng.random() < 0.5 else [other, space]
                request = {
                    "subject": subject,
                    "predicate": predicate,
                    "context": context,
                    "spaces": list(dict.fromkeys(spaces)),
                }
                assert keeper.resolve(parse(ResolveRequest, request)).found

            memories = list(keeper.view.memories.values())

            def search() -> None:
                text = rng.choice(memories).text.rstrip(".").split()[2:]
                query = " ".join(rng.sample(text, min(len(text), rng.randint(2, 3))))
                keeper.search(parse(KeptSearchRequest, {"query": query}))

            timed(resolve, 200)
            resolves = timed(resolve, args.runs)
            first_search = timed(search, 1)[0]
            index_built = timed(search, 1)[0]
            searches = timed(search, args.runs)

        with MemoryStore(home, write=True) as store:
            writer = Keeper(store, refresh_views=False)
            n = iter(range(10**9))

            def write() -> None:
                i = next(n)
                request = {
                    "text": f"A new fact {i}: {words(rng, 8)}.",
                    "subject": f"writer{i}",
                    "predicate": "bench_fact",
                    "value": str(i),
                    "space": f"space{i % args.spaces}",
                    "request_key": f"bench-{i}",
                }
                writer.keep(parse(KeepRequest, request))

            def append() -> None:
                config = {"bench": words(rng, 8), "n": next(n)}
                store.log.append(ConfigChanged(ts_us=now_us(), config=config))

            timed(write, 10)
            writes = timed(write, args.writes)
            appends = timed(append, args.writes)
            store.refresh()

        mcp_kept, mcp_status = mcp_round_trips(home, args.mcp, claims[0])

    header = (
        f"{'measure (wall ms; cpu ms)':<36} {'count':>6} {'p50':>8} {'p90':>8} {'p99':>8}"
        f" {'max':>8} {'cpu p50':>7} {'cpu p99':>7}  {'target':<13} baseline (same run)"
    )
    base_append = f"log append p50 {percentile(appends, 0.5):.3f} ms"
    base_status = f"screen_memory_status p50 {percentile(mcp_status, 0.5):.3f} ms"
    lines += [
        f"python -m bench.keep --memories {args.memories} --spaces {args.spaces} "
        f"--runs {args.runs} --writes {args.writes} --mcp {args.mcp}",
        f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; load {load_average()}",
        f"store: {args.memories:,} memories in {args.spaces} spaces, {len(claims):,} claims; "
        f"built in {built:.1f} s; a reader's Keeper opened in {opened:.0f} ms; its first "
        f"search (no index) took {first_search:.0f} ms, its second built the words index in "
        f"{index_built:.0f} ms",
        header,
        row("resolve (in process)", resolves, "p99 <= 2 ms"),
        row("search (in process)", searches, "p99 <= 20 ms"),
        row("write, fsynced (keep with a claim)", writes, "p50 <= 5 ms", base_append),
        row("log append, fsynced (baseline)", appends, "-"),
        row("MCP kept_memory resolve (stdio)", mcp_kept, "p50 <= 10 ms", base_status),
        row("MCP screen_memory_status (baseline)", mcp_status, "-"),
    ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
