"""`ballast dashboard` in a real headless Chromium (Debian's, driven by Playwright) against the running stack
(issue 18, item 15): the page loads, then shows a replication-factor change moving from pending to completed, live,
without a reload; a screenshot is saved (BALLAST_DASHBOARD_SCREENSHOT, else the test's directory)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from events import TopicSpec
from tests.integration.harness import Ballast, serving_dashboard

CHROMIUM = Path("/usr/bin/chromium")
# As this machine's probe ran it: no background connections (the network is closed), a fresh profile.
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]


@pytest.fixture
def dashboard(ballast: Ballast, tmp_path: Path) -> Iterator[str]:
    with serving_dashboard(ballast.stack.env, tmp_path / "dashboard.log") as url:
        yield url


def test_the_page_shows_a_change_from_pending_to_completed_live(ballast: Ballast, dashboard: str, name: str,
                                                                tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: `make test` installs Debian's chromium package"
    ballast.apply(TopicSpec(name=name, partitions=3, replicas=1))
    ballast.watcher.wait_rf(name, 1)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(dashboard)
            row = page.locator(f'tr[data-topic="{name}"]')
            expect(row.locator("td").nth(1)).to_have_text("ready", timeout=30_000)
            expect(page.locator("#live")).to_contain_text("live")
            # Brokers by rack: the simulated cluster's six, at least (other tests may have added some).
            page.wait_for_function("document.querySelectorAll('li.broker').length >= 6", timeout=30_000)
            expect(page.locator("#brokers .domain").first).to_have_text("dc1")

            # The page is open; the change happens now, and arrives as server-sent events.
            ballast.apply(TopicSpec(name=name, partitions=3, replicas=3))
            expect(row.locator("td.change")).to_have_text("completed -> RF 3", timeout=60_000)
            history = row.locator("td.history").inner_text()
            assert history.startswith("created (3 partitions, RF 1)") and "pending (RF 3)" in history \
                and history.endswith("completed (RF 3)"), history
            expect(row.locator("td").nth(3)).to_have_text("3")
            # A topic made outside Ballast is listed as unmanaged (the page asks the cluster every 10 s).
            ballast.sim.post("/admin/topics", json={"name": f"{name}-legacy", "partitions": 1,
                                                    "replicationFactor": 1}).raise_for_status()
            expect(page.locator("#unmanaged")).to_contain_text(f"{name}-legacy", timeout=60_000)

            shot = Path(os.environ.get("BALLAST_DASHBOARD_SCREENSHOT", tmp_path / "dashboard.png"))
            shot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shot), full_page=True)
            assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
        finally:
            browser.close()
