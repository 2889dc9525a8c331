"""Nothing cut at the widths the layout is made for, nothing fetched from elsewhere (#56): in Debian's
chromium, every page at 1,280 and 1,024 px (with no request to a host but the app's), and the Live
query page with a routed answer and its session, shows every metric label and value, button label,
select value and widget label whole (none drawn with Streamlit's ellipsis), on a store with a
cost-conditioned router (so the Live query's demo list and the Pareto page's conditioned cards are
there) and a fake host to answer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from forge_core.store import Store

from support.app_store import FAKE_HOST
from support.browser import (
    ANSWER_TIMEOUT_S,
    STARTUP_TIMEOUT_S,
    browser_page,
    dashboard_with_fake_host,
    idle,
    pick_first_demo_question,
    require_browser,
)
from support.stores import copy_store

WIDTHS = (1280, 1024)
PAGES = ["Overview", "Enumerate", "Hosts", "Live query", "Train", "Pareto", "Action map", "Queries", "Transfer",
         "Traffic"]
# `page.evaluate(CUT_OFF)`: what is drawn cut, by kind, as its text. An element is cut when Streamlit ends it
# with an ellipsis (text-overflow: ellipsis) and its text is wider than its box.
CUT_OFF = """() => {
  const cut = e => [e, ...e.querySelectorAll("*")].some(x => x.scrollWidth > x.clientWidth + 1
      && getComputedStyle(x).textOverflow === "ellipsis");
  const found = selector => [...document.querySelectorAll(selector)]
      .filter(e => e.offsetParent !== null && cut(e)).map(e => e.innerText);
  return {
    metrics: found('[data-testid="stMetricLabel"], [data-testid="stMetricValue"]'),
    buttons: found('[data-testid^="stBaseButton"]'),
    selects: found('[data-testid="stSelectbox"] [data-baseweb="select"]'),
    labels: found('[data-testid="stWidgetLabel"], [data-testid="stCheckbox"] label'),
  };
}"""
NOTHING_CUT = {"metrics": [], "buttons": [], "selects": [], "labels": []}

pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def dashboard(tmp_path: Path, conditioned_store: tuple[Store, str]) -> Iterator[str]:
    """`forge app` on a copy of the store with a cost-conditioned Lite router and the fake host saved."""
    require_browser()
    store = copy_store(conditioned_store[0], tmp_path / "widths")
    with dashboard_with_fake_host(store.path, tmp_path / "app.log") as url:
        yield url


def test_no_page_cuts_a_value_a_button_a_select_or_a_label_at_1280_or_1024_px_nor_leaves_the_machine(
        dashboard: str) -> None:
    from playwright.sync_api import expect

    elsewhere: list[str] = []  # requests to any host but the app's (an icon from a font server, say)
    with browser_page() as page:
        page.on("request", lambda request: None if request.url.startswith((dashboard, "data:", "blob:"))
                else elsewhere.append(request.url))
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 1000})
            page.goto(dashboard)
            expect(page.get_by_role("heading", name="Overview")).to_be_visible(timeout=STARTUP_TIMEOUT_S * 1000)
            for title in PAGES:
                page.get_by_role("link", name=title).click()
                expect(page.get_by_role("heading", name=title, exact=True)).to_be_visible(timeout=60_000)
                idle(page)
                expect(page.get_by_test_id("stException")).to_have_count(0)
                assert page.evaluate(CUT_OFF) == NOTHING_CUT, (width, title)
    assert elsewhere == []


def test_a_routed_answer_and_its_session_are_shown_whole_at_1280_and_1024_px(dashboard: str) -> None:
    from playwright.sync_api import expect

    with browser_page() as page:
        page.set_viewport_size({"width": WIDTHS[0], "height": 1000})
        page.goto(f"{dashboard}/live-query")
        expect(page.get_by_role("heading", name="Live query")).to_be_visible(timeout=STARTUP_TIMEOUT_S * 1000)
        idle(page)
        page.get_by_test_id("stSelectbox").filter(has_text="Host").click()
        page.get_by_role("option", name=FAKE_HOST).click()
        idle(page)
        page.get_by_test_id("stSelectbox").filter(has_text="Router").click()
        page.get_by_role("option").filter(has_text="cond.").first.click()  # the demo list is a conditioned router's
        idle(page)
        pick_first_demo_question(page)
        page.get_by_role("button", name="Route and answer").click()
        expect(page.locator('[data-card="Questions"]')).to_have_text("1", timeout=ANSWER_TIMEOUT_S * 1000)
        idle(page)
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 1000})
            expect(page.locator('[data-card="Chosen arm"]')).to_be_visible()
            assert page.evaluate(CUT_OFF) == NOTHING_CUT, width
