"""The day at a glance: time per app and per window or site from frame times, through the
library call, the CLI and the agents' ``memory`` tool, in one answer."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
from mcp import Client

from backscroll import answer
from backscroll.contract import parse
from backscroll.contract.summary import SummaryAnswer, SummaryRequest
from backscroll.mcp_server import build_server
from backscroll.store import MemoryStore
from tests.helpers import populate, run

DAY = "2026-11-24"


def at(clock: str) -> str:
    """An import line's ``ts``: ``clock`` on DAY, local time."""
    return f"{DAY}T{clock}"


# With the default idle interval (30 s), a frame counts until the next for at most 60 s.
FRAMES = [
    {"ts": at("09:00:00"), "app": "Terminal", "title": "zsh", "text": "make"},
    {"ts": at("09:00:20"), "app": "Terminal", "title": "zsh", "text": "make test"},
    {
        "ts": at("09:00:50"),
        "app": "Firefox",
        "title": "Grafana — Home",
        "text": "latency",
        "url": "https://grafana.example.com/d/1",
    },
    {
        "ts": at("09:01:10"),
        "app": "Firefox",
        "title": "Grafana — Alerts",
        "text": "alerts",
        "url": "https://grafana.example.com/alerting",
    },
    {"ts": at("09:30:00"), "app": "Slack", "title": "general", "text": "lunch?"},
    {"ts": at("10:59:40"), "app": "Terminal", "title": "vim notes.txt", "text": "notes"},
]


@pytest.fixture
def home(backscroll_home: Path) -> Path:
    populate(FRAMES)
    return backscroll_home


def summary(**arguments: Any) -> SummaryAnswer:
    with MemoryStore() as store:
        return answer.summary(store, parse(SummaryRequest, {"since": DAY, **arguments})).answer


def seconds(rows: list[Any]) -> dict[str, int]:
    return {getattr(r, "window", None) or r.app: r.seconds for r in rows}


def test_each_frame_counts_until_the_next_and_a_silence_past_the_gap_is_time_away(
    home: Path,
) -> None:
    day = summary()
    assert day.gap_seconds == 60
    # Terminal: 20 s, then 30 s until Firefox; vim's last frame 60 s. Firefox: 20 s, then
    # 60 s of the half hour before Slack. Slack: 60 s of the 90 minutes before vim.
    assert seconds(day.apps) == {"Terminal": 110, "Firefox": 80, "Slack": 60}
    assert [a.app for a in day.apps] == ["Terminal", "Firefox", "Slack"]  # longest first
    assert (day.total.seconds, day.total.frames) == (250, 6)
    assert day.total.minutes == round(250 / 60, 1)
    assert [a.frames for a in day.apps] == [3, 2, 1]


def test_a_browser_page_counts_for_its_site_and_any_other_window_for_its_title(
    home: Path,
) -> None:
    windows = {(w.app, w.window, w.site): w.seconds for w in summary().windows}
    assert windows == {
        ("Firefox", "grafana.example.com", True): 80,  # two pages of one site
        ("Slack", "general", False): 60,
        ("Terminal", "vim notes.txt", False): 60,
        ("Terminal", "zsh", False): 50,
    }


def test_the_strip_has_an_hour_a_slice_and_the_app_that_held_each_longest(home: Path) -> None:
    day = summary()
    assert day.slice_seconds == 3600 and len(day.slices) == 24
    assert day.slices[0].start == datetime.fromisoformat(at("00:00:00")).astimezone()
    by_hour = {s.start.hour: (s.seconds, s.app, s.app_seconds) for s in day.slices if s.seconds}
    # vim's minute, from 10:59:40, is split across the hour.
    assert by_hour == {9: (190, "Firefox", 80), 10: (20, "Terminal", 20), 11: (40, "Terminal", 40)}
    assert all(s.app is None for s in day.slices if not s.seconds)


def test_a_long_span_is_sliced_in_days_and_never_into_more_than_200_slices(home: Path) -> None:
    month = summary(since="2026-11-01", until="2026-11-30")  # all of the 30th
    assert month.slice_seconds == 86_400 and len(month.slices) == 30
    assert [s.seconds for s in month.slices if s.seconds] == [250]
    years = summary(since="2020-01-01", until="2026-12-01")
    assert len(years.slices) <= 200 and years.total.seconds == 250


def test_the_lists_are_bounded_and_the_rest_summed_as_other(home: Path) -> None:
    day = summary(limit=1)
    assert seconds(day.apps) == {"Terminal": 110}
    assert (day.other_apps.count, day.other_apps.seconds, day.other_apps.frames) == (2, 140, 3)
    assert [w.window for w in day.windows] == ["grafana.example.com"]
    assert (day.other_windows.count, day.other_windows.seconds) == (3, 170)


def test_an_app_filter_counts_its_frames_while_the_others_still_end_their_spans(
    home: Path,
) -> None:
    zsh = summary(app="zsh")
    assert seconds(zsh.apps) == {"Terminal": 50}  # not until vim: Firefox came between
    assert seconds(summary(app="GRAFANA.example").apps) == {"Firefox": 80}  # the address too


def test_the_gap_follows_the_capture_interval(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "config", "--interval", "10")[0] == 0
    day = summary()
    assert day.gap_seconds == 20
    assert seconds(day.apps) == {"Terminal": 60, "Firefox": 40, "Slack": 20}


def test_a_day_without_frames_says_why(home: Path) -> None:
    empty = summary(since="2026-11-20")
    assert empty.total.frames == 0 and empty.apps == [] and empty.why_empty


def test_encrypted_text_is_never_decrypted_for_a_summary(
    backscroll_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "config", "--encrypt-text", "on")[0] == 0
    populate(FRAMES)
    with MemoryStore() as store:
        assert store.state().totals().encrypted_text == len(FRAMES)
    (backscroll_home / "key").unlink()  # nothing could be decrypted now
    assert seconds(summary().apps) == {"Terminal": 110, "Firefox": 80, "Slack": 60}


def test_a_summary_writes_nothing(home: Path) -> None:
    def files() -> dict[Path, tuple[int, int]]:
        return {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in home.rglob("*")}

    before = files()
    summary()
    assert files() == before


def test_the_cli_prints_bars_and_its_json_is_the_answer(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "summary", "--since", DAY)
    assert code == 0, err
    assert "4m 10s on screen in 6 frame(s)" in out
    assert "█" * 24 + "  Terminal" in out
    assert "[Firefox] grafana.example.com (site)" in out
    code, out, err = run(capsys, "summary", "--since", DAY, "--app", "slack", "--json")
    assert code == 0, err
    decoded = msgspec.json.decode(out, type=SummaryAnswer, strict=True)
    assert json.loads(msgspec.json.encode(decoded)) == json.loads(out)
    assert seconds(decoded.apps) == {"Slack": 60} and decoded.app == "slack"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--limit", "0"), "limit: must be a number of results from 1 to 100, not 0"),
        (("--limit", "101"), "limit: must be a number of results from 1 to 100, not 101"),
        (("--since", "blorp"), "blorp"),
        (("--app", " "), "app: must not be empty or blank"),
    ],
)
def test_the_cli_refuses_bad_arguments_in_one_line(
    home: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], said: str
) -> None:
    code, _, err = run(capsys, "summary", *args)
    assert code != 0 and said in err and len(err.strip().splitlines()) == 1


def test_the_agents_memory_tool_gives_the_cli_answer(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def ask(arguments: dict[str, Any]) -> Any:
        async with Client(build_server(home)) as client:
            return await client.call_tool("memory", arguments)

    result = asyncio.run(ask({"action": "summary", "since": DAY, "until": "2026-11-25"}))
    assert not result.is_error
    structured = result.structured_content
    decoded = msgspec.json.decode(json.dumps(structured), type=SummaryAnswer, strict=True)
    assert seconds(decoded.apps) == {"Terminal": 110, "Firefox": 80, "Slack": 60}
    assert "4m 10s on screen" in result.content[0].text  # type: ignore[union-attr]
    _, out, _ = run(capsys, "summary", "--since", DAY, "--until", "2026-11-25", "--json")
    assert json.loads(out) == structured
    refused = asyncio.run(ask({"action": "summary", "limit": 500}))
    assert refused.is_error
    assert refused.structured_content == {
        "error": "limit: must be a number of results from 1 to 100, not 500",
        "action": "summary",
    }


MONTH_DAYS = ("09-24", "10-24", "11-24")


@pytest.mark.parametrize("where", ["body", "footer"])
def test_a_damaged_month_is_said_and_the_others_still_counted(
    backscroll_home: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    from tests.test_view_damage import damage_store_file

    populate([dict(f, ts=f["ts"].replace("11-24", day)) for day in MONTH_DAYS for f in FRAMES])
    damage_store_file(backscroll_home, "2026-10", where)
    code, out, err = run(
        capsys, "summary", "--since", "2026-09-01", "--until", "2026-11-30", "--json"
    )
    assert code == 0 and "Traceback" not in err, err
    said = msgspec.json.decode(out, type=SummaryAnswer, strict=True)
    assert said.incomplete and "the search view of 2026-10 is damaged" in said.incomplete
    assert said.total.seconds >= 2 * 250  # September's and November's days, whole
    assert said.total.frames < 3 * len(FRAMES)
