"""Every MCP tool declares an ``outputSchema``, and every answer it gives, refusals included,
conforms to it (checked here with ``jsonschema``, over a real in-process client session), with
the same JSON as text."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import Client
from mcp.types import CallToolResult, TextContent

from backscroll.mcp_schemas import memory
from backscroll.mcp_server import build_server
from tests.helpers import ago, populate

TOOLS = {
    "memory",
    "screen_memory_status",
    "screen_memory_recent_context",
    "screen_memory_recent_segments",
    "memory_manage",
    "kept_memory",
}


@pytest.fixture
def home(backscroll_home: Path, png: Path) -> Path:
    log = "unpacking libfoo setting up libbar done\n" * 20
    rows = [
        {"ts": ago(30), "app": "Terminal", "title": "tail", "text": log, "image": str(png)},
        {"ts": ago(29), "app": "Terminal", "title": "tail", "text": log + "unpacking libbaz"},
        {"ts": ago(28), "app": "Firefox", "title": "Grafana", "text": "latency dashboard"},
        {"ts": ago(2), "app": "Code", "title": "app.py", "text": "def handler(): return 2"},
    ]
    populate(rows)
    return backscroll_home


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("memory", {"action": "search", "query": "unpacking"}),
    ("memory", {"action": "search", "query": "latency nowhere"}),  # near misses
    ("memory", {"action": "search", "query": "absent"}),  # nothing, and why
    ("memory", {"action": "timeline"}),
    ("memory", {"action": "timeline", "limit": 1}),  # with a next_cursor
    ("memory", {"action": "timeline", "since": "2020-01-01", "until": "2020-01-02"}),
    ("memory", {"action": "status"}),
    ("memory", {"action": "summary", "since": "2020-01-01", "until": "2030-01-01"}),
    ("memory", {"action": "show", "id": 424242}),  # refused
    ("memory", {"action": "search"}),  # refused: no query
    ("screen_memory_status", {}),
    ("screen_memory_recent_context", {"minutes": 60}),
    ("screen_memory_recent_context", {"minutes": 0}),  # refused
    ("screen_memory_recent_segments", {"minutes": 60, "limit": 5}),
    ("memory_manage", {"action": "pause", "duration": "1h"}),
    ("memory_manage", {"action": "resume"}),
    ("memory_manage", {"action": "deny", "deny_add": "bank"}),
    ("memory_manage", {"action": "config", "retention_days": 20}),
    ("memory_manage", {"action": "delete", "app": "Grafana"}),  # refused: no confirm
    ("memory_manage", {"action": "delete", "app": "Grafana", "confirm": True}),
    ("memory_manage", {"action": "export", "format": "json"}),  # path added below
    ("memory_manage", {"action": "export", "since": "someday"}),  # refused
]


async def answers(server: Any, export: Path) -> tuple[dict[str, Any], list[Any]]:
    async with Client(server) as client:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        results = []
        for tool, arguments in CALLS:
            if arguments.get("action") == "export" and "since" not in arguments:
                arguments = {**arguments, "path": str(export)}
            results.append((tool, arguments, await client.call_tool(tool, arguments)))
        # ``show`` of the moment's first frame, the one with an image
        found = await client.call_tool("memory", {"action": "search", "query": "unpacking"})
        assert found.structured_content
        frame_id = found.structured_content["matches"][0]["frame_ids"][0]
        show = {"action": "show", "id": frame_id}
        results.append(("memory", show, await client.call_tool("memory", show)))
    return schemas, results


def test_every_tool_declares_an_output_schema_and_every_answer_conforms(
    home: Path, tmp_path: Path
) -> None:
    server = build_server(home, allow_manage=True, allow_export=True)
    schemas, results = asyncio.run(answers(server, tmp_path / "export"))
    assert set(schemas) == TOOLS
    for schema in schemas.values():
        assert schema and schema["type"] == "object"
        jsonschema.Draft202012Validator.check_schema(schema)
    refusals = 0
    for tool, arguments, result in results:
        assert isinstance(result, CallToolResult)
        data = result.structured_content
        assert data is not None, (tool, arguments)
        jsonschema.validate(data, schemas[tool])  # raises, naming the field, if not
        if result.is_error:
            refusals += 1
            [line] = result.content  # one line, nothing else
            assert isinstance(line, TextContent) and "\n" not in line.text
            assert data["error"] == line.text
        else:
            last = result.content[-1]
            assert isinstance(last, TextContent) and json.loads(last.text) == data
    assert refusals == 5
    shown = results[-1][2].structured_content
    assert shown["action"] == "show" and shown["thumbnail"] is True
    [search] = [r for t, a, r in results if a == {"action": "search", "query": "unpacking"}]
    [match] = search.structured_content["matches"]
    assert len(match["frame_ids"]) == 2 and match["first_seen"] < match["last_seen"]


def test_the_schemas_refuse_an_answer_that_lost_or_retyped_a_field() -> None:
    match = {
        "id": 7,
        "time": "2026-12-01T10:00:00+00:00",
        "app": "Terminal",
        "title": "bash",
        "url": "",
        "text_source": "ocr",
        "encrypted": False,
        "reason": "app_change",
        "thumbnail": False,
        "thumbnail_encrypted": False,
        "snippet": "…",
        "score": 1.5,
        "frame_ids": [5, 7],
        "seen": ["2026-12-01T09:59:00+00:00", "2026-12-01T10:00:00+00:00"],
        "first_seen": "2026-12-01T09:59:00+00:00",
        "last_seen": "2026-12-01T10:00:00+00:00",
    }
    answer = {
        "action": "search",
        "query": "bash",
        "start": None,
        "end": None,
        "app": None,
        "ids": [7],
        "matches": [match],
        "why_empty": None,
    }
    jsonschema.validate(answer, memory())
    jsonschema.validate({**answer, "added": 1}, memory())  # answers may grow
    lost = {**match}
    del lost["frame_ids"]
    for wrong in (
        {**answer, "ids": ["7"]},
        {**answer, "matches": [lost]},
        {**answer, "matches": [{**match, "text_source": "telepathy"}]},
        {k: v for k, v in answer.items() if k != "query"},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(wrong, memory())
