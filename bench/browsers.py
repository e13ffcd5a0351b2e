"""Browsers' accessibility trees: what turns them on, the text they give, and what it costs.

    cd /work/wt/browser && .venv/bin/python -m bench.browsers

On the headless test desktop (Xvfb, openbox, AT-SPI), each browser shows the same local
article (120 paragraphs, ~40 KB of text, a login form with a password field) in a fresh
profile, in each of these setups:

- Chromium, AT-SPI ``IsEnabled`` false; true; ``ScreenReaderEnabled`` true (what screen
  readers set); ``--force-renderer-accessibility``;
- Firefox ESR, ``IsEnabled`` false; true before it starts; true set while it runs (what the
  daemon does when it starts after the browser).

For each: whether the page's text comes over AT-SPI (``AxReader.window_text``, as the daemon
reads it: the page's document, not the browser's chrome) and its address
(``window_page``), the median time of a read, OCR of the window for comparison (characters,
how many of the article's first paragraph's words it found, and whether it read the
browser's chrome), and the browser's cost: the CPU time of all its processes from launch
through 20 s idle and 10 reads a second apart, and their memory (PSS, summed over the
process tree, so shared pages count once) at the end. The baseline is the same browser in
the same run with its tree off.

Writes ``bench/results/browsers.txt`` with the machine it ran on.

    .venv/bin/python -m bench.browsers --address-cost

times what reading the page's address adds to every frame (the daemon reads it before the
grab, so a denied site is never grabbed) on windows that are not browsers: a GTK window and
an xterm (no AT-SPI), 30 reads each, beside the text read of the same window as the
baseline; writes ``bench/results/browsers-address.txt``.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._proc import live_cpu_seconds
from capture.ax import AxReader
from headless import Desktop, headless_desktop, wait_for
from headless.bus import call, variant

IDLE_S = 20.0
READS = 10
WORDS = [
    "quokka",
    "wallaby",
    "bandicoot",
    "bilby",
    "numbat",
    "possum",
    "wombat",
    "echidna",
    "dingo",
    "kookaburra",
    "rottnest",
    "island",
    "marsupial",
    "pouch",
    "joey",
    "burrow",
    "eucalyptus",
    "savanna",
    "scrub",
    "coast",
]
CHROME_WORDS = ("Reload", "Tab search", "Address and search bar", "New Tab", "Close tab")


def article(folder: Path) -> Path:
    paragraphs = [
        "<p>" + " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(50)) + f" P{i}.</p>"
        for i in range(120)
    ]
    path = folder / "article.html"
    path.write_text(
        "<!doctype html><html><head><meta charset=utf-8><title>Field notes</title></head>"
        "<body><h1>Field notes</h1>" + "".join(paragraphs) + "<form><label>Password "
        "<input type=password value=hunter2SECRETPW></label></form></body></html>"
    )
    return path


def status(desk: Desktop, prop: str, value: bool) -> None:
    call(
        desk.bus_address,
        "org.a11y.Bus",
        "/org/a11y/bus",
        "org.freedesktop.DBus.Properties",
        "Set",
        "ssv",
        ["org.a11y.Status", prop, variant("b", value)],
    )


def tree(root: int) -> list[int]:
    """``root`` and every process descended from it."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat[1])
    found, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in found:
                found.add(pid)
                frontier.append(pid)
    return sorted(found)


def pss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def ocr_of(desk: Desktop, window_id: int) -> str:
    from capture.ocr import ocr_text
    from capture.probe import X11Probe
    from capture.screen import grab

    probe = X11Probe(desk.display)
    try:
        front = probe.frontmost()
        assert front is not None and front.window_id == window_id
        image, _monitor = grab(front.geometry, display=desk.display)
    finally:
        probe.close()
    from capture.camera import window_region

    return ocr_text(window_region(image, front.geometry, _monitor))


def measure(
    desk: Desktop, browser: str, flags: list[str], before: Callable[[], None], late: bool, url: str
) -> dict[str, Any]:
    before()
    window = desk.open_browser(browser, url, flags=flags)
    desk.activate(window.window_id)
    if late:
        time.sleep(3)
        status(desk, "IsEnabled", True)
    reader = AxReader(desk.bus_address)
    time.sleep(IDLE_S)
    times, text, url_read = [], "", ""
    for _ in range(READS):
        started = time.perf_counter()
        text = reader.window_text(window.pid, timeout=3.0)
        times.append((time.perf_counter() - started) * 1000)
        url_read = reader.window_page(window.pid).url
        time.sleep(1.0)
    pids = tree(window.pid)
    cpu = live_cpu_seconds(pids, waited=True)  # its processes are new: all of it is this run's
    pss = pss_mb(pids)
    ocr = ocr_of(desk, window.window_id)
    reader.close()
    desk.close(window)
    first = " ".join(WORDS[(0 * 7 + j) % len(WORDS)] for j in range(50)).split()
    return {
        "ax_chars": len(text),
        "ax_has_page": "P119." in text,
        "ax_chrome": [w for w in CHROME_WORDS if w in text],
        "ax_password": "hunter2SECRETPW" in text,
        "url": url_read,
        "read_ms": statistics.median(times),
        "ocr_chars": len(ocr),
        "ocr_first_words": sum(w in ocr.lower() for w in first) / len(first),
        "ocr_chrome": [w for w in CHROME_WORDS if w in ocr],
        "cpu_s": cpu,
        "pss_mb": pss,
        "processes": len(pids),
    }


def address_cost() -> None:
    load_before = os.getloadavg()
    lines = [
        "What the page address read adds to a frame (python -m bench.browsers --address-cost)",
        f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
    ]
    with headless_desktop() as desk:
        windows = {
            "zenity (GTK, no web document)": desk.open_zenity_text("Words to read. " * 40, "N"),
            "xterm (no AT-SPI)": desk.open_xterm(["hello"], "term"),
        }
        time.sleep(1.0)
        reader = AxReader(desk.bus_address)
        for name, window in windows.items():
            reader.window_page(window.pid)
            reader.window_text(window.pid)
            url_ms, text_ms = [], []
            for _ in range(30):
                started = time.perf_counter()
                reader.window_page(window.pid)
                url_ms.append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                reader.window_text(window.pid)
                text_ms.append((time.perf_counter() - started) * 1000)
            lines.append(
                f"{name:<32} window_page p50 {statistics.median(url_ms):6.2f} ms "
                f"p90 {statistics.quantiles(url_ms, n=10)[-1]:6.2f} ms; baseline window_text "
                f"p50 {statistics.median(text_ms):6.2f} ms"
            )
        reader.close()
    load_after = os.getloadavg()
    lines.append(f"load average before / after: {load_before[0]:.2f} / {load_after[0]:.2f}")
    out = Path(__file__).parent / "results" / "browsers-address.txt"
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    if "--address-cost" in sys.argv[1:]:
        address_cost()
        return
    load_before = os.getloadavg()
    rows: list[tuple[str, dict[str, Any]]] = []
    with headless_desktop() as desk:
        url = article(desk.root).as_uri()

        def off() -> None:
            status(desk, "IsEnabled", False)
            status(desk, "ScreenReaderEnabled", False)

        def on() -> None:
            off()
            status(desk, "IsEnabled", True)

        def reader() -> None:
            off()
            status(desk, "ScreenReaderEnabled", True)

        setups: list[tuple[str, str, list[str], Callable[[], None], bool]] = [
            ("chromium, IsEnabled false", "chromium", [], off, False),
            ("chromium, IsEnabled true", "chromium", [], on, False),
            ("chromium, ScreenReaderEnabled true", "chromium", [], reader, False),
            (
                "chromium --force-renderer-accessibility",
                "chromium",
                ["--force-renderer-accessibility"],
                off,
                False,
            ),
        ]
        setups += [
            ("firefox-esr, IsEnabled false", "firefox-esr", [], off, False),
            ("firefox-esr, IsEnabled true at start", "firefox-esr", [], on, False),
            ("firefox-esr, IsEnabled true while running", "firefox-esr", [], off, True),
        ]
        for name, browser, flags, before, late in setups:
            wait_for(lambda: not desk.windows, "the previous browser to close")
            rows.append((name, measure(desk, browser, flags, before, late, url)))
            print(name, rows[-1], flush=True)
    load_after = os.getloadavg()
    lines = [
        "Browsers' accessibility trees (python -m bench.browsers)",
        f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        f"load average before / after: {load_before[0]:.2f} / {load_after[0]:.2f} (shared machine)",
        f"each: launch, {IDLE_S:.0f} s idle, {READS} AT-SPI reads 1 s apart; CPU of all the "
        "browser's processes over that, PSS at the end",
        "",
        f"{'setup':<44} {'AX text':>8} {'page':>5} {'url':>4} {'read ms':>8} "
        f"{'OCR chars':>9} {'OCR words':>9} {'OCR chrome':>10} {'CPU s':>6} {'PSS MB':>7}",
    ]
    for name, r in rows:
        lines.append(
            f"{name:<44} {r['ax_chars']:>8} {'yes' if r['ax_has_page'] else 'no':>5} "
            f"{'yes' if r['url'] else 'no':>4} {r['read_ms']:>8.1f} {r['ocr_chars']:>9} "
            f"{r['ocr_first_words']:>9.0%} {len(r['ocr_chrome']):>10} {r['cpu_s']:>6.1f} "
            f"{r['pss_mb']:>7.0f}"
        )
    lines += [
        "",
        "AX text: characters the daemon's read gave (the page's document only); page: the "
        "article's last paragraph, scrolled out of view, was in it (both browsers mark only "
        "what is on screen SHOWING); url: "
        "window_page found the address; OCR words: share of the first paragraph's words OCR "
        "found in the window; OCR chrome: browser-chrome labels OCR read as text.",
        "Chrome words or the password in any AX text: "
        + (", ".join(f"{n}: {r['ax_chrome']}" for n, r in rows if r["ax_chrome"]) or "none")
        + "; password: "
        + ("READ" if any(r["ax_password"] for _, r in rows) else "never read"),
    ]
    out = Path(__file__).parent / "results" / "browsers.txt"
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
