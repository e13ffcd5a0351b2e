"""``backscroll reindex``: apply the current redact / encrypt settings to every stored frame.

A log compaction that keeps every frame id, then thumbnails re-encrypted or decrypted, then
the views rebuilt from the rewritten log. Interrupted, it is simply run again: frames already
in the wanted form pass through unchanged, and a thumbnail in the old form is removed only
after the event pointing at the new one is durable.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import msgspec

from backscroll.config import Config
from backscroll.errors import DecryptionError
from backscroll.manage import store_crypto
from backscroll.store import MemoryStore
from capture.record import write_thumbnail
from eventlog.events import Event, FrameCaptured, FramesRewritten, ReindexRequested
from eventlog.segment import now_us


def reindex(
    store: MemoryStore, progress: Callable[[int, int], None] | None = None
) -> dict[str, int]:
    """Rewrite every frame under the current config; returns what changed, by kind."""
    request = store.log.append(ReindexRequested(ts_us=now_us()))
    config = store.config
    crypto = store_crypto(store, True)
    counts = dict.fromkeys(
        (
            "frames",
            "redacted",
            "encrypted",
            "decrypted",
            "thumbnails_encrypted",
            "thumbnails_decrypted",
            "unreadable",
        ),
        0,
    )
    stale: list[str] = []
    total = max(1, store.state().totals().frames)
    seen = 0

    def rewrite(offset: int, event: Event) -> Event | None:
        nonlocal seen
        if not isinstance(event, FrameCaptured):
            return event
        seen += 1
        if progress and seen % 500 == 0:
            progress(seen, total)
        try:
            new = _rewrite_frame(store, event, config, crypto, counts, stale)
        except DecryptionError:
            counts["unreadable"] += 1  # a lost or wrong key: leave the frame as it is
            return event
        if new is not event:
            counts["frames"] += 1
        return new

    with store.projector() as projector:
        store.log.compact(rewrite)
        for rel in stale:
            with contextlib.suppress(FileNotFoundError):
                (store.home / rel).unlink()
        projector.rebuild_all()
        store.log.append(
            FramesRewritten(ts_us=now_us(), request_id=request, **_event_counts(counts))
        )
        projector.catch_up()
    if progress:
        progress(total, total)
    return counts


def _rewrite_frame(
    store: MemoryStore,
    frame: FrameCaptured,
    config: Config,
    crypto: Any,
    counts: dict[str, int],
    stale: list[str],
) -> FrameCaptured:
    text = crypto.decrypt_text(frame.frame_id, frame.ciphertext) if frame.encrypted else frame.text
    title = frame.title
    redactions = dict(frame.redactions)
    if config.redact:
        from capture.redact import redact

        hits = 0
        for part in ("text", "title"):
            result = redact(text if part == "text" else title)
            if part == "text":
                text = result.text
            else:
                title = result.text
            for kind, n in result.counts.items():
                redactions[kind] = redactions.get(kind, 0) + n
                hits += n
        counts["redacted"] += hits > 0
    encrypt = bool(config.encrypt_text and crypto)
    changes: dict[str, Any] = {}
    if title != frame.title:
        changes["title"] = title
    if (
        encrypt != frame.encrypted
        or (not encrypt and text != frame.text)
        or (encrypt and redactions != frame.redactions)
    ):
        counts["encrypted" if encrypt and not frame.encrypted else "decrypted"] += (
            encrypt != frame.encrypted
        )
        changes.update(
            text="" if encrypt else text,
            ciphertext=crypto.encrypt_text(frame.frame_id, text) if encrypt else b"",
            encrypted=encrypt,
            blind_tokens=crypto.blind_tokens(text) if encrypt else (),
        )
    if redactions != frame.redactions:
        changes["redactions"] = redactions
    want_thumb_enc = bool(config.encrypt_thumbnails and crypto)
    if frame.thumb and want_thumb_enc != frame.thumb_encrypted:
        path = store.home / frame.thumb
        if path.exists():
            data = path.read_bytes()
            if frame.thumb_encrypted:
                data = crypto.decrypt_thumb(frame.frame_id, data)
                counts["thumbnails_decrypted"] += 1
            else:
                data = crypto.encrypt_thumb(frame.frame_id, data)
                counts["thumbnails_encrypted"] += 1
            rel = write_thumbnail(
                store.home, frame.frame_id, frame.captured_us, data, want_thumb_enc
            )
            stale.append(frame.thumb)
            changes.update(thumb=rel, thumb_encrypted=want_thumb_enc, thumb_bytes=len(data))
    if frame.thumb and "thumb" not in changes:
        # A run interrupted after its compaction left the other form behind: remove it now.
        other = frame.thumb.removesuffix(".enc") if frame.thumb_encrypted else frame.thumb + ".enc"
        if (store.home / other).exists():
            stale.append(other)
    if not changes:
        return frame
    return msgspec.structs.replace(frame, **changes)


def _event_counts(counts: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in counts.items() if k != "unreadable"}
