"""Real browser, a cost-conditioned router: dragging a weight slider moves its Pareto point (each
slider step timed), calibration to a token budget moves the sliders, and a Live query's arm
changes when the weights rise (answered by a local test server speaking the OpenAI protocol)."""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from forge_core.store import Store

from support.app_store import FAKE_HOST
from support.browser import (
    ANSWER_TIMEOUT_S,
    PARETO_STEP_DONE,
    STARTUP_TIMEOUT_S,
    browser_page,
    dashboard_with_fake_host,
    idle,
    pick_first_demo_question,
    require_browser,
)
from support.stores import copy_store

STEPS_TIMED = 5

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(400)]  # a real browser: scripts/test.sh runs the e2e
# tests after the default suite


@pytest.fixture
def conditioned_dashboard(tmp_path: Path, conditioned_store: tuple[Store, str]) -> Iterator[tuple[str, str]]:
    """`forge app` on a copy of the store with a conditioned Lite router and the fake host saved."""
    require_browser()
    store = copy_store(conditioned_store[0], tmp_path / "conditioned")
    with dashboard_with_fake_host(store.path, tmp_path / "app.log") as url:
        yield url, conditioned_store[1]


def _metric(page: Any, label: str) -> Any:
    return page.get_by_test_id("stMetric").filter(has_text=label).get_by_test_id("stMetricValue")


def _card(page: Any, label: str) -> Any:
    """The value of a card `app.ui.name_metric` shows whole (it wraps where st.metric cuts)."""
    return page.locator(f'[data-card="{label}"]')


def test_each_slider_step_recomputes_and_moves_the_conditioned_router(conditioned_dashboard: tuple[str, str]) -> None:
    from playwright.sync_api import expect

    url, _ = conditioned_dashboard
    with browser_page() as page:
        page.goto(f"{url}/pareto")
        expect(page.get_by_role("heading", name="Pareto")).to_be_visible(timeout=STARTUP_TIMEOUT_S * 1000)
        routed = _card(page, "forge_lite_cond at these weights")
        expect(routed).to_be_visible(timeout=ANSWER_TIMEOUT_S * 1000)
        oracle = _metric(page, "Oracle utility")
        idle(page)
        slider = page.get_by_test_id("stSlider").filter(has_text="lambda_in")
        thumb = slider.get_by_role("slider")
        thumb.focus()
        durations = []
        for _ in range(STEPS_TIMED):  # one 0.01 step each: a new weight, computed (not cached) each time
            before = oracle.inner_text()
            started = time.monotonic()
            thumb.press("ArrowRight")
            page.wait_for_function(PARETO_STEP_DONE, arg=before, polling="raf", timeout=ANSWER_TIMEOUT_S * 1000)
            durations.append(time.monotonic() - started)
        # Each step above redrew the page at a new weight; how fast is bench/page_renders.py's to say (on an
        # idle machine), not a timed test's: this one ran at 1.1-1.4 s a step beside a test suite on 2 cores.
        print(f"slider steps (s): {[round(d, 2) for d in durations]}, median {statistics.median(durations):.2f}")

        before = routed.inner_text()
        for name in ("lambda_in", "lambda_out"):  # to the top of the range: 3.0 each
            page.get_by_test_id("stSlider").filter(has_text=name).get_by_role("slider").press("End")
            idle(page)
        expect(page.get_by_test_id("stSlider").filter(has_text="lambda_out").get_by_test_id(
            "stSliderThumbValue")).to_have_text("3.00")
        expect(routed).not_to_have_text(before, timeout=ANSWER_TIMEOUT_S * 1000)
        tokens = {text: int(text.split()[0].replace(",", "")) for text in (before, routed.inner_text())}
        assert tokens[routed.inner_text()] < tokens[before]  # dear tokens: the same router routes cheaper


def test_calibrate_to_a_budget_in_the_browser(conditioned_dashboard: tuple[str, str]) -> None:
    from playwright.sync_api import expect

    url, _ = conditioned_dashboard
    with browser_page() as page:
        page.goto(f"{url}/pareto")
        expect(_metric(page, "Oracle utility")).to_be_visible(timeout=ANSWER_TIMEOUT_S * 1000)
        page.get_by_text("Calibrate to a budget").click()
        budget = page.get_by_label("T (tokens a query)")
        budget.fill("300")
        budget.press("Enter")
        idle(page)
        page.get_by_role("button", name="Calibrate").click()
        realized = _metric(page, "Realized tokens a query")
        expect(realized).to_be_visible(timeout=ANSWER_TIMEOUT_S * 1000)
        idle(page)
        weights = _metric(page, "Calibrated weights").inner_text()
        lambda_in = float(weights.split("/")[0])
        thumb_value = page.get_by_test_id("stSlider").filter(has_text="lambda_in").get_by_test_id(
            "stSliderThumbValue")
        assert float(thumb_value.inner_text()) == pytest.approx(round(lambda_in, 2))  # the sliders moved there
        expect(page.get_by_text("Target: at most 300 tokens a query")).to_be_visible()


def test_a_live_query_changes_arm_when_the_weights_rise(conditioned_dashboard: tuple[str, str]) -> None:
    from playwright.sync_api import expect

    url, checkpoint_id = conditioned_dashboard
    with browser_page() as page:
        page.goto(f"{url}/live-query")
        expect(page.get_by_role("heading", name="Live query")).to_be_visible(timeout=STARTUP_TIMEOUT_S * 1000)
        page.get_by_test_id("stSelectbox").filter(has_text="Host").click()
        page.get_by_role("option", name=FAKE_HOST).click()
        idle(page)
        page.get_by_test_id("stSelectbox").filter(has_text="Router").click()
        page.get_by_role("option").filter(has_text="cond.").first.click()  # named "Lite, stage 1, cond., ..."
        idle(page)
        pick_first_demo_question(page)  # the first demo question, weights to 0.02 / 0.04
        chosen, questions = _card(page, "Chosen arm"), _card(page, "Questions")
        arms = []
        for asked in (1, 2):
            if asked == 2:  # raise both weights to 3.0
                for name in ("lambda_in", "lambda_out"):
                    slider = page.get_by_test_id("stSlider").filter(has_text=name)
                    slider.get_by_role("slider").press("End")
                    expect(slider.get_by_test_id("stSliderThumbValue")).to_have_text("3.00")
                    # the page has rerun with the weight: the entry beside the slider is written by the script from
                    # the session's weight (the likely cause of this test's earlier failures, an answer at 3.0 / 3.0
                    # as at 0.02 / 0.04: the next press or click landing before that rerun)
                    expect(page.get_by_label(f"{name} value")).to_have_value("3.00", timeout=ANSWER_TIMEOUT_S * 1000)
                    idle(page)
            page.get_by_role("button", name="Route and answer").click()
            answered = questions.filter(has_text=re.compile(rf"^{asked}$"))  # the session history (a card: the run's
            expect(answered).to_have_count(1, timeout=ANSWER_TIMEOUT_S * 1000)  # earlier one lingers while it runs)
            idle(page)
            arms.append(chosen.inner_text())
        assert arms[0] != arms[1], arms
        assert arms[1].startswith(("direct", "summary"))
