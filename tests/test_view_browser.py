"""``backscroll view`` in the real Chromium, driven by Playwright as a person would use it:
open the printed address, scrub with the keyboard, search, open a moment, pause and resume,
delete with the confirmation, watch a new frame arrive; and the security cases of issue 25
§2: a page of another local origin cannot read an answer (fetch, an ``<img>`` drawn into a
canvas, an iframe), a foreign ``Host`` or ``Origin`` is refused, and without the secret only
the one-line page is served. A failing test leaves a screenshot of the page beside its
message."""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from backscroll import answer, contract
from backscroll.importer import import_frames
from backscroll.store import MemoryStore
from backscroll.view.guard import REFUSED
from tests.helpers import Keeping

pytestmark = pytest.mark.browser

playwright = pytest.importorskip("playwright.sync_api")
expect = playwright.expect
CHROMIUM = "/usr/bin/chromium"


def frames(png: Path) -> list[dict[str, Any]]:
    """Yesterday's two frames and today's six: three moments of three apps."""
    now = datetime.now().astimezone().replace(microsecond=0)
    today = now.replace(hour=0, minute=0, second=0) + timedelta(hours=9)
    if today + timedelta(hours=1) > now:  # just after midnight: today's frames are in the past
        today = now - timedelta(hours=1)
    yesterday = today - timedelta(days=1)

    def row(when: datetime, app: str, title: str, text: str, url: str = "") -> dict[str, Any]:
        return {"ts": when.isoformat(), "app": app, "title": title, "text": text, "url": url}

    return [
        dict(r, image=str(png))
        for r in [
            row(yesterday, "Terminal", "zsh — build", "make: nothing to be done for all"),
            row(yesterday + timedelta(minutes=5), "Slack", "random", "cake in the kitchen"),
            row(today, "Terminal", "zsh — deploy", "npm ERR! connect ECONNREFUSED 5432"),
            row(today + timedelta(minutes=1), "Terminal", "zsh — deploy", "retrying 5432 again"),
            row(
                today + timedelta(minutes=8),
                "Firefox",
                "Invoice INV-20931",
                "Invoice total 1,250.00 EUR password: hunter2hunter2",
                "https://billing.example/invoices/20931",
            ),
            row(today + timedelta(minutes=12), "Slack", "general", "lunch at the quokka cafe"),
            row(today + timedelta(minutes=13), "Slack", "general", "lunch at the quokka cafe ok"),
            row(today + timedelta(minutes=20), "Code", "app.py", "def handler(): return 2"),
        ]
    ]


@pytest.fixture
def home(backscroll_home: Path, tmp_path: Path) -> Path:
    """The frames with screenshots of their own, text and thumbnails encrypted."""
    from PIL import Image, ImageDraw

    rows = frames(tmp_path / "unused.png")
    colours = {"Terminal": (30, 30, 36), "Slack": (74, 21, 75), "Firefox": (240, 240, 244)}
    for n, row in enumerate(rows):
        picture = tmp_path / f"screen{n}.png"
        image = Image.new("RGB", (960, 600), colours.get(row["app"], (30, 60, 110)))
        ink = (20, 20, 20) if row["app"] == "Firefox" else (230, 230, 230)
        draw = ImageDraw.Draw(image)
        draw.text((24, 20), f"{row['app']} — {row['title']}", fill=ink)
        for line, words in enumerate(row["text"].split(": ")):
            draw.text((24, 60 + 24 * line), words, fill=ink)
        image.save(picture)
        row["image"] = str(picture)
    with MemoryStore(write=True) as store:
        store.set_config("cli", encrypt_text=True)
        import_frames(store, [json.dumps(r) for r in rows])
    return backscroll_home


class Served:
    def __init__(self, home: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "backscroll", "view", "--no-open", "--home", str(home)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=os.environ,
            text=True,
        )
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], 60)
        line = self.process.stdout.readline() if ready else ""
        found = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=(\S+)", line)
        if found is None:
            self.process.kill()
            self.process.communicate()
            pytest.fail(f"backscroll view printed no address: {line!r}")
        self.url = found.group(0)
        self.port = int(found.group(1))
        self.origin = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.terminate()
        self.process.communicate(timeout=30)  # and its pipes closed


@pytest.fixture
def view(home: Path) -> Iterator[Served]:
    served = Served(home)
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--host-resolver-rules=MAP rebound.test 127.0.0.1"],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(chromium: Any, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    context = chromium.new_context(viewport={"width": 1280, "height": 860})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield opened
    finally:
        context.close()
    assert not errors, f"the page raised: {errors}"


@contextlib.contextmanager
def shot_on_failure(page: Any, tmp_path: Path) -> Iterator[None]:
    """A failing step leaves the page as it looked, named in the failure."""
    try:
        yield
    except BaseException as exc:
        path = tmp_path / "failure.png"
        with contextlib.suppress(Exception):
            page.screenshot(path=str(path), full_page=True)
        raise AssertionError(f"{exc}\n(the page: {path})") from exc


def store_answer(kind: str) -> list[dict[str, Any]]:
    with MemoryStore() as store:
        request = contract.parse(contract.LogRequest, {"kind": [kind]})
        return [{"kind": e.kind, **e.detail} for e in answer.audit_log(store, request).events]


# -- a person's flows -------------------------------------------------------------------------


def test_a_person_opens_the_address_scrubs_with_the_keyboard_and_changes_day(
    view: Served, page: Any, tmp_path: Path
) -> None:
    with shot_on_failure(page, tmp_path):
        page.goto(view.url)
        assert "token" not in page.url and page.url == view.origin + "/"
        page.wait_for_selector("#picture")
        expect(page.locator("#text")).not_to_have_text("…")
        expect(page.locator("#frame-app")).to_have_text("Code")
        assert re.search(r"/frame/\d+$", page.url)
        newest = page.url
        page.keyboard.press("ArrowLeft")
        expect(page).not_to_have_url(newest)
        expect(page.locator("#frame-app")).to_have_text("Slack")
        expect(page.locator("#text")).to_contain_text("quokka")
        for _ in range(3):
            page.keyboard.press("ArrowLeft")
        expect(page.locator("#frame-app")).to_have_text("Terminal")
        expect(page.locator("#text")).to_contain_text("5432")
        page.keyboard.press("ArrowRight")
        expect(page.locator("#frame-app")).to_have_text("Firefox")
        link = page.locator("#frame-url")
        assert link.get_attribute("href") == "https://billing.example/invoices/20931"
        page.wait_for_selector(".text .redacted")
        assert "hunter2" not in page.inner_text("#text")
        assert page.evaluate("document.querySelector('#picture').naturalWidth") > 0
        assert page.locator("#moments li").count() == 4
        assert page.locator("#hours .run").count() == 4  # Terminal, Firefox, Slack, Code
        today = page.inner_text("#day")
        page.keyboard.press("PageUp")
        expect(page.locator("#day")).not_to_have_text(today)
        assert page.url.startswith(view.origin + "/frame/")  # yesterday's newest frame
        expect(page.locator("#frame-app")).to_have_text("Slack")
        page.keyboard.press("PageDown")
        expect(page.locator("#day")).to_have_text(today)
        page.fill("#when", "yesterday")
        page.press("#when", "Enter")
        expect(page.locator("#day")).not_to_have_text(today)
        expect(page.locator("#frame-app")).to_have_text("Terminal")  # yesterday's first
        page.fill("#when", "someday")
        page.press("#when", "Enter")
        expect(page.locator("#note")).to_contain_text("someday")


def test_a_day_of_many_moments_shows_the_ones_around_the_frame_first_then_all(
    backscroll_home: Path, page: Any, tmp_path: Path
) -> None:
    """The strip is drawn around the frame opened before the first paint, and the rest of
    the day's moments right after it, the one opened staying in view."""
    start = datetime.now().astimezone().replace(hour=9, minute=0, second=0, microsecond=0)
    start -= timedelta(days=1)
    rows = [
        {"ts": (start + timedelta(minutes=n)).isoformat(), "app": f"App{n}", "title": f"w{n}"}
        for n in range(150)
    ]
    with MemoryStore(write=True) as store:
        import_frames(store, [json.dumps({**r, "text": f"moment {n}"}) for n, r in enumerate(rows)])
        ids = answer.timeline(
            store,
            contract.parse(contract.TimelineRequest, {"since": start.isoformat(), "limit": 1000}),
        ).answer.ids
    served = Served(backscroll_home)
    try:
        with shot_on_failure(page, tmp_path):
            page.goto(served.url)
            page.goto(f"{served.origin}/frame/{ids[100]}")
            expect(page.locator("#frame-app")).to_have_text("App100")
            expect(page.locator("#moments li")).to_have_count(150)
            current = page.locator("#moments li.current")
            assert current.get_attribute("data-group") == "100"
            strip = page.locator("#moments").bounding_box()
            shown = current.bounding_box()
            assert (
                strip["x"] <= shown["x"]
                and shown["x"] + shown["width"] <= strip["x"] + strip["width"]
            )
            page.keyboard.press("ArrowLeft")
            expect(page.locator("#frame-app")).to_have_text("App99")
            page.locator('#moments li[data-group="0"] button').click()
            expect(page.locator("#frame-app")).to_have_text("App0")
            assert page.locator("#moments li.current").get_attribute("data-group") == "0"
    finally:
        served.stop()


def test_a_person_searches_and_opens_a_moment_in_the_timeline(
    view: Served, page: Any, tmp_path: Path
) -> None:
    with shot_on_failure(page, tmp_path):
        page.goto(view.url)
        page.wait_for_selector("#picture")
        page.fill("#quick-search input", "quokka")
        page.press("#quick-search input", "Enter")
        page.wait_for_selector(".result")
        assert page.url == view.origin + "/search?q=quokka"
        assert page.locator(".result").count() == 1  # two frames of one moment
        assert page.inner_text(".result mark") == "quokka"
        assert "2 frames" in page.inner_text(".result .when")
        assert page.evaluate("document.querySelector('.result img').naturalWidth") > 0
        page.click(".result a")
        expect(page.locator("#frame-app")).to_have_text("Slack")
        assert re.search(r"/frame/\d+$", page.url)
        expect(page.locator("#text")).to_contain_text("quokka")
        page.go_back()
        page.wait_for_selector(".result")
        page.goto(view.origin + "/search?q=quokka%20zebra")
        page.wait_for_selector(".badge")
        assert page.inner_text(".badge") == "near miss"
        expect(page.locator("#search-note")).to_contain_text("near miss(es) with some")
        page.goto(view.origin + "/search?q=zebra&app=nothing")
        expect(page.locator("#search-note")).to_contain_text("Nothing found")
        assert page.locator(".result").count() == 0


def test_a_person_pauses_resumes_and_deletes_with_the_confirmation(
    view: Served, page: Any, tmp_path: Path
) -> None:
    with shot_on_failure(page, tmp_path):
        page.goto(view.url.replace("/?", "/control?"))
        page.wait_for_selector("#status")
        assert page.inner_text("[data-field=capture]") == "active"
        assert page.inner_text("[data-field=meaning]") == (
            "0 of 8 frames embedded (the daemon, an import or a reindex embeds the rest)"
        )
        page.fill("#pause-for", "30m")
        page.click("#pause")
        expect(page.locator("#control-note")).to_contain_text("Capture paused until")
        assert page.inner_text("[data-field=capture]").startswith("paused until")
        page.click("#resume")
        expect(page.locator("#control-note")).to_have_text("Capture resumed.")
        assert page.inner_text("[data-field=capture]") == "active"
        assert [e["origin"] for e in store_answer("pause") + store_answer("resume")] == [
            "api",
            "api",
        ]

        page.goto(view.origin + "/")
        page.wait_for_selector("#picture")
        for _ in range(2):
            page.keyboard.press("ArrowLeft")
        expect(page.locator("#frame-app")).to_have_text("Slack")
        page.click("#delete-moment")
        said = page.inner_text("#confirm-text")
        assert "the moment of 2 frames of Slack — general" in said and "cannot be undone" in said
        page.click("#confirm-cancel")
        assert page.locator(".moments li").count() == 4
        page.click("#delete-moment")
        page.click("#confirm-ok")
        expect(page.locator("#moments li")).to_have_count(3)
        [deleted] = store_answer("delete")
        assert deleted["origin"] == "api" and len(deleted["ids"]) == 2

        page.goto(view.origin + "/control")
        page.wait_for_selector("#status")
        page.fill("#delete-app", "firefox")
        page.click("#delete")
        assert "whose app, title or address contains “firefox”" in page.inner_text("#confirm-text")
        page.click("#confirm-ok")
        expect(page.locator("#control-note")).to_have_text("Deleted 1 frame(s).")
        with MemoryStore() as store:
            assert not store.search("invoice")


def test_a_person_sees_the_day_at_a_glance_and_pages_through_a_search(
    view: Served, page: Any, tmp_path: Path
) -> None:
    start = datetime.now().astimezone() - timedelta(minutes=40)
    rows = [
        {"ts": (start + timedelta(seconds=n)).isoformat(), "app": f"App{n}", "title": f"w{n}"}
        | {"text": f"zebra crossing number {n}"}
        for n in range(20)
    ]
    with MemoryStore(write=True) as store:
        import_frames(store, [json.dumps(r) for r in rows])
    with shot_on_failure(page, tmp_path):
        page.goto(view.url)
        page.wait_for_selector("#frame-app")
        today = page.inner_text("#day")
        page.click("#glance")
        page.wait_for_selector("#apps li")
        assert page.url == f"{view.origin}/glance?since={today}"
        expect(page.locator("#strip li")).to_have_count(24)
        labels = page.locator("#apps .label").all_inner_texts()
        assert {"Terminal", "Firefox", "Slack", "Code"} <= set(labels)
        expect(page.locator("#glance-note")).to_contain_text("on screen")
        page.goto(view.origin + "/search?q=zebra")
        expect(page.locator(".result")).to_have_count(15)
        page.click("#more")
        expect(page.locator(".result")).to_have_count(20)
        expect(page.locator("#more")).to_be_hidden()
        ids = [a.get_attribute("href") for a in page.locator(".result a").all()]
        assert len(set(ids)) == 20


def test_todays_page_follows_a_new_frame(view: Served, page: Any, tmp_path: Path) -> None:
    with shot_on_failure(page, tmp_path):
        page.goto(view.url)
        page.wait_for_selector("#picture")
        expect(page.locator("#frame-app")).to_have_text("Code")
        now = datetime.now().astimezone().isoformat()
        with MemoryStore(write=True) as store:
            import_frames(
                store, [json.dumps({"ts": now, "app": "Gimp", "title": "cat.xcf", "text": "x"})]
            )
        expect(page.locator("#frame-app")).to_have_text("Gimp", timeout=15_000)
        assert page.locator("#moments li").count() == 5


def test_a_person_approves_a_memory_opens_its_history_and_follows_its_source_to_the_frame(
    view: Served, page: Any, tmp_path: Path
) -> None:
    with MemoryStore(write=True) as store:
        [slack] = [h.id for h in store.search("quokka", limit=1)]
        keeping = Keeping(store, slack)
        spanish = keeping.spanish
        keeping.keep(
            text="We chose Postgres for the billing service: it already runs our reports.",
            kind="decision",
            subject="billing",
            predicate="database",
            value="postgres",
            source="https://wiki.example/adr/12",
        )
        keeping.keep(
            text="Ask how the Atlas launch went.",
            kind="intention",
            due="2026-10-01T09:00:00Z",
            source="notes/atlas.md",
        )
        keeping.review_in("inbox")
        proposed = keeping.keep(text="The staging database resets on Sundays.", space="inbox")
    shots = [tmp_path / "shots"]
    if os.environ.get("BACKSCROLL_README_SHOTS"):
        shots.append(Path(os.environ["BACKSCROLL_README_SHOTS"]))
    with shot_on_failure(page, tmp_path):
        page.goto(view.url)
        page.wait_for_selector("#picture")
        page.click("[data-nav=memories]")
        expect(page.locator("#review li")).to_have_count(1)
        assert page.url == view.origin + "/memories"
        expect(page.locator("[data-nav=memories]")).to_have_attribute("aria-current", "")
        expect(page.locator("#memories li")).to_have_count(3)
        # A proposed memory is in the review queue alone.
        assert page.locator(f"#memories [data-id={proposed}]").count() == 0
        first = page.locator(f"#memories [data-id={spanish}]")
        expect(first.locator(".dates")).to_contain_text("revised")
        expect(first.locator(".claim")).to_have_text("user answer_language = spanish")
        link = page.locator("#memories .source-url")
        assert link.get_attribute("href") == "https://wiki.example/adr/12"
        assert "noreferrer" in (link.get_attribute("rel") or "")
        save(page, shots, "memories.png")
        page.click("#review .approve")
        expect(page.locator("#kept-note")).to_contain_text(f"Approved {proposed}")
        expect(page.locator("#review")).to_have_count(0)
        [reviewed] = store_answer("reviewed")
        assert reviewed["origin"] == "api" and reviewed["memory_id"] == proposed
        page.select_option("#space", "inbox")
        expect(page.locator(f"#memories [data-id={proposed}]")).to_have_count(1)
        assert page.url == view.origin + "/memories?space=inbox"

        page.select_option("#space", "default")
        page.click(f"#memories [data-id={spanish}] a.memory-text")
        expect(page.locator("#history li")).to_have_count(2)
        assert page.url == f"{view.origin}/memories/{spanish}"
        expect(page.locator("#seen")).to_contain_text("Slack")
        page.click("#history .restore")
        expect(page.locator("#kept-note")).to_have_text("Restored version 1 as version 3.")
        expect(page.locator("#history li")).to_have_count(3)
        expect(page.locator("#memory .memory-text")).to_have_text("Answers in Spanish.")
        save(page, shots, "memory.png")
        page.click("#memory .source-frame")
        expect(page.locator("#frame-app")).to_have_text("Slack")
        assert page.url == f"{view.origin}/frame/{slack}"
        expect(page.locator("#text")).to_contain_text("quokka")

        page.go_back()
        page.click("#forget")
        said = page.inner_text("#confirm-text")
        assert (
            "Answers in Spanish." in said and "3 version(s)" in said and "cannot be undone" in said
        )
        expect(page.locator("#confirm-ok")).to_have_text("Forget")
        page.click("#confirm-ok")
        expect(page.locator("#kept-note")).to_contain_text(f"Forgot {spanish}")
        assert page.url == view.origin + "/memories?space=default"
        expect(page.locator(f"#memories [data-id={spanish}]")).to_have_count(0)
        [forgotten] = store_answer("forgotten")
        assert forgotten["origin"] == "api" and forgotten["version"] == 3


# -- shut to everyone else --------------------------------------------------------------------

EVIL = """<!doctype html><html><body><pre id="out">running</pre>
<script>
const view = "VIEW";
const out = {};
async function tries() {
  try {
    const r = await fetch(view + "/api/search?query=quokka", {credentials: "include"});
    out.fetch = "read: " + (await r.text()).slice(0, 80);
  } catch (e) { out.fetch = "refused"; }
  try {
    const r = await fetch(view + "/api/search?query=quokka",
      {credentials: "include", mode: "no-cors"});
    out.opaque = r.type + ":" + (await r.text()).length;
  } catch (e) { out.opaque = "refused"; }
  try {
    await fetch(view + "/api/pause", {method: "POST", credentials: "include", mode: "no-cors",
      headers: {"content-type": "text/plain"}, body: "{}"});
    out.pause = "sent";
  } catch (e) { out.pause = "refused"; }
  out.img = await new Promise((done) => {
    const img = new Image();
    img.onload = () => {
      const c = document.createElement("canvas");
      c.width = img.naturalWidth; c.height = img.naturalHeight;
      const g = c.getContext("2d");
      g.drawImage(img, 0, 0);
      try { g.getImageData(0, 0, 1, 1); done("read"); } catch (e) { done("tainted"); }
    };
    img.onerror = () => done("refused");
    img.src = view + "/api/thumbnail/FRAME";
  });
  document.getElementById("out").textContent = JSON.stringify(out);
}
tries();
</script>
<iframe id="framed" src="VIEW/"></iframe>
</body></html>"""


@pytest.fixture
def other_origin(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A second small local HTTP server: another origin on the same machine."""
    folder = tmp_path / "other"
    folder.mkdir()
    handler = partial(SimpleHTTPRequestHandler, directory=str(folder))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield folder, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_page_of_another_local_origin_cannot_read_an_answer(
    view: Served, page: Any, tmp_path: Path, other_origin: tuple[Path, str]
) -> None:
    folder, elsewhere = other_origin
    with MemoryStore() as store:
        [slack] = [h.id for h in store.search("quokka", limit=1)]
    (folder / "evil.html").write_text(
        EVIL.replace("VIEW", view.origin).replace("FRAME", str(slack))
    )
    with shot_on_failure(page, tmp_path):
        page.goto(view.url)  # signed in: the browser holds the cookie
        page.wait_for_selector("#picture")
        page.goto(f"{elsewhere}/evil.html")
        expect(page.locator("#out")).not_to_have_text("running")
        tried = json.loads(page.inner_text("#out"))
        assert tried["fetch"] == "refused"
        assert tried["opaque"] in ("opaque:0", "refused")
        assert tried["img"] in ("refused", "tainted")
        framed = page.frame_locator("#framed")
        assert framed.locator("#quick-search").count() == 0
        child = [f for f in page.frames if f != page.main_frame]
        assert child and "quick-search" not in child[0].content()
        with MemoryStore() as store:
            assert not store.state().pause.active(2**62)  # the cross-origin POST was refused


def test_a_foreign_host_is_refused_in_the_browser(view: Served, page: Any, tmp_path: Path) -> None:
    with shot_on_failure(page, tmp_path):
        rebound = view.url.replace("127.0.0.1", "rebound.test")
        response = page.goto(rebound)
        assert response.status == 403
        assert page.inner_text("body").strip() == REFUSED.strip()


def test_without_the_secret_only_the_one_line_page_is_served(
    view: Served, page: Any, tmp_path: Path
) -> None:
    with shot_on_failure(page, tmp_path):
        for path in ("/", "/search?q=quokka", "/api/status", "/api/thumbnail/1"):
            response = page.goto(view.origin + path)
            assert response.status == 403
            assert page.inner_text("body").strip() == REFUSED.strip()
        response = page.goto(view.origin + "/?token=guessed")
        assert response.status == 403


def test_the_demo_without_a_display_records_then_serves_its_view(page: Any, tmp_path: Path) -> None:
    """`make run` on a machine without a display: `backscroll demo --view`, seen in Chromium.
    Its pages' screenshots are the README's: with $BACKSCROLL_README_SHOTS set to a folder
    (docs/view), they are written there too."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    demo = ["demo", "--seconds", "20", "--view", "--home", str(tmp_path / "demo")]
    process = subprocess.Popen(
        [sys.executable, "-m", "backscroll", *demo], stdout=subprocess.PIPE, env=env, text=True
    )
    said: list[str] = []
    shots = [tmp_path / "shots"]
    if os.environ.get("BACKSCROLL_README_SHOTS"):
        shots.append(Path(os.environ["BACKSCROLL_README_SHOTS"]))
    try:
        assert process.stdout is not None
        while not said or not said[-1].startswith("Backscroll view at "):
            ready, _, _ = select.select([process.stdout], [], [], 240)
            assert ready, "".join(said)
            said.append(process.stdout.readline())
            assert said[-1], "".join(said)
        address = said[-1].split(" at ", 1)[1].strip()
        origin = address.split("/?", 1)[0]
        with shot_on_failure(page, tmp_path):
            page.goto(address)
            page.wait_for_selector("#picture")
            expect(page.locator("#text")).not_to_have_text("…")
            save(page, shots, "timeline.png")
            page.goto(f"{origin}/search?q=econnrefused")
            page.wait_for_selector(".result img")
            first = page.locator(".result").first
            # The screen's own brackets are no match (screenpipe's misplaced highlights).
            expect(first.locator("mark")).to_have_count(1)
            expect(first.locator("mark")).to_have_text("ECONNREFUSED")
            expect(first.locator(".snippet")).to_contain_text("[as oncomplete]")
            save(page, shots, "search.png")
            page.locator(".result a").last.click()
            expect(page.locator("#text")).to_contain_text("ECONNREFUSED")
            assert re.search(r"/frame/\d+$", page.url)
            save(page, shots, "frame.png")
            page.goto(f"{origin}/glance")
            page.wait_for_selector("#apps li")
            save(page, shots, "glance.png")
            page.goto(f"{origin}/control")
            page.wait_for_selector("#status")
            save(page, shots, "control.png")
    finally:
        process.terminate()
        process.communicate(timeout=60)
    assert "What was recorded:" in "".join(said)


def save(page: Any, folders: list[Path], name: str) -> None:
    """The page as it is, once each image on it has loaded."""
    page.wait_for_load_state("networkidle")
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(folder / name))
