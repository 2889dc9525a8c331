"""Real-browser runs: `forge app` on a small store, Debian's chromium driven by Playwright: a benchmark
question routed and answered in one click on the tiny embedded host beside Always-Raw, the
Pareto page following a cost-weight slider moved with the keyboard, and the first contact's path to the
worst-regret query. (Every page opened from the sidebar, with no error block and nothing cut, is
tests/app/test_browser_widths.py's, at 1,280 and 1,024 px.)"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from forge_core.hosts.registry import BUILTIN_HOSTS
from forge_core.jobs import process_alive
from forge_core.store import Store

from support.browser import (
    ANSWER_TIMEOUT_S,
    STARTUP_TIMEOUT_S,
    browser_page,
    require_browser,
    running_dashboard,
    sidebar_link,
)
from support.resources import require_tiny_model
from support.stores import copy_store

TINY = BUILTIN_HOSTS["embedded-tiny"]
KEY_TAKEN_TIMEOUT_MS = 5_000  # a slider key press shows its new value at once, or was lost

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]  # a real browser: scripts/test.sh runs the e2e
# tests after the default suite


@pytest.fixture
def dashboard(tmp_path: Path, trained_store: tuple[Store, str]) -> Iterator[str]:
    """`forge app` on a copy of the synthetic-outcome store with a trained Lite checkpoint; yields
    its URL, then stops it with SIGTERM and checks that the embedded server it started went with it."""
    require_browser()
    require_tiny_model()
    store = copy_store(trained_store[0], tmp_path / "live")
    cache_dir = Path(os.environ["FORGE_CACHE_DIR"])
    with running_dashboard(store.path, tmp_path / "app.log") as url:
        yield url
    state = cache_dir / "servers" / f"{TINY.model}.json"
    if state.exists():  # the app started the tiny server: it must be gone with the app
        pid = json.loads(state.read_text())["pid"]
        while process_alive(pid):  # the app stops it on SIGTERM: one it left running hangs until pytest's --timeout
            time.sleep(0.3)


@pytest.fixture
def trained_dashboard(tmp_path: Path, trained_store: tuple[Store, str]) -> Iterator[str]:
    """`forge app` on a copy of the synthetic-outcome store with a trained checkpoint (features
    computed, so the Pareto page scores at once)."""
    require_browser()
    store = copy_store(trained_store[0], tmp_path / "trained")
    with running_dashboard(store.path, tmp_path / "app.log") as url:
        yield url


@pytest.fixture
def crossfit_dashboard(tmp_path: Path, trained_store: tuple[Store, str]) -> Iterator[str]:
    """`forge app` on a copy of the trained store with a stored crossfit run at the default
    weights (2 folds, short Stage 1), so the Pareto page can state a decision."""
    from forge_core.evaluation.crossfit import CrossfitSettings, run_crossfit
    from forge_core.training.settings import Stage1Config

    require_browser()
    store = copy_store(trained_store[0], tmp_path / "crossfit")
    run_crossfit(store, CrossfitSettings("synthetic-host", folds=2, stage1=Stage1Config(max_epochs=5)))
    with running_dashboard(store.path, tmp_path / "app.log") as url:
        yield url


@pytest.mark.timeout(400)  # the fixture trains a checkpoint when no earlier test has
def test_live_query_routes_and_answers_in_one_click(dashboard: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    with browser_page() as page:
        page.goto(dashboard)
        expect(page.get_by_role("heading", name="Overview")).to_be_visible(timeout=STARTUP_TIMEOUT_S * 1000)
        # the metric label, drawn once the page has read the store (seconds on a loaded machine)
        expect(page.get_by_text("Complete queries (all hosts)", exact=True)).to_be_visible(timeout=30_000)

        sidebar_link(page, "Live query").click()
        expect(page.get_by_role("heading", name="Live query")).to_be_visible(timeout=30_000)
        page.get_by_test_id("stSelectbox").filter(has_text="Host").click()
        page.get_by_role("option", name="embedded-tiny").click()
        page.get_by_text("Pick one from the benchmark").click()
        expect(page.get_by_test_id("stSelectbox").filter(has_text="Example")).to_be_visible()
        page.get_by_role("button", name="Route and answer").click()  # the one action

        expect(page.get_by_text("Saved vs Always-Raw")).to_be_visible(timeout=ANSWER_TIMEOUT_S * 1000)
        chosen = page.locator('[data-card="Chosen arm"]')  # a card (app.ui.name_metric): the arm's name whole
        arm = chosen.inner_text()
        assert arm in {"direct:no_think", "direct:cot", "summary:no_think", "summary:cot", "raw:no_think", "raw:cot"}
        tokens_in = page.get_by_test_id("stMetric").filter(has_text="Tokens in").get_by_test_id("stMetricValue")
        if arm == "raw:no_think":  # Always-Raw's own arm: one call, nothing to compare
            expect(page.get_by_role("heading", name="Routed: raw:no_think (Always-Raw's own arm: nothing to "
                                                    "compare, one call)")).to_be_visible()
            expect(tokens_in).to_have_count(1)
        else:
            expect(page.get_by_role("heading", name=f"Routed: {arm}")).to_be_visible()
            expect(page.get_by_role("heading", name="Always-Raw: raw:no_think")).to_be_visible()
            expect(tokens_in).to_have_count(2)  # the routed answer and Always-Raw's
        assert all(int(value.replace(",", "")) > 0 for value in tokens_in.all_inner_texts())
        f1s = page.get_by_test_id("stMetric").filter(has_text="F1").get_by_test_id("stMetricValue")
        assert all(value != "–" for value in f1s.all_inner_texts())  # a benchmark question: both scored
        expect(page.get_by_role("heading", name="Session history")).to_be_visible()
        expect(page.get_by_role("button", name="Download the history (CSV)")).to_be_visible()
        page.screenshot(path=str(tmp_path / "live_query.png"), full_page=True)
    assert (tmp_path / "live_query.png").stat().st_size > 10_000


# The default suite moves a Pareto slider with the keyboard in the browser and waits for the page to follow
# (tests/app/test_conditioned_browser.py::test_each_slider_step_recomputes_and_moves_the_conditioned_router),
# and checks the oracle's utility falls at dearer tokens in an AppTest (test_app_pages.py::
# test_pareto_page_follows_the_weights): 17 s of a dashboard and a browser in CI for what those two check.
@pytest.mark.slow
@pytest.mark.timeout(300)  # the fixture trains a checkpoint when no earlier test has
def test_pareto_follows_a_slider_moved_with_the_keyboard(trained_dashboard: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    with browser_page() as page:
        page.goto(f"{trained_dashboard}/pareto")
        expect(page.get_by_role("heading", name="Pareto")).to_be_visible(timeout=STARTUP_TIMEOUT_S * 1000)
        oracle_utility = page.get_by_test_id("stMetric").filter(has_text="Oracle utility").get_by_test_id(
            "stMetricValue")
        expect(oracle_utility).to_be_visible(timeout=ANSWER_TIMEOUT_S * 1000)
        expect(page.get_by_test_id("stVegaLiteChart")).to_be_visible(timeout=60_000)  # its script loads on first use
        before = oracle_utility.inner_text()

        slider = page.get_by_test_id("stSlider").filter(has_text="lambda_in")
        thumb = slider.get_by_role("slider")
        expect(slider.get_by_test_id("stSliderThumbValue")).to_have_text("0.10")
        value = slider.get_by_test_id("stSliderThumbValue")
        app_state = page.get_by_test_id("stApp")
        for _ in range(20):  # 0.10 -> 0.15 in steps of 0.01; a key pressed while the page reruns may be lost
            shown = value.inner_text()
            if shown == "0.15":
                break
            thumb.focus()
            thumb.press("ArrowRight")
            with contextlib.suppress(AssertionError):  # the key was lost: pressed again
                expect(value).not_to_have_text(shown, timeout=KEY_TAKEN_TIMEOUT_MS)
            expect(app_state).to_have_attribute("data-test-script-state", "notRunning",
                                                timeout=ANSWER_TIMEOUT_S * 1000)
        expect(value).to_have_text("0.15")
        expect(oracle_utility).not_to_have_text(before, timeout=ANSWER_TIMEOUT_S * 1000)
        assert float(oracle_utility.inner_text()) < float(before)  # dearer input tokens: lower utility
        page.screenshot(path=str(tmp_path / "pareto.png"), full_page=True)
    assert (tmp_path / "pareto.png").stat().st_size > 10_000


@pytest.mark.slow  # the default suite states the decision in an AppTest (tests/app/test_pareto_decision.py)
@pytest.mark.timeout(400)  # the fixture trains a checkpoint and runs a crossfit when no earlier test has
def test_pareto_states_a_decision_and_the_action_map_opens_a_clicked_query(crossfit_dashboard: str,
                                                                           tmp_path: Path) -> None:
    from playwright.sync_api import expect

    decision = re.compile(r"Deploy \S+( \([^()]* · ckpt-\w+\))?( at λ_in \S+ / λ_out \S+)?: [+-]\d\.\d{3} utility \["
                          r"|decidably here: deploy the fixed arm")
    with browser_page() as page:
        page.goto(f"{crossfit_dashboard}/pareto")
        expect(page.get_by_role("heading", name="Pareto")).to_be_visible(timeout=STARTUP_TIMEOUT_S * 1000)
        alert = page.get_by_test_id("stAlert").filter(has_text=decision)
        expect(alert).to_have_count(1, timeout=ANSWER_TIMEOUT_S * 1000)  # the test-split view, at 0.1 / 0.2
        page.get_by_test_id("stButtonGroup").get_by_text("crossfit", exact=True).click()
        expect(page.get_by_test_id("stSelectbox").filter(has_text="Crossfit run")).to_be_visible(timeout=60_000)
        expect(page.get_by_test_id("stAlert").filter(has_text=decision)).to_have_count(1)
        page.screenshot(path=str(tmp_path / "decision.png"), full_page=True)

        sidebar_link(page, "Action map").click()
        expect(page.get_by_role("heading", name="Action map", exact=True)).to_be_visible(timeout=60_000)
        expect(page.get_by_text("Click a point on a map to open its query here.")).to_be_visible(
            timeout=ANSWER_TIMEOUT_S * 1000)
        router_map = page.get_by_test_id("stVegaLiteChart").first
        points = router_map.locator("g.mark-symbol path")  # Vega draws each query's circle as an SVG path
        expect(points.first).to_be_visible(timeout=60_000)
        box = points.nth(points.count() // 2).bounding_box()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        expect(page.get_by_role("tab", name="Summary")).to_be_visible(timeout=60_000)  # evidence per form
        expect(page.get_by_text("Click a point on a map to open its query here.")).to_have_count(0)
        expect(page.get_by_text(re.compile(r" · gold: .* · router: \S+ · oracle: \S+"))).to_be_visible()
        expect(page.get_by_test_id("stDataFrame")).to_have_count(2)  # the clusters', the query's arms
        page.screenshot(path=str(tmp_path / "action_map.png"), full_page=True)
    assert (tmp_path / "action_map.png").stat().st_size > 10_000


@pytest.mark.timeout(400)  # the fixture trains a checkpoint when no earlier test has
def test_first_contact_leads_to_the_worst_regret_query_opened_by_its_url(
        trained_dashboard: str, trained_store: tuple[Store, str]) -> None:
    from playwright.sync_api import expect

    from forge_core import config
    from forge_core.reports.action_map import compute_action_map
    from forge_core.reports.query_explorer import query_table

    store, checkpoint_id = trained_store
    # the map's arrays kept where the dashboard (this test's cache directory) reads them: computed once
    worst = query_table(compute_action_map(store, "synthetic-host", checkpoint_id, "test",
                                           umap_cache=config.cache_dir() / "umap")).iloc[0]
    with browser_page() as page:
        page.set_viewport_size({"width": 1280, "height": 1000})
        page.goto(trained_dashboard)
        expect(page.get_by_text("FORGE routes a frozen LLM per query")).to_be_visible(
            timeout=STARTUP_TIMEOUT_S * 1000)  # first contact: what it does, what the store is, the three uses
        page.get_by_test_id("stMain").get_by_role("link", name="Queries", exact=True).click()  # use 1's last page
        expect(page.get_by_role("heading", name="Queries", exact=True)).to_be_visible(timeout=60_000)
        expect(page.get_by_text("Select a row of the table to open its query here.")).to_be_visible(
            timeout=ANSWER_TIMEOUT_S * 1000)

        page.goto(f"{trained_dashboard}/queries?host=synthetic-host&query={worst['query']}")
        # the opened query's question, in bold above its evidence (the table's cell holds it too)
        expect(page.locator("strong", has_text=worst["question"])).to_be_visible(timeout=ANSWER_TIMEOUT_S * 1000)
        expect(page.get_by_role("tab", name="Raw")).to_be_visible(timeout=60_000)  # its evidence per form
        expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning",
                                                               timeout=ANSWER_TIMEOUT_S * 1000)
        expect(page.get_by_test_id("stException")).to_have_count(0)

        page.goto(f"{trained_dashboard}/train")  # Enter in a field of the run's form commits it, starts nothing
        seed = page.get_by_label("Seed", exact=True)
        expect(seed).to_be_visible(timeout=ANSWER_TIMEOUT_S * 1000)
        seed.fill("7")
        seed.press("Enter")
        expect(seed).to_have_value("7")  # committed in the form
        expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning",
                                                               timeout=ANSWER_TIMEOUT_S * 1000)
        expect(page.get_by_text("Training started")).to_have_count(0)
        expect(page.get_by_test_id("stException")).to_have_count(0)
