"""The answer contract: every surface's JSON is one of its Structs, field for field; the CLI,
the MCP tools and export give the same answer to the same request; the arguments' limits and
descriptions are the same everywhere because they are written once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, get_args

import msgspec
import pytest
from mcp import Client

from backscroll import contract
from backscroll.contract import (
    ConfigAnswer,
    DeleteAnswer,
    DenyAnswer,
    ExportAnswer,
    ExportFile,
    LogAnswer,
    PauseAnswer,
    Refusal,
    ResumeAnswer,
    SearchAnswer,
    SearchRequest,
    ShowAnswer,
    Status,
    TimelineAnswer,
    VerifyAnswer,
    parse,
)
from backscroll.contract.screen_memory import RecentContext, RecentStretches, ScreenMemoryStatus
from backscroll.importer import import_frames
from backscroll.mcp_schemas import input_schema
from backscroll.mcp_server import build_server
from backscroll.store import MemoryStore
from eventlog import events
from tests.helpers import run

Read = SearchAnswer | ShowAnswer | TimelineAnswer | Status | LogAnswer | VerifyAnswer
Manage = PauseAnswer | ResumeAnswer | DenyAnswer | ConfigAnswer | DeleteAnswer | ExportAnswer

FRAMES = [
    {"ts": "2026-11-24T16:42:10", "app": "Terminal", "title": "zsh", "text": "npm ERR! quokka"},
    {"ts": "2026-11-24T16:43:10", "app": "Terminal", "title": "zsh", "text": "npm ERR! quokka 2"},
    {"ts": "2026-11-25T09:00:00", "app": "Slack", "title": "general", "text": "quokka lunch"},
    {"ts": "2026-11-25T09:05:00", "app": "Firefox", "title": "Grafana", "text": "latency"},
]


@pytest.fixture
def home(backscroll_home: Path, tmp_path: Path) -> Path:
    from PIL import Image

    png = tmp_path / "screen.png"
    Image.new("RGB", (80, 50), (10, 160, 90)).save(png)
    with MemoryStore(write=True) as store:
        import_frames(store, [json.dumps(f | {"image": str(png)}) for f in FRAMES])
    return backscroll_home


def strictly(data: str | bytes, kind: Any) -> Any:
    """``data`` decoded as ``kind`` with no coercion, and nothing in it that ``kind`` lacks:
    encoded again, the Struct gives back exactly the JSON it was read from."""
    decoded = msgspec.json.decode(data, type=kind, strict=True)
    assert json.loads(msgspec.json.encode(decoded)) == json.loads(data)
    return decoded


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code, out, err = run(capsys, *args, "--json")
    assert code == 0, err
    return out


def test_every_cli_answer_is_its_struct(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    found = strictly(cli_json(capsys, "search", "quokka"), Read)
    assert isinstance(found, SearchAnswer) and len(found.matches) == 2
    [terminal] = [m for m in found.matches if m.app == "Terminal"]
    assert len(terminal.frame_ids) == 2 and terminal.thumbnail
    nothing = strictly(cli_json(capsys, "search", "absent"), Read)
    assert isinstance(nothing, SearchAnswer) and nothing.why_empty is not None
    timeline = strictly(cli_json(capsys, "timeline", "--since", "2026-11-24"), Read)
    assert isinstance(timeline, TimelineAnswer) and timeline.ids == [f.id for f in timeline.frames]
    shown = strictly(cli_json(capsys, "show", str(terminal.id)), Read)
    assert isinstance(shown, ShowAnswer) and shown.text in ("npm ERR! quokka", "npm ERR! quokka 2")
    assert isinstance(strictly(cli_json(capsys, "status"), Read), Status)
    configured = strictly(cli_json(capsys, "config", "--retention", "20"), Manage)
    assert isinstance(configured, ConfigAnswer) and configured.changed == ["retention_days"]
    trail = strictly(cli_json(capsys, "log"), Read)
    assert isinstance(trail, LogAnswer) and trail.kinds is None
    assert [e.kind for e in trail.events][:1] == ["config"]
    assert trail.events[0].detail["config"]["retention_days"] == 20
    asked = strictly(cli_json(capsys, "log", "--kind", "config", "--since", "2026-01-01"), Read)
    assert isinstance(asked, LogAnswer) and asked.kinds == ["config"] and asked.since is not None
    checked = strictly(cli_json(capsys, "verify"), Read)
    assert isinstance(checked, VerifyAnswer) and checked.healthy and checked.problems == []


# Each MCP call and the Struct its answer is.
MCP_CALLS: list[tuple[str, dict[str, Any], Any]] = [
    ("memory", {"action": "search", "query": "quokka"}, Read),
    ("memory", {"action": "timeline"}, Read),
    ("memory", {"action": "show", "id": 1}, Read),
    ("memory", {"action": "status"}, Read),
    ("memory", {"action": "show", "id": 424242}, Refusal),
    ("memory_manage", {"action": "pause", "duration": "1h"}, Manage),
    ("memory_manage", {"action": "resume"}, Manage),
    ("memory_manage", {"action": "deny", "deny_add": "bank"}, Manage),
    ("memory_manage", {"action": "config", "retention_days": 20}, Manage),
    ("memory_manage", {"action": "export"}, Manage),  # path added below
    ("memory_manage", {"action": "delete", "app": "Grafana", "confirm": True}, Manage),
    ("screen_memory_status", {}, ScreenMemoryStatus),
    ("screen_memory_recent_context", {"minutes": 60}, RecentContext),
    ("screen_memory_recent_segments", {"minutes": 10**6, "limit": 2}, RecentStretches),
    ("screen_memory_recent_context", {"minutes": 0}, Refusal),
]


async def _mcp(home: Path, export: Path) -> list[Any]:
    server = build_server(home, allow_manage=True, allow_export=True)
    async with Client(server) as client:
        results = []
        for tool, arguments, _ in MCP_CALLS:
            if arguments.get("action") == "export":
                arguments = {**arguments, "path": str(export)}
            results.append(await client.call_tool(tool, arguments))
        return results


def test_every_mcp_answer_is_its_struct(home: Path, tmp_path: Path) -> None:
    results = asyncio.run(_mcp(home, tmp_path / "out"))
    kinds = []
    for result, (_, _, kind) in zip(results, MCP_CALLS, strict=True):
        assert result.is_error == (kind is Refusal)
        kinds.append(type(strictly(json.dumps(result.structured_content), kind)))
    assert kinds[:11] == [
        SearchAnswer,
        TimelineAnswer,
        ShowAnswer,
        Status,
        Refusal,
        PauseAnswer,
        ResumeAnswer,
        DenyAnswer,
        ConfigAnswer,
        ExportAnswer,
        DeleteAnswer,
    ]
    segments = results[13].structured_content
    assert segments["minutes"] == 24 * 60  # a wider ask is capped, not refused
    exported = strictly((tmp_path / "out" / "frames.json").read_bytes(), ExportFile)
    assert len(exported.frames) == 4 and exported.frames[0].thumbnail_file == "thumbs/1.jpg"


def test_the_cli_and_the_mcp_tool_give_the_same_answer(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def ask(arguments: dict[str, Any]) -> Any:
        async with Client(build_server(home)) as client:
            return (await client.call_tool("memory", arguments)).structured_content

    for args, arguments in [
        (("search", "quokka", "--limit", "5"), {"action": "search", "query": "quokka", "limit": 5}),
        (("timeline", "--app", "Slack"), {"action": "timeline", "app": "Slack"}),
        (("show", "2"), {"action": "show", "id": 2}),
    ]:
        assert json.loads(cli_json(capsys, *args)) == asyncio.run(ask(arguments))


def test_a_request_is_refused_in_the_same_words_everywhere(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = "limit: must be a number of results from 1 to 1000, not 5000"
    with pytest.raises(Exception, match=said):
        parse(SearchRequest, {"query": "x", "limit": 5000})
    code, _, err = run(capsys, "search", "x", "--limit", "5000")
    assert code != 0 and said in err

    async def ask() -> Any:
        async with Client(build_server(home)) as client:
            return await client.call_tool(
                "memory", {"action": "search", "query": "x", "limit": 5000}
            )

    assert asyncio.run(ask()).structured_content == {"error": said, "action": "search"}


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("log", "--kind", " "), "kind: must not be empty or blank"),
        (("log", *["--kind", "pause"] * 33), "kind: expected `array` of length <= 32"),
        (("log", "--kind", "nope"), "unknown event kind 'nope'"),
        (("import", "a\x00b"), "source: must not hold a NUL character"),
        (("import", "  "), "source: must not be empty or blank"),
    ],
)
def test_log_and_import_refuse_what_their_request_does_not_take(
    home: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], said: str
) -> None:
    code, _, err = run(capsys, *args)
    assert code != 0 and said in err and len(err.strip().splitlines()) == 1


def test_the_cli_options_and_the_mcp_arguments_share_their_descriptions() -> None:
    import typer.main

    from backscroll.cli.app import app

    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    memory = input_schema("memory")
    manage = input_schema("memory_manage")
    assert memory is not None and manage is not None
    for option, text in [
        ("since", contract.SINCE),
        ("until", contract.UNTIL),
        ("app", contract.APP),
    ]:
        for command in ("search", "timeline", "export"):
            [param] = [p for p in commands[command].params if p.name == option]
            assert param.help == text, (command, option)
        assert memory["properties"][option]["description"] == text
        assert manage["properties"][option]["description"] == text
    [limit] = [p for p in commands["search"].params if p.name == "limit"]
    assert limit.help == contract.SEARCH_LIMIT
    schema = msgspec.json.schema(SearchRequest)["$defs"]["SearchRequest"]["properties"]["limit"]
    assert (schema["minimum"], schema["maximum"]) == (1, contract.MAX_LIMIT)
    for name in ("interval_seconds", "storage_cap_mb", "retention_days", "redact"):
        config = msgspec.json.schema(contract.ConfigRequest)["$defs"]["ConfigRequest"]
        assert (
            manage["properties"][name]["description"] == config["properties"][name]["description"]
        )


def test_the_contract_names_the_event_literals_as_the_log_does() -> None:
    assert get_args(contract.TextSource) == get_args(events.TextSource)
    assert get_args(contract.CaptureReason) == get_args(events.CaptureReason)
    assert get_args(contract.Origin) == get_args(events.Origin)


def test_the_contract_front_names_each_name_once_and_each_loads() -> None:
    # Its order is ruff's (RUF022: constants, classes, then functions), checked by ruff.
    assert sorted(contract.__all__) == sorted(set(contract.__all__))
    for name in contract.__all__:
        assert getattr(contract, name) is not None


def test_no_cli_option_of_a_use_case_declares_a_range_of_its_own() -> None:
    """A limit lives in its request alone: an option with its own range would refuse in
    click's words, and drift from the Struct's."""
    import typer.main
    from typer._click.types import FloatRange, IntRange

    from backscroll.cli.app import app

    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    uses = ["search", "timeline", "show", "status", "log", "verify", "pause", "resume", "config"]
    uses += ["clear", "export", "import", "reindex"]
    for command in [commands[u] for u in uses] + list(commands["deny"].commands.values()):
        for param in command.params:
            assert not isinstance(param.type, IntRange | FloatRange), (command.name, param.name)
