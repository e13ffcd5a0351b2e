"""``backscroll status``: the spec's status fields, as a dict and as text."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from backscroll.store import MemoryStore
from base.clock import now_us

HEARTBEAT = "daemon.json"
# A heartbeat older than this (with a live pid) means the daemon is stuck, not running.
STALE_TICK_SECONDS = 30


def read_heartbeat(home: Path) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads((home / HEARTBEAT).read_bytes())
        return data
    except (FileNotFoundError, ValueError):
        return None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def daemon_state(home: Path, stopped_pids: set[int]) -> dict[str, Any]:
    beat = read_heartbeat(home)
    if beat is None:
        return {"state": "not running"}
    pid = int(beat.get("pid", 0))
    if pid and pid_alive(pid) and pid not in stopped_pids:
        age = (now_us() - int(beat.get("last_tick_us", 0))) / 1e6
        state = "running" if age < STALE_TICK_SECONDS else "not responding"
        return {**beat, "state": state, "tick_age_seconds": round(age, 1)}
    return {**beat, "state": "not running" if pid in stopped_pids else "died"}


def dir_bytes(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except FileNotFoundError:
                continue
    return total


class Stats(msgspec.Struct, frozen=True, kw_only=True):
    """``MemoryStore.stats()``: the spec's status fields."""

    frames: int
    oldest: datetime | None
    newest: datetime | None
    apps: int
    thumb_bytes: int
    db_bytes: int
    total_bytes: int
    text_sources: dict[str, int]
    encrypted_text_frames: int
    thumbnails: int
    encrypted_thumbnails: int
    encrypt_text: bool
    encrypt_thumbnails: bool
    key_store: str | None
    """``keyring`` or ``file``; None before the first encrypted write."""
    encryption_available: bool


def stats(store: MemoryStore) -> Stats:
    info = collect(store)
    fields = {name: info[name] for name in Stats.__struct_fields__}
    for name in ("oldest", "newest"):
        fields[name] = datetime.fromisoformat(info[name]).astimezone() if info[name] else None
    return Stats(**fields)


def collect(store: MemoryStore) -> dict[str, Any]:
    from backscroll import keys

    state = store.state()
    config = store.config
    totals = state.totals()
    stopped = {run.pid for run in state.runs if run.stopped_us is not None}
    now = now_us()
    key = keys.key_status(store.home)
    thumb_bytes = totals.thumb_bytes  # summed from the events: no walk over 1M files
    log_bytes = dir_bytes(store.layout.log)
    view_bytes = dir_bytes(store.layout.views)
    return {
        "daemon": daemon_state(store.home, stopped),
        "capture": capture_state(state.pause, now),
        "store": str(store.home),
        "frames": totals.frames,
        "oldest": _iso(totals.oldest_us),
        "newest": _iso(totals.newest_us),
        "apps": len(totals.apps),
        "thumb_bytes": thumb_bytes,
        "db_bytes": log_bytes + view_bytes,
        "log_bytes": log_bytes,
        "index_bytes": view_bytes,
        "total_bytes": thumb_bytes + log_bytes + view_bytes,
        "storage_cap_mb": config.storage_cap_mb,
        "retention_days": config.retention_days,
        "trigger": config.trigger,
        "poll_seconds": config.poll_seconds,
        "min_interval_seconds": config.min_interval_seconds,
        "interval_seconds": config.interval_seconds,
        "text_sources": {s: totals.text_sources.get(s, 0) for s in ("ax", "none", "ocr")},
        "redact": config.redact,
        "encrypted_text_frames": totals.encrypted_text,
        "thumbnails": totals.thumbnails,
        "encrypted_thumbnails": totals.encrypted_thumbnails,
        "encrypt_text": config.encrypt_text,
        "encrypt_thumbnails": config.encrypt_thumbnails,
        "key_store": key.store,
        "key_problem": key.problem,
        "key_weak": key.weak,
        "encryption_available": keys.ENCRYPTION_AVAILABLE,
        "deny_apps": list(config.deny_apps),
        "pause_hotkey": config.pause_hotkey,
        "search": "tantivy",
        "views_lag": store.lag,
        "views_behind_why": store.behind_why,
        "config_problem": store.config_problem,
        "config_weakened": _weakened(state.weakened),
        "damage": [_damage(d) for d in state.damage] + _lost(store),
        "skipped_events": [f"#{u.offset}: {u.why}" for u in state.unapplied],
    }


def _weakened(weakened: Any) -> str | None:
    if weakened is None:
        return None
    by = "a hand edit of config.json" if weakened.origin == "file" else f"{weakened.origin}"
    return f"{by} at {_iso(weakened.ts_us)} weakened privacy: {'; '.join(weakened.what)}"


def _lost(store: MemoryStore) -> list[str]:
    lost = store.log.lost_tail()
    if lost is None:
        return []
    return [f"offsets {lost[0]}..{lost[1]} lost: their segment was deleted or cut short"]


def _damage(damage: Any) -> str:
    held = (
        f"offsets {damage.first_offset}..{damage.last_offset}"
        if damage.last_offset >= damage.first_offset
        else "no offsets"
    )
    if not damage.aside:
        return f"{held} lost: their segment was deleted or cut short"
    return (
        f"{damage.length:,} unreadable bytes of {damage.segment} ({held}) kept aside as "
        f"log/{damage.aside}"
    )


def capture_state(pause: Any, now: int) -> str:
    if not pause.active(now):
        return "active"
    until = f" until {_iso(pause.until_us)}" if pause.until_us else " until resumed"
    reason = f" ({pause.reason})" if pause.reason else ""
    return f"paused{until}{reason}"


def render(info: dict[str, Any]) -> str:
    d = info["daemon"]
    if d["state"] == "running":
        daemon = f"running (pid {d['pid']}, last tick: {d.get('last_outcome', '?')})"
    elif d["state"] == "died":
        daemon = f"not running (pid {d.get('pid')} died without stopping)"
    else:
        daemon = d["state"]
    span = f"  ({info['oldest']} → {info['newest']})" if info["frames"] else ""
    sources = ", ".join(f"{k} ×{v:,}" for k, v in info["text_sources"].items())
    enc_t = "on" if info["encrypt_thumbnails"] else "off"
    enc_x = "on" if info["encrypt_text"] else "off"
    key = info["key_store"] or "none yet"
    if info["key_weak"]:
        key += " (weaker: a file anyone who can read your home can read)"
    if info["key_problem"]:
        key += f" — {info['key_problem']}"
    trigger = (
        f"events — on app/window change (poll {info['poll_seconds']:g}s, "
        f"≥{info['min_interval_seconds']:g}s apart), idle fallback {info['interval_seconds']:g}s"
        if info["trigger"] == "events"
        else f"interval — every {info['interval_seconds']:g}s"
    )
    lines = [
        "backscroll screen memory",
        f"  daemon:    {daemon}",
        f"  capture:   {info['capture']}",
        f"  store:     {info['store']}",
        f"  frames:    {info['frames']:,}{span}",
        f"  size:      {info['total_bytes'] / 1e6:.1f} MB of {info['storage_cap_mb']} MB cap",
        f"  trigger:   {trigger}",
        f"  retention: {info['retention_days']} days",
        f"  text:      {sources}   redaction {'on' if info['redact'] else 'off'}",
        f"  encrypt:   thumbnails {enc_t} ({info['encrypted_thumbnails']}/{info['thumbnails']} "
        f"stored encrypted); text {enc_x} ({info['encrypted_text_frames']}/{info['frames']}); "
        f"key: {key}",
    ]
    if "redactions" in d:
        lines.append(f"  redacted:  {sum(d['redactions'].values())} secret(s) this daemon run")
    lines += [
        f"  deny list: {', '.join(info['deny_apps'])}",
        f"  hotkey:    {info['pause_hotkey'] or 'off'}{_hotkey_note(d)}",
        f"  search:    Tantivy{_lag(info['views_lag'], info['views_behind_why'])}",
    ]
    if not info["encryption_available"]:
        lines.append(
            "  warning:   the cryptography package is missing: frames are stored unencrypted"
        )
    if info["config_problem"]:
        lines.append(f"  config:    {info['config_problem']}")
    if info["config_weakened"]:
        lines.append(f"  config:    {info['config_weakened']}")
    for damage in info["damage"]:
        lines.append(f"  damage:    {damage}")
    for skipped in info["skipped_events"]:
        lines.append(f"  skipped:   event {skipped}")
    if info["damage"] or info["skipped_events"]:
        lines.append(
            "             (`backscroll verify` has the details; `backscroll clear --damaged` "
            "removes them)"
        )
    return "\n".join(lines)


def _hotkey_note(daemon: dict[str, Any]) -> str:
    note = daemon.get("hotkey_problem")
    return f" (not active: {note})" if note else ""


def _lag(lag: int, why: str = "") -> str:
    return f" (views {lag:,} events behind the log{': ' + why if why else ''})" if lag else ""


def _iso(us: int | None) -> str | None:
    if not us:
        return None
    return datetime.fromtimestamp(us / 1e6).strftime("%Y-%m-%d %H:%M:%S")
