"""Why a search or timeline found nothing, when the log knows: an agent must tell "you never
saw it" from "it was not recorded"."""

from __future__ import annotations

from datetime import datetime

from base.config import Config
from projector.state import State

_FAR = 2**62


def _us(when: datetime | None, default: int) -> int:
    return int(when.timestamp() * 1_000_000) if when else default


def _overlaps(a0: int, a1: int, b0: int, b1: int) -> bool:
    return a0 < b1 and b0 < a1


def why_empty(
    state: State,
    config: Config,
    start: datetime | None,
    end: datetime | None,
    app: str | None,
    now_us: int,
) -> str | None:
    lo, hi = _us(start, 0), _us(end, now_us)
    reasons: list[str] = []
    if app and any(p.lower() in app.lower() or app.lower() in p.lower() for p in config.deny_apps):
        reasons.append(f"'{app}' matches the deny list, so it is never recorded")
    for pause in state.pauses:
        if _overlaps(lo, hi, pause.since_us, pause.until_us or now_us):
            reasons.append("capture was paused during part of this window")
            break
    for deletion in state.deletions:
        scope = deletion.scope
        s0 = 0 if scope.since_us is None else scope.since_us
        s1 = _FAR if scope.until_us is None else scope.until_us
        app_ok = not app or scope.app is None or scope.app.lower() in app.lower()
        if _overlaps(lo, hi, s0, s1) and app_ok:
            when = datetime.fromtimestamp(deletion.requested_us / 1e6).strftime("%Y-%m-%d %H:%M")
            what = f" of app~'{scope.app}'" if scope.app is not None else ""
            kind = "expired (retention)" if deletion.reason == "retention" else "were deleted"
            reasons.append(f"frames{what} here {kind} on {when} ({deletion.reason})")
    cutoff = now_us - config.retention_days * 86_400_000_000
    if lo < cutoff:
        reasons.append(f"frames older than {config.retention_days} days expire (retention)")
    if not _daemon_ran(state, lo, hi, now_us):
        reasons.append("no capture daemon was running in this window")
    return "; ".join(reasons) or None


def _daemon_ran(state: State, lo: int, hi: int, now_us: int) -> bool:
    runs = sorted(state.runs, key=lambda r: r.started_us)
    for i, run in enumerate(runs):
        # A run without a stop ends at the next start (a crash) or now.
        stop = run.stopped_us or (runs[i + 1].started_us if i + 1 < len(runs) else now_us)
        if _overlaps(lo, hi, run.started_us, stop):
            return True
    return False
