"""The MCP server, through the SDK's own client: in process, and once over a real stdio
subprocess."""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, ElicitResult, ImageContent, TextContent

from backscroll.mcp_server import build_server
from tests.helpers import ago, populate

T = TypeVar("T")
READ_TOOLS = {
    "memory",
    "screen_memory_status",
    "screen_memory_recent_context",
    "screen_memory_recent_segments",
    "kept_memory",
}


@pytest.fixture
def home(backscroll_home: Path, png: Path) -> Path:
    """Two old frames with a thumbnail, and a recent stretch: editor, terminal, editor."""
    rows = [
        {
            "ts": "2026-11-24T16:42:10",
            "app": "Terminal",
            "title": "zsh",
            "text": "npm ERR! Error: connect ECONNREFUSED",
            "image": str(png),
        },
        {"ts": "2026-11-25T09:00:00", "app": "Slack", "title": "general", "text": "quokka"},
        {"ts": ago(40), "app": "Firefox", "title": "Grafana", "text": "latency p99 dashboard"},
        {"ts": ago(3.0), "app": "Code", "title": "app.py", "text": "def handler(): pass  " * 40},
        {"ts": ago(2.5), "app": "Code", "title": "app.py", "text": "def handler(): return 1"},
        {"ts": ago(2.0), "app": "Terminal", "title": "pytest", "text": "3 passed in 0.4s"},
        {"ts": ago(1.0), "app": "Code", "title": "app.py", "text": "def handler(): return 2"},
    ]
    populate(rows)
    return backscroll_home


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


async def call(server: Any, tool: str, arguments: dict[str, Any], **client: Any) -> CallToolResult:
    async with Client(server, **client) as c:
        return await c.call_tool(tool, arguments)


def text(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def one_line_error(result: CallToolResult) -> str:
    assert result.is_error
    assert "\n" not in text(result)
    return text(result)


def test_read_only_tools_are_listed_and_manage_is_absent_without_the_flag(home: Path) -> None:
    async def names(server: Any) -> dict[str, Any]:
        async with Client(server) as c:
            return {t.name: t for t in (await c.list_tools()).tools}

    tools = run(names(build_server(home)))
    assert set(tools) == READ_TOOLS
    for tool in tools.values():
        assert tool.annotations and tool.annotations.read_only_hint is True
        assert tool.annotations.open_world_hint is False
    schema = tools["memory"].input_schema
    assert list(schema["properties"]) == [
        "action",
        "query",
        "since",
        "until",
        "app",
        "limit",
        "id",
        "include_image",
        "cursor",
        "by",
    ]
    assert schema["properties"]["limit"]["default"] == 15
    refused = run(call(build_server(home), "memory_manage", {"action": "resume"}))
    assert one_line_error(refused) == (
        "unknown tool 'memory_manage': use memory, screen_memory_status, "
        "screen_memory_recent_context, screen_memory_recent_segments, kept_memory; "
        "memory_manage needs `backscroll mcp --allow-manage`"
    )
    assert "unknown tool 'a\\nb'" in one_line_error(run(call(build_server(home), "a\nb", {})))

    managed = run(names(build_server(home, allow_manage=True)))
    assert set(managed) == READ_TOOLS | {"memory_manage"}
    manage = managed["memory_manage"]
    assert manage.annotations and manage.annotations.destructive_hint is True
    assert manage.annotations.read_only_hint is False
    properties = manage.input_schema["properties"]
    assert "approval" not in properties  # filled by the server, never by the agent
    assert properties["format"]["default"] == "json" and properties["confirm"]["default"] is False


def test_memory_search_returns_the_spec_output_and_ids(home: Path) -> None:
    arguments = {"action": "search", "query": "error", "since": "2026-11-24"}
    result = run(call(build_server(home), "memory", arguments))
    lines = text(result).splitlines()
    assert lines[0] == "Screen memory search 'error' — 2026-11-24 00:00:00 → 2026-11-25 00:00:00"
    assert lines[1] == "1 match(es), best first:"
    assert "[Terminal] — zsh" in lines[2]
    assert result.structured_content and len(result.structured_content["ids"]) == 1


def test_memory_show_returns_text_and_the_jpeg_as_image_content(home: Path) -> None:
    server = build_server(home)
    found = run(call(server, "memory", {"action": "search", "query": "ECONNREFUSED"}))
    assert found.structured_content
    [frame_id] = found.structured_content["ids"]
    shown = run(call(server, "memory", {"action": "show", "id": frame_id}))
    assert "npm ERR! Error: connect ECONNREFUSED" in text(shown)
    [image, data] = shown.content[1:]
    assert isinstance(image, ImageContent) and image.mime_type == "image/jpeg"
    assert isinstance(data, TextContent) and json.loads(data.text) == shown.structured_content
    assert base64.b64decode(image.data)[:3] == b"\xff\xd8\xff"
    assert shown.structured_content and shown.structured_content["text_source"] == "ocr"


def test_bad_arguments_and_bad_ids_are_one_line_errors(home: Path) -> None:
    server = build_server(home)
    assert "no frame #424242" in one_line_error(
        run(call(server, "memory", {"action": "show", "id": 424242}))
    )
    assert "not a time expression" in one_line_error(
        run(call(server, "memory", {"action": "timeline", "since": "whenever"}))
    )
    wrong = one_line_error(run(call(server, "memory", {"action": "dance", "limit": "many"})))
    assert wrong.startswith("invalid arguments for memory: action: ") and "limit" in wrong


def log_bytes(home: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (home / "log").iterdir() if p.is_file()}


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        (
            "memory",
            {"action": "show", "id": -1},
            "id: must be a frame id from 0 to 9223372036854775807, not -1",
        ),
        ("memory", {"action": "show", "id": 2**64}, "id: must be a frame id from 0 to "),
        ("memory", {"action": "show", "id": "-1"}, "id: must be a frame id from 0 to "),
        ("memory", {"action": "search", "query": "x", "limit": 0}, "limit: must be a number of"),
        ("memory", {"action": "timeline", "limit": 10_001}, "limit: must be a number of results"),
        ("memory", {"action": "search", "query": "x", "app": ""}, "app: must not be empty or "),
        ("memory", {"action": "timeline", "since": "  "}, "since: must not be empty or blank"),
        ("memory", {"action": "search", "query": "\ud800"}, "query: must be valid Unicode"),
        ("memory", {"action": "search", "limit": "many\nlines"}, "(got 'many\\nlines')"),
        ("screen_memory_recent_context", {"minutes": 0}, "minutes: must be at least 1, not 0"),
        ("screen_memory_recent_segments", {"minutes": -5}, "minutes: must be at least 1, not -5"),
        ("screen_memory_recent_segments", {"limit": 0}, "limit: must be at least 1, not 0"),
        (
            "memory",
            {"action": "search", "query": "x", "bogus": 1},
            "invalid arguments for memory: unknown argument 'bogus' (memory takes action, query, ",
        ),
        ("screen_memory_status", {"a\nb": 1}, "unknown argument 'a\\nb' (screen_memory_status "),
    ],
)
def test_bad_arguments_are_refused_on_one_line_naming_the_argument(
    home: Path, tool: str, arguments: dict[str, Any], message: str
) -> None:
    assert message in one_line_error(run(call(build_server(home), tool, arguments)))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"action": "delete", "app": "", "confirm": True}, "app: must not be empty or blank"),
        ({"action": "delete", "since": "\t", "confirm": True}, "since: must not be empty or b"),
        ({"action": "pause", "duration": ""}, "duration: must not be empty or blank"),
        ({"action": "deny", "deny_add": " "}, "deny_add: must not be empty or blank"),
        ({"action": "config", "interval_seconds": "nan"}, "interval_seconds: must be a finite"),
        ({"action": "config", "interval_seconds": "-1e999"}, "interval_seconds: must be a fin"),
        ({"action": "config", "storage_cap_mb": "1e999"}, "storage_cap_mb: Input should be a "),
        ({"action": "config", "retention_days": 0.5}, "retention_days: Input should be a val"),
        ({"action": "resume", "approval": {"approve": True}}, "unknown argument 'approval'"),
        ({"action": "delete", "app": "Slack", "confirm": True, "aap": "x"}, "unknown argument"),
    ],
)
def test_a_refused_manage_call_never_widens_to_everything(
    home: Path, arguments: dict[str, Any], message: str
) -> None:
    before = log_bytes(home)
    server = build_server(home, allow_manage=True)
    assert message in one_line_error(run(call(server, "memory_manage", arguments)))
    assert log_bytes(home) == before
    status = run(call(server, "screen_memory_status", {})).structured_content
    assert status and status["frames"] == 7 and status["capture"] == "active"


def test_text_that_looks_like_json_is_taken_as_text(home: Path) -> None:
    """The SDK parses a string as JSON for any parameter not annotated plain ``str``: "null"
    would arrive as None, and a delete scoped to app "null" would take the whole window."""
    server = build_server(home, allow_manage=True)
    found = run(call(server, "memory", {"action": "search", "query": "null"}))
    assert not found.is_error and text(found).startswith("Screen memory search 'null'")
    listed = run(call(server, "memory", {"action": "search", "query": "[1, 2]"}))
    assert not listed.is_error
    arguments = {"action": "delete", "since": "2026-11-25", "app": "null", "confirm": True}
    done = run(call(server, "memory_manage", arguments))
    assert text(done).startswith("Deleted 0 frame(s)") and "app~'null'" in text(done)
    paused = run(call(server, "memory_manage", {"action": "pause", "duration": "null"}))
    assert "not a time expression" in one_line_error(paused)
    status = run(call(server, "screen_memory_status", {})).structured_content
    assert status and status["frames"] == 7 and status["capture"] == "active"


def test_every_schema_refuses_unlisted_arguments(home: Path) -> None:
    async def schemas() -> list[dict[str, Any]]:
        async with Client(build_server(home, allow_manage=True)) as c:
            return [t.input_schema for t in (await c.list_tools()).tools]

    assert all(schema["additionalProperties"] is False for schema in run(schemas()))


def test_screen_memory_status_reports_state_span_and_counts(home: Path) -> None:
    result = run(call(build_server(home), "screen_memory_status", {}))
    data = json.loads(text(result))
    assert data == result.structured_content
    assert data["frames"] == 7 and data["recording"] is False and data["local_only"] is True
    assert data["capture"] == "active" and data["daemon"] == "not running"
    assert data["oldest"].startswith("2026-11-24")


def test_recent_context_gives_one_entry_per_window_in_the_last_minutes(home: Path) -> None:
    server = build_server(home)
    data = run(call(server, "screen_memory_recent_context", {})).structured_content
    assert data and data["minutes"] == 5
    entries = data["windows"]
    assert [(e["app"], e["title"], e["frames"]) for e in entries] == [
        ("Code", "app.py", 3),
        ("Terminal", "pytest", 1),
    ]
    code = entries[0]
    assert code["start"] < code["end"] and code["excerpt"] == "def handler(): return 2"
    wide = run(call(server, "screen_memory_recent_context", {"minutes": 600})).structured_content
    assert wide and wide["minutes"] == 60  # at most an hour
    assert [e["app"] for e in wide["windows"]] == ["Code", "Terminal", "Firefox"]
    assert all(len(e["excerpt"]) <= 280 for e in wide["windows"])


def test_recent_segments_are_stretches_of_one_window_without_paths(home: Path) -> None:
    result = run(call(build_server(home), "screen_memory_recent_segments", {"minutes": 10}))
    data = result.structured_content
    assert data
    segments = [(s["app"], s["title"], len(s["frame_ids"])) for s in data["segments"]]
    assert segments == [("Code", "app.py", 1), ("Terminal", "pytest", 1), ("Code", "app.py", 2)]
    assert all(s["start"] <= s["end"] for s in data["segments"])
    assert "thumbs" not in text(result) and str(home) not in text(result)


def test_manage_delete_needs_confirm_over_mcp(home: Path) -> None:
    server = build_server(home, allow_manage=True)
    refused = run(call(server, "memory_manage", {"action": "delete", "app": "Slack"}))
    assert "confirm=true" in one_line_error(refused)
    done = run(call(server, "memory_manage", {"action": "delete", "app": "Slack", "confirm": True}))
    assert text(done) == "Deleted 1 frame(s) in all time, app~'Slack'."


# -- export through elicitation -----------------------------------------------------------------

Elicitation = Callable[[Any, Any], Awaitable[ElicitResult]]


def answering(action: str, content: dict[str, Any] | None, asked: list[str]) -> Elicitation:
    async def elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    return elicit


@pytest.mark.parametrize("mode", ["auto", "legacy"])  # 2026-07-28 input_required; 2025 requests
def test_export_runs_when_the_person_accepts(home: Path, tmp_path: Path, mode: str) -> None:
    asked: list[str] = []
    out = tmp_path / "export"
    arguments = {"action": "export", "path": str(out), "format": "html", "app": "Code"}
    elicit = answering("accept", {"approve": True}, asked)
    server = build_server(home, allow_manage=True)
    result = run(call(server, "memory_manage", arguments, mode=mode, elicitation_callback=elicit))
    assert not result.is_error, text(result)
    assert text(result).startswith("Exported 3 frame(s)") and (out / "index.html").is_file()
    [message] = asked
    assert "decrypted copy" in message and "app~'Code'" in message and str(out) in message


@pytest.mark.parametrize(
    ("action", "content", "reason"),
    [
        ("decline", None, "declined"),
        ("cancel", None, "cancelled"),
        ("accept", {"approve": False}, "not approved"),
    ],
)
def test_export_is_refused_when_the_person_says_no(
    home: Path, tmp_path: Path, action: str, content: dict[str, Any] | None, reason: str
) -> None:
    asked: list[str] = []
    out = tmp_path / "export"
    server = build_server(home, allow_manage=True, allow_export=True)
    elicit = answering(action, content, asked)
    arguments = {"action": "export", "path": str(out)}
    result = run(call(server, "memory_manage", arguments, elicitation_callback=elicit))
    assert reason in one_line_error(result) and len(asked) == 1 and not out.exists()


def test_export_without_elicitation_is_refused_unless_allowed(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "export"
    arguments = {"action": "export", "path": str(out)}
    refused = run(call(build_server(home, allow_manage=True), "memory_manage", arguments))
    assert "--allow-export" in one_line_error(refused) and not out.exists()
    allowed = build_server(home, allow_manage=True, allow_export=True)
    result = run(call(allowed, "memory_manage", arguments))
    assert not result.is_error and json.loads((out / "frames.json").read_text())["frames"]


def test_a_bad_export_is_reported_without_asking(home: Path, tmp_path: Path) -> None:
    asked: list[str] = []
    elicit = answering("accept", {"approve": True}, asked)
    arguments = {"action": "export", "path": str(tmp_path / "x"), "since": "someday"}
    server = build_server(home, allow_manage=True)
    result = run(call(server, "memory_manage", arguments, elicitation_callback=elicit))
    assert "not a time expression" in one_line_error(result) and asked == []


# -- a real stdio subprocess --------------------------------------------------------------------


def test_backscroll_mcp_serves_over_stdio(home: Path) -> None:
    import typer

    from backscroll.cli.app import app

    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    assert "mcp" in commands, "backscroll/cli/app.py must register backscroll.cli.recall"
    command = Path(sys.executable).with_name("backscroll")
    params = StdioServerParameters(
        command=str(command),
        args=["mcp", "--home", str(home)],
    )

    async def session() -> tuple[set[str], CallToolResult]:
        async with Client(params) as c:
            names = {t.name for t in (await c.list_tools()).tools}
            found = await c.call_tool("memory", {"action": "search", "query": "quokka"})
            return names, found

    names, found = run(asyncio.wait_for(session(), timeout=30))
    assert names == READ_TOOLS
    assert "1 match(es), best first:" in text(found) and "[Slack] — general" in text(found)
