"""Take the README screenshots of a running dashboard with Debian's chromium.

Usage: .venv/bin/python scripts/screenshots.py [URL] [PAGE ...] (default http://127.0.0.1:8501/ and
every page), with the dashboard running (`forge app`). Writes docs/screenshots/<page>.png for
overview, enumerate, hosts, live_query (routes and answers the hotpotqa test question LIVE_EXAMPLE
on the default host with the default router, beside Always-Raw), train, pareto (the stored crossfit
run at lambda 0.6 / 0.6 of `scripts/crossfit_demo.sh`), action_map and transfer (embedded's routers on
embedded-small, the page's defaults), on the demo store.
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
# The second test question of hotpotqa. The demo store's default router is now the cost-conditioned
# Lite router, which at 0.1 / 0.2 sends it to raw:no_think, Always-Raw's own arm: the shot then shows
# the one-call view, "same arm" (the demo questions list, above it, shows arms that move).
LIVE_EXAMPLE = "Castle Hill is a plantation near"
CROSSFIT_RUN = "λ_in 0.6 / λ_out 0.6, stage 2, split seed 0, deployment"  # a run of scripts/crossfit_demo.sh


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
    """Live query page: one click on the default host and router, Always-Raw beside it."""
    page.get_by_test_id("stSelectbox").filter(has_text="Benchmark").click()
    page.get_by_role("option", name="hotpotqa").click()
    page.get_by_text("Pick one from the benchmark").click()
    page.get_by_test_id("stSelectbox").filter(has_text="Example").click()
    page.get_by_role("option", name=LIVE_EXAMPLE).click()
    time.sleep(SETTLE_S)
    page.get_by_role("button", name="Route and answer").click()
    expect(page.get_by_text("Saved vs Always-Raw")).to_be_visible(timeout=600_000)
    page.get_by_text("Evidence", exact=True).click()
    time.sleep(SETTLE_S)


def compare_two_checkpoints(page: Page) -> None:
    """Train page: wait for the newest run's curves, compare the two newest checkpoints."""
    expect(page.get_by_role("heading", name="Compare two checkpoints")).to_be_visible(timeout=60_000)
    expect(page.get_by_text("Training curves")).to_be_visible(timeout=60_000)
    time.sleep(SETTLE_S)


def pareto_crossfit(page: Page) -> None:
    """Pareto page: the stored crossfit run at lambda 0.6 / 0.6, where the routers' gain is decidable."""
    page.get_by_role("radio", name="crossfit").click()
    expect(page.get_by_text("Routing gain vs cost weight")).to_be_visible(timeout=120_000)
    page.get_by_test_id("stSelectbox").filter(has_text="Crossfit run").click()
    page.get_by_role("option").filter(has_text=CROSSFIT_RUN).first.click()
    expect(page.get_by_text("Routing gain vs cost weight")).to_be_visible(timeout=120_000)
    time.sleep(SETTLE_S)


def action_map_ready(page: Page) -> None:
    """Action map page: wait for the UMAP (seconds on first use)."""
    expect(page.get_by_text("Action mix per cluster")).to_be_visible(timeout=180_000)
    time.sleep(SETTLE_S)


def transfer_ready(page: Page) -> None:
    """Transfer page: wait for the report (routing and calibrating take seconds)."""
    expect(page.get_by_text("Where the transferred allocation differs")).to_be_visible(timeout=180_000)
    time.sleep(SETTLE_S)


PAGES = {  # name: (url path, title, what to do before the shot)
    "overview": ("", "Overview", None),
    "enumerate": ("enumerate", "Enumerate", None),
    "hosts": ("hosts", "Hosts", None),
    "live_query": ("live-query", "Live query", ask_live_question),
    "train": ("train", "Train", compare_two_checkpoints),
    "pareto": ("pareto", "Pareto", pareto_crossfit),
    "action_map": ("action-map", "Action map", action_map_ready),
    "transfer": ("transfer", "Transfer", transfer_ready),
}


def main(base: str, names: list[str]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page()
        for name in names:
            path, title, prepare = PAGES[name]
            open_page(page, base + path, title)
            if prepare:
                prepare(page)
            shoot(page, name)
        browser.close()


if __name__ == "__main__":
    arguments = sys.argv[1:]
    url = arguments.pop(0) if arguments and arguments[0].startswith("http") else "http://127.0.0.1:8501/"
    main(url if url.endswith("/") else url + "/", arguments or list(PAGES))
