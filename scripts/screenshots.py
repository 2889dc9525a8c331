"""Take the README screenshots of a running dashboard with Debian's chromium.

Usage: .venv/bin/python scripts/screenshots.py [URL] [PAGE ...] (default http://127.0.0.1:8501/ and
every page), with the dashboard running (`forge app`) on the store at FORGE_STORE. Writes
docs/screenshots/<page>.png for overview, enumerate, hosts, live_query (routes and answers the
hotpotqa test question LIVE_EXAMPLE on the default host with the default router, beside Always-Raw),
train, pareto (the decision at lambda 0.6 / 0.6, then the crossfit view of CROSSFIT_RUN, the stored
Stage-1 run that decision rests on), action_map and transfer (embedded's routers on embedded-small,
the page's defaults), on the demo store. Records each shot in docs/screenshots/screenshots.json: its
page, file, the store's source (the demo export or not), when it was taken (UTC) and, for pareto, the
crossfit run and the decision sentence the page showed (entries of pages not shot again are kept).
"""

from __future__ import annotations

import json
import re
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from playwright.sync_api import Locator, Page, expect, sync_playwright

from forge_core import config
from forge_core.store import Store
from forge_core.store.exports import export_fingerprint

OUT = Path(__file__).resolve().parent.parent / "docs" / "screenshots"
RECORD = OUT / "screenshots.json"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
WIDTH = 1280  # the width the layout is made for (tests/app/test_browser_widths.py: nothing cut at it)
SETTLE_S = 4  # charts and fragments finish drawing
# The second test question of hotpotqa. The demo store's default router is now the cost-conditioned
# Lite router, which at 0.1 / 0.2 sends it to raw:no_think, Always-Raw's own arm: the shot then shows
# the one-call view, "same arm" (the demo questions list, above it, shows arms that move).
LIVE_EXAMPLE = "Castle Hill is a plantation near"
PARETO_WEIGHTS = (0.6, 0.6)  # where the demo store's decision deploys a router (forge_lite_cond)
# The stored run that decision rests on: the recommended recipe's (the paper's Stage 1) at 0.6 / 0.6
# (the run picker opens on the newest run at the session's weights, a Stage-2 one).
CROSSFIT_RUN = "λ 0.6 / 0.6 · paper's Stage 1 · split seed 0 · deployment"  # its label in the picker
RUN_ID = re.compile(r"crossfit-[0-9a-f]{12}$")  # the end of the chosen run's whole description, under the picker


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
    """Train page: open the comparison (drawn only while open) and wait for the two newest checkpoints'
    curves."""
    page.get_by_test_id("stExpander").filter(has_text="Compare two checkpoints").locator("summary").click()
    expect(page.get_by_text("Training curves")).to_be_visible(timeout=60_000)
    time.sleep(SETTLE_S)


def set_weights(page: Page, lambda_in: float, lambda_out: float) -> None:
    """Type the weights into the entries beside the sliders (test-split view), one rerun at a time."""
    for name, value in (("lambda_in", lambda_in), ("lambda_out", lambda_out)):
        entry = page.get_by_label(f"{name} value")
        entry.fill(f"{value:.2f}")
        entry.press("Enter")
        typed = [float(page.get_by_label(f"{n} value").input_value()) for n in ("lambda_in", "lambda_out")]
        expect(decision(page, *typed)).to_be_visible(timeout=600_000)


def decision(page: Page, lambda_in: float, lambda_out: float) -> Locator:
    """The page's one recommendation (`forge decide` at these weights)."""
    return page.get_by_test_id("stAlert").filter(has_text=f"at λ_in {lambda_in:g} / λ_out {lambda_out:g}")


def pareto_crossfit(page: Page) -> dict:
    """Pareto page: the decision at PARETO_WEIGHTS, then the crossfit view of the run it rests on;
    returns that run's id and the decision's sentence, as the page shows them."""
    expect(page.get_by_label("lambda_in value")).to_be_visible(timeout=600_000)
    set_weights(page, *PARETO_WEIGHTS)
    page.get_by_role("radio", name="crossfit").click()
    expect(page.get_by_text("Routing gain vs cost weight")).to_be_visible(timeout=120_000)
    time.sleep(SETTLE_S)
    runs = page.get_by_role("combobox", name="Crossfit run")
    runs.press("ArrowDown")  # opens the picker
    page.get_by_role("option").filter(has_text=CROSSFIT_RUN).first.click()
    runs.blur()
    expect(page.get_by_text("The decision above rests on this run.")).to_be_visible(timeout=120_000)
    expect(page.get_by_text("Routing gain vs cost weight")).to_be_visible(timeout=120_000)
    time.sleep(SETTLE_S)
    sentence = decision(page, *PARETO_WEIGHTS).get_by_test_id("stMarkdownContainer").inner_text()
    described = page.get_by_test_id("stCaptionContainer").filter(has_text=RUN_ID).first.inner_text()
    return {"crossfit_run": RUN_ID.search(described.strip()).group(), "decision": sentence.strip()}


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


def store_source() -> str:
    """What the store at FORGE_STORE holds: "demo export" once `forge store load-demo` loaded it."""
    path = config.store_path()
    if not path.exists():
        return f"{path} (missing)"
    key = "loaded_export:" + export_fingerprint(config.demo_dir())
    with Store(path).connect() as connection:
        loaded = connection.execute("SELECT count(*) FROM meta WHERE key = ?", [key]).fetchone()[0]
    return "demo export" if loaded else f"{path} (not the demo export)"


def main(base: str, names: list[str]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    record = {entry["page"]: entry for entry in json.loads(RECORD.read_text())} if RECORD.exists() else {}
    source = store_source()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page()
        for name in names:
            path, title, prepare = PAGES[name]
            open_page(page, base + path, title)
            shown = prepare(page) if prepare else None
            shoot(page, name)
            record[name] = {"page": name, "file": f"{name}.png", "store": source,
                            "taken_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), **(shown or {})}
        browser.close()
    RECORD.write_text(json.dumps([record[name] for name in PAGES if name in record], indent=2,
                                 ensure_ascii=False) + "\n")
    print(RECORD)


if __name__ == "__main__":
    arguments = sys.argv[1:]
    url = arguments.pop(0) if arguments and arguments[0].startswith("http") else "http://127.0.0.1:8501/"
    main(url if url.endswith("/") else url + "/", arguments or list(PAGES))
