"""Tesseract kept loaded in a worker process: the daemon's OCR engine.

    engine = WorkerOcr()
    engine.check()            # starts the worker; CaptureError saying what to install
    text = engine.text(image)
    engine.close()

The worker is a fresh Python (``python -m capture.ocr_worker``), never a fork: the daemon
holds the log's lock and runs threads, which a forked child would inherit half-way (and
not multiprocessing's spawn either, which runs the parent's main script again in the
child). It imports tesserocr (Tesseract 5.5 in-process, from its manylinux wheel), loads
the English model once and then reads one image per request, so a frame pays neither a
process start nor a model load, as it did with pytesseract (``python -m bench.ocr``:
0.54 s of CPU a window instead of 0.91 s with the same preparation).

It keeps the text of the lines it has read (``Reader``) and reads only the lines it has
not seen: a terminal that scrolled by 8 lines cost 0.14 s instead of 0.5 s for a whole
read, and found the same words of the screen. The text is kept in the worker's memory
only, for the last ``KNOWN_LINES`` lines seen.

A crash in native code, a kill or a read that outlasts ``TIMEOUT_S`` cost the frame being
read: its text is "", the log says why in one line, and the next frame starts a fresh
worker (a worker found ended between two frames costs no frame). ``TIMEOUT_S`` bounds the
whole exchange, the request's write as well as the reply: a request is larger than a pipe
holds, so a worker that stopped reading (SIGSTOP, a debugger) would otherwise block the
write, and the daemon's capture with it, for ever. A worker that missed the deadline is
killed, not asked to end: stopped or stuck in native code, it reads no closed pipe. The
worker ends when the daemon does, however it ends: it reads its standard input, a pipe the
daemon holds.

The pipes carry a request as (width, height) in ``REQUEST`` and the gray pixels, a reply
as (status, length) in ``REPLY`` and that many bytes of UTF-8: status ``R`` ready (the
model's folder), ``N`` tesserocr cannot be imported (why), ``E`` an error (one line),
``T`` the reading (``capture.ocr.Reading``: the text and each word's place in it and in
the image) as JSON.

Where tesserocr cannot be imported (no wheel for the platform, an old glibc), the engine
falls back to ``capture.ocr.ocr_text`` (pytesseract and the tesseract program) and says so
once in the log. Both prepare the image the same way (``capture.ocr``).
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import logging
import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import msgspec

from base.errors import CaptureError
from capture import ocr

if TYPE_CHECKING:
    from PIL.Image import Image

log = logging.getLogger(__name__)

# A 4K region of dense text took about 5 s on the test machine; past this the worker is
# taken as hung, killed and started again for the next frame.
TIMEOUT_S = ocr.TIMEOUT_S
# The worker's start (Python, tesserocr, the model) took 0.3-0.6 s here; a loaded machine
# may take many times that.
START_TIMEOUT_S = 60.0
MODEL_INSTALL = "install it: sudo apt-get install tesseract-ocr-eng (or set TESSDATA_PREFIX)"
# Lines whose text the worker keeps (about 100 bytes each): a few screens of many windows.
KNOWN_LINES = 8192
# Rows of the region kept above and below a line read alone, and the white border around
# it: Tesseract finds no line on a crop that ends at the ink.
LINE_PAD = 2
LINE_BORDER = 8
REQUEST = struct.Struct("!II")
REPLY = struct.Struct("!cI")
ENDED = b""  # the status ``_answer`` gives when the worker's output closed
# Where Debian's tesseract-ocr-eng (…/tesseract-ocr/5/tessdata), Fedora and Homebrew put
# the models; tesserocr's own default is the folder its library was built for, which the
# wheel's build machine had and this one does not.
TESSDATA_GLOBS = (
    "/usr/share/tesseract-ocr/*/tessdata",
    "/usr/share/tessdata",
    "/usr/local/share/tessdata",
    "/opt/homebrew/share/tessdata",
)


def tessdata_dir(environ: dict[str, str] | None = None) -> str | None:
    """The folder holding ``eng.traineddata``: $TESSDATA_PREFIX when it has it, else the
    folder the tesseract program lists its languages from, else the usual places."""
    env = os.environ if environ is None else environ
    model = f"{ocr.LANGUAGE}.traineddata"
    candidates = [env["TESSDATA_PREFIX"]] if env.get("TESSDATA_PREFIX") else []
    binary = shutil.which("tesseract", path=env.get("PATH"))
    if binary is not None:
        try:
            listed = subprocess.run(
                [binary, "--list-langs"], capture_output=True, text=True, timeout=10, check=False
            ).stdout
        except (OSError, subprocess.TimeoutExpired):
            listed = ""
        # The header: List of available languages in "/usr/share/tesseract-ocr/5/tessdata/" (2):
        header = listed.splitlines()[0] if listed else ""
        if header.count('"') == 2:
            candidates.append(header.split('"')[1])
    for pattern in TESSDATA_GLOBS:
        candidates += sorted(glob.glob(pattern), reverse=True)  # the newest version first
    for folder in candidates:
        if (Path(folder) / model).is_file():
            return str(Path(folder))
    return None


class WorkerOcr:
    """``OcrEngine`` reading with tesserocr in a worker process; pytesseract as fallback."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._fallback = False
        self._closing = False  # close() was called: a read stops its worker when it ends
        self._forget = False  # forget() was called during a read: it stops its worker too

    @property
    def engine(self) -> str:
        """Which engine reads: "tesserocr" or "pytesseract"."""
        return "pytesseract" if self._fallback else "tesserocr"

    @property
    def pid(self) -> int | None:
        """The worker's process id (None when none runs)."""
        return None if self._process is None else self._process.pid

    def check(self) -> None:
        with self._lock:
            if self._fallback:
                ocr.check_ocr()
            elif self._process is None:
                self._start()

    def text(self, image: Image) -> str:
        """The text alone of ``read``."""
        return self.read(image).text

    def read(self, image: Image) -> ocr.Reading:
        with self._lock:
            if self._process is not None and self._process.poll() is not None:
                # It ended between two frames (killed, out of memory): no frame is lost.
                log.warning(
                    "the OCR worker had ended (exit code %s); starting another",
                    self._process.returncode,
                )
                self._stop()
            if self._forget:  # asked while the last read ended: that worker still knows
                self._forget = False
                self._stop()
            if not self._fallback and self._process is None:
                self._start()
            if self._fallback:
                return ocr.ocr_read(image)
            try:
                return self._read(image)
            finally:
                if self._closing or self._forget:
                    self._forget = False
                    self._stop()

    def forget(self) -> None:
        """Drop the text of every line read so far by ending the worker, and its memory with
        it: deleted frames leave no readable residue, not even here. The next read starts
        another (the model loads again, once per deletion).

        At once, not at the next read: capture may be paused for hours. A worker busy with
        a frame is ended when that read ends, so this never waits on a read (the probe loop
        calls it)."""
        self._forget = True
        if self._lock.acquire(blocking=False):
            try:
                self._forget = False
                self._stop()
            finally:
                self._lock.release()

    def close(self) -> None:
        """Stop the worker; one busy with a frame (the capture thread reads while the probe
        loop replaces the backends) is stopped when that read ends, so this never waits."""
        self._closing = True
        if self._lock.acquire(blocking=False):
            try:
                self._stop()
            finally:
                self._lock.release()

    # -- the parent's side ------------------------------------------------------------------

    def _start(self) -> None:
        # The folder holding this package, last on the worker's path: found even when the
        # daemon runs from a checkout that is not installed.
        here = str(Path(__file__).resolve().parents[1])
        path = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), here) if p)
        self._process = subprocess.Popen(
            [sys.executable, "-m", "capture.ocr_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,  # the pipes are written and read through their descriptors alone
            close_fds=True,
            env={**os.environ, "PYTHONPATH": path},
        )
        assert self._process.stdin is not None
        os.set_blocking(self._process.stdin.fileno(), False)  # _send waits, up to a deadline
        reply = self._answer(time.monotonic() + START_TIMEOUT_S)
        if reply is None or reply[0] == ENDED:
            self._stop()
            raise CaptureError("the OCR worker did not start (see the log)")
        status, detail = reply
        if status == b"R":
            log.info("OCR: tesserocr in worker process %d", self._process.pid)
            return
        self._stop()
        if status == b"N":
            ocr.check_ocr()
            self._fallback = True
            log.info("OCR: tesserocr cannot be imported (%s); using pytesseract", detail)
            return
        raise CaptureError(detail)

    def _read(self, image: Image) -> ocr.Reading:
        assert self._process is not None and self._process.stdin is not None
        gray = image.convert("L")
        deadline = time.monotonic() + TIMEOUT_S
        try:
            sent = _send(
                self._process.stdin.fileno(), REQUEST.pack(*gray.size) + gray.tobytes(), deadline
            )
        except OSError:  # BrokenPipeError: it had ended
            return self._lost("it had ended")
        reply = self._answer(deadline) if sent else None
        if reply is None:
            return self._lost(f"no answer in {TIMEOUT_S:.0f} s", hung=True)
        status, detail = reply
        if status == ENDED:
            return self._lost("it ended")
        if status != b"T":
            raise CaptureError(f"tesseract failed: {detail}")
        return msgspec.json.decode(detail, type=ocr.Reading)

    def _answer(self, deadline: float) -> tuple[bytes, str] | None:
        """The worker's next reply: ``ENDED`` when its output closed, None when it was not
        all there by ``deadline`` (``time.monotonic()``)."""
        assert self._process is not None and self._process.stdout is not None
        out = self._process.stdout.fileno()
        header = _receive(out, REPLY.size, deadline)
        if header is None or len(header) < REPLY.size:
            return None if header is None else (ENDED, "")
        status, length = REPLY.unpack(header)
        payload = _receive(out, length, deadline)
        if payload is None or len(payload) < length:
            return None if payload is None else (ENDED, "")
        return status, payload.decode()

    def _lost(self, why: str, *, hung: bool = False) -> ocr.Reading:
        process = self._process
        code = None
        if process is not None:
            if hung:
                # Stopped, or stuck in native code, it would never see its pipe close.
                process.kill()
            # Its pipe closes a moment before it can be reaped: wait that moment for its code.
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = process.wait(1.0)
        self._stop()
        how = why if code is None or hung else f"exit code {code}"
        log.warning("the OCR worker was lost (%s); this frame has no OCR text", how)
        return ocr.Reading("")

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        # A closed standard input ends an idle worker; one stuck inside Tesseract is killed.
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        try:
            process.wait(1.0)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _exactly(stream: IO[bytes], size: int) -> bytes | None:
    data = stream.read(size)
    return data if len(data) == size else None


def _send(fd: int, data: bytes, deadline: float) -> bool:
    """Write all of ``data`` to the non-blocking ``fd``; False when the reader had not taken
    it all by ``deadline``."""
    view = memoryview(data)
    while view:
        if not _ready(fd, select.POLLOUT, deadline):
            return False
        view = view[os.write(fd, view) :]
    return True


def _receive(fd: int, size: int, deadline: float) -> bytes | None:
    """``size`` bytes from ``fd``, fewer when it closed first; None when they had not all
    come by ``deadline``."""
    data = bytearray()
    while len(data) < size:
        if not _ready(fd, select.POLLIN, deadline):
            return None
        chunk = os.read(fd, size - len(data))
        if not chunk:
            break
        data += chunk
    return bytes(data)


def _ready(fd: int, event: int, deadline: float) -> bool:
    # poll, not select: a daemon holding many files may give the pipe a descriptor past
    # select's limit of 1024.
    poller = select.poll()
    poller.register(fd, event)
    wait_ms = max(0, round((deadline - time.monotonic()) * 1000))
    return bool(poller.poll(wait_ms))


# -- the worker's side ----------------------------------------------------------------------


def serve() -> None:
    """The worker: one reply to start (``R``, ``N`` or ``E``), then one for each request on
    standard input, until it closes."""
    # Ctrl-C reaches the whole process group: the daemon stops, and the worker with it when
    # the pipe closes, without a traceback of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The replies get a descriptor of their own; anything a library prints goes to stderr.
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = sys.stdin.buffer

    def reply(status: bytes, text: str) -> None:
        data = text.encode()
        replies.write(REPLY.pack(status, len(data)) + data)
        replies.flush()

    with contextlib.suppress(OSError):  # BrokenPipeError: the daemon has gone
        api = _api(reply)
        if api is None:
            return
        from PIL import Image

        reader = Reader(api)
        while (header := _exactly(requests, REQUEST.size)) is not None:
            size = REQUEST.unpack(header)
            pixels = _exactly(requests, size[0] * size[1])
            if pixels is None:
                return
            try:
                reading = reader.read(Image.frombytes("L", size, pixels))
            except Exception as exc:  # one image's failure is that frame's, not the worker's
                reply(b"E", f"{type(exc).__name__}: {exc}")
            else:
                reply(b"T", msgspec.json.encode(reading).decode())


Line = tuple[tuple[str, ocr.Box], ...]
"""A text line's words, each with its box; the rows counted from the top of its ink run."""


class Reader:
    """Reads regions with tesserocr, keeping the words of the text lines it has read.

    A line is a run of rows holding ink (``capture.ocr.ink_runs``), known by a hash of its
    pixels: a terminal that scrolled, an editor where one line was typed, a window seen
    again show mostly lines read before, and only the others are read. A region with more
    than half its lines new is read whole (the same words as a read without this), and
    Tesseract's lines are given to the runs they overlap; otherwise each new line is read
    alone, with ``LINE_PAD`` rows around it.

    Each word keeps its box from the read that found it (its rows counted from its run's
    top, so a line scrolled up is still known), and a reading gives every word's box in the
    region: the camera paints a secret's words black from them, with no second read.
    """

    def __init__(self, api: Any) -> None:
        self.api = api
        self.known: OrderedDict[bytes, tuple[Line, ...]] = OrderedDict()

    def read(self, image: Image) -> ocr.Reading:
        gray = ocr.dark_on_light(image)
        runs = ocr.ink_runs(gray)
        scale = ocr.UPSCALE if ocr.is_small(ocr.text_height(gray)) else 1
        keys = [self._key(gray, run, scale) for run in runs]
        new = [n for n, key in enumerate(keys) if key not in self.known]
        if 2 * len(new) > len(keys):
            fresh = self._read_whole(gray, runs, keys, scale)
        else:
            fresh = {keys[n]: self._read_line(gray, runs[n], scale) for n in new}
            self.known.update(fresh)
        lines: list[Line] = []
        for key, (top, _bottom) in zip(keys, runs, strict=True):
            if key in self.known:
                self.known.move_to_end(key)
            for line in fresh[key] if key in fresh else self.known[key]:
                lines.append(tuple((word, _moved(box, 0, top)) for word, box in line))
        while len(self.known) > KNOWN_LINES:
            self.known.popitem(last=False)
        return ocr.joined(lines)

    @staticmethod
    def _key(gray: Image, run: tuple[int, int], scale: int) -> bytes:
        band = gray.crop((0, run[0], gray.width, run[1])).tobytes()
        shape = struct.pack("!III", gray.width, run[1] - run[0], scale)
        return hashlib.blake2b(shape + band, digest_size=16).digest()

    def _read_whole(
        self, gray: Image, runs: list[tuple[int, int]], keys: list[bytes], scale: int
    ) -> dict[bytes, tuple[Line, ...]]:
        """Each run's lines (by key) of one read of the whole region; remembered only for
        runs that Tesseract read as a line of their own. A line it joined to the next run
        (a text line and the cursor below it) is given to one of them for this frame, but
        neither run's pixels alone hold what the other got: remembered, a cursor alone in a
        new, empty terminal read as the line it was once joined to, and that line, scrolled
        up, read as nothing."""
        self.api.SetImage(ocr.upscale(gray) if scale > 1 else gray)
        found: list[list[Line]] = [[] for _ in runs]
        joined: set[int] = set()
        for (_left, top, _right, bottom), words in self._lines(scale):
            overlaps = [min(bottom, b) - max(top, t) for t, b in runs]
            best = max(range(len(runs)), key=overlaps.__getitem__)
            found[best].append(tuple((w, _moved(box, 0, -runs[best][0])) for w, box in words))
            # The runs it covers half of: a box merely touching the next line, as the tall
            # glyphs of a bitmap font make it, is still a line of its own.
            covered = {n for n, (t, b) in enumerate(runs) if 2 * overlaps[n] >= b - t}
            if covered - {best}:
                joined |= covered | {best}
        fresh: dict[bytes, tuple[Line, ...]] = {}
        for n, (key, lines) in enumerate(zip(keys, found, strict=True)):
            # Lines alike share one key: when Tesseract joins the last of them to a cursor
            # below it and gives the text to the cursor's run, the others keep theirs.
            if lines or (key not in fresh and key not in self.known):
                fresh[key] = tuple(lines)
            if n not in joined and (lines or key not in self.known):
                self.known[key] = tuple(lines)
        return fresh

    def _read_line(self, gray: Image, run: tuple[int, int], scale: int) -> tuple[Line, ...]:
        from PIL import ImageOps

        top, bottom = max(0, run[0] - LINE_PAD), min(gray.height, run[1] + LINE_PAD)
        band = gray.crop((0, top, gray.width, bottom))
        band = ocr.upscale(band) if scale > 1 else band
        self.api.SetImage(ImageOps.expand(band, border=LINE_BORDER, fill=255))
        return tuple(
            tuple((word, _moved(box, 0, top - run[0])) for word, box in words)
            for _box, words in self._lines(scale, border=LINE_BORDER)
        )

    def _lines(
        self, scale: int, border: int = 0
    ) -> list[tuple[ocr.Box, list[tuple[str, ocr.Box]]]]:
        """The lines of the image set, each with its box and its words with theirs, in the
        image's pixels before it was upscaled by ``scale`` and given ``border``. Reading
        the words one by one with their boxes costs about 0.05 ms a word (21-24 ms for a
        page of 400, whose recognition took 3.3 s on the loaded test machine: under 1%)."""
        from tesserocr import RIL, iterate_level

        def unscaled(box: ocr.Box) -> ocr.Box:
            left, top, right, bottom = (value - border for value in box)
            return left // scale, top // scale, -(-right // scale), -(-bottom // scale)

        self.api.Recognize()
        lines: list[tuple[ocr.Box, list[tuple[str, ocr.Box]]]] = []
        iterator = self.api.GetIterator()
        if iterator is None:  # nothing found at all
            return lines
        for word in iterate_level(iterator, RIL.WORD):
            if word.IsAtBeginningOf(RIL.TEXTLINE) or not lines:
                line = word.BoundingBox(RIL.TEXTLINE)
                if line is None:
                    continue
                lines.append((unscaled(line), []))
            try:
                text = word.GetUTF8Text(RIL.WORD)
            except RuntimeError:  # tesserocr's "No text returned": a word of no text
                continue
            box = word.BoundingBox(RIL.WORD)
            if box is not None and text.strip():
                lines[-1][1].append((text.strip(), unscaled(box)))
        return [line for line in lines if line[1]]


def _moved(box: ocr.Box, dx: int, dy: int) -> ocr.Box:
    left, top, right, bottom = box
    return left + dx, top + dy, right + dx, bottom + dy


def _api(reply: Any) -> Any:
    """tesserocr's API with the model loaded, after replying ``R``; None after saying why not."""
    # Before Tesseract loads OpenMP: its own threads made one region take 6.0 s instead of
    # 1.2 s on 2 cores. A value the user set is kept.
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    try:
        import tesserocr
    except ImportError as exc:
        reply(b"N", str(exc) or type(exc).__name__)
        return None
    folder = tessdata_dir()
    if folder is None:
        reply(b"E", f"Tesseract has no English model (eng.traineddata); {MODEL_INSTALL}")
        return None
    try:
        api = tesserocr.PyTessBaseAPI(path=folder, lang=ocr.LANGUAGE)
    except RuntimeError as exc:  # a damaged or incompatible model file
        reply(b"E", f"Tesseract cannot load its model in {folder} ({exc}); {MODEL_INSTALL}")
        return None
    api.SetPageSegMode(ocr.PAGE_SEGMENTATION)
    # The region is made dark-on-light first (capture.ocr.prepare): Tesseract's own retry
    # of lines it takes for inverted text is wasted work.
    api.SetVariable("tessedit_do_invert", "0")
    reply(b"R", folder)
    return api


if __name__ == "__main__":
    serve()
