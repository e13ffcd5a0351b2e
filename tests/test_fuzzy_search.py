"""The search that forgives OCR: when no frame has every term exactly, a word one edit away in
OCR'd text matches, and the hits say so (issue 17 §4). A real Tantivy index throughout."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from backscroll.cli.app import app as cli
from backscroll.export import select
from backscroll.importer import import_frames
from backscroll.store import MemoryStore
from backscroll.tools import MemoryTool
from query._fuzzy import forgivable, one_edit
from query.parse import parse_query
from query.search import Hit

NOW = datetime.now(UTC)


def row(
    text: str, source: str = "ocr", app: str = "XTerm", title: str = "bash", days: float = 0
) -> str:
    ts = (NOW - timedelta(hours=1, days=days)).isoformat()
    return json.dumps({"ts": ts, "app": app, "title": title, "text": text, "text_source": source})


def titles(hits: list[Hit]) -> list[str]:
    return sorted(h.title for h in hits)


def test_an_ocr_misreading_is_found_and_marked_fuzzy() -> None:
    with MemoryStore(write=True) as store:
        import_frames(store, [row("error: too many argunents given", title="misread")])
        [hit] = store.search("arguments")
        assert hit.title == "misread"
        assert hit.fuzzy and not hit.near_miss
        assert "[argunents]" in hit.snippet  # what was found in place of what was asked
        assert titles(store.search("arguments many")) == ["misread"]  # every term, still
        assert titles(store.search("arguments", app="xterm")) == ["misread"]
        assert store.search("arguments", app="firefox") == []
        assert store.search("arguments", start=NOW) == []  # the span holds too


def test_fuzzy_matches_come_newest_first_across_months() -> None:
    with MemoryStore(write=True) as store:
        import_frames(
            store,
            [
                row("argunents " * 9, title="old, many", days=40),
                row("arguxents", title="newest"),
                row("too many argumentz", title="middle", days=3),
            ],
        )
        assert len(store.views.partitions()) >= 2
        assert [h.title for h in store.search("arguments")] == ["newest", "middle", "old, many"]
        assert [h.title for h in store.search("arguments", limit=1)] == ["newest"]


def test_an_exact_match_wins_and_is_not_marked() -> None:
    with MemoryStore(write=True) as store:
        import_frames(
            store,
            [row("too many argunents", title="misread"), row("the arguments", title="exact")],
        )
        hits = store.search("arguments")
        assert titles(hits) == ["exact"]
        assert not any(h.fuzzy for h in hits)


def test_only_ocr_text_is_forgiven_not_accessibility_text_titles_or_encrypted_text() -> None:
    with MemoryStore(write=True) as store:
        import_frames(
            store,
            [
                row("too many argunents", source="ax", title="ax"),
                row("nothing here", title="argunents in a title"),
            ],
        )
        store.set_config(encrypt_text=True)
        import_frames(store, [row("too many argunents", title="encrypted")])
        assert store.search("arguments") == []
        assert titles(store.search("argunents")) == ["argunents in a title", "ax", "encrypted"]


def test_short_words_numbers_phrases_and_prefixes_are_taken_as_they_are() -> None:
    with MemoryStore(write=True) as store:
        import_frames(
            store, [row("cot listening on port 5433 for build2 after too many argunents")]
        )
        assert store.search("cat") == []  # three letters: one edit is another word
        assert store.search("5432") == []  # one digit off is another port
        assert store.search("build25") == []  # and with letters, another identifier
        assert store.search('"many arguments"') == []
        assert store.search("argumen*") == []
        assert len(store.search("arguments")) == 1


def test_fuzzy_matches_come_before_near_misses_and_the_switch_turns_them_off() -> None:
    with MemoryStore(write=True) as store:
        import_frames(
            store,
            [row("too many argunents", title="misread"), row("many things", title="other")],
        )
        fuzzy = store.search("arguments many")
        assert titles(fuzzy) == ["misread"] and all(h.fuzzy for h in fuzzy)
        near = store.search("arguments many", fuzzy=False)
        assert titles(near) == ["misread", "other"]
        assert all(h.near_miss and not h.fuzzy for h in near)
        assert store.search("arguments", fuzzy=False) == []
        # An export takes exact matches only, as it never takes near misses.
        assert select(store, start=None, end=None, app=None, query="arguments", limit=None) == []


def test_the_cli_and_the_agent_tool_show_the_marking() -> None:
    with MemoryStore(write=True) as store:
        import_frames(store, [row("too many argunents", title="misread")])
    result = CliRunner().invoke(cli, ["search", "arguments"])
    assert result.exit_code == 0, result.output
    heading = "0 exact match(es); 1 fuzzy match(es), a word one letter off in OCR'd text"
    assert heading in result.output and "[argunents]" in result.output
    found = json.loads(CliRunner().invoke(cli, ["search", "arguments", "--json"]).output)
    assert [(m["fuzzy"], m["near_miss"]) for m in found["matches"]] == [(True, False)]
    exact = json.loads(CliRunner().invoke(cli, ["search", "argunents", "--json"]).output)
    assert [m["fuzzy"] for m in exact["matches"]] == [False]

    params = MemoryTool.Params(action="search", query="arguments")
    r = asyncio.run(MemoryTool().execute(None, params))
    assert r.output.splitlines()[1].startswith(heading)
    assert [m.get("fuzzy") for m in r.metadata["matches"]] == [True]
    params = MemoryTool.Params(action="search", query="argunents")
    r = asyncio.run(MemoryTool().execute(None, params))
    assert r.output.splitlines()[1] == "1 match(es), best first:"
    assert r.metadata["matches"][0]["fuzzy"] is False


def test_which_terms_are_forgiven() -> None:
    assert [forgivable(t) for t in parse_query('when ls v1 20931 ts2345 "a b" invoice*')] == [
        True,
        False,
        False,
        False,
        False,
        False,
        False,
    ]


def _distance(a: str, b: str) -> int:
    """Optimal string alignment distance (Damerau's adjacent swap counted as one edit)."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(
                d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])
            )
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


@given(st.text("abc", max_size=6), st.text("abc", max_size=6))
def test_one_edit_agrees_with_the_edit_distance(a: str, b: str) -> None:
    assert one_edit(a, b) == (_distance(a, b) <= 1)
