"""Kept memories: the model, writes that cannot go wrong, the review rule on every read path,
forgetting as erasure, encryption, the view rebuilt, and the ``backscroll keep`` commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from backscroll.contract import parse
from backscroll.contract.keep import (
    ApproveRequest,
    DueRequest,
    ForgetRequest,
    GetRequest,
    HistoryRequest,
    KeepRequest,
    KeptSearchRequest,
    ListRequest,
    ResolveRequest,
    ReviewRequest,
    ReviseRequest,
    SpaceRequest,
)
from backscroll.keep import Keeper, Refused
from backscroll.store import MemoryStore
from eventlog.events import MemoryKept
from projector.kept import DAY_US, KeptView
from tests.helpers import run
from tests.residue import files_containing

SPANISH = {
    "text": "Answers in Spanish, always.",
    "kind": "preference",
    "subject": "user",
    "predicate": "answer_language",
    "value": "spanish",
}


def keep(keeper: Keeper, **arguments: Any) -> Any:
    return keeper.keep(parse(KeepRequest, arguments))


def refusal(call: Any, *args: Any, **kwargs: Any) -> Any:
    with pytest.raises(Refused) as caught:
        call(*args, **kwargs)
    return caught.value.refusal


@pytest.fixture
def keeper() -> Any:
    with MemoryStore(write=True) as store:
        yield Keeper(store)


def resolve(keeper: Keeper, spaces: list[str] | None = None, **claim: str) -> Any:
    arguments: dict[str, Any] = {"subject": "user", "predicate": "answer_language", **claim}
    if spaces is not None:
        arguments["spaces"] = spaces
    return keeper.resolve(parse(ResolveRequest, arguments))


# -- the model and its reads ------------------------------------------------------------------


def test_a_kept_claim_resolves_ignoring_case_and_extra_spaces(keeper: Keeper) -> None:
    kept = keep(keeper, **SPANISH).memory
    found = resolve(keeper, subject="  USER ")
    assert found.found and found.memory.id == kept.id
    assert (kept.version, kept.kind, kept.space, kept.status) == (
        1,
        "preference",
        "default",
        "current",
    )
    assert "kept 20" in kept.line and "source: none given" in kept.line


def test_resolve_takes_the_first_space_of_the_precedence_list_and_never_guesses(
    keeper: Keeper,
) -> None:
    keep(keeper, **SPANISH)
    rust = keep(keeper, **{**SPANISH, "space": "spaceship", "value": "rust", "text": "Rust here."})
    assert resolve(keeper, ["spaceship", "default"]).memory.id == rust.memory.id
    assert resolve(keeper, ["default", "spaceship"]).memory.value == "spanish"
    assert resolve(keeper, ["other"]).found is False
    assert resolve(keeper, predicate="answer_languages").found is False


def test_search_scores_words_and_gives_near_misses_below_the_cut_off(keeper: Keeper) -> None:
    keep(keeper, text="The staging database resets on Sundays.")
    keep(keeper, text="We chose Postgres because of JSONB.", kind="decision")
    found = keeper.search(parse(KeptSearchRequest, {"query": "staging database"}))
    assert [h.score for h in found.memories] == [1.0]
    assert found.memories[0].matched_by == "words" and found.near_misses == []
    weak = keeper.search(parse(KeptSearchRequest, {"query": "database backups nightly"}))
    assert weak.memories == [] and [round(h.score, 2) for h in weak.near_misses] == [0.33]


def test_a_new_write_reports_the_similar_memories_of_its_space(keeper: Keeper) -> None:
    first = keep(keeper, text="The staging database resets on Sundays.").memory
    again = keep(keeper, text="Staging database resets every Sunday night.")
    assert [s.id for s in again.similar] == [first.id]
    elsewhere = keep(keeper, text="The staging database resets on Sundays.", space="other")
    assert elsewhere.similar == []


def test_intentions_come_due_and_take_iso_times_to_the_second(keeper: Keeper) -> None:
    later = keep(keeper, text="Ask how Atlas went.", kind="intention", due="2999-10-01T09:00:05Z")
    past = keep(keeper, text="Ask about the offsite.", kind="intention", due="2020-10-01T09:00:05Z")
    assert later.memory.due_at.second == 5
    due = keeper.due(parse(DueRequest, {}))
    assert [m.id for m in due.memories] == [past.memory.id]
    assert refusal(keep, keeper, text="x", kind="intention").error == "invalid"


def test_pages_are_bounded_and_go_on_by_cursor(keeper: Keeper) -> None:
    for n in range(5):
        keep(keeper, text=f"Fact number {n}.")
    first = keeper.memories(parse(ListRequest, {"limit": 2}))
    assert len(first.memories) == 2 and first.next_cursor == "2"
    rest = keeper.memories(parse(ListRequest, {"limit": 50, "cursor": first.next_cursor}))
    assert len(rest.memories) == 3 and rest.next_cursor is None
    with pytest.raises(Exception, match="limit"):
        parse(ListRequest, {"limit": 51})


# -- writes that cannot go wrong --------------------------------------------------------------


def test_a_retry_with_its_key_answers_as_the_first_and_writes_nothing(keeper: Keeper) -> None:
    first = keep(keeper, **SPANISH, request_key="k-1")
    end = keeper.store.log.next_offset()
    again = keep(keeper, **SPANISH, request_key="k-1")
    assert again.replayed and again.memory.id == first.memory.id
    assert again.memory.version == first.memory.version
    assert keeper.store.log.next_offset() == end
    other = refusal(keep, keeper, **{**SPANISH, "value": "french"}, request_key="k-1")
    assert other.error == "key_reused"


def test_a_key_of_a_forgotten_memory_is_retired(keeper: Keeper) -> None:
    kept = keep(keeper, **SPANISH, request_key="k-1").memory
    keeper.forget(parse(ForgetRequest, {"id": kept.id, "request_key": "k-2"}))
    assert refusal(keep, keeper, **SPANISH, request_key="k-1").error == "key_retired"
    retry = keeper.forget(parse(ForgetRequest, {"id": kept.id, "request_key": "k-2"}))
    assert retry.replayed and retry.id == kept.id
    assert keeper.forget(parse(ForgetRequest, {"id": kept.id})).replayed
    assert refusal(keeper.get, parse(GetRequest, {"id": kept.id})).error == "not_found"


def test_a_stale_expected_version_is_refused_with_the_current_one(keeper: Keeper) -> None:
    kept = keep(keeper, **SPANISH).memory
    revised = keeper.revise(
        parse(ReviseRequest, {"id": kept.id, "expected_version": 1, "text": "Catalan."})
    )
    assert revised.memory.version == 2
    stale = parse(ReviseRequest, {"id": kept.id, "expected_version": 1, "text": "Basque."})
    conflict = refusal(keeper.revise, stale)
    assert (conflict.error, conflict.current_version) == ("version_conflict", 2)
    stale_forget = parse(ForgetRequest, {"id": kept.id, "expected_version": 1})
    assert refusal(keeper.forget, stale_forget).current_version == 2


def test_a_claim_that_exists_is_refused_with_its_memory(keeper: Keeper) -> None:
    kept = keep(keeper, **SPANISH).memory
    again = refusal(keep, keeper, **{**SPANISH, "subject": "User ", "value": "french"})
    assert (again.error, again.memory_id) == ("claim_exists", kept.id)


def test_a_write_holding_a_secret_is_refused_with_its_kind_never_its_value(
    keeper: Keeper,
) -> None:
    end = keeper.store.log.next_offset()
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    refused = refusal(keep, keeper, text=f"The token is {secret}")
    assert refused.error == "secret_detected" and refused.kind == ["github_token"]
    assert secret not in refused.message
    assert keeper.store.log.next_offset() == end


def test_history_lists_every_version_and_a_restore_is_a_revision(keeper: Keeper) -> None:
    kept = keep(keeper, **SPANISH).memory
    keeper.revise(parse(ReviseRequest, {"id": kept.id, "expected_version": 1, "text": "Catalan."}))
    restored = keeper.revise(
        parse(ReviseRequest, {"id": kept.id, "expected_version": 2, "restore": 1})
    )
    assert restored.memory.text == SPANISH["text"] and restored.memory.version == 3
    versions = keeper.history(parse(HistoryRequest, {"id": kept.id})).versions
    assert [(v.version, v.text, v.restored_from) for v in versions] == [
        (1, SPANISH["text"], None),
        (2, "Catalan.", None),
        (3, SPANISH["text"], 1),
    ]


# -- review: no read serves a proposed memory -------------------------------------------------


def test_no_read_serves_a_proposed_memory_until_it_is_approved(keeper: Keeper) -> None:
    keeper.configure(parse(SpaceRequest, {"name": "proj", "require_review": True}))
    proposed = keep(keeper, **SPANISH, space="proj").memory
    due = keep(keeper, text="Ask about Atlas.", kind="intention", due="2h", space="proj").memory
    assert proposed.status == "proposed"
    reads = {
        "resolve": lambda: resolve(keeper, ["proj"]).found,
        "search": lambda: bool(
            keeper.search(
                parse(KeptSearchRequest, {"query": "spanish atlas", "min_score": 0})
            ).memories
        ),
        "due": lambda: bool(keeper.due(parse(DueRequest, {})).memories),
        "list": lambda: bool(keeper.memories(parse(ListRequest, {})).memories),
        "get": lambda: _served(keeper.get, parse(GetRequest, {"id": proposed.id})),
        "history": lambda: _served(keeper.history, parse(HistoryRequest, {"id": proposed.id})),
    }
    assert {name: read() for name, read in reads.items()} == dict.fromkeys(reads, False)
    queue = keeper.review(parse(ReviewRequest, {}))
    assert {m.id for m in queue.memories} == {proposed.id, due.id}
    for memory in (proposed, due):
        keeper.approve(parse(ApproveRequest, {"id": memory.id}))
    assert {name: read() for name, read in reads.items()} == dict.fromkeys(reads, True)


def _served(call: Any, request: Any) -> bool:
    try:
        call(request)
    except Refused as refused:
        assert refused.refusal.error == "not_found"
        return False
    return True


def test_idle_expiry_is_per_space_reported_and_stops_serving(keeper: Keeper) -> None:
    kept = keep(keeper, **SPANISH).memory
    assert kept.kept_until is None
    keeper.configure(parse(SpaceRequest, {"name": "default", "idle_days": 30}))
    shown = keeper.get(parse(GetRequest, {"id": kept.id}))
    assert shown.kept_until is not None and "kept until 20" in shown.line
    old = MemoryKept(
        ts_us=keeper.view.memories[kept.id].updated_us - 31 * DAY_US,
        memory_id="m_00000000000000aa",
        text="An old fact nobody used.",
    )
    keeper.store.log.append(old)
    assert [m.id for m in keeper.memories(parse(ListRequest, {})).memories] == [kept.id]
    stale = msgspec.structs.replace(
        old, memory_id="m_00000000000000ab", text="Claimed long ago.", **_claim()
    )
    keeper.store.log.append(stale)
    assert refusal(keeper.get, parse(GetRequest, {"id": "m_00000000000000ab"})).error == "not_found"
    again = keep(keeper, text="Claimed again.", **_claim())  # the idle one's claim is free
    assert keeper.view.forgotten["m_00000000000000ab"].reason == "idle"
    assert resolve(keeper, subject="word", predicate="to_remember").memory.id == again.memory.id
    assert files_containing(keeper.store.home, "Claimed long ago") == []


# -- forgetting, encryption, the view ---------------------------------------------------------


def test_forget_erases_the_text_from_the_log_and_keeps_a_tombstone(
    keeper: Keeper, backscroll_home: Path
) -> None:
    kept = keep(keeper, text="Remember the word zanzibarquux.", **_claim()).memory
    keeper.revise(
        parse(ReviseRequest, {"id": kept.id, "expected_version": 1, "text": "Now quokkaphrase."})
    )
    keeper.store.refresh()
    assert files_containing(backscroll_home, "zanzibarquux")
    keeper.forget(parse(ForgetRequest, {"id": kept.id, "do_not_keep": True}))
    keeper.store.refresh()
    for word in ("zanzibarquux", "quokkaphrase"):
        assert files_containing(backscroll_home, word) == [], word
    assert kept.id in keeper.view.forgotten
    blocked = refusal(keep, keeper, text="Again.", **_claim())
    assert (blocked.error, blocked.memory_id) == ("do_not_keep", kept.id)


def _claim() -> dict[str, str]:
    return {"kind": "fact", "subject": "word", "predicate": "to_remember"}


def test_encrypted_text_is_sealed_at_rest_and_still_searched_and_resolved(
    backscroll_home: Path,
) -> None:
    with MemoryStore(write=True) as store:
        store.set_config(encrypt_text=True)
        keeper = Keeper(store)
        kept = keep(keeper, **{**SPANISH, "text": "Answers in xylophonic Spanish."}).memory
        store.refresh()
    assert files_containing(backscroll_home, "xylophonic") == []
    assert files_containing(backscroll_home, "spanish") == []
    with MemoryStore() as store:
        reader = Keeper(store)
        assert resolve(reader).memory.text == "Answers in xylophonic Spanish."
        found = reader.search(parse(KeptSearchRequest, {"query": "xylophonic"}))
        assert [h.id for h in found.memories] == [kept.id]


@pytest.mark.parametrize("encrypted", [False, True])
def test_a_readers_first_search_reads_the_memories_and_the_next_the_index_alike(
    backscroll_home: Path, encrypted: bool
) -> None:
    with MemoryStore(write=True) as store:
        store.set_config(encrypt_text=encrypted)
        writer = Keeper(store)
        keep(writer, text="The staging database resets on Sundays.")
        keep(writer, text="The staging cluster is in Frankfurt.", space="ops")
        keep(writer, text="Backups of the database run nightly.", space="ops")
        store.refresh()
    asked = [
        {"query": "staging database"},
        {"query": "database nightly", "spaces": ["ops"]},
        {"query": "staging", "spaces": ["default"]},
        {"query": "zebra"},
    ]
    with MemoryStore() as store:
        first = []
        for a in asked:  # each a new reader's first search: the memories' words are read
            reader = Keeper(store)
            first.append(reader.search(parse(KeptSearchRequest, a)))
            assert reader.reader._index is None
        again = [reader.search(parse(KeptSearchRequest, a)) for a in asked]  # the index's
        assert reader.reader._index is not None
    assert first == again
    assert [[h.score for h in f.memories] for f in first] == [[1.0, 0.5, 0.5], [1.0], [1.0], []]
    assert [h.space for h in first[1].memories + first[2].memories] == ["ops", "default"]


def test_a_writers_first_similar_reads_its_space_and_the_next_the_index_alike(
    keeper: Keeper,
) -> None:
    first = keep(keeper, text="The staging database resets on Sundays.").memory
    keep(keeper, text="The staging database resets on Sundays at noon.", space="ops")
    keep(keeper, text="The staging database resets on Sunday nights.")
    fresh = Keeper(keeper.store)
    memory = fresh.view.memories[first.id]
    scanned = fresh.reader.similar(memory)
    assert fresh.reader._index is None
    indexed = fresh.reader.similar(memory)
    assert fresh.reader._index is not None
    assert scanned == indexed and len(scanned) == 1
    assert fresh.view.memories[scanned[0].memory.id].space == "default"


def test_a_reader_sees_writes_the_views_have_not_caught_up_with_and_writes_nothing(
    backscroll_home: Path,
) -> None:
    with MemoryStore(write=True) as store:
        writer = Keeper(store, refresh_views=False)
        kept = keep(writer, **SPANISH).memory
    before = sorted((p, p.stat().st_mtime_ns) for p in backscroll_home.rglob("*"))
    with MemoryStore() as store:
        assert resolve(Keeper(store)).memory.id == kept.id
    assert sorted((p, p.stat().st_mtime_ns) for p in backscroll_home.rglob("*")) == before


def test_the_view_rebuilt_from_the_log_is_the_view_caught_up(keeper: Keeper) -> None:
    kept = keep(keeper, **SPANISH).memory
    keeper.revise(parse(ReviseRequest, {"id": kept.id, "expected_version": 1, "text": "B."}))
    keeper.configure(parse(SpaceRequest, {"name": "proj", "require_review": True}))
    gone = keep(keeper, text="To forget.", space="proj", request_key="k").memory
    keeper.forget(parse(ForgetRequest, {"id": gone.id}))
    keeper.store.refresh()
    views = keeper.store.layout.views
    caught_up = msgspec.msgpack.encode(_without_position(KeptView.load(views)))
    from backscroll.manage import rebuild_views

    rebuild_views(keeper.store)
    assert msgspec.msgpack.encode(_without_position(KeptView.load(views))) == caught_up


def _without_position(view: KeptView | None) -> KeptView:
    assert view is not None
    view.position = -1
    return view


# -- the CLI ----------------------------------------------------------------------------------


def test_keep_add_then_resolve_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "keep", "add", "Answers in Spanish.", "--kind", "preference", "--subject", "user",
        "--predicate", "answer_language", "--value", "spanish", "--json",
    )  # fmt: skip
    added = json.loads(out)["memory"]
    assert code == 0 and {"id", "version", "text", "kind", "space"} <= set(added)
    args = ["keep", "resolve", "--subject", "user", "--predicate", "answer_language", "--json"]
    code, out, _ = run(capsys, *args)
    assert code == 0 and json.loads(out)["memory"]["id"] == added["id"]
    code, out, _ = run(capsys, *args[:-2], "other_thing", "--json")
    assert code == 0 and json.loads(out) == {"found": False, "memory": None}


def test_a_refusal_is_one_line_or_a_json_object_with_its_code(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "keep", "add", "x", "--json")
    memory_id = json.loads(out)["memory"]["id"]
    stale = ["keep", "revise", memory_id, "y", "--expected-version", "7"]
    code, out, err = run(capsys, *stale, "--json")
    assert code == 1 and json.loads(out)["error"] == "version_conflict"
    assert json.loads(out)["current_version"] == 1
    code, out, err = run(capsys, *stale)
    assert code == 1 and out == "" and len(err.strip().splitlines()) == 1
    code, out, _ = run(capsys, "keep", "show", "m_nothere", "--json")
    assert code == 1 and json.loads(out)["error"] == "invalid"
    code, out, _ = run(capsys, "keep", "show", "m_0000000000000000", "--json")
    assert code == 1 and json.loads(out)["error"] == "not_found"


def test_keep_lists_history_search_due_and_review_answer_their_shapes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run(capsys, "keep", "space", "proj", "--require-review")
    _, out, _ = run(capsys, "keep", "add", "Proposed here.", "--space", "proj", "--json")
    proposed = json.loads(out)["memory"]["id"]
    run(capsys, "keep", "add", "Ask about it.", "--kind", "intention", "--due", "2h")
    shapes = {
        ("list",): "memories",
        ("history", proposed): "error",
        ("search", "ask"): "near_misses",
        ("due",): "memories",
        ("review",): "memories",
    }
    for args, key in shapes.items():
        _, out, _ = run(capsys, "keep", *args, "--json")
        assert key in json.loads(out), args
    _, out, _ = run(capsys, "keep", "review", "--json")
    assert [m["id"] for m in json.loads(out)["memories"]] == [proposed]
    code, _, _ = run(capsys, "keep", "approve", proposed)
    _, out, _ = run(capsys, "keep", "history", proposed, "--json")
    assert code == 0 and len(json.loads(out)["versions"]) == 1


def test_the_audit_trail_says_what_was_kept_and_forgotten_never_the_text(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out, _ = run(capsys, "keep", "add", "The vault code word is pelican.", "--json")
    memory_id = json.loads(out)["memory"]["id"]
    _, out, _ = run(capsys, "log", "--kind", "kept", "--json")
    assert json.loads(out)["events"][0]["detail"]["memory_id"] == memory_id
    assert "pelican" not in out
    run(capsys, "keep", "forget", memory_id)
    code, out, _ = run(capsys, "log", "--kind", "kept", "--kind", "forgotten", "--json")
    events = json.loads(out)["events"]
    assert code == 0 and [e["kind"] for e in events] == ["forgotten"]
    assert events[0]["detail"]["memory_id"] == memory_id
    assert "pelican" not in out


def test_status_counts_memories_proposed_ones_and_intentions_due(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run(capsys, "keep", "space", "proj", "--require-review")
    run(capsys, "keep", "add", "A fact.")
    run(capsys, "keep", "add", "Waiting.", "--space", "proj")
    run(capsys, "keep", "add", "Ask it.", "--kind", "intention", "--due", "2h")
    run(capsys, "keep", "add", "Later.", "--kind", "intention", "--due", "2999-01-01")
    _, out, _ = run(capsys, "status", "--json")
    shown = json.loads(out)
    assert (shown["memories"], shown["memories_proposed"], shown["intentions_due"]) == (3, 1, 1)


def test_verify_names_a_forget_cut_short_and_a_view_that_differs_from_the_log(
    keeper: Keeper, capsys: pytest.CaptureFixture[str]
) -> None:
    from backscroll.keep_upkeep import verify_kept

    kept = keep(keeper, text="Cut short.").memory
    keeper.store.refresh()
    assert verify_kept(keeper.store) == []
    keeper._erase = lambda: None  # type: ignore[method-assign]  # the crash, after the tombstone
    keeper.forget(parse(ForgetRequest, {"id": kept.id}))
    assert [f"memory {kept.id} was forgotten" in p for p in verify_kept(keeper.store)] == [True]
    del keeper._erase
    assert keeper.forget(parse(ForgetRequest, {"id": kept.id})).replayed
    assert verify_kept(keeper.store) == []
    other = keep(keeper, text="Another one.").memory
    keeper.store.refresh()
    saved = KeptView.load(keeper.store.layout.views)
    assert saved is not None
    saved.memories[other.id].version = 9  # a view the log does not explain
    saved.save(keeper.store.layout.views)
    assert verify_kept(keeper.store) == [
        "the kept memories' view differs from the log: backscroll reindex --views-only"
    ]
    code, _, _ = run(capsys, "verify")
    assert code == 1


def test_clearing_frames_names_the_memories_citing_them_or_forgets_them_too(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from tests.helpers import ago, populate

    populate([{"ts": ago(30), "app": "Terminal", "title": "zsh", "text": "npm ERR! boom"}])
    populate([{"ts": ago(5), "app": "Firefox", "title": "docs", "text": "the fix"}])
    with MemoryStore() as store:
        frames = {hit.app: hit.id for hit in store.timeline()}
    for app, frame in frames.items():
        run(capsys, "keep", "add", f"Seen in {app}.", "--source", f"frame:{frame}")
    _, out, _ = run(capsys, "keep", "list", "--json")
    ids = {m["source"]: m["id"] for m in json.loads(out)["memories"]}
    terminal, firefox = (ids[f"frame:{frames[app]}"] for app in ("Terminal", "Firefox"))
    code, out, _ = run(capsys, "clear", "--app", "Terminal", "-y")
    assert code == 0 and terminal in out and "source now pointing at nothing" in out
    code, out, _ = run(capsys, "clear", "--app", "Firefox", "-y", "--forget-citing")
    assert code == 0 and f"forgot 1 kept memory(ies) citing them: {firefox}" in out
    _, out, _ = run(capsys, "keep", "list", "--json")
    assert [m["id"] for m in json.loads(out)["memories"]] == [terminal]


def test_reindex_seals_kept_memories_when_encrypt_text_is_turned_on(
    backscroll_home: Path,
) -> None:
    from backscroll.reindex import reindex

    with MemoryStore(write=True) as store:
        kept = keep(Keeper(store), **{**SPANISH, "text": "Answers in quixotical Spanish."})
        keeper = Keeper(store)
        keeper.revise(
            parse(ReviseRequest, {"id": kept.memory.id, "expected_version": 1, "text": "Q2 zyx."})
        )
        assert files_containing(backscroll_home, "quixotical")
        store.set_config(encrypt_text=True)
        reindex(store)
    assert files_containing(backscroll_home, "quixotical") == []
    assert files_containing(backscroll_home, "zyx") == []
    with MemoryStore() as store:
        reader = Keeper(store)
        assert resolve(reader).memory.text == "Q2 zyx."
        versions = reader.history(parse(HistoryRequest, {"id": kept.memory.id})).versions
        assert [v.text for v in versions] == ["Answers in quixotical Spanish.", "Q2 zyx."]
        found = reader.search(parse(KeptSearchRequest, {"query": "zyx"}))
        assert [h.id for h in found.memories] == [kept.memory.id]


def test_validity_is_kept_shown_on_the_line_and_status_names_spaces_and_rules(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["keep", "add", "Staging resets on Sundays.", "--valid-from", "2026-01-01"]
    code, out, _ = run(capsys, *args, "--valid-until", "2999-01-01T00:00:00Z", "--json")
    memory = json.loads(out)["memory"]
    assert code == 0 and memory["valid_until"].startswith(("2999-01-01", "2998-12-31"))
    assert "valid from 2026-01-01" in memory["line"] and "valid until" in memory["line"]
    run(capsys, "keep", "space", "proj", "--require-review", "--idle-days", "30")
    code, out, _ = run(capsys, "keep", "status", "--json")
    status = json.loads(out)
    assert code == 0 and status["memories"] == 1 and status["max_page"] == 50
    assert [(s["name"], s["require_review"], s["idle_days"]) for s in status["spaces"]] == [
        ("default", False, None),
        ("proj", True, 30),
    ]
    assert "never instructions" in status["rules"]


def test_a_refused_write_leaves_nothing_behind_and_says_why_on_one_line(
    capsys: pytest.CaptureFixture[str], backscroll_home: Path
) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    refusals = {
        ("keep", "add", f"The token is {token}"): "holds a secret (github_token)",
        ("keep", "add", "x", "--source", "frame:abc"): "a frame source is frame:<id>",
        ("keep", "add", "x", "--kind", "intention"): "an intention needs due",
        ("keep", "add", "x", "--due", "someday", "--kind", "intention"): "not a time expression",
        ("keep", "add", "x", "--subject", "user"): "needs both subject and predicate",
        ("keep", "resolve", "--subject", "u", "--predicate", "p", "--space", "A"): "spaces:",
        ("keep", "add", "  "): "text: must not be empty or blank",
    }
    for args, said in refusals.items():
        code, out, err = run(capsys, *args)
        assert code == 1 and out == "" and said in err and token not in err, args
        assert len(err.strip().splitlines()) == 1, args
    assert not backscroll_home.exists()
