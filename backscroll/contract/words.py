"""What every surface says of each argument, and the limits: the CLI's option help, the MCP
schemas' descriptions and the README's reference read these. Strings and numbers only, so the
CLI can build its options from them at start-up without loading the Structs."""

from __future__ import annotations

MAX_LIMIT = 1000
"""Search results (moments) at most."""
MAX_TIMELINE_LIMIT = 10_000
MAX_FRAME_ID = 2**63 - 1
"""A frame id is its log offset, a signed 64-bit integer on disk (eventlog's ``Offset``)."""
MAX_EXPORT = 100_000_000
"""Exported frames at most: far beyond a store's frames (a year of capture is ~1M)."""

# The descriptions every surface shows: the CLI's help and the MCP schemas read these.
SINCE = "Start of the time span. Time expression: 2h, yesterday, tuesday, last week, 2026-09-01, …"
UNTIL = "End of the time span (same forms as since)."
BEFORE = "Everything before this (same forms as since)."
APP = "Only frames whose app name, window title or page address contains this."
QUERY = (
    'Words (all must match, else one letter off in OCR\'d text, else near misses), "phrases", '
    "prefix*."
)
SEARCH_LIMIT = f"Most matches (moments), 1 to {MAX_LIMIT}."
TIMELINE_LIMIT = f"Most frames, 1 to {MAX_TIMELINE_LIMIT}."
FRAME_ID = "Frame id (from search or timeline)."
DURATION = "Pause length: 30m, 2h, … (omit: until resumed)."
DENY = "A deny-list pattern: apps, titles or addresses that contain it are never recorded."
FOLDER = "A new or empty folder (default ~/Downloads/backscroll-memory-<time>)."
MATCHING = "Only the frames matching this search."
EXPORT_LIMIT = "At most this many frames."
FORMAT = "json (frames.json), csv (frames.csv) or html (a browsable index.html)."
THUMBNAILS = "Include decrypted JPEG thumbnails."
INCLUDE_IMAGE = "Attach the decrypted thumbnail."
FRAME_IDS = "Only these frames (a frame's or a moment's ids)."
CONFIRM = "Required (true) to delete: a deletion is never implied."
TRIGGER = "Capture trigger: events (on an app or window change) or interval."
INTERVAL = "Capture interval, and the idle fallback of events, in seconds."
POLL = "Probe period, seconds (at least 0.2)."
MIN_INTERVAL = "Minimum gap between captures, seconds."
STORAGE_CAP = "Storage cap, MB."
RETENTION = "Retention, days."
REDACT = "Scrub secrets from new frames."
ENCRYPT_TEXT = "Encrypt new frames' text."
ENCRYPT_THUMBNAILS = "Encrypt new thumbnails."
HOTKEY = "Pause hotkey, e.g. '<ctrl>+<alt>+m' ('' = off)."
BACKEND = "Capture backend: auto, x11, wlroots or gnome."
ANNOUNCE = "Tell apps to publish their text (AT-SPI IsEnabled)."
KIND = (
    "Event kind (repeatable): "
    "config, pause, resume, delete, purged, reindex, rewritten, dstart, dstop, key, "
    "kept, revised, forgotten, reviewed, space."
)
SOURCE = "JSON Lines: ts, app, title, text."
SKIP_BAD = "Go on past malformed lines."
VIEWS_ONLY = "Only rebuild the views from the log."
ARCHIVE_OUT = "Write the whole store to this new file, sealed under the passphrase (to move it)."
ARCHIVE_IN = "Restore the store from this archive (export --archive) into a new home."
PASSPHRASE_FILE = "A file holding the archive's passphrase (owner-only: mode 0600 or 0400)."
MAX_SUMMARY_LIMIT = 100
SUMMARY_LIMIT = (
    f"Most apps, and most windows or sites, listed (the rest summed as other), 1 to "
    f"{MAX_SUMMARY_LIMIT}."
)
SUMMARY_SINCE = f"{SINCE} Default: today."
MAX_CURSOR = 512
"""Characters of a cursor at most: the ones a search or timeline gives are under 80."""
CURSOR = "The next page: the next_cursor of the answer before, with the same other arguments."
FORGET_CITING = (
    "Also forget the kept memories whose source is a deleted frame (else they are named, their "
    "source pointing at a deleted frame)."
)
SEARCH_BY = (
    "How to find: both (the words, fused with what the screens were about), words (every word, "
    "as typed), or meaning (what the screens were about)."
)
NO_MEANING = (
    "Return once the frames are searchable by their words, and leave embedding them for "
    "search by meaning to the daemon."
)
