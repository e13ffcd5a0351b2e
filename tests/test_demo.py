"""``backscroll demo``: its own headless desktop, the real daemon, searches that find what it
showed, nothing of the denied window anywhere, and nothing left running afterwards."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from backscroll.demo import SECRET_WORD
from backscroll.store import MemoryStore
from headless.processes import FOLDER_PREFIX, processes_of
from tests.residue import files_containing

REPO = Path(__file__).resolve().parents[1]


def backscroll(*args: str, timeout: float = 120) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run the CLI as a user would; its result and its pid (to look for what it left)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with subprocess.Popen(
        [sys.executable, "-m", "backscroll", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        out, err = process.communicate(timeout=timeout)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err), process.pid


def section(out: str, command: str) -> str:
    """The output printed under ``$ backscroll <command> …``, up to the next blank line."""
    start = out.index(f"$ backscroll {command}")
    end = out.find("\n\n", start)
    return out[start : end if end >= 0 else None]


@pytest.mark.desktop
def test_the_demo_finds_what_it_showed_stores_nothing_denied_and_leaves_nothing_running(
    tmp_path: Path,
) -> None:
    home = tmp_path / "demo"
    done, pid = backscroll("demo", "--seconds", "15", "--home", str(home))
    assert done.returncode == 0, done.stderr[-4000:]
    out = done.stdout

    assert "daemon:    running" in section(out, "status")
    terminal = section(out, "search ECONNREFUSED")
    assert "0 match(es)" not in terminal and "[XTerm] — ~/shop - npm run migrate" in terminal
    invoice = section(out, "search '\"INV-20417\"'")
    assert "1 match(es)" in invoice and "[Zenity] — Invoice INV-20417" in invoice
    assert "[XTerm] — Deployed shop to staging" in section(out, "search 'deployed staging'")
    assert "0 match(es)" in section(out, f"search {SECRET_WORD}")
    assert "0 match(es)" in section(out, "search KeePassXC")
    assert "KeePassXC" not in section(out, "timeline")
    assert f"backscroll timeline --since 10m --home {home}" in out  # what to try next

    with MemoryStore(home) as store:
        (ocr, *_) = store.search("econnrefused")
        assert (ocr.app, ocr.text_source) == ("XTerm", "ocr")
        assert {h.text_source for h in store.search("invoice northwind")} == {"ax"}
        assert all("KeePassXC" not in f.title for f in store.timeline(limit=1000))
    assert files_containing(home, SECRET_WORD) == []

    assert processes_of(pid) == []  # Xvfb, dbus-daemon, openbox, AT-SPI, xterms, the daemon
    assert list(Path(tempfile.gettempdir()).glob(f"{FOLDER_PREFIX}{pid}-*")) == []


def test_too_short_a_demo_is_refused_with_one_usage_line() -> None:
    done, _ = backscroll("demo", "--seconds", "1", timeout=30)
    assert done.returncode == 2 and "--seconds" in done.stderr


def test_the_demo_refuses_to_record_into_the_real_store(tmp_path: Path) -> None:
    real = tmp_path / "user" / ".backscroll"
    env_home = {"HOME": str(tmp_path / "user")}
    done = subprocess.run(
        [sys.executable, "-m", "backscroll", "demo", "--home", str(real)],
        env={**os.environ, **env_home, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("backscroll: the demo records a made-up desktop")
    assert not real.exists()


def test_missing_desktop_programs_are_named_in_one_line_with_their_packages(
    tmp_path: Path,
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "backscroll", "demo", "--home", str(tmp_path / "demo")],
        env={**os.environ, "PATH": str(empty), "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert done.stderr.startswith("backscroll: the demo needs programs that are not installed")
    assert "sudo apt-get install -y " in done.stderr
    for package in ("xvfb", "openbox", "xdotool", "xterm", "zenity", "tesseract-ocr"):
        assert f" {package}" in done.stderr
