"""Turning what was seen (``capture.Seen``) into a ``FrameCaptured`` event: redact, encrypt,
write the thumbnail, append. ``Recorder`` does it for the daemon, one frame a batch.

``record_frame`` runs under the log's append lock (inside ``Log.batch``), so the frame id is
known before anything is encrypted or written: the id is bound into the ciphertexts and names
the thumbnail file, which is written and fsynced before the event that references it.
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import msgspec

from base.clock import now_us
from base.config import Config
from base.fs import ensure_dir, write_file
from capture.seen import Seen
from eventlog.batch import Batch
from eventlog.contract import EventLog
from eventlog.events import FRAME_TYPE, MAX_URL, TYPE_CODES, FrameCaptured, FramesDeleted

DELETE_TYPE = TYPE_CODES[FramesDeleted]

if TYPE_CHECKING:
    from backscroll.crypto import FrameCrypto
    from backscroll.store import MemoryStore


class Recorder:
    """Appends what the camera saw to the store, and counts this run's frames for the
    heartbeat (by text source, by reason, and the secrets redacted by kind).

    A frame seen before a deletion that covers it, but recorded after the deletion's
    tombstone (it was being read while ``clear`` ran), is dropped under the append lock:
    after ``clear`` returns nothing seen before it may be searchable, and a frame appended
    after the tombstone is past its ``upto_id``. The tombstones are read from the log from
    where the last frame's check stopped: frames are recorded in the order they were seen
    (one capture worker), so a tombstone read for an earlier frame is older than every later
    frame.
    """

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self._checked = store.log.next_offset()  # tombstones before it are older than any frame
        self.text_sources: dict[str, int] = {}
        self.reasons: dict[str, int] = {}
        self.redactions: dict[str, int] = {}
        self.last_reason: str | None = None
        self.last_text_source: str | None = None

    def record(self, seen: Seen, config: Config) -> FrameCaptured | None:
        """One frame, appended and fsynced with its thumbnail (``OSError``,
        ``DiskFullError``, ``KeyUnavailableError`` when it cannot be); None when a deletion
        asked for after it was seen covers it, and nothing was written."""
        crypto = None
        if config.encrypt_text or config.encrypt_thumbnails:
            crypto = self.store.ensure_crypto()
        with self.store.log.batch() as batch:
            deleted = self._deleted_since(seen, batch.next_offset)
            self._checked = batch.next_offset
            if deleted:
                return None
            frame = record_frame(batch, seen, config, crypto, self.store.home)
        _count(self.text_sources, seen.text_source)
        _count(self.reasons, seen.reason)
        for kind, n in frame.redactions.items():
            _count(self.redactions, kind, n)
        self.last_reason, self.last_text_source = seen.reason, seen.text_source
        return frame

    def _deleted_since(self, seen: Seen, frame_id: int) -> bool:
        """Whether a tombstone appended since the last check, asked for after ``seen`` was
        seen, covers it (as the frame ``frame_id`` it would become); call under the lock."""
        from projector.state import matches, scope_of

        candidate = _Candidate(frame_id, seen.captured_us, seen.app, seen.title, seen.url)
        for _, event in self.store.log.read(self._checked, types={DELETE_TYPE}):
            if not isinstance(event, FramesDeleted) or event.ts_us <= seen.captured_us:
                continue
            scope = scope_of(event)
            if matches(msgspec.structs.replace(scope, upto_id=frame_id), candidate):
                return True
        return False


class _Candidate(NamedTuple):
    """A frame not appended yet, as a deletion's scope reads it."""

    frame_id: int
    captured_us: int
    app: str
    title: str
    url: str


def _count(counts: dict[str, int], key: str, n: int = 1) -> None:
    counts[key] = counts.get(key, 0) + n


def record_frame(
    batch: Batch,
    seen: Seen,
    config: Config,
    crypto: FrameCrypto | None,
    home: Path,
    memo: dict[str, bytes] | None = None,
) -> FrameCaptured:
    """Build the event for ``seen`` with id ``batch.next_offset`` and append it to ``batch``;
    ``memo``: the blind tokens of words seen before (``FrameCrypto.blind_tokens``)."""
    frame_id = batch.next_offset
    text, title, url = seen.text, seen.title, seen.url[:MAX_URL]
    counts: dict[str, int] = {}
    if config.redact:
        text, title, counts = redact_frame(text, title)
        url = redact_address(url, counts)[:MAX_URL]
    encrypt_text = config.encrypt_text and crypto is not None
    thumb = thumb_encrypted = None
    thumb_bytes = 0
    if seen.jpeg is not None:
        thumb_encrypted = config.encrypt_thumbnails and crypto is not None
        data = (
            crypto.encrypt_thumb(frame_id, seen.jpeg) if thumb_encrypted and crypto else seen.jpeg
        )
        thumb = write_thumbnail(home, frame_id, seen.captured_us, data, bool(thumb_encrypted))
        thumb_bytes = len(data)
    frame = FrameCaptured(
        ts_us=now_us(),
        frame_id=frame_id,
        captured_us=seen.captured_us,
        app=seen.app,
        title=title,
        pid=seen.pid,
        text="" if encrypt_text else text,
        ciphertext=crypto.encrypt_text(frame_id, text) if encrypt_text and crypto else b"",
        text_source=seen.text_source,
        encrypted=encrypt_text,
        blind_tokens=crypto.blind_tokens(text, memo) if encrypt_text and crypto else (),
        thumb=thumb,
        thumb_encrypted=bool(thumb_encrypted),
        thumb_bytes=thumb_bytes,
        reason=seen.reason,
        redactions=counts,
        signature=seen.signature,
        monitor=seen.monitor,
        url=url,
    )
    batch.append(frame)
    return frame


def redact_frame(text: str, title: str) -> tuple[str, str, dict[str, int]]:
    """The frame's text and window title redacted, and the hits of both by kind."""
    from capture.redact import redact

    body = redact(text)
    head, hits = _redacted_title(title)
    counts = dict(body.counts)
    for kind, n in hits:
        counts[kind] = counts.get(kind, 0) + n
    return body.text, head, counts


@lru_cache(maxsize=1024)
def _redacted_title(title: str) -> tuple[str, tuple[tuple[str, int], ...]]:
    """A window title redacted, and its hits: titles repeat frame after frame (20,000 frames
    of the import bench have 658), and redacting one took ~8 µs."""
    from capture.redact import redact

    found = redact(title)
    return found.text, tuple(found.counts.items())


def redact_address(url: str, counts: dict[str, int]) -> str:
    """A page's address redacted (its hits added to ``counts``)."""
    from capture.redact import redact_url

    if not url:
        return url
    found = redact_url(url)
    for kind, n in found.counts.items():
        counts[kind] = counts.get(kind, 0) + n
    return found.text


def thumb_path(frame_id: int, captured_us: int, encrypted: bool) -> str:
    day = datetime.fromtimestamp(captured_us / 1_000_000).strftime("%Y-%m-%d")
    return f"thumbs/{day}/{frame_id}.jpg{'.enc' if encrypted else ''}"


def write_thumbnail(home: Path, frame_id: int, captured_us: int, data: bytes, enc: bool) -> str:
    """Write the thumbnail durably, before the event that names it: a crash in between
    leaves a file no event names (swept by ``remove_orphan_thumbnails``), never an event
    naming a short file."""
    rel = thumb_path(frame_id, captured_us, enc)
    path = home / rel
    ensure_dir(path.parent)
    write_file(path, data)
    return rel


def remove_orphan_thumbnails(home: Path, log: EventLog) -> int:
    """Thumbnails written for a frame whose event never made it (a crash in between); call
    under the log's lock.

    An orphan is numbered past the log's last frame. Not past its next offset: that number
    may have gone to another event since (the daemon's start, an offset a torn tail cost),
    and the orphan would then stay for good.
    """
    root = home / "thumbs"
    if not root.exists():
        return 0
    numbered: dict[int, list[Path]] = {}
    for day in root.iterdir():
        for file in day.iterdir():
            stem = file.name.split(".", 1)[0]
            if stem.isdigit():
                numbered.setdefault(int(stem), []).append(file)
    removed = 0
    # Newest first, each probe reading the log only from that number on: orphans are the
    # few of one interrupted batch, so this stays near the log's tail.
    for frame_id in sorted(numbered, reverse=True):
        if next(iter(log.records(frame_id, types={FRAME_TYPE})), None) is not None:
            break  # a frame at or past it: it and every older one may be named by the log
        for file in numbered[frame_id]:
            file.unlink()
            removed += 1
    return removed
