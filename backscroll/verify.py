"""``backscroll verify``: the log's framing and CRCs, the key against the one the log
recorded, thumbnails against their events, and each view's position and a sample of its
documents against the log."""

from __future__ import annotations

import random

from backscroll import keys
from backscroll.keep_upkeep import verify_kept
from backscroll.manage import stuck
from backscroll.store import MemoryStore
from eventlog.events import FRAME_TYPE, FrameCaptured
from projector.index import REBUILD, damage
from projector.schema import partition_of

SAMPLE = 200


def verify_store(store: MemoryStore) -> list[str]:
    problems = [f"log: {p}" for p in store.log.verify()]
    problems += _key_problems(store)
    frames: list[FrameCaptured] = []
    referenced: set[str] = set()
    for _, event in store.log.read(types={FRAME_TYPE}):
        assert isinstance(event, FrameCaptured)
        frames.append(event)
        if event.thumb:
            referenced.add(event.thumb)
            if not (store.home / event.thumb).exists():
                problems.append(f"thumbnail missing for frame #{event.frame_id}: {event.thumb}")
    thumbs = store.layout.thumbs
    if thumbs.exists():
        for path in thumbs.rglob("*.jpg*"):
            rel = str(path.relative_to(store.home))
            if rel not in referenced:
                problems.append(f"thumbnail without a frame: {rel}")
    tail = store.log.next_offset() - 1
    state = store.state()
    manifest = store.views.manifest()
    if state.position > tail:
        problems.append(f"state view position {state.position} is past the log tail {tail}")
    if manifest is not None and manifest.position > tail:
        problems.append(f"search view position {manifest.position} is past the log tail {tail}")
    damaged = _damaged_months(store)
    problems += [
        f"search view of {month} damaged ({why}): {REBUILD}" for month, why in damaged.items()
    ]
    problems += [stuck(d) for d in state.stuck_deletions()]
    problems += verify_kept(store)
    problems += _meaning_problems(store, {f.frame_id for f in frames}, tail)
    pending = state.pending_deletions()
    searcher = store.searcher()
    applied = min(state.position, manifest.position if manifest else -1)
    candidates = [
        f for f in frames if f.frame_id <= applied and partition_of(f.captured_us) not in damaged
    ]
    for frame in random.Random(0).sample(candidates, min(SAMPLE, len(candidates))):
        if pending:
            break
        try:
            hit = searcher.get(frame.frame_id)
        except Exception as exc:
            problems.append(f"search view lacks frame #{frame.frame_id}: {exc}")
            continue
        seen = (hit.app, hit.title, hit.url, hit.encrypted)
        if seen != (frame.app, frame.title, frame.url, frame.encrypted):
            problems.append(f"search view document of frame #{frame.frame_id} differs from the log")
    problems += [
        f"{view.removeprefix('the ')} damaged ({why}): {REBUILD}"
        for view, why in store.views.damaged.items()
        if not view.startswith("the search view of ")  # counted above, with its file
    ]
    return problems


def _meaning_problems(store: MemoryStore, in_log: set[int], tail: int) -> list[str]:
    """The meaning view: its position, each chunk and map its manifest names read whole
    (opened with the key when sealed), and no vector of a frame the log no longer holds (a
    deletion leaves none behind; a month's map holds its rows, by number)."""
    from base.errors import DecryptionError
    from projector._codes import CODE_BYTES
    from projector.vectors import Manifest, open_map, read_chunk

    root = store.layout.views / "meaning"
    manifest = Manifest.load(root)
    problems = []
    if manifest.position > tail:
        problems.append(f"meaning view position {manifest.position} is past the log tail {tail}")
    for names in manifest.months.values():
        for name in names:
            try:
                chunk = read_chunk(root, name, store.crypto)
            except (DecryptionError, OSError) as exc:
                problems.append(f"meaning view: {name} does not read ({exc}): {REBUILD}")
                continue
            gone = [i for i in chunk.ids if i not in in_log]
            if gone:
                problems.append(
                    f"meaning view: {name} holds the vectors of {len(gone)} frame(s) the log "
                    f"no longer has (#{gone[0]}): {REBUILD}"
                )
    for month, held in manifest.maps.items():
        try:
            rows = len(open_map(root, held.name, store.crypto).codes) // CODE_BYTES
        except (DecryptionError, OSError) as exc:
            problems.append(f"meaning view: {held.name} does not read ({exc}): {REBUILD}")
            continue
        if rows != held.rows or rows > manifest.month_rows(month):
            problems.append(
                f"meaning view: {held.name} holds {rows} rows where the manifest says "
                f"{held.rows} of the month's {manifest.month_rows(month)}: {REBUILD}"
            )
    return problems


def _damaged_months(store: MemoryStore) -> dict[str, str]:
    """Month → why, for each partition with a file that fails its checksum (read whole)."""
    manifest = store.views.manifest()
    found = {}
    for month, name in sorted(manifest.partitions.items() if manifest else ()):
        try:
            why = damage(store.layout.search / name)
        except OSError as exc:
            why = exc.strerror or type(exc).__name__
        if why is not None:
            found[month] = why
    return found


def _key_problems(store: MemoryStore) -> list[str]:
    """The key as its store holds it against ``keyinfo.json`` (``keys.key_status``), and the
    key ``keyinfo.json`` names against the one the log recorded (``KeyCreated``): a key
    changed in either place cannot read what the other one encrypted."""
    key = keys.key_status(store.home)
    if key.problem:
        return [f"key: {key.problem}"]
    recorded = store.state().key_fingerprint
    if recorded and key.fingerprint != recorded:
        named = f"fingerprint {key.fingerprint}" if key.fingerprint else "no key"
        return [
            f"key: {keys.KEYINFO_FILE} names {named}, but the log recorded key {recorded}: "
            "what that key encrypted cannot be read until it is restored"
        ]
    return []
