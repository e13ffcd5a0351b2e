"""A full disk is an answer, not a crash (issue 14): on a real, small filesystem.

The store lives on a tmpfs the test mounts (tests/smallfs.py). A filler file leaves room for
part of a big import only, so the import runs the disk out of space; then the filler takes
every block left, and the reading commands must still answer from the views as they are.
Once space is freed, the frames that made it are counted and the rest imported: nothing may
be lost or appear twice.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run
from tests.smallfs import MB, SmallFS, small_filesystem

# 32 MB holds the whole store once the filler is gone: about 2.7 KB of log and 2.7 KB of
# index per frame (measured), so ~17 MB for the 3,012 frames, plus room for Tantivy's merges.
FS_BYTES = 32 * MB
# Room left before the big import: about 1,400 frames of log, so a good part of the import
# is appended before the disk runs out, and the views then have frames to catch up on.
ROOM = 4 * MB
SEEDED = 12
LINES = 3000  # ~7.8 MB of frames: twice the room, whatever the import's batch size
SEED_WORD = "quokka"  # in every seeded frame, in none of the big import's


# -- realistic frames --------------------------------------------------------------------

_SCREENS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "Terminal",
        "zsh — ~/src/billing",
        (
            "$ npm run test -- --watch=false --reporter=dot",
            "FAIL src/invoice/totals{n}.test.ts ({ms} ms)",
            "  ● invoice totals › rounds {amount} EUR to two decimals",
            "    Expected: {amount}  Received: {amount2}",
            "npm ERR! code ELIFECYCLE errno {errno}",
            "Error: connect ECONNREFUSED 127.0.0.1:{port}",
            "    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:{line}:{col})",
            "[{hh}:{mm}:{ss}] webpack {k}.{k2}.{k3} compiled with {k} warnings in {ms} ms",
            "postgres-{n}  | LOG:  checkpoint complete: wrote {k} buffers ({pct}.{k2}%)",
            "worker.{n} exited with code {errno}, restarting in {k} s",
        ),
    ),
    (
        "Firefox",
        "Pull request #{n}: retry the ledger export on timeouts · acme/billing — Firefox",
        (
            "reviewer{k} commented {k2} hours ago",
            "The retry loop in export_ledger() backs off {k} times, then gives up after {ms} ms.",
            "Files changed {k}  +{line} −{col}  Checks: {k2} passed, {k3} failed",
            "ci / test (python 3.{k2}) failed in {mm}m {ss}s — see the job log for details",
            "src/ledger/export.py line {line}: the timeout is read from settings.EXPORT_TIMEOUT",
            "Suggested change: raise ExportTimeout(batch_id) from the last attempt's error",
            "Merging is blocked: {k} approving reviews are required by reviewers with access",
        ),
    ),
    (
        "Slack",
        "#deploys — Acme",
        (
            "deploy-bot  {hh}:{mm}  billing-api v{k}.{k2}.{k3} rolled out to {pct}% of eu-west-{k}",
            "maria  {hh}:{mm}  latency p99 is {ms} ms since the rollout, holding it at {pct}%",
            "tom  {hh}:{mm}  the invoice PDF worker is at {pct}% memory on node {n}",
            "deploy-bot  {hh}:{mm}  rollback of billing-api to v{k}.{k2}.{k3} finished in {ss}s",
            "aisha  {hh}:{mm}  ticket OPS-{n} updated: root cause is the connection pool size",
        ),
    ),
    (
        "Thunderbird",
        "Invoice INV-{n} from Northwind Traders — Inbox",
        (
            "From: accounts@northwind.example  Date: {hh}:{mm}, {k} November",
            "Invoice number INV-{n}, due in {k2} days, total {amount} EUR incl. VAT {pct}%",
            "Line {k}: cloud hosting, {line} instance-hours at {amount2} EUR",
            "Please quote the purchase order PO-{port} when paying by bank transfer.",
            "Late payments accrue interest at {k}.{k2}% per month after the due date.",
        ),
    ),
    (
        "Code",
        "ledger.py — billing — Visual Studio Code",
        (
            "{line}  def export_ledger(batch_id: int, timeout: float = {k}.{k2}) -> Path:",
            "{line}      rows = fetch_rows(batch_id, limit={port})",
            "{line}      for attempt in range({k}):",
            "{line}          if elapsed > timeout: raise ExportTimeout(batch_id)",
            "Ln {line}, Col {col}  Spaces: 4  UTF-8  LF  Python 3.{k2}  {k} problems",
        ),
    ),
)


def _fill(rng: random.Random, template: str) -> str:
    values = {
        "n": rng.randrange(1000, 99999),
        "k": rng.randrange(1, 20),
        "k2": rng.randrange(0, 60),
        "k3": rng.randrange(0, 10),
        "ms": rng.randrange(5, 30000),
        "amount": f"{rng.randrange(1, 99999)}.{rng.randrange(100):02d}",
        "amount2": f"{rng.randrange(1, 999)}.{rng.randrange(100):02d}",
        "errno": rng.randrange(1, 255),
        "port": rng.randrange(1024, 65535),
        "line": rng.randrange(1, 2000),
        "col": rng.randrange(1, 120),
        "hh": f"{rng.randrange(24):02d}",
        "mm": f"{rng.randrange(60):02d}",
        "ss": f"{rng.randrange(60):02d}",
        "pct": rng.randrange(1, 100),
    }
    return template.format(**values)


def frame(rng: random.Random, ts: int, marker: str, extra: str = "") -> dict[str, Any]:
    """One frame as `backscroll import` reads it: ~2-3 KB of screen text, with ``marker``."""
    app, title, lines = rng.choice(_SCREENS)
    text = [f"{marker} {extra}".strip()]
    size = len(text[0])
    target = rng.randrange(2000, 3000)
    while size < target:
        line = _fill(rng, rng.choice(lines))
        text.append(line)
        size += len(line) + 1
    return {"ts": ts, "app": app, "title": _fill(rng, title), "text": "\n".join(text)}


def seed_marker(i: int) -> str:
    return f"seeded{i:03d}"


def marker(i: int) -> str:
    return f"marker{i:05d}"


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


# -- the test ----------------------------------------------------------------------------


@pytest.fixture
def small(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[SmallFS, Path]]:
    with small_filesystem(tmp_path / "small", FS_BYTES) as fs:
        home = fs.root / "home"
        monkeypatch.setenv("BACKSCROLL_HOME", str(home))
        yield fs, home


def counts(markers: list[str]) -> dict[str, int]:
    """How many frames hold each marker word, through the library's search by words (by
    meaning, marker00024 is much like marker00027)."""
    from backscroll import MemoryStore

    with MemoryStore() as store:
        return {
            m: sum(not hit.near_miss for hit in store.search(m, limit=5, by="words"))
            for m in markers
        }


def assert_answered(code: int, out: str, err: str, what: str, fs: SmallFS) -> None:
    assert "Traceback" not in out + err, f"{what} crashed ({fs.describe()}):\n{err}"
    assert code == 0, f"{what} exited {code} ({fs.describe()}):\n{err}"


@pytest.mark.slow
def test_a_full_disk_is_one_line_reading_goes_on_and_nothing_is_lost(
    small: tuple[SmallFS, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fs, home = small
    rng = random.Random(14)
    now = int(time.time())
    start = now - SEEDED - LINES - 60
    seeded = [
        frame(rng, start + i, seed_marker(i), f"lunch at the {SEED_WORD} cafe at 12:30?")
        for i in range(SEEDED)
    ]
    rows = [frame(rng, start + SEEDED + i, marker(i)) for i in range(LINES)]
    assert not any(SEED_WORD in json.dumps(row) for row in rows)
    # Both sources stay off the small filesystem: only the store may fill it.
    big = write_jsonl(tmp_path / "big.jsonl", rows)

    # 1. A store with a few frames.
    code, out, err = run(capsys, "import", str(write_jsonl(tmp_path / "seed.jsonl", seeded)))
    assert code == 0 and f"imported {SEEDED} frame(s)" in out, err

    # 2. The import runs the disk out of space: one line that says so, exit 1.
    fs.leave_free(ROOM)
    code, out, err = run(capsys, "import", str(big))
    assert "Traceback" not in out + err, f"the import crashed ({fs.describe()}):\n{err}"
    assert code == 1, f"the import exited {code} ({fs.describe()}):\n{out}{err}"
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{err}"
    message = lines[0]
    assert re.search(r"full|no space", message, re.IGNORECASE), message
    assert str(home) in message, f"the message does not name the home {home}: {message}"
    assert re.search(r"\d\s*(?:[KMGT]i?B|bytes?|B)\b[^.]*\bfree\b", message), (
        f"the message does not say how much is free: {message}"
    )

    # 3. Still full (the filler takes every block left): reading answers from the views.
    fs.fill()
    assert fs.free() < 64 * 1024, fs.describe()
    code, out, err = run(capsys, "status")
    assert_answered(code, out, err, "status", fs)
    code, out, err = run(capsys, "status", "--json")
    assert_answered(code, out, err, "status --json", fs)
    while_full = json.loads(out)
    code, out, search_err = run(capsys, "search", SEED_WORD, "--json")
    assert_answered(code, out, search_err, f"search {SEED_WORD}", fs)
    found = json.loads(out)["matches"]
    assert len(found) == SEEDED, f"search {SEED_WORD} found {len(found)} of {SEEDED} frames"
    code, out, err = run(capsys, "show", str(found[0]["id"]), "--json")
    assert_answered(code, out, err, "show", fs)
    assert SEED_WORD in json.loads(out)["text"]
    code, out, err = run(capsys, "verify")
    assert "Traceback" not in out + err, f"verify crashed ({fs.describe()}):\n{err}"
    assert code in (0, 1) and (out + err).strip(), f"verify exited {code}:\n{out}{err}"

    # 4. Space again: count what made it, import the rest; nothing lost, nothing twice.
    fs.release()
    # No daemon runs: with space again, the next writer catches the views up (a views lock
    # left held by a failed catch-up would leave them behind for good); readers never do.
    code, out, err = run(capsys, "config")
    assert_answered(code, out, err, "config after freeing space", fs)
    code, out, err = run(capsys, "status", "--json")
    assert_answered(code, out, err, "status after freeing space", fs)
    after = json.loads(out)
    assert after["views_lag"] == 0 and "behind" not in err, (
        f"with {fs.describe()}, the views stayed {after['views_lag']} event(s) behind: {err}"
    )
    made_it = after["frames"] - SEEDED
    assert 0 <= made_it < LINES, f"{made_it} of {LINES} frames in the log, yet the import failed"
    if made_it > while_full["frames"] - SEEDED:
        # The views trailed the log while the disk was full: the commands must have said so.
        assert while_full["views_lag"] > 0, while_full
        assert "behind" in search_err, f"search did not say the views are behind: {search_err}"
    seen = counts([marker(i) for i in range(LINES)])
    twice = [m for m, n in seen.items() if n > 1]
    assert not twice, f"frames appended twice: {twice[:10]}"
    present = [i for i in range(LINES) if seen[marker(i)]]
    assert present == list(range(made_it)), (
        f"the frames that made it are not the first {made_it} lines: "
        f"{present[:5]}…{present[-5:]} ({len(present)})"
    )

    rest = write_jsonl(tmp_path / "rest.jsonl", rows[made_it:])
    code, out, err = run(capsys, "import", str(rest))
    assert code == 0 and f"imported {LINES - made_it} frame(s)" in out, err
    code, out, err = run(capsys, "status", "--json")
    assert json.loads(out)["frames"] == SEEDED + LINES
    seen = counts([seed_marker(i) for i in range(SEEDED)] + [marker(i) for i in range(LINES)])
    wrong = {m: n for m, n in seen.items() if n != 1}
    assert not wrong, f"markers not found exactly once: {dict(list(wrong.items())[:10])}"
