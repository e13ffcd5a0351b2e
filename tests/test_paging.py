"""Search results and the timeline are paged with a cursor: the pages together are the whole
answer, each match or frame once, and frames recorded between two pages neither shift nor
repeat what the next page shows. A damaged or foreign cursor is refused in one line."""

from __future__ import annotations

import asyncio
import json
from itertools import chain
from pathlib import Path
from typing import Any

import msgspec
import pytest
from mcp import Client

from backscroll import answer
from backscroll.contract import SearchAnswer, SearchRequest, TimelineAnswer, TimelineRequest
from backscroll.contract import parse as parse_request
from backscroll.mcp_server import build_server
from backscroll.store import MemoryStore
from tests.helpers import ago, populate, run


def frame(minute: int, text: str, day: str = "2026-11-24") -> dict[str, Any]:
    # One window per frame, so each is a moment of its own.
    return {"ts": f"{day}T10:{minute:02d}:00", "app": "Term", "title": f"w{minute}", "text": text}


# Longer texts rank lower for one word (BM25's length norm): a search's order is known.
FRAMES = [frame(m, "quokka " + " ".join(f"filler{k}" for k in range(m))) for m in range(30)]


@pytest.fixture
def home(backscroll_home: Path) -> Path:
    populate(FRAMES)
    return backscroll_home


def search(**arguments: Any) -> SearchAnswer:
    with MemoryStore() as store:
        return answer.search(store, parse_request(SearchRequest, arguments)).answer


def timeline(**arguments: Any) -> TimelineAnswer:
    with MemoryStore() as store:
        return answer.timeline(store, parse_request(TimelineRequest, arguments)).answer


def pages(ask: Any, cursor: str | None = None, **arguments: Any) -> list[list[int]]:
    """Every page's ids from ``cursor`` (None: the first page), following the cursors to
    the end."""
    out = []
    while True:
        page = ask(**arguments, **({"cursor": cursor} if cursor else {}))
        out.append(page.ids)
        cursor = page.next_cursor
        if cursor is None:
            return out


def test_the_pages_of_a_search_are_its_whole_answer_each_match_once(home: Path) -> None:
    whole = search(query="quokka", limit=100)
    assert len(whole.ids) == 30 and whole.next_cursor is None
    paged = pages(search, query="quokka", limit=7)
    assert [len(p) for p in paged] == [7, 7, 7, 7, 2]
    assert list(chain(*paged)) == whole.ids


def test_frames_recorded_between_two_pages_of_a_search_neither_shift_nor_repeat_it(
    home: Path,
) -> None:
    before = search(query="quokka", limit=100).ids
    first = search(query="quokka", limit=10)
    # Better matches than any (short texts), in the same month and in a later one.
    populate([frame(59, "quokka"), frame(58, "quokka quokka"), frame(1, "quokka", "2026-12-01")])
    second = search(query="quokka", limit=10, cursor=first.next_cursor)
    assert first.ids + second.ids == before[:20]
    assert search(query="quokka", limit=100).ids[:3] != before[:3]  # they do rank first anew


def test_the_timeline_pages_forward_from_a_start_and_takes_frames_recorded_since_at_its_end(
    home: Path,
) -> None:
    whole = timeline(since="2026-11-24", limit=100).ids
    first = timeline(since="2026-11-24", limit=12)
    assert first.ids == whole[:12]
    populate([frame(45, "later"), frame(5, "same minute as one already shown")])
    rest = pages(timeline, since="2026-11-24", limit=12, cursor=first.next_cursor)
    shown = first.ids + list(chain(*rest))
    assert len(shown) == len(set(shown)) == 31
    assert shown[:30] == whole and timeline(since="2026-11-24", limit=100).ids[-1] == shown[-1]


def test_the_latest_timeline_pages_back_and_never_into_frames_recorded_since(
    home: Path,
) -> None:
    whole = timeline(since="2026-11-24", limit=100).ids
    first = timeline(limit=10)  # no start: the latest, then earlier pages
    assert first.ids == whole[-10:]
    populate([frame(50, "newer than the first page")])
    second = timeline(limit=10, cursor=first.next_cursor)
    assert second.ids == whole[-20:-10]
    assert pages(timeline, limit=10, cursor=second.next_cursor) == [whole[:10]]


def test_frames_of_one_instant_are_paged_by_id(backscroll_home: Path) -> None:
    populate([{"ts": "2026-11-24T10:00:00", "app": "Term", "title": "t", "text": "x"}] * 9)
    whole = timeline(since="2026-11-24", limit=100).ids
    assert list(chain(*pages(timeline, since="2026-11-24", limit=2))) == whole
    assert list(chain(*pages(timeline, limit=4))) == whole[5:] + whole[1:5] + whole[:1]


def test_a_page_keeps_the_span_its_first_page_resolved(backscroll_home: Path) -> None:
    populate([{"ts": ago(m), "app": "Term", "title": "t", "text": f"quokka {m}"} for m in range(9)])
    first = search(query="quokka", since="2h", limit=3)
    second = search(query="quokka", since="2h", limit=3, cursor=first.next_cursor)
    assert (second.start, second.end) == (first.start, first.end) and second.start is not None


@pytest.mark.parametrize(
    ("cursor", "said"),
    [
        ("not base64!", "cursor: not one a search gave (not base64)"),
        ("AAAA", "cursor: not one a search gave (damaged: it fails its checksum)"),
        ("x" * 513, "cursor: expected `str` of length <= 512"),
        (" ", "cursor: must not be empty or blank"),
    ],
)
def test_a_damaged_cursor_is_refused_in_one_line(
    home: Path, capsys: pytest.CaptureFixture[str], cursor: str, said: str
) -> None:
    code, _, err = run(capsys, "search", "quokka", "--cursor", cursor)
    assert code != 0 and said in err and len(err.strip().splitlines()) == 1


def test_a_cursor_pages_only_the_request_it_came_from(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cursor = search(query="quokka", limit=5).next_cursor
    assert cursor is not None
    flipped = cursor[:-3] + ("A" if cursor[-3] != "A" else "B") + cursor[-2:]
    for args, said in [
        (("search", "filler3", "--cursor", cursor), "it pages another search"),
        (("search", "quokka", "--app", "Term", "--cursor", cursor), "it pages another search"),
        (("timeline", "--cursor", cursor), "cursor: not one a timeline gave (it pages a search)"),
        (("search", "quokka", "--cursor", flipped), "fails its checksum"),
    ]:
        code, _, err = run(capsys, *args)
        assert code != 0 and said in err and len(err.strip().splitlines()) == 1, args


def test_the_cli_says_the_next_cursor_and_the_agents_tool_takes_it(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "timeline", "--since", "2026-11-24", "--limit", "4", "--json")
    assert code == 0, err
    first = msgspec.json.decode(out, type=TimelineAnswer, strict=True)
    assert first.next_cursor is not None
    code, out, _ = run(capsys, "timeline", "--since", "2026-11-24", "--limit", "4")
    assert out.rstrip().endswith(f"more: the next page is cursor {first.next_cursor}")
    code, out, err = run(
        capsys, "timeline", "--since", "2026-11-24", "--limit", "4", "--cursor",
        first.next_cursor, "--json",
    )  # fmt: skip
    assert code == 0, err

    async def ask(arguments: dict[str, Any]) -> Any:
        async with Client(build_server(home)) as client:
            return await client.call_tool("memory", arguments)

    arguments = {"action": "timeline", "since": "2026-11-24", "limit": 4}
    result = asyncio.run(ask({**arguments, "cursor": first.next_cursor}))
    assert not result.is_error and result.structured_content == json.loads(out)
    refused = asyncio.run(ask({**arguments, "cursor": "AAAA"}))
    assert refused.is_error and refused.structured_content == {
        "error": "cursor: not one a timeline gave (damaged: it fails its checksum)",
        "action": "timeline",
    }
