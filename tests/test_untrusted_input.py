"""Input from outside (a line of an import, a raw MCP request, a path a person names) and
commands run at once never lose what a person asked for, never hang and never end in a
traceback.

Each test reproduces a case of issue 24 and fails on the code before its fix.
"""

from __future__ import annotations

import errno
import json
import os
import select
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest

from backscroll.store import MemoryStore
from base.config import DEFAULT_DENY
from base.fs import write_file
from tests.helpers import ago, populate, run


def backscroll(*args: str) -> subprocess.Popen[str]:
    """``backscroll *args`` as a process of its own, started and not waited for."""
    return subprocess.Popen(
        [sys.executable, "-m", "backscroll", *args],
        env=os.environ.copy(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_six_deny_adds_at_once_keep_all_six(backscroll_home: Path) -> None:
    """Each change was computed from the config the views held when the process read it,
    so a change appended meanwhile by another process was written over (2-4 of 6 kept)."""
    patterns = [f"Secret App {i}" for i in range(6)]
    started = [backscroll("deny", "add", pattern) for pattern in patterns]
    for process in started:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    with MemoryStore(backscroll_home) as store:
        assert set(store.config.deny_apps) == {*DEFAULT_DENY, *patterns}
    copy = json.loads((backscroll_home / "config.json").read_text())
    assert set(copy["deny_apps"]) == {*DEFAULT_DENY, *patterns}


DEEP = "[" * 100_000 + "]" * 100_000
GOOD = {"ts": 1_764_600_000, "app": "Terminal", "title": "zsh", "text": "kept word"}
UNREADABLE = {
    "a 5,000-digit integer": '{"ts": %s, "app": "a", "title": "b", "text": "c"}' % ("9" * 5000),
    "100,000-deep nesting": f'{{"ts": 1, "app": {DEEP}}}',
    "nesting the parser manages": '{"ts": 1, "app": %s}' % ("[" * 900 + "]" * 900),
    "a 4,000-digit time": '{"ts": %s, "app": "a", "title": "b", "text": "c"}' % ("9" * 4000),
}


def test_import_skip_bad_skips_unreadable_json_with_one_line_each(
    tmp_path: Path, backscroll_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 5,000-digit integer (ValueError, not JSONDecodeError), nesting past the stack
    (RecursionError) and a time no float holds (OverflowError) ended the import with a
    traceback, --skip-bad or not."""
    source = tmp_path / "frames.jsonl"
    source.write_text("\n".join([*UNREADABLE.values(), json.dumps(GOOD)]) + "\n")
    code, _, err = run(capsys, "import", "--skip-bad", str(source))
    assert code == 0, err
    skipped = [line for line in err.splitlines() if line.startswith("skipped line")]
    assert len(skipped) == len(UNREADABLE), err
    assert "Traceback" not in err
    with MemoryStore(backscroll_home) as store:
        assert [hit.id for hit in store.search("kept")] != []
    for bad in UNREADABLE.values():
        source.write_text(bad + "\n")
        code, _, err = run(capsys, "import", str(source))
        assert (code, err.count("\n")) == (1, 1), err
        assert err.startswith("backscroll: line 1: "), err


def test_config_json_edited_into_unreadable_json_is_refused_and_shown(
    backscroll_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """config.json is read by every command; nesting past the stack made each of them end
    in a traceback."""
    assert run(capsys, "deny", "add", "MyBank")[0] == 0
    path = backscroll_home / "config.json"
    for edit in (UNREADABLE["100,000-deep nesting"], '{"retention_days": %s}' % ("9" * 5000)):
        path.write_text(edit)
        for command in ("status", "resume"):  # a reader, then a writer
            code, _, err = run(capsys, command)
            assert code == 0, err
        assert "config.json edit refused (not JSON that can be read" in run(capsys, "status")[1]
        assert "MyBank" in run(capsys, "deny", "list")[1]


class RawClient:
    """``backscroll mcp`` as a process, spoken to in raw lines of bytes."""

    def __init__(self) -> None:
        self.process = backscroll("mcp")
        self.send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            }
        )
        assert self.answer()["id"] == 0
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any] | str) -> None:
        assert self.process.stdin is not None
        line = message if isinstance(message, str) else json.dumps(message)
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def answer(self) -> dict[str, Any]:
        """The next line the server writes; a server that never answers fails the test after
        a minute instead of hanging it (a guard, not a measure)."""
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], 60)
        assert ready, "no answer: the client would wait forever"
        answer: dict[str, Any] = json.loads(self.process.stdout.readline())
        return answer

    def close(self) -> str:
        """Its stderr, once it has ended on the end of its input."""
        _, err = self.process.communicate(input="", timeout=60)
        return err


def search(query: str, request_id: int, **extra: Any) -> str:
    arguments = {"action": "search", "query": query, **extra}
    params = {"name": "memory", "arguments": arguments}
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    )


RAW_REQUESTS = [
    # (line, the id it is answered under, what the answer says); json.dumps escapes a lone
    # surrogate as \ud800, as a client's JSON encoder does.
    (search("\ud800", 11), 11, "lone surrogate"),
    (search("x", 12, limit=0).replace('"limit": 0', f'"limit": {"9" * 5000}'), 12, "4,300 digits"),
    (search("x", 13, limit=0).replace('"limit": 0', f'"limit": {DEEP}'), 13, "64 deep"),
    # The tool's own "id" argument is not the request's.
    (search("\udcff", 14, action="show", id=99), 14, "lone surrogate"),
    ("{not json", None, "not JSON"),
    ('[{"jsonrpc": "2.0", "id": 16, "method": "ping"}, [[' + "9" * 5000, None, "4,300"),
]


def test_the_mcp_server_answers_raw_requests_it_cannot_read_and_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The SDK dropped each of these lines with a debug log: the client waited forever."""
    source = tmp_path / "frames.jsonl"
    source.write_text(json.dumps(GOOD) + "\n")
    assert run(capsys, "import", str(source))[0] == 0
    client = RawClient()
    try:
        for line, request_id, said in RAW_REQUESTS:
            client.send(line)
            answer = client.answer()
            assert (answer["id"], answer["error"]["code"]) == (request_id, -32700), line[:80]
            message = answer["error"]["message"]
            assert said in message and "\n" not in message, message
        client.send(search("kept", 15))
        served = client.answer()
        assert served["id"] == 15 and "1 match(es)" in served["result"]["content"][0]["text"]
    finally:
        err = client.close()
    assert "Traceback" not in err


ARGUMENT_REFUSALS = [
    ("memory", {"action": "search", "query": "x", "bogus": 1}, "unknown argument 'bogus'"),
    ("memory", {"action": "search", "query": "x", "limit": "many"}, "limit:"),
    ("memory", {"action": "nope"}, "action:"),
    ("memory_manage", {"action": "deny", "deny_add": 5}, "deny_add:"),
    ("screen_memory_recent_context", {"minutes": "x"}, "minutes:"),
]


def test_mcp_argument_refusals_carry_the_refusal_as_structured_content() -> None:
    """An argument that does not fit the tool's schema was refused as text alone, where every
    other refusal has ``structuredContent`` (``{"error": ...}``, named in each output schema)."""
    from mcp import Client

    from backscroll.mcp_server import build_server

    async def refusals() -> list[tuple[Any, Any, dict[str, Any]]]:
        async with Client(build_server(None, allow_manage=True)) as client:
            schemas = {tool.name: tool.output_schema for tool in (await client.list_tools()).tools}
            out = []
            for tool, arguments, _ in ARGUMENT_REFUSALS:
                result = await client.call_tool(tool, arguments)
                out.append((result, result.structured_content, schemas[tool]))
            return out

    for (result, structured, schema), (_, _, said) in zip(
        anyio.run(refusals), ARGUMENT_REFUSALS, strict=True
    ):
        text = result.content[0].text
        assert result.is_error and said in text and "\n" not in text
        assert structured == {"error": text}
        jsonschema.validate(structured, schema)


def test_show_save_replaces_a_symbolic_link_never_its_target(
    tmp_path: Path, png: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--save`` opened the path with O_TRUNC: through a link it overwrote the link's target
    (another file of the person's, or anything a link planted in a shared folder points to)
    with the decrypted thumbnail, keeping the target's mode 0644."""
    populate([{**GOOD, "ts": ago(5)}], image=png)
    with MemoryStore() as store:
        frame = str(store.timeline()[0].id)
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    target.chmod(0o644)
    link = tmp_path / "thumb.jpg"
    link.symlink_to(target)
    existing = tmp_path / "old.jpg"
    existing.write_text("an older save")
    existing.chmod(0o644)
    for path in (link, existing):
        code, _, err = run(capsys, "show", frame, "--save", str(path))
        assert code == 0, err
        assert not path.is_symlink() and path.read_bytes().startswith(b"\xff\xd8")  # a JPEG
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert target.read_text() == "keep me" and stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["precious.txt", "thumb.jpg", "old.jpg", "home", png.name]
    )


def test_the_file_layer_never_writes_through_a_symbolic_link(tmp_path: Path) -> None:
    """write_file opened its path with O_TRUNC alone: a link there had its target truncated
    and rewritten."""
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    link = tmp_path / "thumb.jpg"
    link.symlink_to(target)
    with pytest.raises(OSError) as refused:
        write_file(link, b"decrypted")
    assert refused.value.errno == errno.ELOOP
    assert target.read_text() == "keep me" and link.is_symlink()


@pytest.mark.parametrize(
    "name", ["daemon.json", "keyinfo.json", "views/search/manifest.json", "log/COMPACT"]
)
def test_a_file_of_the_store_filled_with_deep_json_is_damage_not_a_traceback(
    name: str, backscroll_home: Path, png: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """msgspec raises RecursionError, not DecodeError, for nesting past the stack (even under
    a field the type does not have), and the log's compaction manifest was read with
    json.loads: each reader that took a damaged file in its stride ended in a traceback
    (keyinfo.json is read by show, which decrypts the thumbnail)."""
    populate([{**GOOD, "ts": ago(5)}], image=png)
    with MemoryStore() as store:
        frame = str(store.timeline()[0].id)
    path = backscroll_home / name
    path.write_text(f'{{"unknown": {DEEP}}}')
    save = str(backscroll_home.parent / "thumb.jpg")
    commands = [["status"], ["search", "kept"], ["show", frame, "--save", save], ["pause"]]
    for command in commands:
        code, _, err = run(capsys, *command)
        assert "Traceback" not in err and (code == 0 or err.count("\n") == 1), (command, err)


def test_start_log_file_is_private_and_never_a_link_followed(tmp_path: Path) -> None:
    """``--log-file`` was opened by logging.FileHandler: an existing log kept its mode 0644
    while the daemon wrote window titles into it, and a symbolic link was followed to append
    to its target. The log is opened before the daemon looks for a display, so a process
    with none shows both."""
    no_display = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}

    def start(log: Path) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "backscroll", "start", "--log-file", str(log)],
            env=no_display,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
        return done.stderr

    existing = tmp_path / "daemon.log"
    existing.write_text("an earlier run\n")
    existing.chmod(0o644)
    assert "no display" in start(existing)
    assert stat.S_IMODE(existing.stat().st_mode) == 0o600
    assert existing.read_text() == "an earlier run\n"
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    target.chmod(0o644)
    link = tmp_path / "link.log"
    link.symlink_to(target)
    assert f"cannot log to {link}: a symbolic link" in start(link)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644 and target.read_text() == "keep me"
