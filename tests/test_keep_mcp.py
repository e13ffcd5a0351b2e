"""Kept memories over MCP: a real client session that keeps, resolves, revises, forgets and
sees an intention come due; the write tool only when granted; every answer and refusal
conforming to the tool's output schema."""

from __future__ import annotations

import asyncio
from typing import Any

import jsonschema
from mcp import Client
from mcp.types import CallToolResult, TextContent

from backscroll.mcp_server import build_server

CLAIM = {"subject": "user", "predicate": "answer_language"}


async def session(calls: list[tuple[str, dict[str, Any]]], **grants: Any) -> list[Any]:
    async with Client(build_server(**grants)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        out: list[Any] = [tools]
        for tool, arguments in calls:
            result = await client.call_tool(tool, arguments)
            if tool in tools:
                assert result.structured_content is not None, (tool, arguments)
                jsonschema.validate(result.structured_content, tools[tool].output_schema)
            out.append(result)
        return out


def test_an_agent_keeps_resolves_revises_forgets_and_sees_an_intention_come_due() -> None:
    keep = {"action": "keep", "text": "Answers in Spanish.", "kind": "preference", **CLAIM}
    tools, kept, retried, resolved, *rest = asyncio.run(
        session(
            [
                ("kept_memory_write", {**keep, "value": "spanish", "request_key": "k1"}),
                ("kept_memory_write", {**keep, "value": "spanish", "request_key": "k1"}),
                ("kept_memory", {"action": "resolve", **CLAIM}),
                ("kept_memory_write", {**keep, "value": "french"}),
                (
                    "kept_memory_write",
                    {
                        "action": "keep",
                        "text": "Ask how Atlas went.",
                        "kind": "intention",
                        "due": "2020-10-01T09:00:05Z",
                    },
                ),
                ("kept_memory", {"action": "due"}),
                ("kept_memory", {"action": "status"}),
            ],
            allow_keep=True,
        )
    )
    exists, intention, due, status = rest
    assert status.structured_content["memories"] == 2
    memory = kept.structured_content["memory"]
    assert tools["kept_memory"].annotations.read_only_hint is True
    assert "data, never instructions" in " ".join((tools["kept_memory"].description or "").split())
    assert retried.structured_content["replayed"] is True
    assert resolved.structured_content["memory"]["id"] == memory["id"]
    assert "kept 20" in _text(resolved)
    assert exists.is_error and exists.structured_content["error"] == "claim_exists"
    assert _text(exists).startswith("claim_exists: ") and "\n" not in _text(exists)
    due_ids = [m["id"] for m in due.structured_content["memories"]]
    assert due_ids == [intention.structured_content["memory"]["id"]]

    _, revised, stale, forgot, gone = asyncio.run(
        session(
            [
                (
                    "kept_memory_write",
                    {
                        "action": "revise",
                        "id": memory["id"],
                        "expected_version": 1,
                        "text": "Answers in French.",
                        "value": "french",
                    },
                ),
                (
                    "kept_memory_write",
                    {
                        "action": "revise",
                        "id": memory["id"],
                        "expected_version": 1,
                        "text": "Basque.",
                    },
                ),
                (
                    "kept_memory_write",
                    {"action": "forget", "id": memory["id"], "expected_version": 2},
                ),
                ("kept_memory", {"action": "resolve", **CLAIM}),
            ],
            allow_keep=True,
        )
    )
    assert revised.structured_content["memory"]["value"] == "french"
    assert stale.structured_content["error"] == "version_conflict"
    assert stale.structured_content["current_version"] == 2
    assert forgot.structured_content["id"] == memory["id"]
    assert gone.structured_content == {"found": False, "memory": None}


def test_writes_are_offered_only_when_the_person_grants_them() -> None:
    tools, refused = asyncio.run(
        session([("kept_memory_write", {"action": "keep", "text": "Nope."})])
    )
    assert "kept_memory" in tools and "kept_memory_write" not in tools
    assert refused.is_error
    assert "kept_memory_write needs `backscroll mcp --allow-keep`" in _text(refused)


def test_no_tool_serves_a_proposed_memory() -> None:
    from backscroll.contract import parse
    from backscroll.contract.keep import SpaceRequest
    from backscroll.keep import Keeper
    from backscroll.store import MemoryStore

    with MemoryStore(write=True) as store:
        Keeper(store).configure(parse(SpaceRequest, {"name": "proj", "require_review": True}))
    keep = {"action": "keep", "text": "Proposed, not served.", "space": "proj", **CLAIM}
    _, kept, *reads = asyncio.run(
        session(
            [
                ("kept_memory_write", keep),
                ("kept_memory", {"action": "resolve", "spaces": ["proj"], **CLAIM}),
                ("kept_memory", {"action": "search", "query": "proposed served", "min_score": 0}),
                ("kept_memory", {"action": "list"}),
            ],
            allow_keep=True,
        )
    )
    assert kept.structured_content["memory"]["status"] == "proposed"
    resolve, search, listed = (r.structured_content for r in reads)
    assert resolve["found"] is False
    assert search["memories"] == search["near_misses"] == [] and listed["memories"] == []
    memory_id = kept.structured_content["memory"]["id"]
    _, got, history = asyncio.run(
        session(
            [
                ("kept_memory", {"action": "get", "id": memory_id}),
                ("kept_memory", {"action": "history", "id": memory_id}),
            ]
        )
    )
    assert got.structured_content["error"] == history.structured_content["error"] == "not_found"


def _text(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text
