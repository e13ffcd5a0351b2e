"""The day at a glance: time per app and per window or site over a span, and the strip of
which app held the screen, from frame times (``query/activity.py`` says how a frame's time
is counted)."""

from __future__ import annotations

from typing import Annotated

import msgspec

from backscroll.contract.answers import Scope, Time
from backscroll.contract.requests import AppText, Request, Text, Until
from backscroll.contract.words import MAX_SUMMARY_LIMIT, SUMMARY_LIMIT, SUMMARY_SINCE


class SummaryRequest(Request):
    since: Annotated[Text | None, msgspec.Meta(description=SUMMARY_SINCE)] = None
    until: Until = None
    app: AppText = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=MAX_SUMMARY_LIMIT, description=SUMMARY_LIMIT)] = 15


class Spent(msgspec.Struct, kw_only=True):
    """Time on screen: whole seconds, the same in minutes (to a tenth), and the frames it
    was counted from."""

    seconds: int
    minutes: float
    frames: int


class AppTime(Spent, kw_only=True):
    app: str


class WindowTime(Spent, kw_only=True):
    app: str
    window: str
    """The window's title; for a browser's page, the page's site (``site``)."""
    site: bool


class Other(Spent, kw_only=True):
    """What the list leaves out, summed."""

    count: int
    """How many apps (or windows and sites) that is."""


class Slice(msgspec.Struct, kw_only=True):
    """A slice of the strip (an hour, or one or more days): time on screen in it, and the
    app that held the screen longest (None: none did)."""

    start: Time
    end: Time
    seconds: int
    app: str | None
    app_seconds: int


class SummaryAnswer(Scope, kw_only=True, tag="summary"):
    gap_seconds: float
    """A frame counts until the next one, for at most this long (two of the capture's idle
    intervals): a longer silence is time away."""
    total: Spent
    apps: list[AppTime]
    """Longest first (ties by name), at most ``limit``."""
    other_apps: Other
    windows: list[WindowTime]
    """Longest first, at most ``limit``."""
    other_windows: Other
    slice_seconds: int
    """Each slice's length: 3600 (an hour), or a multiple of a day for a long span."""
    slices: list[Slice]
    why_empty: str | None
    incomplete: str | None = None
    """Why the answer may lack frames (a damaged view, and the command that rebuilds it);
    None when it is whole."""
