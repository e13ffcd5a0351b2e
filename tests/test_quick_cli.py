"""``status`` and ``search`` read without typer (``backscroll.cli.quick``) answer as typer's
commands of the same names do: the same options, types and defaults, and for any command
line the same output, errors and exit code."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
import typer.main
from typer._click import types
from typer.models import TyperPath

from backscroll import contract
from backscroll.cli import _run, quick
from backscroll.cli.app import app_for
from tests.helpers import ago, populate, run

# A title with a terminal escape: click's echo strips it from output that is no terminal.
FRAMES = [
    {"ts": ago(30), "app": "Terminal", "title": "zsh", "text": "psql: connection refused"},
    {"ts": ago(20), "app": "Firefox", "title": "\x1b[31mInvoice\x1b[0m 42", "text": "invoice due"},
    {"ts": ago(10), "app": "Terminal", "title": "vim", "text": "def refused(): invoice"},
]

LINES = [
    ["status"],
    ["status", "--json"],
    ["status", "--home", "{home}", "--json"],
    ["status", "--home={home}"],
    ["status", "extra"],
    ["status", "--limit", "3"],
    ["search", "refused"],
    ["search", "invoice", "--json"],
    ["search", "invoice", "--limit", "1"],
    ["search", "--limit=1", "invoice", "--app", "firefox"],
    ["search", "refused", "--since", "1 hour ago", "--until", "now"],
    ["search", "refused", "--since", "next blursday"],
    ["search", "refused", "--limit", "0"],
    ["search", "refused", "--limit", "1001"],
    ["search", "refused", "--limit", " +2"],
    ["search", "refused", "--limit", "two"],
    ["search", "refused", "--limit", "1", "--limit", "2"],
    ["search", "refused", "--app", ""],
    ["search", "refused", "--app"],
    ["search", "refused", "--json=yes"],
    ["search", "refused", "--words"],
    ["search", "refused", "--meaning", "--json"],
    ["search", "refused", "--words", "--meaning"],
    ["search", "refused", "--words=yes"],
    ["search", "refused", "--query", "x"],
    ["search", "refused", "more"],
    ["search", "-refused"],
    ["search", "--", "-refused"],
    ["search", ""],
    ["search", "\udc80"],
    ["search"],
    ["search", "--help"],
    ["search", "refused", "--home", "{home}/nowhere"],
    ["search", "refused", "--home", "{home}/config.json"],
]


@pytest.fixture
def home(backscroll_home: Path) -> Path:
    populate(FRAMES)
    return backscroll_home


@pytest.mark.parametrize("line", LINES, ids=" ".join)
def test_a_command_line_answers_the_same_read_quickly_or_by_typer(
    home: Path, line: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = [arg.replace("{home}", str(home)) for arg in line]
    quickly = run(capsys, *args)
    monkeypatch.setattr("backscroll.cli.command_for", lambda _: None)
    assert run(capsys, *args) == quickly


@pytest.mark.parametrize(
    "line",
    [
        ["status"],
        ["status", "--json", "--home", "x"],
        ["search", "invoice", "--limit", " +2", "--app=", "--since", "monday"],
        ["search", "--until=now", "a b"],
        ["search", "a", "--words", "--json"],
    ],
)
def test_plain_lines_of_status_and_search_are_read_quickly(line: list[str]) -> None:
    assert quick.command_for(line) is not None


@pytest.mark.parametrize(
    "line",
    [
        [],
        ["timeline"],
        ["status", "--help"],
        ["status", "--json", "--json"],
        ["search", "a", "--limit", "-1"],
        ["search", "a", "--limit", "1.5"],
        ["search", "a", "-l", "1"],
        ["search", "--", "-a"],
        ["search", "a\0b"],
        ["search", "a", "--words", "--meaning"],
        ["search", "a", "--words", "--words"],
    ],
)
def test_anything_else_is_left_to_typer(line: list[str]) -> None:
    assert quick.command_for(line) is None


def test_shell_completion_is_left_to_typer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(quick.COMPLETE, "bash_complete")
    assert quick.command_for(["status"]) is None


@pytest.mark.parametrize("name", sorted(quick.QUICK))
def test_the_typer_command_takes_what_the_quick_one_reads(name: str) -> None:
    """The same arguments by position, an option of each other field of the request with its
    type and default, ``--home`` and ``--json``: nothing that only one of them knows."""
    command = typer.main.get_command(app_for([name])).commands[name]  # type: ignore[attr-defined]
    spec = quick.QUICK[name]
    request = getattr(contract, spec.request)
    fields = quick.kinds(request)
    defaults = {f.name: f.default for f in msgspec.structs.fields(request)}
    flagged = {field for field, _ in spec.flags.values()}
    assert set(fields) | flagged == set(defaults)  # every field can be given on a command line
    params = {param.name: param for param in command.params}
    flags = {flag.removeprefix("--"): flag for flag in spec.flags}
    assert set(params) == {*fields, *flags, "home", "json"}
    for name, flag in flags.items():
        assert params[name].opts == [flag] and params[name].is_flag, flag  # type: ignore[attr-defined]
    click_type = {int: types.INT, str: types.STRING}
    for field, kind in fields.items():
        param: Any = params[field]
        assert param.type is click_type[kind], field
        assert not param.multiple and param.envvar is None and param.callback is None, field
        if field in spec.arguments:
            assert param.param_type_name == "argument" and param.required, field
            assert [p for p in params if p in spec.arguments] == list(spec.arguments)
        else:
            assert param.param_type_name == "option" and param.opts == [quick.option(field)]
            assert not param.is_flag and param.default == defaults[field], field
    assert params["home"].opts == ["--home"] and params["home"].default is None
    # What quick checks of a path is what this type checks: readable if it exists.
    path: Any = params["home"].type
    assert isinstance(path, TyperPath) and path.readable and not path.exists, vars(path)
    assert (path.file_okay, path.dir_okay, path.writable) == (True, True, False), vars(path)
    assert not path.resolve_path and not path.allow_dash and path.type is None, vars(path)
    assert params["json"].opts == ["--json"] and params["json"].is_flag  # type: ignore[attr-defined]
    assert params["json"].default is False


@pytest.mark.parametrize("text", ["plain", "", "ünïcode — ✓", "\x1b[31mred\x1b[0m title", "a\nb"])
@pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
@pytest.mark.parametrize("err", [False, True])
def test_the_commands_echo_writes_what_typers_does(
    text: str, encoding: str, err: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Byte for byte, on a stream that is no terminal (where click strips ANSI styles) and
    on one that says it is ASCII (where click writes UTF-8)."""

    def written(echo: Any) -> bytes:
        raw = io.BytesIO()
        stream = io.TextIOWrapper(raw, encoding=encoding, errors="backslashreplace")
        monkeypatch.setattr(sys, "stderr" if err else "stdout", stream)
        echo(text, err=err)
        stream.flush()
        return raw.getvalue()

    assert written(_run.echo) == written(typer.echo)
