"""The three tools of the screen-memory spec (``screen_memory_status``, ``_recent_context``,
``_recent_segments``) as plain functions of a home: JSON-ready dicts, no MCP SDK."""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from typing import Any

from backscroll.contract import shown_number
from backscroll.status import collect
from backscroll.store import MemoryStore
from base.errors import UsageError
from query.render import group_hits
from query.search import Hit

Home = str | os.PathLike[str] | None

CONTEXT_MINUTES, CONTEXT_MAX_MINUTES = 5, 60
CONTEXT_WINDOWS = 20  # entries in a recent-context answer: bounded, newest first
EXCERPT_CHARS = 280
SEGMENT_MINUTES, SEGMENT_MAX_MINUTES = 60, 24 * 60
SEGMENTS, MAX_SEGMENTS = 20, 100
# Frames read for the recent tools: an hour of events-mode capture is at most one frame per
# 2 s (min_interval_seconds), 1,800 frames.
RECENT_FRAMES = 2000


def status_summary(home: Home) -> dict[str, Any]:
    """``screen_memory_status``: is it recording, what span, how many frames."""
    with MemoryStore(home) as store:
        info = collect(store)
    return {
        "recording": info.daemon.state == "running" and info.capture == "active",
        "capture": info.capture,
        "daemon": info.daemon.state,
        "local_only": True,
        "frames": info.frames,
        "oldest": info.oldest,
        "newest": info.newest,
        "apps": info.apps,
        "text_sources": info.text_sources,
        "thumbnails": info.thumbnails,
        "encrypt_text": info.encrypt_text,
        "encrypt_thumbnails": info.encrypt_thumbnails,
        "retention_days": info.retention_days,
    }


def recent_context(home: Home, minutes: int = CONTEXT_MINUTES) -> dict[str, Any]:
    """``screen_memory_recent_context``: one entry per window of the last ``minutes``."""
    minutes = _at_least_one("minutes", minutes, CONTEXT_MAX_MINUTES)
    start = datetime.now().astimezone() - timedelta(minutes=minutes)
    with MemoryStore(home) as store:
        hits = _recent(store, start)
        windows: dict[tuple[str, str, str], list[Hit]] = {}
        for hit in hits:
            windows.setdefault((hit.app, hit.title, hit.url), []).append(hit)
        latest = sorted(windows.values(), key=lambda g: (g[-1].when, g[-1].id), reverse=True)
        entries = [
            {
                "app": group[-1].app,
                "title": group[-1].title,
                "url": group[-1].url,
                "start": _iso(group[0].when),
                "end": _iso(group[-1].when),
                "frames": len(group),
                "id": group[-1].id,
                "excerpt": _excerpt(store.get(group[-1].id).text or ""),
            }
            for group in latest[:CONTEXT_WINDOWS]
        ]
        why = None if hits else store.why_empty(start, None, None)
    return {
        "minutes": minutes,
        "since": _iso(start),
        "windows": entries,
        "more_windows": max(0, len(latest) - CONTEXT_WINDOWS),
        "why_empty": why,
    }


def recent_segments(
    home: Home, minutes: int = SEGMENT_MINUTES, limit: int = SEGMENTS
) -> dict[str, Any]:
    """``screen_memory_recent_segments``: consecutive frames of one window, newest first."""

    minutes = _at_least_one("minutes", minutes, SEGMENT_MAX_MINUTES)
    limit = _at_least_one("limit", limit, MAX_SEGMENTS)
    start = datetime.now().astimezone() - timedelta(minutes=minutes)
    with MemoryStore(home) as store:
        hits = _recent(store, start)
        why = None if hits else store.why_empty(start, None, None)
    segments = [
        {
            "app": group[0].app,
            "title": group[0].title,
            "url": group[0].url,
            "start": _iso(group[0].when),
            "end": _iso(group[-1].when),
            "frame_ids": [h.id for h in group],
        }
        for group in group_hits(hits)[::-1][:limit]
    ]
    return {"minutes": minutes, "since": _iso(start), "segments": segments, "why_empty": why}


def _recent(store: MemoryStore, start: datetime) -> list[Hit]:
    """The latest frames since ``start``, oldest first. The timeline's latest-N read stops at
    the newest partitions; a window bound would read from its start instead."""
    return [hit for hit in store.timeline(limit=RECENT_FRAMES) if hit.when >= start]


def _at_least_one(name: str, value: int, most: int) -> int:
    """``value`` when it is 1 or more, capped at ``most`` as the tool descriptions say: a
    wider ask still gets the bounded answer, but zero or less is a mistake, not "a little"."""
    if value < 1:
        raise UsageError(f"{name}: must be at least 1, not {shown_number(value)}")
    return min(value, most)


def _iso(when: datetime) -> str:
    return when.astimezone().isoformat(timespec="seconds")


def _excerpt(text: str) -> str:
    folded = " ".join(text.split())
    return folded if len(folded) <= EXCERPT_CHARS else folded[: EXCERPT_CHARS - 1] + "…"
