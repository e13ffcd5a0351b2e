"""The day at a glance as an answer and as text: ``query.activity``'s tallies, bounded and
sorted, in the contract's shape (``SummaryAnswer``); and the text every surface shows of it,
a bar per app and window."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeVar

from backscroll.contract.answers import local
from backscroll.contract.summary import (
    AppTime,
    Other,
    Slice,
    Spent,
    SummaryAnswer,
    WindowTime,
)
from query.activity import Activity, Held, Tally

K = TypeVar("K")
S = TypeVar("S", bound=Spent)
BAR = 24
"""Characters of the longest bar."""


def answer_of(
    activity: Activity,
    start: datetime,
    end: datetime,
    app: str | None,
    limit: int,
    gap_seconds: float,
    why_empty: str | None,
    incomplete: str | None,
) -> SummaryAnswer:
    apps, other_apps = _top(activity.apps, limit)
    windows, other_windows = _top(activity.windows, limit)
    return SummaryAnswer(
        start=local(start),
        end=local(end),
        app=app,
        gap_seconds=gap_seconds,
        total=_spent(Spent, activity.us, activity.frames),
        apps=[_spent(AppTime, t.us, t.frames, app=a) for a, t in apps],
        other_apps=other_apps,
        windows=[
            _spent(WindowTime, t.us, t.frames, app=h.app, window=h.window, site=h.site)
            for h, t in windows
        ],
        other_windows=other_windows,
        slice_seconds=round(activity.slice_us / 1_000_000),
        slices=[
            Slice(
                start=local(s.start),
                end=local(s.end),
                seconds=round(s.us / 1_000_000),
                app=s.app,
                app_seconds=round(s.app_us / 1_000_000),
            )
            for s in activity.slices
        ],
        why_empty=why_empty,
        incomplete=incomplete,
    )


def _spent(kind: type[S], us: int, frames: int, **fields: Any) -> S:
    seconds = round(us / 1_000_000)
    return kind(seconds=seconds, minutes=round(seconds / 60, 1), frames=frames, **fields)


def _top(tallies: Mapping[K, Tally], limit: int) -> tuple[list[tuple[K, Tally]], Other]:
    """The ``limit`` longest (ties by name), and the rest summed."""
    ranked = sorted(tallies.items(), key=lambda kv: (-kv[1].us, _name(kv[0])))
    rest = ranked[limit:]
    us, frames = sum(t.us for _, t in rest), sum(t.frames for _, t in rest)
    return ranked[:limit], _spent(Other, us, frames, count=len(rest))


def _name(key: object) -> tuple[str, ...]:
    return (key.app, key.window) if isinstance(key, Held) else (str(key),)


def summary_text(answer: SummaryAnswer) -> str:
    """The totals, then a bar per app and per window or site, longest first."""
    from query.render import span_text

    head = f"Screen memory summary — {span_text(answer.start, answer.end)}"
    lines = [head + (f" — app~'{answer.app}'" if answer.app else "")]
    if not answer.total.frames:
        lines.append(f"  no frames{': ' + answer.why_empty if answer.why_empty else ''}")
        return "\n".join(lines)
    lines.append(
        f"{_duration(answer.total.seconds)} on screen in {answer.total.frames:,} frame(s) "
        f"(a frame counts until the next, at most {answer.gap_seconds:g} s)"
    )
    longest = max([a.seconds for a in answer.apps] + [1])
    lines.append("apps:")
    for each in answer.apps:
        lines.append(_row(each.app, each.seconds, longest))
    if answer.other_apps.count:
        rest = answer.other_apps
        lines.append(_row(f"{rest.count} other app(s)", rest.seconds, longest))
    longest = max([w.seconds for w in answer.windows] + [1])
    lines.append("windows and sites:")
    for window in answer.windows:
        where = f"{window.window or '(untitled)'}" + (" (site)" if window.site else "")
        lines.append(_row(f"[{window.app}] {where}", window.seconds, longest))
    if answer.other_windows.count:
        rest = answer.other_windows
        lines.append(_row(f"{rest.count} other window(s) and site(s)", rest.seconds, longest))
    return "\n".join(lines)


def _row(label: str, seconds: int, longest: int) -> str:
    bar = "█" * max(1 if seconds else 0, round(BAR * seconds / longest))
    shown = label if len(label) <= 48 else label[:47] + "…"
    return f"  {_duration(seconds):>8}  {bar:<{BAR}}  {shown}"


def _duration(seconds: int) -> str:
    """``2h 05m``, ``12m 30s``, ``45s``."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"
