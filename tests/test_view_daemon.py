"""``backscroll view`` while the real daemon records the session's desktop: today's page shows
each new window as the daemon's frames of it become searchable, and the control page says
the daemon runs. Its own module: the desktop's AT-SPI calls run an asyncio loop, which a
module's Playwright (running one in the main thread) would refuse, so the desktop is set up
before the browser starts and driven from a thread of its own."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.test_view_browser import CHROMIUM, Served, expect, playwright, shot_on_failure

pytestmark = pytest.mark.browser


def test_the_view_follows_the_real_daemon_as_it_records(
    daemon: Any, desk: Any, backscroll_home: Path, tmp_path: Path
) -> None:
    daemon.start()
    served = Served(backscroll_home)
    try:
        with playwright.sync_playwright() as driver, ThreadPoolExecutor(1) as aside:
            browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 860})
            with shot_on_failure(page, tmp_path):
                page.goto(served.url.replace("/?", "/control?"))
                expect(page.locator("[data-field=daemon]")).to_contain_text("running")
                page.goto(served.origin + "/")
                page.wait_for_selector("#day")
                window = aside.submit(
                    desk.open_xterm, ["wombat follows the view"], "wombat-follow", columns=60
                ).result()
                aside.submit(desk.activate, window.window_id).result()
                expect(page.locator("#frame-title")).to_have_text("wombat-follow", timeout=60_000)
                expect(page.locator("#text")).to_contain_text("wombat", timeout=60_000)
            browser.close()
    finally:
        served.stop()
