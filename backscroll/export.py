"""``backscroll export``: a decrypted, owner-only copy of frames in a new or empty folder.

The folder holds one of ``frames.json``, ``frames.csv`` or a browsable ``index.html``, and
``thumbs/<id>.jpg`` (decrypted JPEGs) unless thumbnails are left out. The folder is 0700 and
every file 0600: the copy is as private as the store, but no longer encrypted.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import html
import io
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from backscroll.contract import ExportedFrame, ExportFile, encode, local
from base.errors import BackscrollError, UsageError

if TYPE_CHECKING:
    from backscroll.store import MemoryStore
    from query.search import Hit

Format = Literal["json", "csv", "html"]
FORMATS: tuple[Format, ...] = ("json", "csv", "html")
FILES = {"json": "frames.json", "csv": "frames.csv", "html": "index.html"}
CSV_COLUMNS = (
    "id",
    "time",
    "app",
    "title",
    "url",
    "text_source",
    "encrypted",
    "reason",
    "thumbnail_file",
)
"""The columns of ``frames.csv`` before ``text``: fields of ``contract.Decrypted``."""
# A spreadsheet runs a cell that starts with one of these as a formula, and screen text is
# written by whoever made the page on screen: such cells get a leading apostrophe in the CSV.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


class ExportResult(NamedTuple):
    path: Path
    frames: int
    thumbnails: int


class Decrypted(NamedTuple):
    hit: Hit
    text: str
    thumbnail: str | None  # relative path inside the export folder


def default_folder(now: datetime | None = None) -> Path:
    """``~/Downloads/backscroll-memory-<YYYYmmdd-HHMMSS>``, as the spec places it."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    return Path("~/Downloads").expanduser() / f"backscroll-memory-{stamp}"


def check_format(format: str) -> Format:
    if format not in FORMATS:
        raise UsageError(f"export format must be json, csv or html, not {format!r}")
    return format


def check_folder(out: Path) -> Path:
    """``out`` made absolute, when it is a new or an empty folder; else one clear line."""
    try:
        out = out.expanduser().absolute()
        if out.is_symlink() or (out.exists() and not out.is_dir()):
            raise UsageError(f"export folder {out} is not a folder; give a new or empty folder")
        if out.exists() and any(out.iterdir()):
            raise UsageError(f"export folder {out} is not empty; give a new or empty folder")
    except (OSError, RuntimeError) as exc:  # a name too long, an unknown ~user
        raise UsageError(f"export folder {str(out)!r} cannot be used: {exc}") from None
    return out


def prepare_folder(out: Path) -> Path:
    """Create ``out`` (0700), or take it when it is an empty folder; refuse anything else."""
    out = check_folder(out)
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(out, 0o700)
    return out


def export(
    store: MemoryStore,
    out: Path | None = None,
    format: str = "json",
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    app: str | None = None,
    query: str | None = None,
    limit: int | None = None,
    thumbnails: bool = True,
) -> ExportResult:
    """Write a decrypted copy of the chosen frames; returns where, and how many.

    With ``query`` the frames are the search matches (best first; never near misses or
    fuzzy matches);
    otherwise the timeline of the window in time order (every frame when no window or
    ``limit`` is given).
    """
    fmt = check_format(format)
    meta = {
        "exported_at": local(datetime.now()),
        "store": str(store.home),
        "start": local(start) if start else None,
        "end": local(end) if end else None,
        "app": app,
        "query": query,
    }
    if limit is not None and limit < 1:
        raise UsageError("export limit must be at least 1")
    if query is not None and not query.strip():
        raise UsageError("export query is empty")
    hits = select(store, start=start, end=end, app=app, query=query, limit=limit)
    target = out or default_folder()
    try:
        return _write_export(store, hits, prepare_folder(target), fmt, thumbnails, meta)
    except OSError as exc:
        raise BackscrollError(f"cannot write the export to {target}: {exc.strerror}") from None


def _write_export(
    store: MemoryStore,
    hits: list[Hit],
    folder: Path,
    fmt: Format,
    thumbnails: bool,
    meta: dict[str, Any],
) -> ExportResult:
    frames = list(_decrypted(store, hits, folder if thumbnails else None))
    if fmt == "json":
        body = ExportFile(**meta, frames=[exported(f) for f in frames])
        _write(folder / FILES["json"], (encode(body) + "\n").encode())
    elif fmt == "csv":
        _write(folder / FILES["csv"], csv_bytes(frames))
    else:
        _write(folder / FILES["html"], render_html(frames, meta).encode())
    return ExportResult(folder, len(frames), sum(1 for f in frames if f.thumbnail))


def select(
    store: MemoryStore,
    *,
    start: datetime | None,
    end: datetime | None,
    app: str | None,
    query: str | None,
    limit: int | None,
) -> list[Hit]:
    # The store's frame count bounds everything there is to find: an index is never asked
    # for a top-N larger than that (Tantivy sizes its heap by N).
    frames = max(1, store.state().totals().frames)
    bound = min(limit, frames) if limit else frames
    if query:
        # By the words alone: an export takes exactly the frames that hold them, never every
        # frame near in meaning.
        hits = store.search(
            query, start=start, end=end, app=app, limit=bound, fuzzy=False, by="words"
        )
        return [hit for hit in hits if not hit.near_miss]
    return store.timeline(start=start, end=end, app=app, limit=bound)


def _decrypted(store: MemoryStore, hits: list[Hit], folder: Path | None) -> Iterator[Decrypted]:
    if folder is not None:
        (folder / "thumbs").mkdir(mode=0o700)
    for hit in hits:
        full = store.get(hit.id)
        name = None
        if folder is not None:
            jpeg = store.thumbnail(full)
            if jpeg is not None:
                name = f"thumbs/{hit.id}.jpg"
                _write(folder / name, jpeg)
        yield Decrypted(hit, full.text or "", name)


def exported(frame: Decrypted) -> ExportedFrame:
    """A frame as ``frames.json`` and ``frames.csv`` give it."""
    return ExportedFrame(
        **ExportedFrame.fields(frame.hit), text=frame.text, thumbnail_file=frame.thumbnail
    )


def csv_bytes(frames: list[Decrypted]) -> bytes:
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow([*CSV_COLUMNS, "text"])
    for frame in frames:
        row = exported(frame)
        writer.writerow([_cell(getattr(row, c)) for c in (*CSV_COLUMNS, "text")])
    return buffer.getvalue().encode()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = value.isoformat() if isinstance(value, datetime) else str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def _write(path: Path, data: bytes) -> None:
    """A new file, owner-only; never follows or replaces an existing one."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


# -- the browsable page -----------------------------------------------------------------------
# Self-contained: inline CSS and JS, thumbnails by relative link, and a Content-Security-Policy
# that allows only those two blocks (by hash) and local images, so nothing in the page can
# reach the network even if screen text held markup (it is escaped as well).

_CSS = """
:root { font: 15px/1.45 system-ui, sans-serif; color: #1d2023; background: #f4f5f7; }
body { margin: 0; }
header { position: sticky; top: 0; background: #fff; border-bottom: 1px solid #d8dbe0;
  padding: .8rem 1.2rem; display: flex; flex-wrap: wrap; gap: .4rem 1.2rem; align-items: center; }
h1 { font-size: 1.1rem; margin: 0; }
.scope { color: #5b6169; margin: 0; }
#filter { font: inherit; padding: .35rem .6rem; min-width: 22rem; border: 1px solid #aab0b8;
  border-radius: 6px; }
main { padding: 1rem 1.2rem; display: grid; gap: .8rem; }
.frame { display: grid; grid-template-columns: 240px 1fr; gap: 1rem; background: #fff;
  border: 1px solid #d8dbe0; border-radius: 8px; padding: .8rem; }
.frame.noimg { grid-template-columns: 1fr; }
.frame img { width: 240px; height: auto; border-radius: 4px; border: 1px solid #d8dbe0; }
.frame h2 { font-size: 1rem; margin: 0 0 .2rem; }
.app { color: #0b57d0; }
.when { color: #5b6169; margin: 0 0 .5rem; font-size: .9rem; }
.url { color: #1e6b35; margin: 0 0 .3rem; font-size: .85rem; word-break: break-all; }
.text { white-space: pre-wrap; word-break: break-word; margin: 0; max-height: 16rem;
  overflow: auto; font: .85rem/1.4 ui-monospace, monospace; background: #f7f8fa; padding: .5rem; }
[hidden] { display: none !important; }
"""

_JS = """
(function () {
  var box = document.getElementById("filter");
  var count = document.getElementById("count");
  var none = document.getElementById("none");
  var frames = Array.prototype.slice.call(document.querySelectorAll(".frame"));
  var haystacks = frames.map(function (f) { return f.textContent.toLowerCase(); });
  function apply() {
    var words = box.value.toLowerCase().split(/\\s+/).filter(Boolean);
    var shown = 0;
    frames.forEach(function (frame, i) {
      var match = words.every(function (w) { return haystacks[i].indexOf(w) !== -1; });
      frame.hidden = !match;
      if (match) { shown += 1; }
    });
    count.textContent = shown + " of " + frames.length + " shown";
    none.hidden = shown !== 0 || frames.length === 0;
    document.body.setAttribute("data-shown", String(shown));
  }
  var initial = new URLSearchParams(window.location.search).get("filter");
  if (initial) { box.value = initial; }
  box.addEventListener("input", apply);
  apply();
  window.addEventListener("load", function () {
    var loaded = Array.prototype.filter.call(document.images, function (img) {
      return img.complete && img.naturalWidth > 0;
    });
    document.body.setAttribute("data-thumbs-loaded", String(loaded.length));
  });
})();
"""


def _csp_hash(code: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(code.encode()).digest()).decode() + "'"


def render_html(frames: list[Decrypted], meta: dict[str, Any]) -> str:
    esc = html.escape
    meta = {k: v.isoformat() if isinstance(v, datetime) else v for k, v in meta.items()}
    csp = (
        f"default-src 'none'; img-src 'self' file:; style-src {_csp_hash(_CSS)}; "
        f"script-src {_csp_hash(_JS)}; base-uri 'none'; form-action 'none'"
    )
    scope = [f"{len(frames)} frame(s)"]
    if meta.get("start") or meta.get("end"):
        scope.append(f"{meta.get('start') or '…'} → {meta.get('end') or 'now'}")
    if meta.get("app"):
        scope.append(f"app~'{meta['app']}'")
    if meta.get("query"):
        scope.append(f"matching '{meta['query']}'")
    scope.append(f"exported {meta['exported_at']}")
    articles = [_article(frame) for frame in frames]
    return "\n".join(
        [
            "<!doctype html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{esc(csp)}">',
            '<meta name="referrer" content="no-referrer">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>Backscroll export — {len(frames)} frame(s)</title>",
            f"<style>{_CSS}</style>",
            "</head>",
            "<body>",
            "<header>",
            "<h1>Backscroll export</h1>",
            f'<p class="scope">{esc(" · ".join(scope))}</p>',
            '<input id="filter" type="search" aria-label="Filter frames"'
            ' placeholder="Filter by app, title, address or text" autocomplete="off">',
            f'<span id="count" aria-live="polite">{len(frames)} of {len(frames)} shown</span>',
            "</header>",
            '<main id="frames">',
            *articles,
            "</main>",
            '<p id="none" hidden>No frame matches the filter.</p>',
            f"<script>{_JS}</script>",
            "</body>",
            "</html>",
            "",
        ]
    )


def _article(frame: Decrypted) -> str:
    esc = html.escape
    hit = frame.hit
    when = hit.when.astimezone()
    image = ""
    if frame.thumbnail:
        src = esc(frame.thumbnail)
        alt = esc(f"Screenshot: {hit.app} — {hit.title}")
        image = f'<a href="{src}"><img src="{src}" alt="{alt}" loading="lazy"></a>'
    return (
        f'<article class="frame{"" if image else " noimg"}" id="frame-{hit.id}">{image}'
        f'<div><h2><span class="app">[{esc(hit.app)}]</span> '
        f'<span class="title">{esc(hit.title)}</span></h2>'
        # The address as text, never a link: a stored javascript: or tracking URL stays inert.
        + (f'<p class="url">{esc(hit.url)}</p>' if hit.url else "")
        + f'<p class="when"><time datetime="{esc(when.isoformat())}">'
        f"{when:%Y-%m-%d %H:%M:%S}</time> · #{hit.id} · {esc(hit.text_source)}</p>"
        f'<pre class="text">{esc(frame.text)}</pre></div></article>'
    )
