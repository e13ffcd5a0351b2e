"""The line an agent reads of a kept memory, and the times every answer gives: dates on
every line, as 002's critique and basic-memory's measurements ask (a date in each hit lifted
multi-hop answers from 4/63 to 40/63)."""

from __future__ import annotations

from datetime import UTC, datetime

from backscroll.contract.answers import local
from projector.kept import Kept


def line(memory: Kept, text: str, value: str, kept_until: int | None) -> str:
    """The line an agent reads: the text, then its kind, claim, dates and source."""
    parts = [f"{memory.kind}, space {memory.space}"]
    if memory.subject is not None:
        context = f" ({memory.context})" if memory.context else ""
        parts.append(f"claim {memory.subject} {memory.predicate}{context} = {value or '—'}")
    dates = f"kept {day(memory.created_us)}"
    if memory.version > 1:
        dates += f", revised {day(memory.updated_us)} (version {memory.version})"
    if memory.valid_from_us is not None:
        dates += f", valid from {day(memory.valid_from_us)}"
    if memory.valid_until_us is not None:
        dates += f", valid until {day(memory.valid_until_us)}"
    if memory.due_us is not None:
        dates += f", due {minute(memory.due_us)}"
    dates += f", kept until {day(kept_until)}" if kept_until else ", kept until forgotten"
    parts.append(dates)
    frame = frame_of(memory.source)
    if frame is not None:
        parts.append(f"source: seen on screen, frame {frame}")
    else:
        parts.append(f"source: {memory.source}" if memory.source else "source: none given")
    if memory.proposed:
        parts.append("proposed, waiting for review")
    return f"{text} [{'; '.join(parts)}]"


def frame_of(source: str) -> int | None:
    if not source.startswith("frame:"):
        return None
    digits = source.removeprefix("frame:")
    return int(digits) if digits.isdecimal() and len(digits) <= 18 else None


def time_of(us: int) -> datetime:
    return local(datetime.fromtimestamp(us / 1_000_000, UTC))


def maybe_time(us: int | None) -> datetime | None:
    return None if us is None else time_of(us)


def day(us: int) -> str:
    return time_of(us).strftime("%Y-%m-%d")


def minute(us: int) -> str:
    return time_of(us).strftime("%Y-%m-%d %H:%M")
