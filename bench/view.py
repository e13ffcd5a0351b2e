"""``backscroll view`` in a real headless Chromium: each target of issue 25 §4 beside its
figure, measured with the browser's Performance API and the server's own ``Server-Timing``.

    cd /work/wt/view && .venv/bin/python -m bench.view [--frames 130000] [--scrub-minutes 10]
    (the issue's size: --frames 1000000)

The store: ``--frames`` frames of the corpus tool's real screen text over 500 days (as
``bench.search`` builds them, 20% with encrypted text; no thumbnails), and one day of 2,000
more frames with encrypted thumbnails (480×300 pictures of each frame's text, as capture's
thumbnails are 480 wide), 18 s apart from 08:00. Cached under $BACKSCROLL_BENCH_DATA like
the other benches' stores; a private copy is served. The server is ``backscroll view
--no-open`` as a person starts it; Chromium is /usr/bin/chromium driven by Playwright.

What is measured, each after a warm-up:
- the day of 2,000 frames opened (a new page load): ``timeline-painted``, the page's own
  mark in the first animation frame after it drew the day, from navigation start; and the
  timeline answer's server time (``Server-Timing`` of ``/api/timeline``);
- scrubbing: ArrowRight, from the key to the next frame's picture decoded and an animation
  frame later, frame after frame through the day;
- a thumbnail decrypted and served: the server time of every ``/api/thumbnail`` the page
  asked for;
- search with thumbnails: the search page for words cut from the day's frames' titles, in
  that day (so every result has a thumbnail), reached as the page's own links go; the server
  time of ``/api/search``, and of the search with all its thumbnails measured as the server
  process's CPU time over them (its threads' ``schedstat``). That is the target's figure: the
  page asks for its thumbnails at once, and summing each answer's ``Server-Timing`` counts
  every answer's turn behind the others (for the reader, the GIL, the 2 cores) once per
  answer. The sums, with and without the waits for the reader, and the span the page saw
  (from the search asked to its last thumbnail received) are printed beside it;
- a jump to another day: PageDown and PageUp, from the key to ``timeline-painted``;
- today's page following a new frame: from its append (an import, a writer as the daemon
  is) to the page showing it, and the server time of the page's poll;
- the server's RSS (``/proc/PID/status``) before, during and after ``--scrub-minutes`` of
  scrubbing back and forth.

The baseline, in the same run: what a person had before the view to see one frame,
``backscroll show ID --save out.jpg`` (a process each), and screenpipe's published targets
where the issue names them (scrubbing 100 ms, a day jump 1 s).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import select
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench._corpus import (
    BUILD_INFO,
    DATA,
    REPO,
    Report,
    cached,
    cells,
    copy_store,
    corpus_file,
    import_store,
    machine,
)
from bench._stats import percentile

DAYS = 500
SEED = 1
DAY_FRAMES = 2000
ENCRYPTED_EVERY = 5000
ENCRYPTED_RUN = 1000
CHROMIUM = "/usr/bin/chromium"
RESULTS = REPO / "bench" / "results" / "view.txt"

say = Report()


# -- the store --------------------------------------------------------------------------------


def view_store(frames: int) -> tuple[Path, dict[str, Any]]:
    def build(home: Path) -> dict[str, Any]:
        searched = DATA / f"search-n{frames}-d{DAYS}-s{SEED}"
        if (searched / BUILD_INFO).exists():
            # bench.search's store is this one's frames (the same corpus, the same encrypted
            # runs): a copy of it saves the half hour an import of 1M frames takes.
            say(f"copying bench.search's store of {frames:,} frames, then the day of thumbnails")
            copy_store(searched, home)
            info = json.loads((searched / BUILD_INFO).read_text())
            info.pop("built", None)
        else:
            say(f"building the store: {frames:,} frames over {DAYS} days, then the thumbnails")
            with open(corpus_file(frames, DAYS, SEED)) as lines:
                info = import_store(
                    home, lines, encrypted_every=ENCRYPTED_EVERY, encrypted_run=ENCRYPTED_RUN
                )
        return {**info, **add_day(home, corpus_file(frames, DAYS, SEED))}

    return cached(f"view-n{frames}-d{DAYS}-s{SEED}", build)


def add_day(home: Path, corpus: Path) -> dict[str, Any]:
    """2,000 frames with thumbnails, 18 s apart from 08:00, on the corpus's last day but two
    where that day holds few of its own (130,000 frames: 260), else on the day before its
    first (1M frames put 2,000 on every day), so the day holds about 2,000 frames."""
    from PIL import Image, ImageDraw

    from backscroll.importer import import_frames
    from backscroll.store import MemoryStore

    texts = []
    with open(corpus) as f:
        for line in f:
            texts.append(json.loads(line))
            if len(texts) == DAY_FRAMES:
                break
    times = []
    with open(corpus) as f:
        for line in f:
            times.append(json.loads(line)["ts"])
    day = datetime.fromtimestamp(max(times)).astimezone() - timedelta(days=2)
    its_own = sum(1 for ts in times if datetime.fromtimestamp(ts).date() == day.date())
    if its_own > DAY_FRAMES // 4:
        day = datetime.fromtimestamp(min(times)).astimezone() - timedelta(days=1)
    start = day.replace(hour=8, minute=0, second=0, microsecond=0)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as pictures:
        rows = []
        for n, row in enumerate(texts):
            picture = Path(pictures) / f"{n}.png"
            image = Image.new("RGB", (480, 300), (24 + n % 7 * 20, 28, 40))
            draw = ImageDraw.Draw(image)
            draw.text((8, 6), f"{row['app']} — {row['title']}", fill=(250, 250, 250))
            for k, text_line in enumerate(row["text"].splitlines()[:24]):
                draw.text((8, 24 + 11 * k), text_line[:90], fill=(210, 210, 210))
            image.save(picture)
            when = start + timedelta(seconds=18 * n)
            rows.append(json.dumps({**row, "ts": when.isoformat(), "image": str(picture)}))
        with MemoryStore(home, write=True) as store:
            import_frames(store, rows)
    return {"day": start.date().isoformat(), "day_seconds": time.perf_counter() - started}


# -- the server and the browser ---------------------------------------------------------------


class Server:
    def __init__(self, home: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "backscroll", "view", "--no-open", "--home", str(home)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], 120)
        line = self.process.stdout.readline() if ready else ""
        found = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=\S+", line)
        if found is None:
            raise SystemExit(f"backscroll view printed no address: {line!r}")
        self.url, self.origin = found.group(0), found.group(1)

    def rss_mb(self, kind: str = "VmRSS") -> float:
        """Resident MB: all (VmRSS), or the process's own memory (RssAnon) or the pages of
        files it maps (RssFile: the search views, which the kernel may drop and read again)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(f"{kind}:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError(f"no {kind}")

    def cpu(self) -> dict[str, int]:
        """CPU ns each of the server's threads has run (``/proc/PID/task/TID/schedstat``)."""
        spent = {}
        for task in Path(f"/proc/{self.process.pid}/task").iterdir():
            try:
                spent[task.name] = int((task / "schedstat").read_text().split()[0])
            except FileNotFoundError:
                continue  # a worker thread that ended meanwhile
        return spent

    def cpu_since(self, before: dict[str, int]) -> float | None:
        """CPU ms the server spent since ``before``; None if a thread ended meanwhile (its
        time went with it)."""
        after = self.cpu()
        if set(before) - set(after):
            return None
        return sum(ns - before.get(task, 0) for task, ns in after.items()) / 1e6

    def stop(self) -> None:
        self.process.terminate()
        self.process.communicate(timeout=30)


# The page's own marks and the server's timing, read in the page (Runtime.callFunctionOn,
# which the view's CSP does not govern).
PRESS = """async (key) => {
  performance.clearMarks("timeline-painted");
  const t0 = performance.now();
  document.dispatchEvent(new KeyboardEvent("keydown", {key, bubbles: true}));
  await new Promise((done) => {
    const seen = () => performance.getEntriesByName("timeline-painted").length
      ? done() : setTimeout(seen, 1);
    seen();
  });
  return performance.getEntriesByName("timeline-painted")[0].startTime - t0;
}"""
# -1: the end of the day (nothing moved); -2: a frame without a picture.
SCRUB = """async (key) => {
  const before = document.querySelector("#scrub").value;
  const t0 = performance.now();
  document.dispatchEvent(new KeyboardEvent("keydown", {key, bubbles: true}));
  if (document.querySelector("#scrub").value === before) return -1;
  const shown = document.querySelector("#picture");
  if (!shown) return -2;
  await shown.decode();
  await new Promise((done) => requestAnimationFrame(() => setTimeout(done)));
  return performance.now() - t0;
}"""
GO = """(address) => {
  history.pushState(null, "", address);
  dispatchEvent(new PopStateEvent("popstate"));
}"""
SHOWN = """(app) => new Promise((done) => {
  const seen = () => document.querySelector("#frame-app")?.textContent === app
    ? done() : setTimeout(seen, 5);
  seen();
})"""
SERVER_TIMES = """(prefix) => performance.getEntriesByType("resource")
  .filter((e) => e.name.includes(prefix))
  .map((e) => e.serverTiming.find((t) => t.name === "app")?.duration ?? -1)"""
# Each thumbnail's own server time: its answer's less its wait for the thumbnails' reader
# (a page's 8 thumbnails come at once, and each would count the others' turns again).
OWN_TIMES = """(prefix) => performance.getEntriesByType("resource")
  .filter((e) => e.name.includes(prefix))
  .map((e) => {
    const of = (name) => e.serverTiming.find((t) => t.name === name)?.duration;
    const [app, wait] = [of("app"), of("wait")];
    return app === undefined || wait === undefined ? -1 : app - wait; })"""
# From the search's request to the last of its thumbnails received, in the browser.
SPAN = r"""() => {
  const all = performance.getEntriesByType("resource");
  const asked = all.find((e) => e.name.includes("/api/search"));
  const got = all.filter((e) => /\/api\/(search|thumbnail)/.test(e.name));
  return asked ? Math.max(...got.map((e) => e.responseEnd)) - asked.startTime : -1; }"""


def server_times(page: Any, prefix: str) -> list[float]:
    times: list[float] = page.evaluate(SERVER_TIMES, prefix)
    page.evaluate("() => performance.clearResourceTimings()")
    return [t for t in times if t >= 0]


def row(name: str, times: list[float], target: str, baseline: str = "") -> None:
    say(f"{name:<44s} {cells(times, 1)}   {target:<16s} {baseline}")


def measure(home: Path, day: str, scrub_minutes: float) -> None:
    from playwright.sync_api import sync_playwright

    server = Server(home)
    try:
        with sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 860})
            page.set_default_timeout(120_000)
            page.goto(server.url)
            page.wait_for_selector("#day")
            page.evaluate("() => performance.setResourceTimingBufferSize(100000)")
            rss = [server.rss_mb()]
            run(page, server, day, scrub_minutes, rss)
            browser.close()
    finally:
        server.stop()


def run(page: Any, server: Server, day: str, scrub_minutes: float, rss: list[float]) -> None:
    header = f"{'':44s} {'count':>6s} {'p50':>9s} {'p90':>9s} {'p99':>9s} {'max':>9s}"
    say(f"{header}   {'target':<16s} baseline")
    # Opening the day of 2,000 frames, as a new page load each time (one warm-up).
    paints, answers = [], []
    for n in range(11):
        page.goto(f"{server.origin}/day/{day}")
        page.wait_for_selector("#picture")
        painted = page.evaluate(
            """() => new Promise((done) => {
                const seen = () => performance.getEntriesByName("timeline-painted").length
                  ? done(performance.getEntriesByName("timeline-painted")[0].startTime)
                  : setTimeout(seen, 1);
                seen(); })"""
        )
        timeline = server_times(page, "/api/timeline")
        frames = int(page.locator("#scrub").get_attribute("max") or 0) + 1
        if n:
            paints.append(painted)
            answers.extend(timeline)
    say(f"(the day {day}: {frames:,} frames)")
    row("day of 2,000 frames: timeline first paint, ms", paints, "<= 300 ms")
    row("day of 2,000 frames: server's answer, ms", answers, "<= 50 ms")
    # Scrubbing: from the newest frame back through the day, then forward.
    page.keyboard.press("Home")
    page.wait_for_selector("#picture")
    server_times(page, "/api/thumbnail")
    scrubs = [page.evaluate(SCRUB, "ArrowRight") for _ in range(300)]
    scrubs = [t for t in scrubs if t >= 0]
    frame = int(page.url.rsplit("/", 1)[1])  # a frame of the day's, with a thumbnail
    thumbs = server_times(page, "/api/thumbnail")
    row("next frame shown when scrubbing, ms", scrubs, "<= 50 ms p95", "screenpipe: 100 ms")
    say(f"{'':44s} p95 {percentile(scrubs, 0.95):.1f} ms")
    row("thumbnail decrypted and served (server), ms", thumbs, "<= 5 ms p50")
    # Search with thumbnails: words of the day's frames.
    words = search_words(page, server, day)
    searches: list[float] = []
    cpu: list[float] = []
    totals: list[float] = []
    queued: list[float] = []
    spans: list[float] = []
    thumbnails = 0
    page.goto(f"{server.origin}/search?q={words[0]}&since={day}")
    for n, word in enumerate(words):
        page.evaluate("() => performance.clearResourceTimings()")
        before = server.cpu()
        # Within the page, as its links go: only the search and its thumbnails are asked for.
        page.evaluate(GO, f"/search?q={word}&since={day}")  # results with thumbnails
        page.wait_for_selector("#search-note:not(:empty)")
        page.evaluate(
            """() => Promise.all([...document.querySelectorAll(".result img")].map(
                (i) => i.decode().catch(() => null)))"""
        )
        spent = server.cpu_since(before)
        answer = page.evaluate(SERVER_TIMES, "/api/search")
        span = page.evaluate(SPAN)
        own = [t for t in page.evaluate(OWN_TIMES, "/api/thumbnail") if t >= 0]
        pictures = server_times(page, "/api/thumbnail")  # and the timings cleared
        if n:
            valid = [t for t in answer if t >= 0]
            searches.extend(valid)
            if spent is not None:
                cpu.append(spent)
            totals.append(sum(valid) + sum(own))
            queued.append(sum(valid) + sum(pictures))
            spans.append(span)
            thumbnails += len(pictures)
    row("search answer (server), ms", searches, "")
    say(f"{'':44s} ({thumbnails} thumbnails in {len(totals)} result pages)")
    row("search with its thumbnails (server CPU), ms", cpu, "<= 100 ms p99")
    say(f"{'':44s} (the server process's CPU time for the search and its thumbnails)")
    row("  their server times summed, waits left out", totals, "")
    row("  their server times summed, waits counted", queued, "(as measured before)")
    row("  seen by the page, ms", spans, "(search to last thumbnail)")
    # Day jumps, from the day of 2,000 frames and back.
    page.goto(f"{server.origin}/day/{day}")
    page.wait_for_selector("#picture")
    jumps = []
    for n in range(21):
        took = page.evaluate(PRESS, "PageDown" if n % 2 == 0 else "PageUp")
        if n:
            jumps.append(took)
    row("jump to another day, ms", jumps, "<= 300 ms", "screenpipe: 1 s")
    rss.append(server.rss_mb())
    follow(page, server)
    long_scrub(page, server, day, scrub_minutes, rss)
    baseline(server, frame)


def follow(page: Any, server: Server) -> None:
    """Today's page following new frames: from a frame's append (``import``, a writer as the
    daemon is) to the page showing it; and what the page's polling costs the server."""
    from backscroll.importer import import_frames
    from backscroll.store import MemoryStore

    home = server.process.args[-1]
    page.goto(f"{server.origin}/")
    page.wait_for_selector("#day")
    server_times(page, "/api/timeline")
    shown = []
    for n in range(11):
        frame = {"ts": datetime.now().astimezone().isoformat(), "app": f"Follow{n}", "title": "t"}
        with MemoryStore(home, write=True) as store:
            start = time.perf_counter()
            import_frames(store, [json.dumps({**frame, "text": f"followed frame {n}"})])
        page.evaluate(SHOWN, frame["app"])
        if n:
            shown.append((time.perf_counter() - start) * 1000)
    polls = server_times(page, "/api/timeline?limit")
    row("a new frame on today's page (poll 1 s), ms", shown, "(choice)")
    row("the poll's answer (server), ms", polls, "(its cost)")


def search_words(page: Any, server: Server, day: str) -> list[str]:
    frames = page.evaluate(
        """async (url) => (await (await fetch(url)).json()).frames.map((f) => f.title)""",
        f"{server.origin}/api/timeline?since={day}&limit=10000",
    )
    rng = random.Random(SEED)
    words = set()
    while len(words) < 41:
        for word in re.findall(r"[A-Za-z]{5,}", rng.choice(frames)):
            words.add(word.lower())
    return sorted(words)[:41]


def long_scrub(page: Any, server: Server, day: str, minutes: float, rss: list[float]) -> None:
    page.goto(f"{server.origin}/day/{day}")
    page.wait_for_selector("#picture")
    deadline = time.monotonic() + minutes * 60
    steps, key, samples = 0, "ArrowLeft", [(0.0, server.rss_mb())]
    started = time.monotonic()
    while time.monotonic() < deadline:
        for _ in range(200):
            if page.evaluate(SCRUB, key) == -1:
                key = "ArrowRight" if key == "ArrowLeft" else "ArrowLeft"
            steps += 1
        page.evaluate("() => performance.clearResourceTimings()")
        samples.append(((time.monotonic() - started) / 60, server.rss_mb()))
    rss.append(server.rss_mb())
    shown = ", ".join(f"{m:.0f} min {mb:.0f} MB" for m, mb in samples[:: max(1, len(samples) // 8)])
    say(f"server RSS: at start {rss[0]:.0f} MB, after the runs above {rss[1]:.0f} MB, ")
    say(f"  after {minutes:g} min of scrubbing ({steps:,} frames shown) {rss[-1]:.0f} MB")
    say(f"  (target <= 150 MB, no growth with use); samples: {shown}")
    own, files = server.rss_mb("RssAnon"), server.rss_mb("RssFile")
    say(f"  of which its own memory (RssAnon) {own:.0f} MB, mapped files (RssFile) {files:.0f} MB")


def baseline(server: Server, frame: int) -> None:
    """``backscroll show ID --save``: how a person saw a frame before the view."""
    home = server.process.args[-1]
    with tempfile.TemporaryDirectory() as out:
        times = []
        for n in range(6):
            start = time.perf_counter()
            show = ["show", str(frame), "--home", home, "--save", f"{out}/{n}.jpg"]
            subprocess.run(
                [sys.executable, "-m", "backscroll", *show], check=True, capture_output=True
            )
            if n:
                times.append((time.perf_counter() - start) * 1000)
    row("baseline: backscroll show ID --save, ms", times, "", "(a process each)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=130_000)
    parser.add_argument("--scrub-minutes", type=float, default=10.0)
    args = parser.parse_args()
    source, info = view_store(args.frames)
    say(f"{args.frames:,} frames, and the day {info['day']} of {DAY_FRAMES:,} with thumbnails")
    for line in machine():
        say(line)
    say(f"python -m bench.view --frames {args.frames} --scrub-minutes {args.scrub_minutes:g}")
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as folder:
        home = copy_store(source, Path(folder) / "home")
        from backscroll.store import MemoryStore

        MemoryStore(home, write=True)  # the copy's views caught up, before any timing
        measure(home, info["day"], args.scrub_minutes)
    say.write(RESULTS, section=f"{args.frames:,} frames")


if __name__ == "__main__":
    main()
