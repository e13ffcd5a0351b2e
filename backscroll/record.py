"""Turning what was seen into a ``FrameCaptured`` event: redact, encrypt, write the thumbnail.

Runs under the log's append lock (inside ``Log.batch``), so the frame id is known before
anything is encrypted or written: the id is bound into the ciphertexts and names the
thumbnail file, which is written and fsynced before the event that references it.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from base.clock import now_us
from base.config import Config
from base.fs import ensure_dir, fsync_dir
from eventlog.events import CaptureReason, FrameCaptured, TextSource
from eventlog.log import Batch

if TYPE_CHECKING:
    from backscroll.crypto import FrameCrypto


class Seen(NamedTuple):
    """One moment on screen, before redaction and encryption."""

    captured_us: int
    app: str
    title: str
    text: str
    text_source: TextSource
    reason: CaptureReason
    pid: int | None = None
    jpeg: bytes | None = None
    signature: bytes = b""
    monitor: tuple[int, int, int, int, int] | None = None


def record_frame(
    batch: Batch, seen: Seen, config: Config, crypto: FrameCrypto | None, home: Path
) -> FrameCaptured:
    """Build the event for ``seen`` with id ``batch.next_offset`` and append it to ``batch``."""
    frame_id = batch.next_offset
    text, title = seen.text, seen.title
    counts: dict[str, int] = {}
    if config.redact:
        text, title, counts = redact_frame(text, title)
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
        blind_tokens=crypto.blind_tokens(text) if encrypt_text and crypto else (),
        thumb=thumb,
        thumb_encrypted=bool(thumb_encrypted),
        thumb_bytes=thumb_bytes,
        reason=seen.reason,
        redactions=counts,
        signature=seen.signature,
        monitor=seen.monitor,
    )
    batch.append(frame)
    return frame


def redact_frame(text: str, title: str) -> tuple[str, str, dict[str, int]]:
    """The frame's text and window title redacted, and the hits of both by kind."""
    from capture.redact import redact

    body, head = redact(text), redact(title)
    counts = dict(body.counts)
    for kind, n in head.counts.items():
        counts[kind] = counts.get(kind, 0) + n
    return body.text, head.text, counts


def thumb_path(frame_id: int, captured_us: int, encrypted: bool) -> str:
    day = datetime.fromtimestamp(captured_us / 1_000_000).strftime("%Y-%m-%d")
    return f"thumbs/{day}/{frame_id}.jpg{'.enc' if encrypted else ''}"


def write_thumbnail(home: Path, frame_id: int, captured_us: int, data: bytes, enc: bool) -> str:
    rel = thumb_path(frame_id, captured_us, enc)
    path = home / rel
    created = not path.parent.exists()
    ensure_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(path.parent)
    if created:
        fsync_dir(path.parent.parent)
    return rel


def remove_orphan_thumbnails(home: Path, next_offset: int) -> int:
    """Thumbnails written for a frame whose event never made it (a crash in between)."""
    removed = 0
    root = home / "thumbs"
    if not root.exists():
        return 0
    for day in root.iterdir():
        for file in day.iterdir():
            stem = file.name.split(".", 1)[0]
            if stem.isdigit() and int(stem) >= next_offset:
                file.unlink()
                removed += 1
    return removed
