"""``backscroll view`` at the HTTP level: every rule of its door (``backscroll.view.guard``)
and its JSON, which is the answer contract's, against a populated store with encrypted text
and thumbnails. The browser tests (a person's flows, another origin's page) are in
``test_view_browser.py``."""

from __future__ import annotations

import gc
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from starlette.testclient import TestClient

from backscroll import contract
from backscroll.importer import import_frames
from backscroll.store import MemoryStore
from backscroll.view.guard import COOKIE, HEADERS, REFUSED, Guard
from backscroll.view.serve import SECRET_BYTES, bind
from backscroll.view.server import build
from tests.conftest import REPO
from tests.helpers import Keeping, ago, run
from tests.test_read_only import read_only

PORT = 48123
TOKEN = "a-secret-for-the-tests-only-0123456789abcdef"
OWN = f"http://127.0.0.1:{PORT}"
FRAMES = [
    {"ts": ago(50), "app": "Terminal", "title": "zsh — deploy", "text": "ECONNREFUSED 5432"},
    {
        "ts": ago(40),
        "app": "Firefox",
        "title": "Invoice INV-20931",
        "text": "total 1,250.00 EUR password: hunter2hunter2",
        "url": "https://billing.example/invoices/20931",
    },
    {"ts": ago(30), "app": "Slack", "title": "general", "text": "lunch at the quokka cafe"},
]


@pytest.fixture
def home(backscroll_home: Path, png: Path) -> Path:
    """Three frames with thumbnails; the text and thumbnails of the last two encrypted."""
    with MemoryStore(write=True) as store:
        import_frames(store, [json.dumps(dict(FRAMES[0], image=str(png)))])
        store.set_config("cli", encrypt_text=True)
        import_frames(store, [json.dumps(dict(f, image=str(png))) for f in FRAMES[1:]])
    return backscroll_home


def client(home: Path | None, *, signed_in: bool = True) -> TestClient:
    app = Guard(build(home), TOKEN, PORT)
    browser = TestClient(app, base_url=OWN, follow_redirects=False)
    if signed_in:
        browser.cookies.set(COOKIE, TOKEN)
    return browser


@pytest.fixture
def view(home: Path) -> Iterator[TestClient]:
    with client(home) as browser:
        yield browser


def ids(view: TestClient) -> dict[str, int]:
    answer = msgspec.json.decode(
        view.get("/api/timeline", params={"since": "today"}).content, type=contract.TimelineAnswer
    )
    return {f.app: f.id for f in answer.frames}


# -- the door ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        *("/", "/day/2026-12-01", "/frame/1", "/search?q=quokka", "/control", "/static/app.js"),
        *("/api/timeline", "/api/search?query=quokka", "/api/frame/1", "/api/thumbnail/1"),
        *("/api/status", "/api/summary", "/glance", "/nowhere"),
    ],
)
def test_without_the_secret_every_address_gets_the_one_line_page(home: Path, path: str) -> None:
    with client(home, signed_in=False) as stranger:
        answer = stranger.get(path)
    assert answer.status_code == 403
    assert answer.text == REFUSED
    assert answer.headers["content-type"].startswith("text/plain")


def test_the_secret_on_any_page_is_exchanged_for_a_strict_cookie_and_taken_off_the_address(
    home: Path,
) -> None:
    with client(home, signed_in=False) as browser:
        answer = browser.get(f"/search?q=quokka&token={TOKEN}&app=slack")
        assert answer.status_code == 303
        assert answer.headers["location"] == "/search?q=quokka&app=slack"
        cookie = answer.headers["set-cookie"]
        assert cookie.startswith(f"{COOKIE}={TOKEN};")
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        followed = browser.get(answer.headers["location"])
        assert followed.status_code == 200 and '<script type="module"' in followed.text
        again = browser.get(f"/?token={TOKEN}")  # the printed address opens again
        assert again.status_code == 303 and again.headers["location"] == "/"


@pytest.mark.parametrize("given", ["wrong", TOKEN[:-1], TOKEN + "x", ""])
def test_a_wrong_secret_or_cookie_is_refused(home: Path, given: str) -> None:
    with client(home, signed_in=False) as stranger:
        assert stranger.get("/", params={"token": given}).text == REFUSED
        stranger.cookies.set(COOKIE, given)
        assert stranger.get("/api/status").status_code == 403


@pytest.mark.parametrize(
    "host", ["evil.example", f"evil.example:{PORT}", "127.0.0.1", f"127.0.0.1:{PORT + 1}"]
)
def test_a_foreign_host_is_refused_even_with_the_cookie(view: TestClient, host: str) -> None:
    answer = view.get("/api/status", headers={"host": host})
    assert answer.status_code == 403 and answer.text == REFUSED


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]"])
def test_each_loopback_name_is_served(view: TestClient, host: str) -> None:
    assert view.get("/api/status", headers={"host": f"{host}:{PORT}"}).status_code == 200


@pytest.mark.parametrize("origin", [None, "http://evil.example", f"http://127.0.0.1:{PORT + 1}"])
def test_a_change_without_the_views_own_origin_is_refused(
    view: TestClient, origin: str | None
) -> None:
    headers = {"origin": origin} if origin else {}
    answer = view.post("/api/pause", json={}, headers=headers)
    assert answer.status_code == 403
    with MemoryStore() as store:
        assert contract.Status is not None and not store.state().pause.active(2**62)


def test_only_get_head_and_post_are_served(view: TestClient) -> None:
    for method in ("PUT", "DELETE", "PATCH", "OPTIONS"):
        answer = view.request(method, "/api/status", headers={"origin": OWN})
        assert answer.status_code == 405, method
        assert not any(h.startswith("access-control-") for h in answer.headers)


def test_a_request_another_site_made_is_refused_but_a_navigation_is_served(
    view: TestClient,
) -> None:
    for site in ("cross-site", "same-site"):
        assert view.get("/api/thumbnail/1", headers={"sec-fetch-site": site}).status_code == 403
    navigation = {"sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate"}
    assert view.get("/day/2026-12-01", headers=navigation).status_code == 200
    assert view.get("/api/status", headers={"sec-fetch-site": "same-origin"}).status_code == 200


@pytest.mark.parametrize(
    "path", ["/", "/static/app.js", "/api/search?query=quokka", "/api/thumbnail/1", "/api/frame/1"]
)
def test_every_answer_carries_the_strict_headers_and_no_cors(view: TestClient, path: str) -> None:
    answer = view.get(path, headers={"origin": "http://evil.example"})
    assert answer.status_code == 200
    for name, value in HEADERS:
        assert answer.headers[name.decode()] == value.decode()
    policy = answer.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert answer.headers["cache-control"] == "no-store"
    assert not any(h.startswith("access-control-") for h in answer.headers)


def test_the_package_has_no_inline_script_or_style_and_nothing_from_elsewhere() -> None:
    from backscroll.view.server import STATIC

    for each in STATIC.iterdir():
        text = each.read_text()
        assert "http://" not in text and "https://" not in text, each.name
        if each.name.endswith(".html"):
            assert "<style" not in text and " style=" not in text and "<script>" not in text
            assert '<script type="module" src="/static/' in text


def test_the_secret_is_256_bits_and_only_loopback_is_bound() -> None:
    from backscroll.view.serve import serve

    assert SECRET_BYTES * 8 >= 128
    sockets = bind(0)
    try:
        addresses = {s.getsockname()[0] for s in sockets}
        assert addresses <= {"127.0.0.1", "::1"} and "127.0.0.1" in addresses
        assert len({s.getsockname()[1] for s in sockets}) == 1
    finally:
        for s in sockets:
            s.close()
    assert "host" not in serve.__code__.co_varnames[: serve.__code__.co_argcount]


def test_a_port_in_use_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        code, _, err = run(capsys, "view", "--no-open", "--port", str(taken.getsockname()[1]))
    finally:
        taken.close()
    assert code == 1 and err.count("\n") == 1 and "cannot serve on 127.0.0.1:" in err


def test_a_port_out_of_range_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "view", "--no-open", "--port", "70000")
    assert code == 1 and err.strip().endswith("--port: must be a port from 0 to 65535, not 70000")


# -- the JSON is the contract's ---------------------------------------------------------------


def test_the_timeline_search_frame_and_status_are_the_contracts_answers(view: TestClient) -> None:
    day = msgspec.json.decode(
        view.get("/api/timeline", params={"since": "today"}).content, type=contract.TimelineAnswer
    )
    assert [f.app for f in day.frames] == ["Terminal", "Firefox", "Slack"]
    found = msgspec.json.decode(
        view.get("/api/search", params={"query": "quokka"}).content, type=contract.SearchAnswer
    )
    assert [m.app for m in found.matches] == ["Slack"] and "[quokka]" in found.matches[0].snippet
    with MemoryStore() as store:
        same = contract.encode(answer_search(store))
    assert json.loads(view.get("/api/search", params={"query": "quokka"}).text) == json.loads(same)
    firefox = ids(view)["Firefox"]
    shown = msgspec.json.decode(view.get(f"/api/frame/{firefox}").content, type=contract.ShowAnswer)
    assert shown.encrypted and shown.url == FRAMES[1]["url"]
    assert shown.text is not None and "[REDACTED:" in shown.text and "hunter2" not in shown.text
    status = msgspec.json.decode(view.get("/api/status").content, type=contract.Status)
    assert status.frames == 3 and status.encrypt_text


def answer_search(store: MemoryStore) -> contract.SearchAnswer:
    from backscroll import answer

    return answer.search(store, contract.parse(contract.SearchRequest, {"query": "quokka"})).answer


def test_an_encrypted_thumbnail_is_served_decrypted_from_memory(
    view: TestClient, home: Path, png: Path
) -> None:
    slack = ids(view)["Slack"]
    answer = view.get(f"/api/thumbnail/{slack}")
    assert answer.status_code == 200 and answer.headers["content-type"] == "image/jpeg"
    with MemoryStore() as store:
        hit = store.get(slack)
        assert hit.thumb_encrypted
        assert answer.content == store.thumbnail(hit)
        assert (home / hit.thumb).read_bytes() != answer.content  # stored encrypted
    assert answer.content[:2] == b"\xff\xd8"


def test_each_read_says_its_server_time_and_its_wait_for_the_reader(view: TestClient) -> None:
    """``Server-Timing``: ``app``, the whole answer, and ``wait``, its part spent waiting for
    the one reader (the bench counts a thumbnail's own time apart from its turn)."""
    slack = ids(view)["Slack"]
    for path in (f"/api/thumbnail/{slack}", "/api/search?query=lunch", "/api/frame/12345"):
        timing = view.get(path).headers["server-timing"]
        app = re.search(r"app;dur=([0-9.]+)", timing)
        wait = re.search(r"wait;dur=([0-9.]+)", timing)
        assert app and wait and float(wait.group(1)) <= float(app.group(1)), (path, timing)


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("/api/timeline?limit=abc", "limit: "),
        ("/api/timeline?limit=50000", "limit: must be a number of results from 1 to 10000"),
        ("/api/search?query=%20", "query: must not be empty or blank"),
        ("/api/search?query=a&query=b", "query: given twice"),
        ("/api/search?query=a&sql=1", "sql"),
        ("/api/timeline?since=someday", "is not a time expression"),
        ("/api/frame/99999999999999999999999", "id: "),
        ("/api/frame/12345", "no frame #12345"),
    ],
)
def test_bad_input_gets_one_line_never_a_traceback(view: TestClient, path: str, said: str) -> None:
    answer = view.get(path)
    assert answer.status_code in (400, 404)
    refusal = msgspec.json.decode(answer.content, type=contract.Refusal)
    assert said in refusal.error and "\n" not in refusal.error and "Traceback" not in answer.text


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"{", "not JSON"),
        (b"[]", "must be a JSON object"),
        (b'{"ids": [-1], "confirm": true}', "ids"),
        (b'{"everything": true}', "everything"),
        (b"[" * 5000 + b"]" * 5000, "not JSON"),
    ],
)
def test_a_bad_body_gets_one_line_and_changes_nothing(
    view: TestClient, body: bytes, said: str
) -> None:
    answer = view.post("/api/delete", content=body, headers={"origin": OWN})
    assert answer.status_code == 400
    assert said in msgspec.json.decode(answer.content, type=contract.Refusal).error
    assert len(ids(view)) == 3


def test_the_summary_and_the_pages_of_a_search_are_the_contracts(view: TestClient) -> None:
    glance = msgspec.json.decode(
        view.get("/api/summary", params={"since": "today"}).content, type=contract.SummaryAnswer
    )
    assert {a.app for a in glance.apps} == {"Terminal", "Firefox", "Slack"}
    assert glance.slice_seconds == 3600 and len(glance.slices) == 24
    first = view.get("/api/search", params={"query": "quokka OR total OR 5432", "limit": 1})
    page = msgspec.json.decode(first.content, type=contract.SearchAnswer)
    seen = [m.id for m in page.matches]
    while page.next_cursor is not None:
        asked = {"query": "quokka OR total OR 5432", "limit": 1, "cursor": page.next_cursor}
        page = msgspec.json.decode(
            view.get("/api/search", params=asked).content, type=contract.SearchAnswer
        )
        seen += [m.id for m in page.matches]
    assert len(seen) == len(set(seen)) >= 2
    other = view.get("/api/search", params={"query": "cafe", "cursor": page.next_cursor or "x"})
    assert other.status_code == 400 and "cursor" in other.json()["error"]


# -- control ----------------------------------------------------------------------------------


def test_pause_and_resume_are_recorded_in_the_audit_trail_as_the_views(view: TestClient) -> None:
    paused = view.post("/api/pause", json={"duration": "30m"}, headers={"origin": OWN})
    assert msgspec.json.decode(paused.content, type=contract.PauseAnswer).until is not None
    assert "paused until" in view.get("/api/status").json()["capture"]
    resumed = view.post("/api/resume", headers={"origin": OWN})
    assert resumed.json() == {"action": "resume"}
    assert view.get("/api/status").json()["capture"] == "active"
    trail = trail_of("pause", "resume")
    assert [(e["kind"], e["detail"]["origin"]) for e in trail] == [
        ("resume", "api"),
        ("pause", "api"),
    ]


def trail_of(*kinds: str) -> list[dict[str, Any]]:
    from backscroll import answer

    with MemoryStore() as store:
        request = contract.parse(contract.LogRequest, {"kind": list(kinds)})
        return [msgspec.to_builtins(e) for e in answer.audit_log(store, request).events]


def test_a_frame_is_deleted_only_when_confirmed_and_the_trail_says_by_whom(
    view: TestClient,
) -> None:
    firefox = ids(view)["Firefox"]
    asked = view.post("/api/delete", json={"ids": [firefox]}, headers={"origin": OWN})
    assert asked.status_code == 400
    assert f"nothing was deleted (scope: all time, frame(s) #{firefox})" in asked.json()["error"]
    confirmed = {"ids": [firefox], "confirm": True}
    done = view.post("/api/delete", json=confirmed, headers={"origin": OWN})
    answer = msgspec.json.decode(done.content, type=contract.DeleteAnswer)
    assert answer.deleted == 1 and answer.ids == [firefox]
    assert set(ids(view)) == {"Terminal", "Slack"}
    assert view.get(f"/api/thumbnail/{firefox}").status_code == 404
    [entry] = trail_of("delete")
    assert entry["detail"]["origin"] == "api" and list(entry["detail"]["ids"]) == [firefox]


def test_an_app_is_deleted_through_the_same_call_as_clear(view: TestClient) -> None:
    done = view.post("/api/delete", json={"app": "slack", "confirm": True}, headers={"origin": OWN})
    assert done.json()["deleted"] == 1
    assert set(ids(view)) == {"Terminal", "Firefox"}


def test_a_store_on_a_read_only_mount_is_served_and_its_control_says_why_not(
    home: Path, tmp_path: Path
) -> None:
    def served(mounted: Path) -> None:
        with client(mounted) as view:
            assert len(ids(view)) == 3
            assert view.get(f"/api/thumbnail/{ids(view)['Slack']}").status_code == 200
            answer = view.post("/api/pause", json={}, headers={"origin": OWN})
            assert answer.status_code == 400
            error = answer.json()["error"]
            assert "\n" not in error and "read-only" in error.lower(), error

    with read_only(home, tmp_path / "ro") as mounted:
        served(mounted)
        gc.collect()  # the view's reader, and the search views it holds open, let go


def test_without_a_display_the_address_is_printed_and_no_browser_sought(home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    process = subprocess.Popen(
        [sys.executable, "-m", "backscroll", "view", "--home", str(home)],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(3)]
    finally:
        process.terminate()
        process.communicate(timeout=30)
    assert re.fullmatch(r"Backscroll view at http://127\.0\.0\.1:\d+/\?token=[\w-]{43}\n", lines[0])
    assert lines[2] == "No browser here: open the address above in one on this machine.\n"


def test_make_run_without_a_display_shows_the_demo_in_the_view() -> None:
    run_line = (REPO / "Makefile").read_text().split("\nrun:\n", 1)[1].splitlines()[0]
    assert "else $(VENV)/bin/backscroll demo --view; fi" in run_line


def test_a_frame_deleted_from_the_view_names_only_the_memories_citing_it(
    view: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    frames = ids(view)
    for app in ("Terminal", "Slack"):
        code, _, err = run(
            capsys, "keep", "add", f"Seen in {app}.", "--source", f"frame:{frames[app]}"
        )
        assert code == 0, err
    _, out, _ = run(capsys, "keep", "list", "--json")
    kept = {m["source"]: m["id"] for m in json.loads(out)["memories"]}
    confirmed = {"ids": [frames["Terminal"]], "confirm": True}
    done = view.post("/api/delete", json=confirmed, headers={"origin": OWN}).json()
    assert done["deleted"] == 1 and done["cited_by"] == [kept[f"frame:{frames['Terminal']}"]]


# -- kept memories ----------------------------------------------------------------------------


class Kept(msgspec.Struct):
    """The memories ``kept`` made: a revised one citing a frame, one citing a web page in
    another space, and one proposed in a space that requires review."""

    spanish: str
    staging: str
    proposed: str
    frame: int


@pytest.fixture
def kept(home: Path, view: TestClient) -> Kept:
    slack = ids(view)["Slack"]
    with MemoryStore(write=True) as store:
        keeping = Keeping(store, slack)
        staging = keeping.keep(
            text="The staging database resets on Sundays.",
            space="work",
            source="https://wiki.example/staging",
        )
        keeping.review_in("inbox")
        proposed = keeping.keep(text="The Atlas launch is on October 1st.", space="inbox")
    return Kept(keeping.spanish, staging, proposed, slack)


def decoded(answer: Any, kind: type[msgspec.Struct]) -> Any:
    assert answer.status_code == 200, answer.text
    return msgspec.json.decode(answer.content, type=kind)


def test_the_memories_pages_serve_and_their_json_is_the_keep_contracts(
    view: TestClient, kept: Kept
) -> None:
    from backscroll.contract.keep import (
        GetRequest,
        HistoryAnswer,
        KeptStatus,
        ListRequest,
        MemoriesAnswer,
        Memory,
    )
    from backscroll.keep import Keeper

    for page in ("/memories", "/memories?space=work", f"/memories/{kept.spanish}"):
        shown = view.get(page)
        assert shown.status_code == 200 and '<script type="module"' in shown.text
    assert 'href="/memories"' in view.get("/").text  # in the nav
    default = decoded(view.get("/api/kept", params={"space": "default"}), MemoriesAnswer)
    assert [m.id for m in default.memories] == [kept.spanish]
    spanish = default.memories[0]
    assert spanish.version == 2 and spanish.text == "Answers in Spanish, always."
    assert (spanish.kind, spanish.subject, spanish.value) == ("preference", "user", "spanish")
    assert "kept " in spanish.line and "revised " in spanish.line
    assert spanish.kept_until is None and spanish.source == f"frame:{kept.frame}"
    with MemoryStore() as store:
        keeper = Keeper(store)
        same = keeper.memories(contract.parse(ListRequest, {"space": "default"}))
        one = keeper.get(contract.parse(GetRequest, {"id": kept.spanish}))
    listed = view.get("/api/kept", params={"space": "default"}).text
    assert json.loads(listed) == json.loads(contract.encode(same))
    assert decoded(view.get(f"/api/kept/{kept.spanish}"), Memory) == one
    history = decoded(view.get(f"/api/kept/{kept.spanish}/history"), HistoryAnswer)
    assert [(v.version, v.text) for v in history.versions] == [
        (1, "Answers in Spanish."),
        (2, "Answers in Spanish, always."),
    ]
    work = decoded(view.get("/api/kept", params={"space": "work"}), MemoriesAnswer)
    assert [m.source for m in work.memories] == ["https://wiki.example/staging"]
    status = decoded(view.get("/api/kept/status"), KeptStatus)
    assert (status.memories, status.proposed) == (2, 1)
    assert {s.name for s in status.spaces} == {"default", "work", "inbox"}


def test_the_memories_come_a_page_at_a_time_by_the_contracts_cursor(
    view: TestClient, kept: Kept
) -> None:
    from backscroll.contract.keep import MemoriesAnswer

    first = decoded(view.get("/api/kept", params={"limit": 1}), MemoriesAnswer)
    assert len(first.memories) == 1 and first.next_cursor is not None
    asked = {"limit": 1, "cursor": first.next_cursor}
    second = decoded(view.get("/api/kept", params=asked), MemoriesAnswer)
    assert second.next_cursor is None
    assert {first.memories[0].id, second.memories[0].id} == {kept.spanish, kept.staging}


def test_a_proposed_memory_appears_only_in_the_review_queue(view: TestClient, kept: Kept) -> None:
    from backscroll.contract.keep import KeepRefusal, MemoriesAnswer

    every = decoded(view.get("/api/kept"), MemoriesAnswer)
    assert kept.proposed not in {m.id for m in every.memories} and len(every.memories) == 2
    inbox = decoded(view.get("/api/kept", params={"space": "inbox"}), MemoriesAnswer)
    assert inbox.memories == []
    for path in (f"/api/kept/{kept.proposed}", f"/api/kept/{kept.proposed}/history"):
        refused = view.get(path)
        assert refused.status_code == 404
        assert msgspec.json.decode(refused.content, type=KeepRefusal).error == "not_found"
    queue = decoded(view.get("/api/kept/review"), MemoriesAnswer)
    assert [(m.id, m.status) for m in queue.memories] == [(kept.proposed, "proposed")]


def test_approve_restore_and_forget_go_through_and_the_trail_records_them(
    view: TestClient, kept: Kept
) -> None:
    from backscroll.contract.keep import (
        ForgetAnswer,
        HistoryAnswer,
        KeepAnswer,
        KeepRefusal,
        MemoriesAnswer,
    )

    approved = view.post("/api/kept/approve", json={"id": kept.proposed}, headers={"origin": OWN})
    assert decoded(approved, KeepAnswer).memory.status == "current"
    assert decoded(view.get("/api/kept/review"), MemoriesAnswer).memories == []
    inbox = decoded(view.get("/api/kept", params={"space": "inbox"}), MemoriesAnswer)
    assert [m.id for m in inbox.memories] == [kept.proposed]

    restore = {"id": kept.spanish, "restore": 1, "expected_version": 2}
    restored = decoded(
        view.post("/api/kept/revise", json=restore, headers={"origin": OWN}), KeepAnswer
    )
    assert (restored.memory.version, restored.memory.text) == (3, "Answers in Spanish.")
    history = decoded(view.get(f"/api/kept/{kept.spanish}/history"), HistoryAnswer)
    assert [v.restored_from for v in history.versions] == [None, None, 1]
    assert [e["detail"]["origin"] for e in trail_of("revised")] == ["api", "cli"]
    stale = view.post("/api/kept/revise", json=restore, headers={"origin": OWN})
    assert stale.status_code == 409
    conflict = msgspec.json.decode(stale.content, type=KeepRefusal)
    assert (conflict.error, conflict.current_version) == ("version_conflict", 3)

    stale = view.post(
        "/api/kept/forget",
        json={"id": kept.spanish, "expected_version": 2},
        headers={"origin": OWN},
    )
    assert stale.status_code == 409
    forget = {"id": kept.spanish, "expected_version": 3}
    gone = decoded(
        view.post("/api/kept/forget", json=forget, headers={"origin": OWN}), ForgetAnswer
    )
    assert (gone.id, gone.version) == (kept.spanish, 3)
    assert view.get(f"/api/kept/{kept.spanish}").status_code == 404
    with MemoryStore() as store:  # erased from the log, not only hidden
        assert not [e for _, e in store.log.read() if "Spanish" in str(getattr(e, "text", ""))]
    trail = trail_of("reviewed", "revised", "forgotten")  # its versions erased with it
    assert [(e["kind"], e["detail"]["origin"]) for e in trail] == [
        ("forgotten", "api"),
        ("reviewed", "api"),
    ]
    assert [e["detail"]["memory_id"] for e in trail] == [kept.spanish, kept.proposed]


def test_a_screen_source_opens_that_moment(view: TestClient, kept: Kept) -> None:
    from backscroll.contract.keep import Memory
    from backscroll.view.server import STATIC

    memory = decoded(view.get(f"/api/kept/{kept.spanish}"), Memory)
    assert memory.source == f"frame:{kept.frame}" and f"frame {kept.frame}" in memory.line
    assert view.get(f"/frame/{kept.frame}").status_code == 200
    shown = decoded(view.get(f"/api/frame/{kept.frame}"), contract.ShowAnswer)
    assert shown.app == "Slack"
    script = (STATIC / "memories.js").read_text()
    assert "href: `/frame/${frame}`" in script  # the page's link for a frame: source
    assert 'rel: "noreferrer noopener"' in script  # and a web address tells the site nothing


@pytest.mark.parametrize(
    "path",
    [
        "/memories",
        "/memories/m_0123456789abcdef",
        "/api/kept",
        "/api/kept/review",
        "/api/kept/status",
        "/api/kept/m_0123456789abcdef",
        "/api/kept/m_0123456789abcdef/history",
    ],
)
def test_without_the_secret_the_memories_get_the_one_line_page(home: Path, path: str) -> None:
    with client(home, signed_in=False) as stranger:
        answer = stranger.get(path)
    assert answer.status_code == 403 and answer.text == REFUSED


@pytest.mark.parametrize("action", ["approve", "revise", "forget"])
@pytest.mark.parametrize("origin", [None, "http://evil.example", f"http://127.0.0.1:{PORT + 1}"])
def test_a_memorys_change_without_the_views_own_origin_is_refused(
    view: TestClient, kept: Kept, action: str, origin: str | None
) -> None:
    from backscroll.contract.keep import MemoriesAnswer

    body = {
        "approve": {"id": kept.proposed},
        "revise": {"id": kept.spanish, "restore": 1, "expected_version": 2},
        "forget": {"id": kept.spanish},
    }[action]
    headers = {"origin": origin} if origin else {}
    assert view.post(f"/api/kept/{action}", json=body, headers=headers).status_code == 403
    with client(None, signed_in=False) as stranger:
        assert (
            stranger.post(f"/api/kept/{action}", json=body, headers={"origin": OWN}).status_code
            == 403
        )
    assert len(decoded(view.get("/api/kept/review"), MemoriesAnswer).memories) == 1
    assert [m.version for m in decoded(view.get("/api/kept"), MemoriesAnswer).memories] == [1, 2]


@pytest.mark.parametrize(
    ("method", "path", "body", "said"),
    [
        ("GET", "/api/kept/m_nothex", None, "id: "),
        ("GET", "/api/kept?limit=500", None, "limit: "),
        ("GET", "/api/kept?space=No%20Such", None, "space: "),
        ("GET", "/api/kept/status?x=1", None, "x"),
        ("GET", "/api/kept/m_0123456789abcdef", None, "no memory m_0123456789abcdef"),
        ("POST", "/api/kept/forget", {"id": "1"}, "id: "),
        ("POST", "/api/kept/approve", {"id": "m_0123456789abcdef"}, "no memory"),
        ("POST", "/api/kept/revise", {"id": "m_0123456789abcdef"}, "expected_version"),
        (
            "POST",
            "/api/kept/revise",
            {"id": "m_0123456789abcdef", "expected_version": 1, "text": "password: hunter2hunter2"},
            "secret",
        ),
    ],
)
def test_a_bad_memory_request_gets_one_line_with_its_code(
    view: TestClient, method: str, path: str, body: Any, said: str
) -> None:
    from backscroll.contract.keep import KeepRefusal

    headers = {"origin": OWN} if method == "POST" else {}
    answer = view.request(method, path, json=body, headers=headers)
    assert answer.status_code in (400, 404)
    refusal = msgspec.json.decode(answer.content, type=KeepRefusal)
    assert said in refusal.message and "\n" not in refusal.message, refusal
    assert "hunter2" not in answer.text


def test_on_a_read_only_store_the_memories_serve_and_their_actions_say_why_not(
    home: Path, kept: Kept, tmp_path: Path
) -> None:
    from backscroll.contract.keep import MemoriesAnswer

    def served(mounted: Path) -> None:
        with client(mounted) as view:
            assert len(decoded(view.get("/api/kept"), MemoriesAnswer).memories) == 2
            assert view.get(f"/api/kept/{kept.spanish}/history").status_code == 200
            for action, body in [
                ("approve", {"id": kept.proposed}),
                ("forget", {"id": kept.spanish, "expected_version": 2}),
            ]:
                answer = view.post(f"/api/kept/{action}", json=body, headers={"origin": OWN})
                assert answer.status_code == 400
                error = answer.json()["error"]
                assert "\n" not in error and "read-only" in error.lower(), error

    with read_only(home, tmp_path / "ro") as mounted:
        served(mounted)
        gc.collect()
