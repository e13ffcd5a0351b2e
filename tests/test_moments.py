"""Search answers as moments: consecutive frames of one window whose text barely changed come
back as one match with every frame id and the times it was seen."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from backscroll.cli.app import app as cli
from backscroll.importer import import_frames
from backscroll.store import MemoryStore
from backscroll.tools import MemoryTool
from base import tokens
from query.moments import MOST_HITS, SIMILAR, similarity
from tests.helpers import NOW

START = NOW - timedelta(days=1)
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]


def log_view(end: int, rows: int = 30) -> str:
    """A terminal tailing a log: the last ``rows`` of ``end`` lines, each with its own words."""
    lines = [
        f"unpacking {WORDS[i % len(WORDS)]}{i} setting up {WORDS[(i * 7) % len(WORDS)]}x{i} done"
        for i in range(max(0, end - rows), end)
    ]
    return "\n".join(["tail -f /var/log/dpkg.log", *lines])


def other_text(seed: int) -> str:
    """A screen with nothing in common with ``log_view`` but the word ``unpacking``."""
    return " ".join(f"paragraph{seed}w{i}" for i in range(60)) + " unpacking"


def line(minutes: float, app: str, title: str, text: str) -> str:
    ts = (START + timedelta(minutes=minutes)).isoformat()
    return json.dumps({"ts": ts, "app": app, "title": title, "text": text})


def tail_session(first: int = 0, count: int = 10, at: float = 0.0) -> list[str]:
    """The terminal seen ``count`` times a minute apart, one log line more each time."""
    return [
        line(at + i, "Terminal", "root@build: tail -f", log_view(40 + first + i))
        for i in range(count)
    ]


@pytest.fixture
def store(backscroll_home: Path) -> MemoryStore:
    rows = [
        line(-30, "Firefox", "Docs", other_text(1)),
        *tail_session(),
        line(20, "Code", "app.py", other_text(2)),
    ]
    store = MemoryStore(write=True)
    import_frames(store, rows)
    return store


def test_the_texts_of_a_growing_log_are_similar_and_another_screen_is_not() -> None:
    assert similarity(log_view(40), log_view(41)) >= SIMILAR
    assert similarity(log_view(40), log_view(70)) < SIMILAR  # a whole screen further
    assert similarity(log_view(40), other_text(1)) < 0.05
    assert similarity("", "") == 1.0


def test_ten_frames_of_one_terminal_are_one_moment_with_every_frame(store: MemoryStore) -> None:
    hits = store.search("unpacking", limit=50)
    assert len(hits) == 12
    moments = store.moments("unpacking")
    assert len(moments) == 3
    [terminal] = [m for m in moments if m.hit.app == "Terminal"]
    terminal_ids = sorted(h.id for h in hits if h.app == "Terminal")
    assert terminal.frame_ids == terminal_ids
    assert terminal.hit.id in terminal_ids and terminal.hit.snippet
    assert terminal.first_seen == START
    assert terminal.last_seen == START + timedelta(minutes=9)
    assert all(len(m.frames) == 1 for m in moments if m is not terminal)
    # ranked where the moment's best frame ranked
    assert [m.hit.id for m in moments] == [
        h.id for h in hits if h.app != "Terminal" or h.id == terminal.hit.id
    ]


def test_each_moment_shows_the_snippet_its_best_hit_has_in_a_search(store: MemoryStore) -> None:
    """Only the best hit's snippet is made, and it is the one a search of frames makes."""
    snippets = {h.id: h.snippet for h in store.search("unpacking", limit=50)}
    moments = store.moments("unpacking")
    assert [m.hit.snippet for m in moments] == [snippets[m.hit.id] for m in moments]
    assert all(m.hit.snippet for m in moments)


def test_a_frame_of_another_window_between_two_hits_is_not_split_into_words(
    backscroll_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run of a window ends at another window's frame: its words are not needed."""
    between = other_text(3).replace(" unpacking", "")
    store = MemoryStore(write=True)
    import_frames(
        store,
        [
            line(0, "Terminal", "build", log_view(40)),
            line(1, "Firefox", "Docs", between),
            line(2, "Terminal", "build", log_view(41)),
        ],
    )
    split: list[str] = []
    words = tokens.words
    monkeypatch.setattr(tokens, "words", lambda text: split.append(text) or words(text))
    moments = store.moments("unpacking")
    assert [len(m.frames) for m in moments] == [1, 1]  # apart: a frame of Firefox came between
    assert between not in split


@pytest.mark.parametrize("term_cost", [0, 10**12])  # by their terms; by their ranges
def test_the_frames_between_hits_are_found_by_their_ids_or_by_their_ranges_alike(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, term_cost: int
) -> None:
    import query.moments

    monkeypatch.setattr(query.moments, "TERM_COST", term_cost)
    moments = store.moments("unpacking")
    assert sorted(len(m.frames) for m in moments) == [1, 1, 10]


def test_limit_counts_moments_not_frames(store: MemoryStore) -> None:
    assert len(store.search("unpacking", limit=2)) == 2
    moments = store.moments("unpacking", limit=2)
    assert len(moments) == 2
    assert sum(len(m.frames) for m in moments) in (2, 11)  # the terminal's ten, when it ranks


def test_frames_of_one_window_with_another_window_between_are_separate_moments(
    backscroll_home: Path,
) -> None:
    rows = [
        *tail_session(count=3),
        line(3.5, "Slack", "general", "lunch?"),  # another window, not a match
        *tail_session(first=3, count=3, at=4),
    ]
    with MemoryStore(write=True) as store:
        import_frames(store, rows)
        moments = store.moments("unpacking")
    assert sorted(len(m.frames) for m in moments) == [3, 3]
    first, second = sorted(moments, key=lambda m: m.first_seen)
    assert first.last_seen < START + timedelta(minutes=3.5) < second.first_seen


def test_frames_of_one_window_whose_text_changed_a_lot_are_separate_moments(
    backscroll_home: Path,
) -> None:
    rows = [
        *tail_session(count=3),
        line(3, "Terminal", "root@build: tail -f", other_text(3)),  # the screen cleared
        line(4, "Terminal", "root@build: tail -f", other_text(3) + " again"),
        # not matched by the query, but changed a lot from the frame before and after
        line(5, "Terminal", "root@build: tail -f", "clear"),
        line(6, "Terminal", "root@build: tail -f", other_text(3)),
    ]
    with MemoryStore(write=True) as store:
        import_frames(store, rows)
        moments = store.moments("unpacking")
    assert sorted(len(m.frames) for m in moments) == [1, 2, 3]


def test_a_deleted_window_between_frames_no_longer_separates_them(backscroll_home: Path) -> None:
    from backscroll.manage import delete

    rows = [
        *tail_session(count=2),
        line(2.5, "Slack", "general", "lunch?"),
        *tail_session(first=2, count=2, at=3),
    ]
    with MemoryStore(write=True) as store:
        import_frames(store, rows)
        assert len(store.moments("unpacking")) == 2
        delete(store, app="Slack")
        [moment] = store.moments("unpacking")
    assert len(moment.frames) == 4


def test_cli_search_shows_one_line_per_moment_with_its_times(store: MemoryStore) -> None:
    result = CliRunner().invoke(cli, ["search", "unpacking"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1] == "3 match(es), best first:"
    [terminal] = [row for row in lines if "[Terminal]" in row]
    first = START.astimezone().strftime("%H:%M:%S")
    last = (START + timedelta(minutes=9)).astimezone().strftime("%H:%M:%S")
    assert terminal.endswith(f"(seen {first}–{last}, 10 frames)")
    assert sum("[Firefox]" in row or "[Code]" in row for row in lines) == 2
    assert not any("seen" in row for row in lines if "[Terminal]" not in row)


def test_cli_search_json_keeps_every_frame_id_and_time(store: MemoryStore) -> None:
    result = CliRunner().invoke(cli, ["search", "unpacking", "--json", "--limit", "3"])
    assert result.exit_code == 0, result.output
    matches = json.loads(result.output)["matches"]
    assert len(matches) == 3
    [terminal] = [m for m in matches if m["app"] == "Terminal"]
    assert len(terminal["frame_ids"]) == 10 and terminal["id"] in terminal["frame_ids"]
    assert terminal["seen"][0] == terminal["first_seen"]
    assert terminal["first_seen"].startswith(START.strftime("%Y-%m-%dT%H:%M:%S"))
    assert terminal["seen"][-1] == terminal["last_seen"]
    assert len(terminal["seen"]) == 10
    for single in (m for m in matches if m is not terminal):
        assert single["frame_ids"] == [single["id"]]
        assert single["first_seen"] == single["last_seen"] == single["time"]


def test_the_memory_tool_keeps_every_frame_id_of_a_moment(store: MemoryStore) -> None:
    params = MemoryTool.Params(action="search", query="unpacking", limit=15)
    result = asyncio.run(MemoryTool().execute(None, params))
    assert not result.is_error, result.output
    matches = result.metadata["matches"]
    assert result.metadata["ids"] == [m["id"] for m in matches]
    assert sorted(len(m["frame_ids"]) for m in matches) == [1, 1, 10]
    terminal = next(m for m in matches if len(m["frame_ids"]) == 10)
    assert terminal["first_seen"] == terminal["seen"][0] < terminal["last_seen"]
    assert "10 frames)" in result.output


def test_frames_between_two_hits_count_and_past_the_bound_keep_them_apart(
    backscroll_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import query.moments

    title = "root@build: tail -f"
    rows = [
        line(0, "Terminal", title, log_view(40) + " needle"),
        line(1, "Terminal", title, log_view(41)),  # not a match, barely changed
        line(2, "Terminal", title, log_view(42) + " needle"),
    ]
    with MemoryStore(write=True) as store:
        import_frames(store, rows)
        [moment] = store.moments("needle")
        assert len(moment.frames) == 2
        monkeypatch.setattr(query.moments, "MOST_BETWEEN", 0)  # the frame between is one too many
        assert [len(m.frames) for m in store.moments("needle")] == [1, 1]


def test_encrypted_frames_group_by_their_decrypted_text(backscroll_home: Path) -> None:
    with MemoryStore(write=True) as store:
        store.set_config(encrypt_text=True)
        import_frames(store, [*tail_session(count=4), line(5, "Code", "a.py", other_text(2))])
        assert all(h.encrypted for h in store.timeline())
        [terminal, code] = sorted(store.moments("unpacking"), key=lambda m: -len(m.frames))
    assert len(terminal.frames) == 4 and code.hit.app == "Code"


def test_a_moment_seen_across_midnight_shows_both_dates() -> None:
    from datetime import datetime

    from query.moments import Moment
    from query.render import seen_text
    from query.search import Hit

    def hit(frame_id: int, when: datetime) -> Hit:
        return Hit(
            id=frame_id,
            when=when,
            app="Terminal",
            title="bash",
            text_source="ocr",
            encrypted=False,
            reason="interval",
        )

    day = datetime(2026, 11, 30, 23, 58, 30).astimezone()
    before, after = hit(1, day), hit(2, day + timedelta(minutes=3))
    assert seen_text(Moment(hit=before, frames=[before, after])) == (
        "2026-11-30 23:58:30 – 2026-12-01 00:01:30"
    )
    same_day = hit(3, day - timedelta(minutes=8))
    assert seen_text(Moment(hit=before, frames=[same_day, before])) == "23:50:30–23:58:30"


def test_a_window_seen_thousands_of_times_does_not_silently_hide_the_others(
    backscroll_home: Path,
) -> None:
    """Issue 24, case 10: the terminal's 3,000 frames outrank the other two windows' and fill
    every round of the search up to ``MOST_HITS`` frames; the answer of two moments says it
    is incomplete, and how to see the rest, where it gave them with no hint."""
    terminal = [  # ten seconds apart: a day's frames end before now
        line(i / 6, "Terminal", "root@build: tail -f", log_view(40 + i)) for i in range(MOST_HITS)
    ]
    rows = [
        line(-30, "Firefox", "Docs", other_text(1)),
        *terminal,
        line(MOST_HITS / 6 + 20, "Code", "app.py", other_text(2)),
    ]
    with MemoryStore(write=True) as writer:
        import_frames(writer, rows)
    with MemoryStore() as store:
        found = store.moments("unpacking")
        assert {m.hit.app for m in found} == {"Terminal"} and len(found) < 15
        assert found.incomplete is not None
        assert f"the best {MOST_HITS:,} matching frames" in found.incomplete
        assert "narrow the search" in found.incomplete
        assert store.moments("unpacking", limit=1).incomplete is None  # as many as asked
        narrowed = store.moments("unpacking", app="Firefox")
        assert [m.hit.title for m in narrowed] == ["Docs"] and narrowed.incomplete is None
    result = CliRunner().invoke(cli, ["search", "unpacking", "--json"])
    assert result.exit_code == 0, result.output
    assert "narrow the search" in json.loads(result.stdout)["incomplete"]
    shown = CliRunner().invoke(cli, ["search", "unpacking"])
    assert shown.stdout.splitlines()[-1].startswith("incomplete: the best 3,000 matching frames")


def test_a_window_seen_across_the_turn_of_a_month_is_one_moment(backscroll_home: Path) -> None:
    """The frames between two hits are read from each month the pair reaches (in UTC, as the
    months of the index are): here from the hit before midnight to the one after it."""
    from datetime import UTC, datetime

    turn = datetime.now(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    title = "root@build: tail -f"

    def seen(minutes: int, text: str) -> str:
        ts = (turn + timedelta(minutes=minutes)).isoformat()
        return json.dumps({"ts": ts, "app": "Terminal", "title": title, "text": text})

    rows = [
        seen(-1, log_view(40) + " needle"),
        seen(0, log_view(41)),  # not a match, barely changed: in the second month
        seen(1, log_view(42) + " needle"),
    ]
    with MemoryStore(write=True) as store:
        import_frames(store, rows)
        assert len(store.views.partitions()) == 2
        [moment] = store.moments("needle")
    assert len(moment.frames) == 2
