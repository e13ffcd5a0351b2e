"""What many test modules build the same way: events, import lines, a CLI call in-process."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from eventlog.events import FrameCaptured

T0 = 1_700_000_000_000_000  # 2023-11-14 22:13:20 UTC, in microseconds
NOW = datetime.now(UTC)


def frame_event(
    offset: int,
    captured_us: int = T0,
    text: str = "",
    *,
    app: str = "term",
    title: str = "bash",
) -> FrameCaptured:
    """A frame with id ``offset``; its default text differs per frame and compresses as
    terminal text does (the log tests size segments by it)."""
    return FrameCaptured(
        ts_us=captured_us,
        frame_id=offset,
        captured_us=captured_us,
        app=app,
        title=title,
        text=text or f"$ make test # frame {offset}\n" + "ok " * 40,
        text_source="ocr",
    )


def import_line(days_ago: float, app: str, title: str, text: str, image: Path | None = None) -> str:
    """One line of ``backscroll import``: a frame seen ``days_ago`` days before the session."""
    ts = (NOW - timedelta(days=days_ago)).isoformat()
    row = {"ts": ts, "app": app, "title": title, "text": text}
    if image:
        row["image"] = str(image)
    return json.dumps(row)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``backscroll *args`` in this process: its exit code, stdout and stderr."""
    from backscroll.cli import main

    argv = sys.argv
    sys.argv = ["backscroll", *args]
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        sys.argv = argv
    out, err = capsys.readouterr()
    return code, out, err
