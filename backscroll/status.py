"""``backscroll status``: the store's stats beside the daemon's heartbeat and the config.

``collect`` makes the answer contract's ``Status`` (``status --json``, the agent tools), and
``render`` its text. The stats themselves are ``backscroll.stats``, below the store, so that
the store never needs this module.
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

from backscroll import keys
from backscroll.contract import Counts, DaemonState, DaemonStatus, Status
from backscroll.heartbeat import read_heartbeat
from backscroll.keep import Keeper
from backscroll.manage import stuck
from backscroll.stats import disk_use, stats
from backscroll.store import MemoryStore
from base.clock import now_us
from base.processes import pid_alive
from projector.state import Damage, Pause, Weakened

# A heartbeat older than this (with a live pid) means the daemon is stuck, not running.
STALE_TICK_SECONDS = 30
LOCAL_SECOND = "%Y-%m-%d %H:%M:%S"


def collect(store: MemoryStore) -> Status:
    """The store's status now, with its daemon's last heartbeat."""
    state = store.state()
    config = store.config
    totals = state.totals()
    key = keys.key_status(store.home)  # once: it asks the key store, which may be slow
    disk = disk_use(store.layout, totals)
    counts = stats(totals, config, disk, key.store)
    stopped = {run.pid for run in state.runs if run.stopped_us is not None}
    daemon = _daemon_state(store.home, stopped)
    backend, abilities = _backend(daemon, config.capture_backend)
    memories, proposed, due = Keeper(store).counts()
    shared = {name: getattr(counts, name) for name in Counts.__struct_fields__}
    meaning_frames, meaning = _meaning(store, totals.frames)
    return Status(
        **shared,
        daemon=daemon,
        capture=_capture_state(state.pause, now_us()),
        store=str(store.home),
        oldest=_shown(counts.oldest),
        newest=_shown(counts.newest),
        log_bytes=disk.log,
        index_bytes=disk.views,
        storage_cap_mb=config.storage_cap_mb,
        retention_days=config.retention_days,
        trigger=config.trigger,
        poll_seconds=config.poll_seconds,
        min_interval_seconds=config.min_interval_seconds,
        interval_seconds=config.interval_seconds,
        redact=config.redact,
        key_problem=key.problem,
        key_weak=key.weak,
        deny_apps=list(config.deny_apps),
        pause_hotkey=config.pause_hotkey,
        search="tantivy",
        views_lag=store.lag,
        views_behind_why=store.behind_why,
        views_damaged=_views_damaged(store),
        config_problem=store.config_problem,
        config_weakened=_weakened(state.weakened),
        damage=[_damage(d) for d in state.damage] + _lost(store),
        skipped_events=[f"#{u.offset}: {u.why}" for u in state.unapplied],
        deletions_stuck=[stuck(d) for d in state.stuck_deletions()],
        backend=backend,
        abilities=abilities,
        memories=memories,
        memories_proposed=proposed,
        intentions_due=due,
        meaning_frames=meaning_frames,
        meaning=meaning,
    )


def _meaning(store: MemoryStore, frames: int) -> tuple[int, str]:
    """Frames embedded and the status line, read from the view's manifest: the model is not
    loaded for it."""
    from projector.embedder import available
    from projector.vectors import Manifest

    if not store.config.meaning:
        return 0, "off (config.json: meaning false)"
    if not available():
        return 0, "off: its model is not installed (make install)"
    done = min(Manifest.load(store.layout.views / "meaning").frames, frames)
    line = f"{done:,} of {frames:,} frames embedded"
    if done < frames:
        line += " (the daemon, an import or a reindex embeds the rest)"
    return done, line


def render(info: Status) -> str:
    span = f"  ({info.oldest} → {info.newest})" if info.frames else ""
    sources = ", ".join(f"{k} ×{v:,}" for k, v in info.text_sources.items())
    enc_t = "on" if info.encrypt_thumbnails else "off"
    enc_x = "on" if info.encrypt_text else "off"
    key = info.key_store or "none yet"
    if info.key_weak:
        key += " (weaker: a file anyone who can read your home can read)"
    if info.key_problem:
        key += f" — {info.key_problem}"
    trigger = (
        f"events — on app/window change (poll {info.poll_seconds:g}s, "
        f"≥{info.min_interval_seconds:g}s apart), idle fallback {info.interval_seconds:g}s"
        if info.trigger == "events"
        else f"interval — every {info.interval_seconds:g}s"
    )
    lines = [
        "backscroll screen memory",
        f"  daemon:    {_daemon(info.daemon)}",
        *_captured(info.daemon),
        f"  capture:   {info.capture}",
        f"  store:     {info.store}",
        f"  frames:    {info.frames:,}{span}",
        f"  size:      {info.total_bytes / 1e6:.1f} MB of {info.storage_cap_mb} MB cap",
        f"  trigger:   {trigger}",
        f"  retention: {info.retention_days} days",
        f"  text:      {sources}   redaction {'on' if info.redact else 'off'}",
        f"  encrypt:   thumbnails {enc_t} ({info.encrypted_thumbnails}/{info.thumbnails} "
        f"stored encrypted); text {enc_x} ({info.encrypted_text_frames}/{info.frames}); "
        f"key: {key}",
    ]
    daemon = info.daemon
    if daemon.redactions is not None:
        lines.append(f"  redacted:  {sum(daemon.redactions.values())} secret(s) this daemon run")
    lines.append(f"  desktop:   {info.backend or 'no capture backend here'}")
    lines += [f"             {line}" for line in info.abilities]
    lines += [
        f"  deny list: {', '.join(info.deny_apps)}",
        f"  hotkey:    {info.pause_hotkey or 'off'}{_hotkey_note(daemon)}",
        f"  search:    Tantivy{_lag(info.views_lag, info.views_behind_why)}",
        f"  kept:      {info.memories:,} memories, {info.memories_proposed:,} waiting for "
        f"review, {info.intentions_due:,} intentions due",
        f"  meaning:   {info.meaning}",
    ]
    if not info.encryption_available:
        lines.append(
            "  warning:   the cryptography package is missing: frames are stored unencrypted"
        )
    if info.views_damaged:
        lines.append(f"  views:     {info.views_damaged}")
    if info.config_problem:
        lines.append(f"  config:    {info.config_problem}")
    if info.config_weakened:
        lines.append(f"  config:    {info.config_weakened}")
    for damage in info.damage:
        lines.append(f"  damage:    {damage}")
    for skipped in info.skipped_events:
        lines.append(f"  skipped:   event {skipped}")
    for line in info.deletions_stuck:
        lines.append(f"  deletion:  {line}")
    if info.damage or info.skipped_events:
        lines.append(
            "             (`backscroll verify` has the details; `backscroll clear --damaged` "
            "removes them)"
        )
    return "\n".join(lines)

    return True


def _daemon_state(home: Path, stopped_pids: set[int]) -> DaemonStatus:
    beat = read_heartbeat(home)
    if beat is None:
        return DaemonStatus(state="not running")
    if pid_alive(beat.pid) and beat.pid not in stopped_pids:
        age = (now_us() - beat.last_tick_us) / 1e6
        state: DaemonState = "running" if age < STALE_TICK_SECONDS else "not responding"
        return DaemonStatus.of(state, beat, round(age, 1))
    return DaemonStatus.of("not running" if beat.pid in stopped_pids else "died", beat, None)


def _weakened(weakened: Weakened | None) -> str | None:
    if weakened is None:
        return None
    by = "a hand edit of config.json" if weakened.origin == "file" else weakened.origin
    return f"{by} at {_iso(weakened.ts_us)} weakened privacy: {'; '.join(weakened.what)}"


def _lost(store: MemoryStore) -> list[str]:
    lost = store.log.lost_tail()
    if lost is None:
        return []
    return [f"offsets {lost[0]}..{lost[1]} lost: their segment was deleted or cut short"]


def _damage(damage: Damage) -> str:
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


def _capture_state(pause: Pause, now: int) -> str:
    if not pause.active(now):
        return "active"
    until = f" until {_iso(pause.until_us)}" if pause.until_us else " until resumed"
    reason = f" ({pause.reason})" if pause.reason else ""
    return f"paused{until}{reason}"


def _daemon(daemon: DaemonStatus) -> str:
    if daemon.pid is not None and daemon.state == "running":
        return f"running (pid {daemon.pid}, last tick: {daemon.last_outcome or '?'})"
    if daemon.pid is not None and daemon.state == "died":
        return f"not running (pid {daemon.pid} died without stopping)"
    return daemon.state


def _captured(daemon: DaemonStatus) -> list[str]:
    """When a live daemon last finished a capture: its ticks alone said "running" while an
    OCR worker that never answered held capture stopped (issue 24, case 5)."""
    if daemon.state not in ("running", "not responding"):
        return []
    if daemon.last_capture_us is None:
        return ["  captured:  nothing yet this run"]
    ago = (now_us() - daemon.last_capture_us) / 1e6
    return [f"  captured:  last at {_iso(daemon.last_capture_us)} ({_ago(ago)})"]


def _ago(seconds: float) -> str:
    if seconds < 120:
        return f"{max(0, round(seconds))} s ago"
    if seconds < 7200:
        return f"{round(seconds / 60)} min ago"
    return f"{seconds / 3600:.1f} h ago"


def _backend(daemon: DaemonStatus, choice: str) -> tuple[str | None, list[str]]:
    """The running daemon's backend and abilities; else what ``start`` would pick here."""
    if daemon.state == "running" and daemon.backend:
        return daemon.backend, list(daemon.abilities or ())
    import os

    from capture.backends import session

    if sys.platform.startswith("linux"):
        found = session(os.environ, choice)
        if found.backend is None:
            return None, [found.refusal or "no capture backend for this session"]
        kind = "Wayland" if found.wayland else "X11"
        where = f"{kind}, {found.desktop}" if found.desktop else kind
        return found.backend, [f"would be used by `backscroll start` ({where})"]
    return None, [f"capture on {sys.platform} is not supported"]


def _hotkey_note(daemon: DaemonStatus) -> str:
    note = daemon.hotkey_problem
    return f" (not active: {note})" if note else ""


def _lag(lag: int, why: str = "") -> str:
    return f" (views {lag:,} events behind the log{': ' + why if why else ''})" if lag else ""


def _shown(when: datetime | None) -> str | None:
    return when.strftime(LOCAL_SECOND) if when else None


def _iso(us: int | None) -> str | None:
    if not us:
        return None
    return datetime.fromtimestamp(us / 1e6).strftime(LOCAL_SECOND)


def _views_damaged(store: MemoryStore) -> str | None:
    """The views met damaged: the state and the search view's manifest, which ``status``
    reads (a month's index is met by the reads that open it)."""
    store.views.manifest()
    return store.views.incomplete()
