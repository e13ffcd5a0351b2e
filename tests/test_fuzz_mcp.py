"""Nothing an agent sends can brick the store: every MCP tool, through the SDK's own client,
with generated arguments.

Each call gets any Unicode (NUL, lone surrogates, line breaks), huge and negative ints,
NaN and infinities (as the strings "nan" and "1e999": JSON has no literal for them, and the
in-memory transport sends a float NaN as null), empty and blank strings, option-looking
words, values of the wrong type, and argument names no tool takes. Every call must come back
as a result; a refusal is one line that is not a traceback or the SDK's bare
"Error executing tool" (which means a crash), and leaves the event log byte for byte as it
was. Afterwards the store verifies clean and a search still answers.

The default budget is small; for a longer run:

    BACKSCROLL_FUZZ_EXAMPLES=2000 .venv/bin/python -m pytest -s tests/test_fuzz_mcp.py
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.types import CallToolResult, TextContent

from backscroll.importer import import_frames
from backscroll.mcp_server import build_server
from backscroll.store import MemoryStore
from backscroll.verify import verify_store

EXAMPLES = int(os.environ.get("BACKSCROLL_FUZZ_EXAMPLES", "60"))

FRAMES = [
    {
        "ts": "2026-11-24T16:42:10",
        "app": "Terminal",
        "title": "zsh",
        "text": "npm ERR! ECONNREFUSED",
    },
    {"ts": "2026-11-25T09:00:00", "app": "Slack", "title": "general", "text": "lunch at quokka"},
    {"ts": "2026-11-25T09:05:00", "app": "Code", "title": "app.py", "text": "def handler(): pass"},
    {"ts": "2026-11-25T09:06:00", "app": "Firefox", "title": "Invoice", "text": "INV-20931 due"},
]

# Every Unicode general category, so lone surrogates (Cs) and unassigned code points (Cn)
# are drawn too: hypothesis leaves Cs out unless it is asked for.
CATEGORIES = ["Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd"]
CATEGORIES += ["Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc"]
CATEGORIES += ["Cf", "Cs", "Co", "Cn"]
ANY_TEXT = st.text(st.characters(categories=CATEGORIES), max_size=40)  # type: ignore[arg-type]

WORDS = [
    # plausible somewhere: seeded apps, phrases, queries
    "Terminal",
    "2h",
    "2026-11-24",
    "quokka",
    '"unbalanced',
    # empty, blank, control characters, broken Unicode
    "",
    " ",
    "\t\n",
    "\u3000",
    "\x00",
    "a\x00b",
    "a\nb",
    "\r",
    "\u2028",
    "\ud800",
    "x\udcff",
    "🙂",
    # option-looking words, JSON-looking words, numbers as text
    "--help",
    "-x",
    "-",
    "--",
    "--all",
    "*",
    "null",
    "[]",
    "{}",
    "true",
    "nan",
    "inf",
    "-inf",
    "1e999",
    "-1",
    "0",
    "9" * 40,
    "x" * 5000,
]
INTS = [-(2**63), -(2**31), -1, 0, 1, 2, 5, 15, 60, 61, 100, 101, 1000, 1001, 1440, 10_000]
INTS += [10_001, 2**31, 2**63 - 1, 2**63, 2**64, 10**30, 10**4000]
FLOATS = [0.0, -0.0, 0.5, 1.0, 2.0, 14.0, 30.0, 512.0, -3.0, 1e-300, 1e300]
WRONG_TYPES: list[Any] = [None, [], {}, ["x"], {"a": 1}, True, False, 1.5, "text", 7]
UNKNOWN_NAMES = ["bogus", "Action", "field_action", "approval", "ctx", "--help", "-x", ""]

TEXT = st.sampled_from(WORDS) | ANY_TEXT
INT = st.sampled_from(INTS) | st.integers()
NUMBER = st.sampled_from(FLOATS) | st.floats() | st.sampled_from(["nan", "inf", "-inf", "1e999"])
ANYTHING = st.sampled_from(WRONG_TYPES) | TEXT | INT | NUMBER


# Values that pass a field's own checks, so that a call with several fields gets past the
# first one often enough to reach the deeper ones (an export's folder is checked last).
PHRASES = ["2h", "30m", "yesterday", "last week", "this month", "2026-11-24", "2026-11-25 09:00"]
PLAUSIBLE = {
    "since": PHRASES,
    "until": PHRASES,
    "duration": ["30m", "2h", "45m", "1w"],
    "app": ["Terminal", "Slack", "Code", "zsh", "null"],
    "query": ["error", "quokka", "invoice*", '"lunch at"', "[1, 2]"],
    "deny_add": ["bank", "Slack"],
    "deny_remove": ["bank", "1Password"],
}


def fitting(name: str, prop: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A value of the property's own JSON type: still blank, broken, huge or not finite."""
    kinds = [prop, *prop.get("anyOf", [])]
    types = {kind.get("type") for kind in kinds}
    enums = [value for kind in kinds for value in kind.get("enum", [])]
    choices: list[st.SearchStrategy[Any]] = [st.sampled_from(enums)] if enums else []
    if "string" in types and not enums:
        choices.append(st.sampled_from(PLAUSIBLE.get(name, WORDS)) | TEXT)
    if "integer" in types:
        choices.append(INT)
    if "number" in types:
        choices.append(NUMBER)
    if "boolean" in types:
        choices.append(st.booleans())
    if "null" in types:
        choices.append(st.none())
    return st.one_of(*choices) if choices else ANYTHING


def arguments_for(schema: dict[str, Any], exports: Path) -> st.SearchStrategy[dict[str, Any]]:
    """Three in four calls fit the schema (so they reach the tool); the rest may hold
    anything, under any name."""
    properties = schema.get("properties", {})
    typed = {name: fitting(name, prop) for name, prop in properties.items()}
    if "path" in typed:
        # An export is refused here (the client cannot ask the person), but were that ever
        # to break, it may only write in the test's folders: under ``exports``, or under the
        # test's own HOME for a ~ path.
        typed["path"] = (
            st.sampled_from(["", " ", "\x00", "~", "~/x", "~nosuchuser-backscroll/x"])
            | st.sampled_from(["x" * 300, "a\nb", "..", "new"]).map(lambda n: str(exports / n))
            | TEXT.map(lambda name: str(exports / name.replace("/", "_")))
        )
    required = set(schema.get("required", []))
    well_typed = st.fixed_dictionaries(
        {name: value for name, value in typed.items() if name in required},
        optional={name: value for name, value in typed.items() if name not in required},
    )
    loose = {name: value | ANYTHING for name, value in typed.items()}
    unknown = st.dictionaries(st.sampled_from(UNKNOWN_NAMES) | ANY_TEXT, ANYTHING, max_size=2)
    wild = st.tuples(st.fixed_dictionaries({}, optional=loose), unknown).map(
        lambda pair: pair[1] | pair[0]
    )
    return st.one_of(well_typed, well_typed, well_typed, wild)


def log_bytes(home: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(home)): p.read_bytes() for p in (home / "log").rglob("*") if p.is_file()
    }


@contextmanager
def session(home: Path) -> Iterator[tuple[BlockingPortal, Client]]:
    """One client session for the whole run, driven from hypothesis' synchronous examples."""
    with start_blocking_portal() as portal:
        server = build_server(home, allow_manage=True)
        with portal.wrap_async_context_manager(Client(server)) as client:
            yield portal, client


def texts(result: CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, TextContent)]


def test_no_generated_call_escapes_or_changes_the_log_when_refused(
    backscroll_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "user"))  # the default export folder is in it
    exports = tmp_path / "exports"
    with MemoryStore(backscroll_home, write=True) as store:
        import_frames(store, [json.dumps(frame) for frame in FRAMES])
    calls: Counter[str] = Counter()
    started = time.monotonic()
    with session(backscroll_home) as (portal, client):
        tools = {t.name: t.input_schema for t in portal.call(client.list_tools).tools}
        assert set(tools) >= {"memory", "memory_manage", "screen_memory_recent_segments"}
        strategies = [
            st.tuples(st.just(name), arguments_for(schema, exports))
            for name, schema in tools.items()
        ]
        # No lone surrogate in a tool name: the SDK's client cannot send one (it stamps the
        # name into a header as UTF-8), so no server ever sees it.
        no_such_tool = st.sampled_from(["", "Memory", "memory ", "a\nb"]) | st.text(max_size=20)
        strategies.append(st.tuples(no_such_tool, st.just({})))
        one_call = st.one_of(strategies)

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(st.lists(one_call, min_size=1, max_size=3))
        def calls_are_answered(batch: list[tuple[str, dict[str, Any]]]) -> None:
            for name, arguments in batch:
                before = log_bytes(backscroll_home)
                result = portal.call(client.call_tool, name, arguments)
                answer = texts(result)
                calls["refused" if result.is_error else "answered"] += 1
                assert answer, f"{name}({arguments!r}) answered no text"
                for text in answer:
                    text.encode("utf-8")  # a stdio client would receive it as UTF-8 JSON
                if result.is_error:
                    message = answer[0]
                    assert message and len(message.splitlines()) == 1, message
                    assert "Traceback" not in message, message
                    assert not message.startswith("Error executing tool"), (name, arguments)
                    assert log_bytes(backscroll_home) == before, f"{name}({arguments!r})"

        try:
            calls_are_answered()
        finally:
            took = time.monotonic() - started
            made = f"{calls.total()} MCP calls ({calls['refused']} refused)"
            print(f"\n{made} in {EXAMPLES} examples, {took:.1f} s")
        search = portal.call(client.call_tool, "memory", {"action": "search", "query": "quokka"})
        assert not search.is_error, texts(search)

    with MemoryStore(backscroll_home) as store:
        assert verify_store(store) == []
    assert not exports.exists() and not (tmp_path / "user").exists()
