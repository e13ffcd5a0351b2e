"""The three tools of the screen-memory spec (``screen_memory_status``, ``_recent_context``,
``_recent_segments``) as plain functions of a home: the contract's answers
(``backscroll/contract/screen_memory.py``), no MCP SDK."""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from backscroll.contract.answers import local
from backscroll.contract.screen_memory import (
    CONTEXT_MAX_MINUTES,
    MAX_SEGMENTS,
    SEGMENT_MAX_MINUTES,
    ContextRequest,
    RecentContext,
    RecentStretches,
    ScreenMemoryStatus,
    Stretch,
    StretchesRequest,
    WindowSeen,
)
from backscroll.status import collect
from backscroll.store import MemoryStore
from query.render import group_hits
from query.search import Hit

Home = str | os.PathLike[str] | None

CONTEXT_WINDOWS = 20  # entries in a recent-context answer: bounded, newest first
EXCERPT_CHARS = 280
# Frames read for the recent tools: an hour of events-mode capture is at most one frame per
# 2 s (min_interval_seconds), 1,800 frames.
RECENT_FRAMES = 2000


def status_summary(home: Home) -> ScreenMemoryStatus:
    """``screen_memory_status``: is it recording, what span, how many frames."""
    with MemoryStore(home) as store:
        info = collect(store)
    return ScreenMemoryStatus(
        recording=info.daemon.state == "running" and info.capture == "active",
        capture=info.capture,
        daemon=info.daemon.state,
        frames=info.frames,
        oldest=info.oldest,
        newest=info.newest,
        apps=info.apps,
        text_sources=info.text_sources,
        thumbnails=info.thumbnails,
        encrypt_text=info.encrypt_text,
        encrypt_thumbnails=info.encrypt_thumbnails,
        retention_days=info.retention_days,
    )


def recent_context(home: Home, request: ContextRequest) -> RecentContext:
    """``screen_memory_recent_context``: one entry per window of the last minutes."""
    minutes = min(request.minutes, CONTEXT_MAX_MINUTES)
    start = local(datetime.now()) - timedelta(minutes=minutes)
    with MemoryStore(home) as store:
        hits = _recent(store, start)
        windows: dict[tuple[str, str, str], list[Hit]] = {}
        for hit in hits:
            windows.setdefault((hit.app, hit.title, hit.url), []).append(hit)
        latest = sorted(windows.values(), key=lambda g: (g[-1].when, g[-1].id), reverse=True)
        entries = [
            WindowSeen(
                app=group[-1].app,
                title=group[-1].title,
                url=group[-1].url,
                start=local(group[0].when),
                end=local(group[-1].when),
                frames=len(group),
                id=group[-1].id,
                excerpt=_excerpt(store.get(group[-1].id).text or ""),
            )
            for group in latest[:CONTEXT_WINDOWS]
        ]
        why = None if hits else store.why_empty(start, None, None)
        incomplete = store.views.incomplete()
    return RecentContext(
        minutes=minutes,
        since=start,
        windows=entries,
        more_windows=max(0, len(latest) - CONTEXT_WINDOWS),
        why_empty=why,
        incomplete=incomplete,
    )


def recent_stretches(home: Home, request: StretchesRequest) -> RecentStretches:
    """``screen_memory_recent_segments``: consecutive frames of one window, newest first."""
    minutes = min(request.minutes, SEGMENT_MAX_MINUTES)
    limit = min(request.limit, MAX_SEGMENTS)
    start = local(datetime.now()) - timedelta(minutes=minutes)
    with MemoryStore(home) as store:
        hits = _recent(store, start)
        why = None if hits else store.why_empty(start, None, None)
        incomplete = store.views.incomplete()
    segments = [
        Stretch(
            app=group[0].app,
            title=group[0].title,
            url=group[0].url,
            start=local(group[0].when),
            end=local(group[-1].when),
            frame_ids=[h.id for h in group],
        )
        for group in group_hits(hits)[::-1][:limit]
    ]
    return RecentStretches(
        minutes=minutes, since=start, segments=segments, why_empty=why, incomplete=incomplete
    )


def _recent(store: MemoryStore, start: datetime) -> list[Hit]:
    """The latest frames since ``start``, oldest first. The timeline's latest-N read stops at
    the newest partitions; a window bound would read from its start instead."""
    return [hit for hit in store.timeline(limit=RECENT_FRAMES) if hit.when >= start]


def _excerpt(text: str) -> str:
    folded = " ".join(text.split())
    return folded if len(folded) <= EXCERPT_CHARS else folded[: EXCERPT_CHARS - 1] + "…"
