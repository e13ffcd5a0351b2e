"""Reads never write: a store on a read-only mount answers every read command and every MCP
read tool, and ``strace`` of a search shows no write under the home. The store they read has
views behind its log (frames, a tombstone) and a hand edit of config.json pending."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from PIL import Image

from backscroll.importer import import_frames
from backscroll.mcp_server import build_server
from backscroll.store import CONFIG_FILE, MemoryStore
from base.clock import now_us
from eventlog.events import FramesDeleted
from tests.helpers import frame_event, import_line

PENDING = "config.json edited by hand: taken in by the daemon or the next command"


@pytest.fixture
def behind(tmp_path: Path) -> Path:
    """Frames searchable, their text and thumbnails encrypted (the key is read to answer);
    then, appended as a daemon whose projector lags would leave them,
    two frames and a tombstone for one searchable frame; then config.json edited by hand."""
    home = tmp_path / "behind"
    png = tmp_path / "screen.png"
    Image.new("RGB", (80, 50), (10, 160, 90)).save(png)
    rows = [
        import_line(0.02, "Terminal", "zsh", "invoice 1042 sent to quokka", png),
        import_line(0.01, "Slack", "general", "shredded invoice draft"),
    ]
    with MemoryStore(home, write=True) as store:
        store.set_config(retention_days=30, encrypt_text=True)
        import_frames(store, rows)
    with MemoryStore(home, write=True, catch_up=False) as store:
        [shredded] = [h.id for h in store.search("shredded")]
        next_id = store.log.next_offset()
        store.log.append(frame_event(next_id, now_us(), "invoice appended later"))
        store.log.append(frame_event(next_id + 1, now_us(), "another later frame"))
        store.log.append(FramesDeleted(ts_us=now_us(), upto_id=next_id + 1, ids=(shredded,)))
    config = json.loads((home / CONFIG_FILE).read_text())
    (home / CONFIG_FILE).write_text(json.dumps({**config, "retention_days": 12}))
    return home


def snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    """Every entry under ``root``: mode, modification time and content hash."""
    out = {}
    for path in sorted([root, *root.rglob("*")]):
        info = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
        out[str(path.relative_to(root))] = (info.st_mode, info.st_mtime_ns, digest)
    return out


@contextlib.contextmanager
def read_only(home: Path, mount: Path) -> Iterator[Path]:
    """``home`` at ``mount`` on a read-only bind mount (as root), or with every write bit
    taken off (as anyone else, whom the modes bind)."""
    if os.geteuid() != 0:
        subprocess.run(["chmod", "-R", "a-w", str(home)], check=True)
        try:
            yield home
        finally:
            subprocess.run(["chmod", "-R", "u+w", str(home)], check=True)
        return
    mount.mkdir()
    for args in (["--bind", str(home), str(mount)], ["-o", "remount,ro,bind", str(mount)]):
        done = subprocess.run(["mount", *args], capture_output=True, text=True)
        if done.returncode:
            subprocess.run(["umount", str(mount)], capture_output=True)
            pytest.skip(f"no read-only bind mount here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``backscroll *args`` as a shell runs it: with the usual umask, where this process's
    own was narrowed by the writers it opened."""
    env = os.environ | {"BACKSCROLL_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "backscroll", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        umask=0o022,
    )


def answered(done: subprocess.CompletedProcess[str], *, codes: tuple[int, ...] = (0,)) -> str:
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    assert done.returncode in codes, f"exit {done.returncode}: {done.stderr}"
    return done.stdout


def test_a_store_on_a_read_only_mount_answers_every_read_command(
    behind: Path, tmp_path: Path
) -> None:
    before = snapshot(behind)
    with read_only(behind, tmp_path / "ro") as home:
        with pytest.raises(OSError):
            (home / "probe").write_bytes(b"")  # the mount refuses writes, even root's
        found = json.loads(answered(cli(home, "search", "invoice", "--json")))
        texts = [m["snippet"] for m in found["matches"]]
        assert len(texts) == 1 and "1042" in texts[0]  # the tombstone hides the other
        frame_id = found["matches"][0]["id"]
        searched = cli(home, "search", "invoice")
        assert "views are 3 event(s) behind the log" in searched.stderr
        assert "next command that changes the store" in searched.stderr
        assert "quokka" in answered(cli(home, "show", str(frame_id)))
        saved = tmp_path / "thumb.jpg"
        answered(cli(home, "show", str(frame_id), "--save", str(saved)))
        assert saved.read_bytes()[:3] == b"\xff\xd8\xff"
        assert saved.stat().st_mode & 0o777 == 0o600  # decrypted: the owner's alone
        timeline = json.loads(answered(cli(home, "timeline", "--json")))
        assert [f["title"] for f in timeline["frames"]] == ["zsh"]  # never the shredded one
        status = json.loads(answered(cli(home, "status", "--json")))
        assert status["views_lag"] == 3 and status["frames"] == 2
        assert PENDING in status["config_problem"] and status["retention_days"] != 12
        assert PENDING in answered(cli(home, "status"))
        answered(cli(home, "export", "--out", str(tmp_path / "out"), "--format", "json"))
        exported = json.loads((tmp_path / "out" / "frames.json").read_text())["frames"]
        modes = {p.stat().st_mode & 0o777 for p in (tmp_path / "out").rglob("*") if p.is_file()}
        assert modes == {0o600} and (tmp_path / "out").stat().st_mode & 0o777 == 0o700
        assert [f["id"] for f in exported] == [frame_id]
        assert "delete" in answered(cli(home, "log"))
        answered(cli(home, "verify"), codes=(0, 1))
        refused = cli(home, "pause")
        assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert snapshot(behind) == before
    with MemoryStore(behind, write=True) as store:  # the next writer takes everything in
        assert store.lag == 0 and store.config.retention_days == 12
        assert store.config_problem is None
        assert len(store.search("invoice")) == 2


def test_a_store_on_a_read_only_mount_answers_every_mcp_read_tool(
    behind: Path, tmp_path: Path
) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("memory", {"action": "search", "query": "invoice"}),
        ("memory", {"action": "timeline"}),
        ("memory", {"action": "status"}),
        ("screen_memory_status", {}),
        ("screen_memory_recent_context", {"minutes": 120}),
        ("screen_memory_recent_segments", {"minutes": 120}),
    ]

    async def ask(server: Any) -> list[Any]:
        async with Client(server) as client:
            found = await client.call_tool("memory", calls[0][1])
            assert found.structured_content
            [frame_id] = found.structured_content["ids"]
            show = ("memory", {"action": "show", "id": frame_id})
            return [found] + [await client.call_tool(t, a) for t, a in [*calls[1:], show]]

    before = snapshot(behind)
    with read_only(behind, tmp_path / "ro") as home:
        results = asyncio.run(ask(build_server(home)))
    assert snapshot(behind) == before
    asked = [*calls, ("memory", {"action": "show"})]
    for (tool, arguments), result in zip(asked, results, strict=True):
        assert not result.is_error, (tool, arguments, result.content)
    shown = "".join(getattr(block, "text", "") for block in results[-1].content)
    assert "quokka" in shown
    status = "".join(getattr(block, "text", "") for block in results[2].content)
    assert "behind the log" in status


WRITE_OPEN = re.compile(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND")
CHANGES = {
    *("mkdir", "mkdirat", "rmdir", "rename", "renameat", "renameat2", "unlink", "unlinkat"),
    *("link", "linkat", "symlink", "symlinkat", "chmod", "fchmodat", "truncate", "utimensat"),
    *("mknodat", "creat", "write", "pwrite64", "writev"),
}


def writes_under(home: Path, trace: str) -> list[str]:
    """The calls in an ``strace -f -y`` trace that change anything under ``home``: a file
    opened to write, a write to a descriptor of it, a name made, renamed or removed."""
    found = []
    for line in trace.splitlines():
        call = re.match(r"^\d+\s+(\w+)\((.*)", line)
        if call is None:
            continue
        name, rest = call.groups()
        paths = re.findall(r'"((?:[^"\\]|\\.)*)"', rest)
        if name in ("symlink", "symlinkat"):
            paths = paths[-1:]  # the link made; the first is only the text it holds
        elif name in ("open", "openat", "openat2"):
            if not WRITE_OPEN.search(rest):
                continue
        elif name not in CHANGES:
            continue
        paths += re.findall(r"\d+<(/[^>]*)>", rest)  # descriptors, as ``-y`` names them
        if any(path.startswith(str(home)) for path in paths):
            found.append(line)
    return found


def traced(home: Path, log: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """``backscroll *args`` under ``strace -f``: the process and its trace of file calls."""
    strace = ["strace", "-f", "-y", "-qq", "-e", "trace=%file,write,pwrite64,writev"]
    command = [sys.executable, "-m", "backscroll", *args]
    env = os.environ | {"BACKSCROLL_HOME": str(home)}
    done = subprocess.run(
        [*strace, "-o", str(log), *command], env=env, capture_output=True, text=True, timeout=120
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done, log.read_text()


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs: apt-get install -y strace")
def test_strace_of_each_read_command_against_a_store_behind_its_log_shows_no_write(
    behind: Path, tmp_path: Path
) -> None:
    before = snapshot(behind)
    log = tmp_path / "strace.txt"
    done, trace = traced(behind, log, "search", "invoice")
    assert done.returncode == 0, done.stderr
    assert "1042" in done.stdout and "behind the log" in done.stderr
    assert str(behind / "views" / "search") in trace  # the trace saw the index being read
    assert writes_under(behind, trace) == []
    found = json.loads(traced(behind, log, "search", "invoice", "--json")[0].stdout)
    reads = [
        ["show", str(found["matches"][0]["id"])],
        ["timeline"],
        ["status"],
        ["log"],
        ["verify"],
        ["export", "--out", str(tmp_path / "out")],
    ]
    for args in reads:
        done, trace = traced(behind, log, *args)
        assert done.returncode in (0, 1) and done.stdout, (args, done.stderr)
        assert writes_under(behind, trace) == [], args
    assert snapshot(behind) == before
    # The same trace of a writer shows its writes: the check can fail.
    done, trace = traced(behind, log, "config")
    assert done.returncode == 0, done.stderr
    assert writes_under(behind, trace)


def test_a_reader_of_a_home_that_does_not_exist_creates_nothing(tmp_path: Path) -> None:
    home = tmp_path / "nothing-here"
    with MemoryStore(home) as store:
        assert store.search("anything") == [] and store.timeline() == []
        assert store.stats().frames == 0
    assert not home.exists()


def test_a_reader_refuses_to_write(backscroll_home: Path) -> None:
    with MemoryStore() as store:
        for write in (store.refresh, store.projector, lambda: store.set_config(retention_days=3)):
            with pytest.raises(RuntimeError, match="opened to read"):
                write()
    assert not backscroll_home.exists()


def test_opening_a_month_to_read_leaves_no_folder_of_links_behind(
    behind: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tantivy's watcher thread makes its lock file in the folder of links as the folder is
    removed, often enough that ignoring the error left hundreds behind in /dev/shm."""
    from projector.index import Manifest, open_to_read

    scratch = tmp_path / "runtime"
    scratch.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(scratch))
    search = behind / "views" / "search"
    manifest = Manifest.load(search)
    assert manifest is not None
    for _ in range(50):
        for name in manifest.partitions.values():
            assert open_to_read(search / name).searcher().num_docs >= 1
    assert list(scratch.iterdir()) == []
