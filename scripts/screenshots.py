"""Take the README screenshots of a running dashboard with Debian's chromium.

Usage: .venv/bin/python scripts/screenshots.py [URL] (default http://127.0.0.1:8501/), with the
dashboard running (`forge app`). Writes docs/screenshots/{overview,enumerate,hosts,live_query}.png;
the Live query shot asks the first test question of hotpotqa on the tiny embedded host.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from playwright.sync_api import Page, expect, sync_playwright

OUT = Path(__file__).resolve().parent.parent / "docs" / "screenshots"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
WIDTH = 1400
SETTLE_S = 4  # charts and fragments finish drawing


def open_page(page: Page, url: str, title: str) -> None:
    page.set_viewport_size({"width": WIDTH, "height": 1000})
    page.goto(url)
    expect(page.get_by_role("heading", name=title)).to_be_visible(timeout=120_000)
    time.sleep(SETTLE_S)


def shoot(page: Page, name: str) -> None:
    """A screenshot of the whole main column (Streamlit scrolls inside it, not the document)."""
    height = page.evaluate("document.querySelector('[data-testid=stMain]').scrollHeight")
    page.set_viewport_size({"width": WIDTH, "height": max(900, height + 40)})
    time.sleep(1)
    page.screenshot(path=str(OUT / f"{name}.png"), full_page=True)
    print(OUT / f"{name}.png")


def ask_live_question(page: Page) -> None:
    page.get_by_test_id("stSelectbox").filter(has_text="Host").click()
    page.get_by_role("option", name="embedded-tiny").click()
    page.get_by_test_id("stSelectbox").filter(has_text="Benchmark").click()
    page.get_by_role("option", name="hotpotqa").click()
    page.get_by_text("Pick one from the benchmark").click()
    time.sleep(SETTLE_S)
    page.get_by_role("button", name="Ask").click()
    expect(page.get_by_text("Always-Raw would cost")).to_be_visible(timeout=300_000)
    page.get_by_text("Evidence", exact=True).click()
    time.sleep(SETTLE_S)


def main(base: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page()
        for path, title, name in [("", "Overview", "overview"), ("enumerate", "Enumerate", "enumerate"),
                                  ("hosts", "Hosts", "hosts")]:
            open_page(page, base + path, title)
            shoot(page, name)
        open_page(page, base + "live-query", "Live query")
        ask_live_question(page)
        shoot(page, "live_query")
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8501/")
