"""Plain-text renderings shared by the CLI and the agent tools (the spec's output format)."""

from __future__ import annotations

from datetime import datetime

from query.moments import Moment
from query.search import Hit


def stamp(when: datetime | None) -> str:
    """``when`` in local time to the second, as every listing shows a moment ("…": none)."""
    return when.astimezone().strftime("%Y-%m-%d %H:%M:%S") if when else "…"


def _at(hit: Hit) -> str:
    """The page's address after a window's title, where a browser gave one."""
    return f"  <{hit.url}>" if hit.url else ""


def span_text(start: datetime | None, end: datetime | None) -> str:
    if start is None and end is None:
        return "all time"
    return f"{stamp(start)} → {stamp(end) if end else 'now'}"


def _heading(what: str, start: datetime | None, end: datetime | None, app: str | None) -> str:
    """The spec's first line: what, the resolved window, and the app filter."""
    return f"Screen memory {what} — {span_text(start, end)}" + (f" — app~'{app}'" if app else "")


def search_text(
    query: str,
    moments: list[Moment],
    start: datetime | None,
    end: datetime | None,
    app: str | None,
    why_empty: str | None = None,
) -> str:
    """One entry per moment: its best frame, and when a moment holds several frames, the
    times they were seen and how many."""
    count = f"{len(moments)} match(es), best first:"
    if moments and moments[0].hit.near_miss:
        count = f"0 match(es) with every term; {len(moments)} near miss(es) with some, best first:"
    elif moments and moments[0].hit.fuzzy:
        count = (
            f"0 exact match(es); {len(moments)} fuzzy match(es), a word one letter off in OCR'd "
            "text, newest first:"
        )
    lines = [_heading(f"search '{query}'", start, end, app), count]
    for moment in moments:
        hit = moment.hit
        line = f"  #{hit.id:<6} {stamp(hit.when)}  [{hit.app}] — {hit.title}{_at(hit)}"
        if len(moment.frames) > 1:
            line += f"  (seen {seen_text(moment)}, {len(moment.frames)} frames)"
        lines.append(line)
        if hit.snippet:
            lines.append(f"          {hit.snippet}")
    if why_empty:
        lines.append(f"  {why_empty}")
    return "\n".join(lines)


def seen_text(moment: Moment) -> str:
    """``10:02:05–10:17:40``: the first and last time a moment was seen, in local time; the
    date too when they fall on different days."""
    first, last = moment.first_seen.astimezone(), moment.last_seen.astimezone()
    if first.date() != last.date():
        return f"{stamp(first)} – {stamp(last)}"
    return f"{first:%H:%M:%S}–{last:%H:%M:%S}"


def timeline_text(
    hits: list[Hit],
    start: datetime | None,
    end: datetime | None,
    app: str | None,
    why_empty: str | None = None,
) -> str:
    lines = [_heading("timeline", start, end, app)]
    for group in group_hits(hits):
        first, last = group[0], group[-1]
        span = stamp(first.when)
        if len(group) > 1:
            span += f" – {last.when.astimezone().strftime('%H:%M:%S')}"
        ids = ", ".join(f"#{h.id}" for h in group)
        lines.append(f"  {span}  [{first.app}] — {first.title}{_at(first)}  ({ids})")
    if not hits:
        lines.append(f"  no frames{': ' + why_empty if why_empty else ''}")
    return "\n".join(lines)


def group_hits(hits: list[Hit]) -> list[list[Hit]]:
    """Consecutive frames of one window (and page), grouped: a day reads like a diary."""
    groups: list[list[Hit]] = []
    for hit in hits:
        last = groups[-1][-1] if groups else None
        if last is not None and (last.app, last.title, last.url) == (hit.app, hit.title, hit.url):
            groups[-1].append(hit)
        else:
            groups.append([hit])
    return groups


def show_text(hit: Hit) -> str:
    lines = [
        f"#{hit.id}  {stamp(hit.when)}  [{hit.app}] — {hit.title}",
        *([f"url: {hit.url}"] if hit.url else []),
        f"text_source: {hit.text_source}   encrypted: {str(hit.encrypted).lower()}   "
        f"reason: {hit.reason}   thumbnail: {'yes' if hit.thumb else 'no'}",
    ]
    if hit.problem:
        lines.append(f"problem: {hit.problem}")
    lines += ["", hit.text or ""]
    return "\n".join(lines)
