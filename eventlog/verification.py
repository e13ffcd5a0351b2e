"""Checking a log folder: every segment's header, framing, CRCs, the order of offsets, and
the damage recorded and not yet discarded."""

from __future__ import annotations

from pathlib import Path

from base.errors import CorruptionError
from eventlog.codec import decode_or_report
from eventlog.damage import damage_problems
from eventlog.events import FRAME_TYPE, DamageDiscarded, DamageFound, PurgeCompleted
from eventlog.folder import (
    MANIFEST_NAME,
    NEW_SUFFIX,
    NEXT_NAME,
    list_segments,
    read_next,
    sealed_or_stand_in,
)
from eventlog.format import HEADER
from eventlog.segment import Problem, read_sealed, scan_records, unpack_header


def verify(folder: Path, writing: bool) -> list[Problem]:
    """Everything wrong in the log at ``folder``.

    While another process holds the append lock (``writing``), a pending compaction or a
    partial record at the very end is work in progress, not damage: it is not reported.
    """
    while True:
        try:
            return _verify_once(folder, writing)
        except FileNotFoundError:
            continue  # a roll or compaction swapped a segment away: check again


def _verify_once(folder: Path, writing: bool) -> list[Problem]:
    problems: list[Problem] = []
    if (folder / MANIFEST_NAME).exists() and not writing:
        problems.append(Problem(MANIFEST_NAME, 0, None, "an interrupted compaction is pending"))
    elif not writing and (staged := _staged(folder)):
        # Rewritten segments that never committed: they may hold screen text.
        message = (
            f"an interrupted compaction left {len(staged)} staged file(s) "
            f"({', '.join(staged)}): the next command that writes removes them"
        )
        problems.append(Problem(staged[0], 0, None, message))
    previous = -1
    covered = 0  # segments tile the offsets from 0: a gap is a segment gone
    gaps: list[tuple[str, int, int]] = []
    found: dict[int, DamageFound] = {}
    discarded = -1
    removed: set[str] = set()  # copies kept aside that a deletion removed
    segments = list_segments(folder)
    for i, segment in enumerate(segments):
        name = segment.path.name
        data = segment.path.read_bytes()
        if segment.base > covered:
            gaps.append((name, covered, segment.base - 1))
        if segment.sealed:
            # A damaged header stands in for itself: the blocks are checked all the same.
            header, broken, _ = sealed_or_stand_in(segment, segments[i + 1 :])
            if broken is not None:
                problems.append(Problem(name, 0, None, f"{broken}: clear --damaged rewrites it"))
        else:
            try:
                header = unpack_header(data)
            except CorruptionError as exc:
                problems.append(Problem(name, 0, None, str(exc)))
                continue
        if segment.sealed:
            covered = max(covered, header.end_offset)
        if header.base_offset != segment.base:
            problems.append(Problem(name, 0, None, "header base offset differs from name"))
        if segment.sealed:
            records = list(read_sealed(segment.path, 0, problems))
            frames = sum(r.type == FRAME_TYPE for r in records)
            counts = (header.frames, header.controls)
            if broken is None and (frames, len(records) - frames) != counts:
                problems.append(Problem(name, 0, None, "header counts differ from records"))
        else:
            scan = scan_records(data, HEADER.size, name, segment.base - 1)
            problems.extend(scan.problems)
            if scan.torn and not writing:
                problems.append(
                    Problem(name, scan.end, None, f"torn tail of {len(data) - scan.end} bytes")
                )
            records = [record for _, record in scan.records]
        for record in records:
            if record.offset <= previous or record.offset < segment.base:
                problems.append(Problem(name, 0, record.offset, "offset out of order"))
            previous = max(previous, record.offset)
            event = decode_or_report(record, problems)
            if isinstance(event, DamageFound):
                found[record.offset] = event
            elif isinstance(event, DamageDiscarded):
                discarded = max(discarded, event.upto_id)
            elif isinstance(event, PurgeCompleted):
                removed.update(event.aside)
    tail = max(previous + 1, covered)
    handed_out = read_next(folder)
    if handed_out is None:
        message = "damaged (fails its check): the next write rebuilds it from the segments"
        problems.append(Problem(NEXT_NAME, 0, None, message))
    elif handed_out > tail and not writing:
        gaps.append(("", tail, handed_out - 1))
    problems += damage_problems(folder, found, discarded, gaps, removed)
    return problems


def _staged(folder: Path) -> list[str]:
    try:
        return sorted(p.name for p in folder.iterdir() if p.name.endswith(NEW_SUFFIX))
    except FileNotFoundError:
        return []  # nothing appended yet
