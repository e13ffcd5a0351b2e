"""``backscroll reindex``: apply the current redact / encrypt settings to every stored frame
(and ``encrypt_text`` to every kept memory's versions).

A log compaction that keeps every frame id, then thumbnails re-encrypted or decrypted, then
the views rebuilt from the rewritten log. Interrupted, it is simply run again: frames already
in the wanted form pass through unchanged, and a thumbnail in the old form is removed only
after the event pointing at the new one is durable.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from backscroll.crypto import MEMO_WORDS
from backscroll.keep_upkeep import resealed
from backscroll.record import redact_address, redact_frame, write_thumbnail
from backscroll.store import MemoryStore
from base.clock import now_us
from base.config import Config
from base.errors import (
    BackscrollError,
    DecryptionError,
    DiskFullError,
    KeyUnavailableError,
    LockedError,
    StoreError,
    is_disk_full,
)
from eventlog.events import (
    Event,
    FrameCaptured,
    FramesRewritten,
    MemoryKept,
    MemoryRevised,
    ReindexRequested,
)
from projector.runner import Projector, failure_line

if TYPE_CHECKING:
    from backscroll.crypto import FrameCrypto

log = logging.getLogger(__name__)


def reindex(
    store: MemoryStore,
    *,
    views_only: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, int]:
    """Request a reindex and return once it is complete, with what changed by kind.

    Whoever holds the views executes it: this process when it can take them, else the
    running daemon, which sees the request in the log; then this waits for its completion.
    """
    request = store.log.append(ReindexRequested(ts_us=now_us(), views_only=views_only))
    try:
        projector = store.projector()
    except LockedError:
        return _wait_for(store, request)
    with projector:
        return execute(store, projector, request, views_only=views_only, progress=progress)


def execute(
    store: MemoryStore,
    projector: Projector,
    request: int,
    *,
    views_only: bool,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, int]:
    """Carry out reindex ``request`` as the holder of the views, and record its completion."""
    counts = dict.fromkeys(COUNTS, 0)
    if not views_only:
        _rewrite_log(store, counts, progress)
    projector.rebuild_all(progress)
    store.log.append(FramesRewritten(ts_us=now_us(), request_id=request, **_event_counts(counts)))
    projector.catch_up()
    return counts


def run_requested(store: MemoryStore, projector: Projector) -> None:
    """The daemon's side: every reindex requested while it held the views.

    One that cannot be carried out (a segment this version cannot read) is recorded as such
    and not tried again: raising, it stopped the daemon's projector at every pass, and the
    ``reindex`` waiting on it waited forever. A full disk still stops it, to be tried again.
    """
    for request in projector.state.reindexes:
        if request.completed_us is None and not request.problem:
            try:
                execute(store, projector, request.offset, views_only=request.views_only)
            except (BackscrollError, OSError) as exc:
                if isinstance(exc, DiskFullError) or is_disk_full(exc):
                    raise
                request.problem = failure_line(exc)
                log.warning("reindex #%d cannot complete: %s", request.offset, request.problem)
                projector.state.save(store.layout.views)


def _wait_for(store: MemoryStore, request: int) -> dict[str, int]:
    import time

    while True:
        store.refresh()
        for done in store.state().reindexes:
            if done.offset == request and done.completed_us is not None:
                return {"frames": done.frames}
            if done.offset == request and done.problem:
                raise StoreError(f"the reindex could not complete: {done.problem}")
        time.sleep(0.2)


def _rewrite_log(
    store: MemoryStore, counts: dict[str, int], progress: Callable[[int, int], None] | None
) -> None:
    config = store.config
    crypto = store.ensure_crypto()
    stale: list[str] = []
    memo: dict[str, bytes] = {}  # word → blind token, for this reindex only
    total = max(1, store.state().totals().frames)
    seen = 0

    def rewrite(offset: int, event: Event) -> Event | None:
        nonlocal seen
        if isinstance(event, MemoryKept | MemoryRevised):
            try:
                return resealed(event, bool(config.encrypt_text and crypto), crypto)
            except DecryptionError:
                counts["unreadable"] += 1
                return event
        if not isinstance(event, FrameCaptured):
            return event
        seen += 1
        if progress and seen % 500 == 0:
            progress(seen, total)
        if len(memo) > MEMO_WORDS:
            memo.clear()
        try:
            new = _rewrite_frame(store, event, config, crypto, counts, stale, memo)
        except DecryptionError:
            counts["unreadable"] += 1  # a lost or wrong key: leave the frame as it is
            return event
        if new is not event:
            counts["frames"] += 1
        return new

    store.log.compact(rewrite)
    for rel in stale:
        with contextlib.suppress(FileNotFoundError):
            (store.home / rel).unlink()


COUNTS = (
    "frames",
    "redacted",
    "encrypted",
    "decrypted",
    "thumbnails_encrypted",
    "thumbnails_decrypted",
    "unreadable",
)


def _rewrite_frame(
    store: MemoryStore,
    frame: FrameCaptured,
    config: Config,
    crypto: FrameCrypto | None,
    counts: dict[str, int],
    stale: list[str],
    memo: dict[str, bytes],
) -> FrameCaptured:
    text = (
        _opened(crypto).decrypt_text(frame.frame_id, frame.ciphertext)
        if frame.encrypted
        else frame.text
    )
    title, url = frame.title, frame.url
    redactions = dict(frame.redactions)
    if config.redact:
        text, title, hits = redact_frame(text, title)
        url = redact_address(url, hits)
        for kind, n in hits.items():
            redactions[kind] = redactions.get(kind, 0) + n
        counts["redacted"] += bool(hits)
    encrypt = bool(config.encrypt_text and crypto)
    changes: dict[str, Any] = {}
    if title != frame.title:
        changes["title"] = title
    if url != frame.url:
        changes["url"] = url
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
            ciphertext=_opened(crypto).encrypt_text(frame.frame_id, text) if encrypt else b"",
            encrypted=encrypt,
            blind_tokens=_opened(crypto).blind_tokens(text, memo) if encrypt else (),
        )
    if redactions != frame.redactions:
        changes["redactions"] = redactions
    want_thumb_enc = bool(config.encrypt_thumbnails and crypto)
    if frame.thumb and want_thumb_enc != frame.thumb_encrypted:
        path = store.home / frame.thumb
        if path.exists():
            data = path.read_bytes()
            if frame.thumb_encrypted:
                data = _opened(crypto).decrypt_thumb(frame.frame_id, data)
                counts["thumbnails_decrypted"] += 1
            else:
                data = _opened(crypto).encrypt_thumb(frame.frame_id, data)
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


def _opened(crypto: FrameCrypto | None) -> FrameCrypto:
    """The cipher for a frame that is, or is to be, encrypted: reindex never rewrites such a
    frame without one (without the key, its text cannot be read to rewrite)."""
    if crypto is None:
        raise KeyUnavailableError(
            "encrypted frames cannot be rewritten: encryption is not available on this machine"
        )
    return crypto
