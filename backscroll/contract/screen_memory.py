"""The three tools of the screen-memory spec (``screen_memory_status``,
``screen_memory_recent_context``, ``screen_memory_recent_segments``): their requests and
answers, in that spec's shapes (no ``action``: agents written against it read them as they
are). A number past its most reads as the most, as the spec's tools do; below 1 it is
refused."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from backscroll.contract.answers import Time
from backscroll.contract.requests import Request

CONTEXT_MINUTES, CONTEXT_MAX_MINUTES = 5, 60
SEGMENT_MINUTES, SEGMENT_MAX_MINUTES = 60, 24 * 60
SEGMENTS, MAX_SEGMENTS = 20, 100


def _at_most(what: str, default: int, most: int) -> str:
    return f"{what}: at least 1, default {default}; more than {most} reads as {most}"


class ContextRequest(Request):
    minutes: Annotated[
        int,
        Meta(
            ge=1,
            description=_at_most("How far back, in minutes", CONTEXT_MINUTES, CONTEXT_MAX_MINUTES),
        ),
    ] = CONTEXT_MINUTES


class StretchesRequest(Request):
    minutes: Annotated[
        int,
        Meta(
            ge=1,
            description=_at_most("How far back, in minutes", SEGMENT_MINUTES, SEGMENT_MAX_MINUTES),
        ),
    ] = SEGMENT_MINUTES
    limit: Annotated[
        int, Meta(ge=1, description=_at_most("Most segments to return", SEGMENTS, MAX_SEGMENTS))
    ] = SEGMENTS


class ScreenMemoryStatus(msgspec.Struct, kw_only=True):
    """Is it recording, what span, how many frames (the ``status`` answer, in brief)."""

    recording: bool
    capture: str
    daemon: str
    local_only: Literal[True] = True
    frames: int
    oldest: str | None
    newest: str | None
    apps: int
    text_sources: dict[str, int]
    thumbnails: int
    encrypt_text: bool
    encrypt_thumbnails: bool
    retention_days: int


class WindowSeen(msgspec.Struct, kw_only=True):
    """A window of the last minutes: its first and last time, its latest frame's excerpt."""

    app: str
    title: str
    url: str
    start: Time
    end: Time
    frames: int
    id: int
    """Its latest frame (``memory`` action ``show``)."""
    excerpt: str


class RecentContext(msgspec.Struct, kw_only=True):
    minutes: int
    since: Time
    windows: list[WindowSeen]
    """Newest first, at most 20."""
    more_windows: int
    why_empty: str | None
    incomplete: str | None = None
    """Why windows may be missing (a damaged view, and the command that rebuilds it)."""


class Stretch(msgspec.Struct, kw_only=True):
    """A stretch of time in one window."""

    app: str
    title: str
    url: str
    start: Time
    end: Time
    frame_ids: list[int]


class RecentStretches(msgspec.Struct, kw_only=True):
    minutes: int
    since: Time
    segments: list[Stretch]
    """Newest first."""
    why_empty: str | None
    incomplete: str | None = None
    """Why stretches may be missing (a damaged view, and the command that rebuilds it)."""
