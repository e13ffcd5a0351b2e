"""An import's lines: each parsed and checked (``parse_import_line``), then made ready to
append by the work that needs no frame id (``Preparer``), in worker processes when there
are many (``Preparing``)."""

from __future__ import annotations

import json
import math
import os
import re
import signal
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from datetime import datetime
from multiprocessing import get_context
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import msgspec

from backscroll.record import Prepared, prepare_frame
from base import jsontext
from base.errors import UsageError, is_text
from capture.seen import Seen
from eventlog.events import MAX_NAME, MAX_TEXT, MAX_TITLE, MAX_URL

if TYPE_CHECKING:
    from backscroll.crypto import Blinder

TEXT_SOURCES = ("ax", "ocr", "none")

Chunk = list[tuple[int, str | Seen]]
"""Lines of an import with their numbers, or what they hold, read already."""
Ready = list[tuple[int, Prepared | str]]
"""A chunk's lines made ready, or why one was refused."""

CHUNK_LINES = 250
"""Lines sent to a worker at a time: ~0.4 MB of screen text, ~25 ms of its work."""
WORKER_BYTES = 4_000_000
"""An import of fewer bytes is prepared in its own process: starting a worker took ~0.15 s
(an interpreter, and the modules it needs), the time to prepare ~2,400 lines of 1.7 KB."""
AHEAD_LINES = 2_000
"""Lines given to the workers and not yet taken back: ~3.4 MB of screen text."""
MAX_WORKERS = 4
"""Past a few workers the process that appends and indexes is the bottleneck."""
MIN_CORES = 3
"""Workers need a core that the import's own process and Tantivy's threads leave free. On
the 2-core machine of ``bench/results/import_speed.txt``, shared with other work (a load of
2-4), two workers prepared 20,000 lines no sooner than the import's own process did, for
25-35 µs more CPU a line (spawning, pickling, a memo of blind tokens each)."""


class Preparer:
    """A chunk of lines parsed and prepared (``prepare_frame``): the same in a worker
    process and in the import's own. ``memo``: the blind tokens of words seen before, kept
    by the process that prepares (``Blinder.tokens``)."""

    def __init__(self, now: int, redact: bool, blinder: Blinder | None) -> None:
        self.now = now  # the clock the lines were checked against: "a day in the future"
        self.redact = redact
        self.blinder = blinder

    def __call__(self, chunk: Chunk, memo: dict[str, bytes]) -> Ready:
        from backscroll.crypto import MEMO_WORDS

        ready: Ready = []
        for number, line in chunk:
            try:
                seen = line if isinstance(line, Seen) else parse_import_line(line, self.now)
            except UsageError as exc:
                ready.append((number, str(exc)))
                continue
            ready.append((number, prepare_frame(seen, self.redact, self.blinder, memo)))
        if len(memo) > MEMO_WORDS:
            memo.clear()
        return ready


class Preparing:
    """Chunks prepared in their order, by up to ``workers`` processes (none: in this one).

    The workers start at once, while the import checks its lines; the key comes after (the
    import makes a store's first key only once every line is good), with each chunk's
    ``Preparer``, whose only key is the blind sub-key. They are spawned, not forked: the
    import's process may have threads by then (the progress bar's). They ignore Ctrl-C: the
    import's process stops them, having appended whole batches only.
    """

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.memo: dict[str, bytes] = {}  # word → blind token, for this import only
        self.pool: ProcessPoolExecutor | None = None
        if workers:
            self.pool = ProcessPoolExecutor(workers, get_context("spawn"), initializer=_start)
            for _ in range(workers):  # the pool starts a process for each task none is free for
                self.pool.submit(_ready)

    def map(self, preparer: Preparer, chunks: Iterable[Chunk]) -> Iterator[Ready]:
        # Two batches of 1,000 lines ahead, not the whole file (the lines and their results
        # stay in memory): the workers go on while the import appends and indexes a batch.
        ahead: deque[tuple[Chunk, Future[Ready] | None]] = deque()
        for chunk in chunks:
            future = self.pool.submit(_prepare, preparer, chunk) if self.pool else None
            ahead.append((chunk, future))
            if len(ahead) * CHUNK_LINES > AHEAD_LINES:
                yield self._result(preparer, *ahead.popleft())
        while ahead:
            yield self._result(preparer, *ahead.popleft())

    def _result(self, preparer: Preparer, chunk: Chunk, future: Future[Ready] | None) -> Ready:
        if future is not None:
            try:
                return future.result()
            except (BrokenProcessPool, CancelledError):
                # A worker that could not start (a script that starts an import at its top
                # level, run again by each spawned worker) or was killed: this process
                # prepares the rest (the pool's other chunks were cancelled with it).
                self.close()
        return preparer(chunk, self.memo)

    def close(self) -> None:
        pool, self.pool = self.pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def workers_for(size: int) -> int:
    """How many worker processes prepare an import of ``size`` bytes: a core each, but for
    the one the import's own process and Tantivy's threads keep."""
    cores = len(os.sched_getaffinity(0))
    if size < WORKER_BYTES or cores < MIN_CORES:
        return 0
    return min(cores - 1, MAX_WORKERS)


_memo: dict[str, bytes] = {}  # a worker's, across the chunks of its import


def _start() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _ready() -> None:
    """Nothing: the task that starts a worker."""


def _prepare(preparer: Preparer, chunk: Chunk) -> Ready:
    return preparer(chunk, _memo)


def parse_import_line(line: str, now: int) -> Seen:
    """One JSON Lines row, checked against what a ``FrameCaptured`` may hold before anything
    is appended; the error names the field and the value."""
    row = _row(line)
    for key in ("ts", "app", "title", "text"):
        if key not in row:
            raise UsageError(f"missing '{key}'")
    limits = {"app": MAX_NAME, "title": MAX_TITLE, "text": MAX_TEXT}
    for key, limit in limits.items():
        value = row[key]
        if not isinstance(value, str):
            raise UsageError(f"'{key}' must be a string, not {_shown(value)}")
        if len(value) > limit:
            raise UsageError(f"'{key}' is {len(value):,} characters; at most {limit:,}")
        if not is_text(value):
            raise UsageError(f"'{key}' holds a lone surrogate (\\ud800-\\udfff), not text")
    source = row.get("text_source", "ocr" if row["text"] else "none")
    if source not in TEXT_SOURCES:
        raise UsageError(f"'text_source' must be one of {', '.join(TEXT_SOURCES)}")
    url = _import_url(row.get("url", ""))
    jpeg = None
    image = row.get("image")
    if image is not None and image != "":
        if not isinstance(image, str) or not is_text(image) or "\0" in image:
            raise UsageError(f"'image' must be a file path, not {_shown(image)}")
        jpeg = _jpeg_from(Path(image))
    return Seen(
        captured_us=_timestamp_us(row["ts"], now),
        app=row["app"],
        title=row["title"],
        text=row["text"],
        text_source=source,
        reason="import",
        jpeg=jpeg,
        url=url,
    )


_Int = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
_FLAT_ROW = msgspec.json.Decoder(dict[str, str | _Int | float | None])
"""An import line whose every value is a string, a number or null, read by msgspec: 4 µs a
line of 1.7 KB where ``json.loads`` and the depth walk took 13. It refuses everything
``json.loads`` refuses (tested on any text), and more: NaN, numbers past 64 bits or a
float's range, lone surrogates, a nested value. Those lines are read again by
``jsontext.parse``, so every refusal keeps its own message and the lines Python's parser
takes are taken the same."""


def _row(line: str) -> dict[str, Any]:
    """The JSON object of an import line; ``UsageError`` saying why when it is none."""
    try:
        return _FLAT_ROW.decode(line.encode("utf-8"))
    except (UnicodeEncodeError, msgspec.DecodeError):
        pass
    if not is_text(line):  # bytes that were not UTF-8, kept by surrogateescape
        raise UsageError("not UTF-8 text (a binary line?)")
    try:
        row = jsontext.parse(line)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not isinstance(row, dict):
        raise UsageError("not a JSON object")
    return row


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[^\x00-\x20\x7f]*")


def _import_url(value: Any) -> str:
    """An import row's optional page address: absolute (a scheme), one line, no spaces."""
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or not is_text(value):
        raise UsageError(f"'url' must be a string, not {_shown(value)}")
    if len(value) > MAX_URL:
        raise UsageError(f"'url' is {len(value):,} characters; at most {MAX_URL:,}")
    if not _URL.fullmatch(value):
        raise UsageError(
            f"'url' {_shown(value)} is not an address (scheme:…, without spaces or control "
            "characters)"
        )
    return value


FUTURE_US = 86_400_000_000
"""How far ahead of the clock a frame's time may be: a day (time zones, a skewed clock)."""


def _timestamp_us(value: Any, now: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise UsageError(f"'ts' must be ISO 8601 or epoch seconds, not {_shown(value)}")
    if isinstance(value, str):
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            raise UsageError(f"'ts' {_shown(value)} is not ISO 8601 or epoch seconds") from None
        if when.tzinfo is None:
            when = when.astimezone()
        seconds = when.timestamp()
    elif isinstance(value, int) and abs(value) >= 2**62:
        # Past any time, and past what a float holds (math.isfinite overflowed on it).
        raise UsageError(f"'ts' {_shown(value)} is not a time")
    else:
        seconds = float(value)
    if not math.isfinite(seconds):
        raise UsageError(f"'ts' {_shown(value)} is not a time")
    us = int(seconds * 1_000_000)
    if us < 0:
        raise UsageError(f"'ts' {_shown(value)} is before 1970")
    if us > now + FUTURE_US:
        raise UsageError(f"'ts' {_shown(value)} is more than a day in the future")
    return us


def _shown(value: Any) -> str:
    """A value for an error message: short, on one line."""
    text = json.dumps(value, ensure_ascii=True) if not isinstance(value, float) else repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _jpeg_from(path: Path) -> bytes:
    try:
        from io import BytesIO

        from PIL import Image

        with Image.open(path) as image:
            out = BytesIO()
            image.convert("RGB").save(out, "JPEG", quality=60)
            return out.getvalue()
    except (OSError, ImportError) as exc:
        raise UsageError(f"cannot read image {path}: {exc}") from None
