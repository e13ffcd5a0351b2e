"""``status``: the heartbeat file, the status record and its JSON shape, ``stats()``."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest

from backscroll.contract import DaemonStatus, Status, to_json
from backscroll.heartbeat import FILE, SIZE, Heartbeat, HeartbeatFile, read_heartbeat
from backscroll.stats import Stats
from backscroll.status import collect, render
from backscroll.store import MemoryStore
from base.clock import now_us
from tests.helpers import populate

FRAMES = [
    {"ts": "2026-11-24T16:40:31", "app": "Terminal", "title": "zsh", "text": "tsc error"},
    {"ts": "2026-11-25T09:00:00", "app": "Slack", "title": "general", "text": "lunch"},
]

# `status --json` as scripts and agents read it: these keys, in this order (after the answer's
# ``action``): the spec's counts that ``stats()`` shares, then the rest.
STATUS_KEYS = [
    "frames", "apps", "thumb_bytes", "db_bytes", "total_bytes", "text_sources",
    "encrypted_text_frames", "thumbnails", "encrypted_thumbnails", "encrypt_text",
    "encrypt_thumbnails", "key_store", "encryption_available",
    "daemon", "capture", "store", "oldest", "newest", "log_bytes", "index_bytes",
    "storage_cap_mb", "retention_days", "trigger", "poll_seconds", "min_interval_seconds",
    "interval_seconds", "redact", "key_problem", "key_weak", "deny_apps", "pause_hotkey",
    "search", "views_lag", "views_behind_why", "views_damaged", "config_problem",
    "config_weakened", "damage", "skipped_events", "backend", "abilities",
    "deletions_stuck", "memories", "memories_proposed", "intentions_due", "meaning_frames",
    "meaning",
]  # fmt: skip
# The spec's "Status fields" table, for `MemoryStore.stats()`.
SPEC_STATS = [
    "frames", "oldest", "newest", "apps", "thumb_bytes", "db_bytes", "total_bytes",
    "text_sources", "encrypted_text_frames", "thumbnails", "encrypted_thumbnails",
    "encrypt_text", "encrypt_thumbnails", "key_store", "encryption_available",
]  # fmt: skip


@pytest.fixture
def home(backscroll_home: Path) -> Path:
    populate(FRAMES)
    return backscroll_home


def beat(**fields: Any) -> Heartbeat:
    """A full tick of this (live) process, with ``fields`` changed."""
    tick = Heartbeat(
        pid=os.getpid(),
        started_us=now_us() - 60_000_000,
        last_tick_us=now_us(),
        last_outcome="captured",
        trigger="events",
        poll_seconds=1.0,
        min_interval_seconds=2.0,
        interval_seconds=30.0,
        last_reason="app_change",
        last_text_source="ocr",
        text_sources={"ocr": 2},
        reasons={"start": 1, "app_change": 1},
        redactions={"password": 3},
    )
    return msgspec.structs.replace(tick, **fields)


def status_of(home: Path) -> Status:
    with MemoryStore(home) as store:
        return collect(store)


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


# -- the heartbeat file ------------------------------------------------------------------------


def test_a_heartbeat_reads_back_field_for_field(home: Path) -> None:
    written = beat(problem="disk full", hotkey_problem="no display")
    HeartbeatFile(home).write(written)
    assert read_heartbeat(home) == written
    assert (home / FILE).stat().st_size == SIZE  # rewritten in place, never grown


def test_a_new_heartbeat_file_reads_as_no_heartbeat_until_its_first_tick(home: Path) -> None:
    HeartbeatFile(home)
    assert read_heartbeat(home) is None


def test_a_tick_too_big_for_the_file_keeps_its_pid_and_time(home: Path) -> None:
    HeartbeatFile(home).write(beat(problem="x" * SIZE, last_tick_us=1234))
    kept = read_heartbeat(home)
    assert kept == Heartbeat(pid=os.getpid(), last_tick_us=1234)
    assert (home / FILE).stat().st_size == SIZE


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"\xff\xfe\x00",
        b'{"pid": 12',  # half written
        b"[1, 2, 3]",
        b'"daemon"',
        b"{}",
        b'{"pid": "41233", "last_tick_us": 1}',
        b'{"pid": 0, "last_tick_us": 1}',
        b'{"pid": -1, "last_tick_us": 1}',  # kill(-1, 0) would probe every process
        b'{"pid": 99999999999999, "last_tick_us": 1}',  # kill() would overflow
        b'{"pid": 1, "last_tick_us": 1, "redactions": [1]}',
    ],
)
def test_a_damaged_or_foreign_heartbeat_reads_as_no_daemon(home: Path, content: bytes) -> None:
    (home / FILE).write_bytes(content.ljust(SIZE))
    assert read_heartbeat(home) is None
    status = status_of(home)
    assert to_json(status.daemon) == {"state": "not running"}
    assert "  daemon:    not running" in render(status)


def test_a_heartbeat_that_is_a_folder_reads_as_no_daemon(home: Path) -> None:
    (home / FILE).mkdir()
    assert read_heartbeat(home) is None
    assert status_of(home).daemon.state == "not running"


# -- the status record ---------------------------------------------------------------------------


def test_status_json_keeps_its_keys_and_their_order(home: Path) -> None:
    assert list(to_json(status_of(home))) == ["action", *STATUS_KEYS]


def test_a_live_daemon_shows_its_heartbeat_fields_then_state_and_tick_age(home: Path) -> None:
    written = beat()
    HeartbeatFile(home).write(written)
    daemon = to_json(status_of(home))["daemon"]
    # The fields the heartbeat holds, in its order (those it lacks left out), then the state.
    known = [k for k in Heartbeat.__struct_fields__ if getattr(written, k) is not None]
    assert list(daemon) == [*known, "state", "tick_age_seconds"]
    assert daemon["state"] == "running" and 0 <= daemon["tick_age_seconds"] < 30
    assert {k: daemon.get(k) for k in Heartbeat.__struct_fields__} == msgspec.to_builtins(written)


def test_the_daemon_status_holds_every_field_of_the_heartbeat() -> None:
    heartbeat = list(Heartbeat.__struct_fields__)
    assert list(DaemonStatus.__struct_fields__) == [*heartbeat, "state", "tick_age_seconds"]


def test_a_daemon_whose_ticks_stopped_is_not_responding(home: Path) -> None:
    HeartbeatFile(home).write(beat(last_tick_us=now_us() - 120_000_000))
    status = status_of(home)
    assert status.daemon.state == "not responding"
    assert status.daemon.tick_age_seconds and status.daemon.tick_age_seconds >= 120
    assert "  daemon:    not responding" in render(status)


def test_a_daemon_whose_process_is_gone_died_and_shows_no_tick_age(home: Path) -> None:
    pid = dead_pid()
    HeartbeatFile(home).write(beat(pid=pid))
    status = status_of(home)
    assert status.daemon.state == "died" and "tick_age_seconds" not in to_json(status.daemon)
    assert f"  daemon:    not running (pid {pid} died without stopping)" in render(status)


def test_status_text_names_the_last_tick_redactions_and_hotkey_problem(home: Path) -> None:
    HeartbeatFile(home).write(beat(hotkey_problem="no X display"))
    text = render(status_of(home))
    assert f"  daemon:    running (pid {os.getpid()}, last tick: captured)" in text
    assert "  redacted:  3 secret(s) this daemon run" in text
    assert "(not active: no X display)" in text


def test_status_says_when_a_live_daemon_last_finished_a_capture(home: Path) -> None:
    # Issue 24, case 5: a capture thread stuck on an OCR worker left the ticks going, and
    # status said "running" for hours with nothing captured.
    three_hours_ago = now_us() - 3 * 3600 * 1_000_000
    HeartbeatFile(home).write(beat(last_capture_us=three_hours_ago, last_outcome="working"))
    when = datetime.fromtimestamp(three_hours_ago / 1e6).strftime("%Y-%m-%d %H:%M:%S")
    assert f"  captured:  last at {when} (3.0 h ago)\n" in render(status_of(home))

    HeartbeatFile(home).write(beat())
    assert "  captured:  nothing yet this run\n" in render(status_of(home))

    HeartbeatFile(home).write(beat(pid=dead_pid(), last_capture_us=three_hours_ago))
    assert "captured:" not in render(status_of(home))


def test_a_heartbeat_that_kept_only_its_tick_shows_no_redaction_count(home: Path) -> None:
    HeartbeatFile(home).write(beat(problem="x" * SIZE))
    text = render(status_of(home))
    assert f"running (pid {os.getpid()}, last tick: ?)" in text and "redacted:" not in text


# -- MemoryStore.stats() ----------------------------------------------------------------------


def test_store_stats_has_the_spec_fields_and_agrees_with_status(home: Path) -> None:
    assert sorted(Stats.__struct_fields__) == sorted(SPEC_STATS)
    with MemoryStore(home) as store:
        stats, status = store.stats(), collect(store)
    assert status.db_bytes == status.log_bytes + status.index_bytes == stats.db_bytes
    assert status.total_bytes == stats.total_bytes == stats.thumb_bytes + stats.db_bytes
    for name in SPEC_STATS:
        value = getattr(stats, name)
        if name in ("oldest", "newest"):  # a local datetime; status prints it to the second
            value = value.strftime("%Y-%m-%d %H:%M:%S")
        assert getattr(status, name) == value, name
    assert stats.oldest is not None and stats.oldest.tzinfo is not None
    assert (stats.frames, stats.apps, stats.text_sources) == (2, 2, {"ax": 0, "none": 0, "ocr": 2})


def test_without_a_daemon_status_says_which_backend_start_would_use_or_why_none(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("DISPLAY", "SWAYSOCK", "HYPRLAND_INSTANCE_SIGNATURE", "XDG_SESSION_TYPE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WAYLAND_DISPLAY", "wayland-1")
    monkeypatch.setenv("XDG_CURRENT_DESKTOP", "sway")
    shown = status_of(home)
    assert shown.backend == "wlroots"
    assert shown.abilities == ["would be used by `backscroll start` (Wayland, sway)"]
    monkeypatch.setenv("XDG_CURRENT_DESKTOP", "GNOME")
    assert status_of(home).backend == "gnome"
    monkeypatch.setenv("XDG_CURRENT_DESKTOP", "KDE")
    shown = status_of(home)
    assert shown.backend is None
    assert "KDE Plasma Wayland session is not supported yet" in shown.abilities[0]
    assert "desktop:   no capture backend here" in render(shown)
