"""What a search matches: the app filter, phrases across plaintext and encrypted frames, and
one ranked list over several month partitions."""

from __future__ import annotations

import json
from datetime import timedelta

from typer.testing import CliRunner

from backscroll.cli.app import app as cli
from backscroll.importer import import_frames
from backscroll.manage import delete
from backscroll.store import MemoryStore
from query.search import PHRASE_CHECKS, Hit
from tests.helpers import NOW, import_line


def run_cli(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def apps(hits: list[Hit]) -> list[str]:
    return sorted(h.app for h in hits)


def test_the_app_filter_is_a_substring_of_the_app_name_or_the_title() -> None:
    with MemoryStore(write=True) as store:
        import_frames(
            store,
            [
                import_line(1, "Firefox", "Invoices — Mozilla", "quarterly ledger"),
                import_line(1, "Terminal", "Grafana — Home", "quarterly ledger"),
                import_line(1, "gnome-terminal-server", "zsh", "quarterly ledger"),
                import_line(1, "Slack", "general", "quarterly ledger"),
            ],
        )
        assert apps(store.search("ledger", app="IREFO")) == ["Firefox"]
        assert apps(store.search("ledger", app="terminal")) == ["Terminal", "gnome-terminal-server"]
        assert apps(store.search("ledger", app="graf")) == ["Terminal"]
        assert apps(store.search("ledger", app="afana")) == ["Terminal"]  # inside a word
        assert apps(store.search("ledger", app="afana — H")) == ["Terminal"]
        assert apps(store.search("ledger", app="afana H")) == []  # the text as it is
        assert apps(store.search("ledger", app="Invoices — Moz")) == ["Firefox"]
        assert apps(store.search("ledger", app="nal-serv")) == ["gnome-terminal-server"]
        assert apps(store.search("ledger", app="Photoshop")) == []
        assert apps(store.search("ledger", app="—")) == []  # no app name, no title word
        assert [h.app for h in store.timeline(app="slack")] == ["Slack"]


def test_the_app_filter_shows_exactly_what_deleting_by_app_deletes() -> None:
    with MemoryStore(write=True) as store:
        import_frames(
            store,
            [
                import_line(1, "Firefox", "mybank.com — Accounts", "balance"),
                import_line(1, "Firefox", "Bank of X", "balance"),
                import_line(1, "Bankroll", "ledger", "balance"),
                import_line(1, "Firefox", "news", "bank holiday"),
            ],
        )
        shown = {h.id for h in store.timeline(app="bank")}
        everything = {h.id for h in store.timeline()}
        assert len(shown) == 3
        assert delete(store, app="bank") == 3
        assert {h.id for h in store.timeline()} == everything - shown


def test_the_app_filter_finds_an_app_seen_only_in_an_earlier_month() -> None:
    with MemoryStore(write=True) as store:
        import_frames(
            store,
            [
                import_line(70, "Thunderbird", "Inbox", "ledger"),
                import_line(1, "Firefox", "Inbox", "ledger"),
            ],
        )
        assert apps(store.search("ledger", app="thunder")) == ["Thunderbird"]
        recent = store.search("ledger", app="thunder", start=NOW - timedelta(days=3))
        assert recent == []


def test_a_phrase_matches_plaintext_and_encrypted_frames_in_order_only() -> None:
    with MemoryStore(write=True) as store:
        import_frames(
            store,
            [
                import_line(2, "Editor", "a", "the connection was refused by upstream"),
                import_line(2, "Editor", "b", "upstream refused the connection"),
                import_line(2, "Mail", "Re: refused by upstream", "nothing here"),
            ],
        )
        store.set_config(encrypt_text=True)
        import_frames(
            store,
            [
                import_line(1, "Terminal", "c", "error: refused by upstream proxy"),
                import_line(1, "Terminal", "d", "upstream says: by refused"),
            ],
        )
        found = store.search('"refused by upstream"')
        assert sorted(h.title for h in found) == ["Re: refused by upstream", "a", "c"]
        assert sorted(h.title for h in store.search('"refused by upstream"', app="term")) == ["c"]
        assert sorted(h.title for h in store.search('error "refused by upstream"')) == ["c"]


def test_hits_from_every_month_merge_into_one_list_best_first() -> None:
    with MemoryStore(write=True) as store:
        import_frames(
            store,
            [
                import_line(days, "Editor", f"d{days}", "tarn " * repeats + "filler words here")
                for days, repeats in ((101, 1), (69, 4), (37, 2), (5, 8))
            ],
        )
        assert len(store.views.partitions()) >= 4
        hits = store.search("tarn")
        assert [h.title for h in hits] == ["d5", "d69", "d37", "d101"]
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert [h.title for h in store.search("tarn", limit=2)] == ["d5", "d69"]


def test_when_no_frame_has_every_term_the_search_retries_with_any_as_near_misses() -> None:
    with MemoryStore(write=True) as store:
        import_frames(
            store,
            [
                import_line(2, "Editor", "a", "invoice 4471 from acme"),
                import_line(2, "Editor", "b", "the connection was refused"),
                import_line(2, "Mail", "c", "nothing to see"),
            ],
        )
        store.set_config(encrypt_text=True)
        import_frames(store, [import_line(1, "Terminal", "d", "acme rejected the invoice")])
        exact = store.search("invoice acme")
        assert sorted(h.title for h in exact) == ["a", "d"]
        assert not any(h.near_miss for h in exact)
        near = store.search('invoice "connection was refused" zebra')
        assert sorted(h.title for h in near) == ["a", "b", "d"]
        assert all(h.near_miss for h in near)
        assert [h.title for h in store.search('zebra "rejected the invoice"')] == ["d"]
        assert store.search('zebra "the invoice rejected"') == []  # order checked on decrypting
        assert [h.title for h in store.search("invoice zebra", app="mail")] == []
        assert [h.title for h in store.search("nothing zebra", app="mail")] == ["c"]
        assert store.search("zebra") == []  # one term: nothing to retry


def test_near_misses_are_labelled_in_the_output() -> None:
    with MemoryStore(write=True) as store:
        import_frames(store, [import_line(1, "Editor", "a", "invoice 4471 from acme")])
    out = run_cli("search", "invoice zebra")
    assert "0 match(es) with every term; 1 near miss(es) with some, best first:" in out
    found = json.loads(run_cli("search", "invoice zebra", "--json"))
    assert [m["near_miss"] for m in found["matches"]] == [True]


def test_a_phrase_does_not_span_the_app_name_and_the_title() -> None:
    with MemoryStore(write=True) as store:
        import_frames(
            store,
            [
                import_line(1, "Firefox", "Invoices — Mozilla", "quarterly ledger"),
                import_line(1, "Editor", "notes", "firefox invoices"),
            ],
        )
        assert [h.title for h in store.search('"firefox invoices"')] == ["notes"]
        assert [h.title for h in store.search('"invoices mozilla"')] == ["Invoices — Mozilla"]
        assert apps(store.search("firefox")) == ["Editor", "Firefox"]


def test_snippets_bracket_the_matching_words_around_the_first_match() -> None:
    lead = "npm ERR! code ELIFECYCLE " * 8
    with MemoryStore(write=True) as store:
        import_frames(
            store, [import_line(1, "Terminal", "zsh", lead + "Error: connect ECONNREFUSED")]
        )
        [hit] = store.search("error connect")
        assert hit.snippet.startswith("… ") and "[Error]: [connect] ECONNREFUSED" in hit.snippet
        assert "ERR!" in hit.snippet  # context before the match
        [hit] = store.search("econn*")
        assert "[ECONNREFUSED]" in hit.snippet


def test_a_phrase_in_the_title_of_an_encrypted_frame_is_found() -> None:
    with MemoryStore(write=True) as store:
        store.set_config(encrypt_text=True)
        import_frames(
            store,
            [
                import_line(1, "Mail", "Re: quarterly ledger review", "nothing about it here"),
                import_line(1, "Mail", "Re: ledger quarterly", "nothing here either"),
            ],
        )
        found = store.search('"quarterly ledger"')
        assert [h.title for h in found] == ["Re: quarterly ledger review"]
        assert [h.title for h in store.search('"ledger review" nothing')] == [
            "Re: quarterly ledger review"
        ]


def test_a_phrase_search_that_leaves_encrypted_frames_unchecked_says_so() -> None:
    """Past ``PHRASE_CHECKS`` decryptions, an encrypted frame with the phrase's words is
    left out unchecked: the answer says it may be incomplete, where it said nothing."""
    with MemoryStore(write=True) as store:
        store.set_config(encrypt_text=True)
        rows = [
            import_line(1 + i / 1000, "Terminal", f"t{i}", f"upstream said by {i} it refused")
            for i in range(PHRASE_CHECKS + 6)
        ]
        import_frames(store, rows)
    with MemoryStore() as store:
        moments = store.moments('"refused by upstream"')
        assert moments == [] and moments.incomplete is not None
        assert "6 encrypted frame(s) with the words of the phrase were not checked" in (
            moments.incomplete
        )
        assert store.moments('"said by 3"').incomplete is None
    found = json.loads(run_cli("search", '"refused by upstream"', "--json"))
    assert "not checked" in found["incomplete"]
