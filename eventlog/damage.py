"""Unreadable bytes: copied aside before any repair or rewrite leaves them out, and reported
until the person discards them. Recovery never silently drops bytes.

Torn tails are kept beside their segment (``<segment>.<position>.torn``); ranges a rewrite
leaves out go into ``damaged/`` (``<segment>.<position>.damaged``). Each copy is named by a
``DamageFound`` event that the log appends with its next batch.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable
from pathlib import Path

import zstandard

from base.clock import now_us
from base.fs import FileSystem, ensure_dir
from eventlog import codec
from eventlog._warn import warn
from eventlog.events import DamageFound, Event
from eventlog.folder import DAMAGED_DIR, DAMAGED_SUFFIX, Segment, base_of
from eventlog.format import BLOCK, BLOCK_MAGIC, HEADER, KIND_ACTIVE, MAGIC, RECORD, TORN_SUFFIX
from eventlog.segment import Header, Problem, Record, pack_header, write_file


def keep_torn_tail(fs: FileSystem, folder: Path, path: Path, torn: bytes, end: int) -> Path:
    """Copy the torn bytes aside, then truncate the active segment at ``path`` to ``end``
    (where its valid records end; 0 when even the header is incomplete)."""
    aside = path.with_name(f"{path.name}.{end}{TORN_SUFFIX}")
    for n in itertools.count(1):  # torn twice at the same place: keep both
        if not aside.exists():
            break
        aside = path.with_name(f"{path.name}.{end}.{n}{TORN_SUFFIX}")
    if torn:  # (a segment created and never written holds nothing to keep)
        write_file(fs, aside, torn)
        # The copy must be durable before the truncation is: a power cut between them
        # would otherwise lose the torn bytes.
        fs.fsync_dir(folder)
    f = fs.append(path)
    try:
        f.truncate(end)
        if end == 0:
            # The crash hit while the header was written: write it again.
            f.write(pack_header(Header(KIND_ACTIVE, base_of(path), now_us())))
        f.fsync()
    finally:
        f.close()
    if torn:
        warn(
            __name__,
            "event log: torn tail of %d bytes in %s kept aside as %s",
            len(torn),
            path.name,
            aside.name,
        )
    return aside


def torn_record(
    path: Path, position: int, torn: bytes, offset: int, aside: Path
) -> DamageFound | None:
    """The damage to report for a torn tail kept ``aside``, when it holds a whole record.

    A complete record that fails its check was written whole, so its append may have
    returned before it was damaged: its ``offset`` is never handed out again, and it is
    reported until the person discards it. A cut-off append is short: never acknowledged.
    """
    whole = len(torn) >= RECORD.size and len(torn) >= RECORD.size + RECORD.unpack_from(torn)[0]
    if not whole:
        return None
    return DamageFound(
        ts_us=now_us(),
        segment=path.name,
        position=position,
        length=len(torn),
        first_offset=offset,
        last_offset=offset,
        aside=aside.name,
        rewrite="recovery",
    )


def offsets_lost(first: int, last: int) -> DamageFound:
    """The damage to report for offsets handed out that no segment holds any more: a segment
    was deleted (or cut short) behind the log's back."""
    warn(__name__, "event log: offsets %d..%d are missing (a segment was deleted?)", first, last)
    return DamageFound(
        ts_us=now_us(), segment="", first_offset=first, last_offset=last, rewrite="recovery"
    )


def keep_aside(
    fs: FileSystem,
    folder: Path,
    segment: Segment,
    problems: list[Problem],
    records: list[Record],
    end_offset: int,
    rewrite: str,
) -> list[DamageFound]:
    """Before a rewrite replaces ``segment`` with its readable ``records``: no rewrite makes
    damage disappear, so every unreadable range is copied aside byte for byte (and fsynced).
    Returns the ``DamageFound`` for each, for the log's next batch."""
    ranges = [p for p in problems if p.length]
    if not ranges:
        return []
    found = []
    damaged = ensure_dir(folder / DAMAGED_DIR)
    with open(segment.path, "rb") as f:
        for problem in ranges:
            f.seek(problem.position)
            data = f.read(problem.length)
            name = f"{segment.path.name}.{problem.position}{DAMAGED_SUFFIX}"
            write_file(fs, damaged / name, data)
            first = problem.offset if problem.offset is not None else segment.base
            later = bisect.bisect_left([r.offset for r in records], first)
            last = (records[later].offset if later < len(records) else end_offset) - 1
            found.append(
                DamageFound(
                    ts_us=now_us(),
                    segment=segment.path.name,
                    position=problem.position,
                    length=len(data),
                    first_offset=first,
                    last_offset=max(last, first - 1),
                    aside=f"{DAMAGED_DIR}/{name}",
                    rewrite=rewrite,
                )
            )
            warn(__name__, "event log: %s; kept aside as %s/%s", problem, DAMAGED_DIR, name)
    # The copies must be durable before the rewrite that leaves the bytes out commits.
    fs.fsync_dir(damaged)
    fs.fsync_dir(folder)
    return found


def damaged(folder: Path) -> list[Path]:
    """The copies of unreadable ranges kept aside, oldest first."""
    kept = folder / DAMAGED_DIR
    if not kept.is_dir():
        return []
    return sorted(kept.iterdir())


def torn_tails(folder: Path) -> list[Path]:
    """The torn tails kept beside their segments, acknowledged or not: a cut-off append was
    never acknowledged, so no event names it, but its bytes may still hold screen text."""
    try:
        return sorted(p for p in folder.iterdir() if p.name.endswith(TORN_SUFFIX))
    except FileNotFoundError:
        return []


def may_hold(data: bytes, wanted: Callable[[Event], bool]) -> bool:
    """Whether bytes kept aside may hold an event ``wanted`` picks. No only when they frame
    up, every byte, into records whose payloads decode (their checksums aside: a failed one
    is often why they were kept) and none of which it picks; a sealed segment's block is
    decompressed first. A segment's header holds no event."""
    if data[: len(MAGIC)] == MAGIC and len(data) <= HEADER.size:
        return False
    if data[: len(BLOCK_MAGIC)] == BLOCK_MAGIC:
        try:
            data = zstandard.ZstdDecompressor().decompress(data[BLOCK.size :])
        except zstandard.ZstdError:
            return True
    pos = 0
    while pos < len(data):
        if pos + RECORD.size > len(data):
            return True
        stop = pos + RECORD.size + RECORD.unpack_from(data, pos)[0]
        if stop > len(data):
            return True
        try:
            event = codec.decode(data[pos + RECORD.size : stop])
        except (ValueError, KeyError, TypeError):  # msgspec's errors are ValueErrors
            return True
        if wanted(event):
            return True
        pos = stop
    return False


def aside_path(folder: Path, aside: str) -> Path | None:
    """The copy an event names, if it exists and is one the log makes: a hand-made event
    must not point ``clear --damaged`` at any other file."""
    path = folder / aside
    own = path.parent in (folder, folder / DAMAGED_DIR) and path.name.endswith(
        (DAMAGED_SUFFIX, TORN_SUFFIX)
    )
    return path if own and ".." not in Path(aside).parts and path.is_file() else None


def damage_problems(
    folder: Path,
    found: dict[int, DamageFound],
    discarded: int,
    gaps: list[tuple[str, int, int]],
    removed: set[str],
) -> list[Problem]:
    """What was kept aside or lost and not yet discarded by the person: ``found`` are the
    ``DamageFound`` events by offset, ``discarded`` the last offset a ``DamageDiscarded``
    covers, ``gaps`` the (segment, first, last) offsets no segment holds, ``removed`` the
    copies a deletion removed."""
    problems: list[Problem] = []
    lost = [(d.first_offset, d.last_offset) for d in found.values() if not d.aside]
    for name, lo, hi in gaps:
        if not any(a <= lo and hi <= b for a, b in lost):
            problems.append(
                Problem(name, 0, lo, f"offsets {lo}..{hi} are missing: a segment was deleted")
            )
    described = set()
    for offset, damage in sorted(found.items()):
        described.add(damage.aside)
        if offset <= discarded:
            continue
        held = (
            f"offsets {damage.first_offset}..{damage.last_offset}"
            if damage.last_offset >= damage.first_offset
            else "no offset"
        )
        if not damage.aside:
            message = f"lost {held}: their segment was deleted or cut short behind the log's back"
        elif damage.aside in removed:
            message = (
                f"{damage.length} unreadable bytes ({held}): their copy kept aside was removed "
                "by a deletion, as it may have held the deleted frames"
            )
        elif aside_path(folder, damage.aside) is not None:
            message = (
                f"{damage.length} unreadable bytes (may have held {held}) kept aside as "
                f"log/{damage.aside} by {damage.rewrite}"
            )
        else:
            message = f"{damage.length} unreadable bytes ({held}): the copy kept aside is gone"
        where = damage.segment if damage.aside else ""
        problems.append(
            Problem(where, damage.position, damage.first_offset, message, damage.length)
        )
    for path in damaged(folder):
        if f"{DAMAGED_DIR}/{path.name}" not in described:
            size = path.stat().st_size
            problems.append(Problem(path.name, 0, None, "unreadable bytes kept aside", size))
    for path in torn_tails(folder):
        if path.name not in described:
            size = path.stat().st_size
            message = f"torn tail of a cut-off append ({size} bytes) kept aside as log/{path.name}"
            problems.append(Problem(path.name, 0, None, message, size))
    return problems
