"""The README cannot drift: its CLI reference is generated, its example commands run, and
every command is documented. Also: no command opens a network connection."""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from backscroll.cli import main
from backscroll.cli.reference import reference
from tests.conftest import REPO

README = (REPO / "README.md").read_text()


def example_commands() -> list[str]:
    """Every ``backscroll …`` line of every bash block (the Quick start's ``make`` lines and
    ``install-service`` have tests of their own)."""
    blocks = re.findall(r"```bash\n(.*?)```", README, re.S)
    return [line for b in blocks for line in b.splitlines() if line.startswith("backscroll ")]


def test_the_cli_reference_is_generated_from_the_commands() -> None:
    block = README.split("<!-- cli-reference -->\n```text\n", 1)[1].split("\n```", 1)[0]
    assert block == reference(), "run: python -m backscroll.cli.reference"


def test_every_command_has_help_and_is_in_the_readme() -> None:
    import typer.main

    from backscroll.cli.app import app

    root = typer.main.get_command(app)
    for name, command in root.commands.items():  # type: ignore[attr-defined]
        assert command.help, f"{name} has no help text"
        assert f"backscroll {name}" in README, f"{name} is not in the README"


def sample_frames(path: Path) -> None:
    now = datetime.now(UTC)
    rows = [
        ("Terminal", "zsh", "psql: connection refused ECONNREFUSED 127.0.0.1:5432", 2),
        ("Firefox", "Invoice INV-20931 — Acme", "invoice INV-20931 total 1,250.00 EUR", 1),
        ("Slack", "general", "lunch plans", 0.5),
    ]
    lines = [
        json.dumps({"ts": (now - timedelta(days=d)).isoformat(), "app": a, "title": t, "text": x})
        for a, t, x, d in rows
    ]
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.slow  # every command of the README, each a process: 5 s here
def test_every_example_command_in_the_readme_runs(
    tmp_path: Path, backscroll_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    sample_frames(tmp_path / "frames.jsonl")
    examples = example_commands()
    assert len(examples) >= 15
    for line in examples:
        argv = shlex.split(line.split("  #", 1)[0])
        assert argv[0] == "backscroll", line
        done = subprocess.run(
            [sys.executable, "-m", "backscroll", *argv[1:]],
            capture_output=True,
            text=True,
            timeout=120,
            env=os.environ,
        )
        assert done.returncode == 0, f"{line}\n{done.stderr}"
    assert (tmp_path / "exported" / "index.html").exists()


def test_no_command_opens_a_network_socket(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a network connection was attempted: {args!r}")

    real_socket = socket.socket

    class NoNetwork(real_socket):
        def connect(self, address: object) -> None:
            if self.family != socket.AF_UNIX:
                refuse(address)
            super().connect(address)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "socket", NoNetwork)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    sample_frames(tmp_path / "frames.jsonl")
    passphrase = tmp_path / "passphrase"
    passphrase.write_text("correct horse battery\n")
    passphrase.chmod(0o600)
    archive = ["--archive", str(tmp_path / "memory.bsa"), "--passphrase-file", str(passphrase)]
    commands = [
        ["import", str(tmp_path / "frames.jsonl")],
        ["search", "econnrefused"],
        ["timeline"],
        ["show", "1"],
        ["status"],
        ["log"],
        ["verify"],
        ["pause", "5m"],
        ["resume"],
        ["deny", "add", "bank"],
        ["config", "--encrypt-text", "on"],
        ["reindex", "-y"],
        ["export", "--out", str(tmp_path / "out")],
        ["export", *archive],
        ["import", *archive, "--home", str(tmp_path / "moved")],
        ["clear", "-y"],
    ]
    for args in commands:
        monkeypatch.setattr(sys, "argv", ["backscroll", *args])
        try:
            main()
        except SystemExit as exc:
            assert not exc.code, (args, capsys.readouterr().err)
    assert re.search(r"deleted \d+ frame", capsys.readouterr().out)
