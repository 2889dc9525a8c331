"""Nothing cut at the widths the layout is made for, nothing fetched from elsewhere (#56): in Debian's
chromium, every page at 1,280 and 1,024 px with every collapsed section opened (with no request to a host
but the app's), and the Live query page with a routed answer and its session, shows every metric label and
value, button and page link label, select value, widget label and name card whole (none ended with
Streamlit's ellipsis, clipped by its box, sticking out of a box that clips it or broken inside a word), and
the Queries table the columns it is sorted and read by without scrolling, on a store with a cost-conditioned
router (so the Live query's demo list and the Pareto page's conditioned cards are there) and a fake host to
answer."""

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
    open_every_section,
    pick_first_demo_question,
    require_browser,
    sidebar_link,
)
from support.stores import copy_store

WIDTHS = (1280, 1024)
PAGES = ["Overview", "Enumerate", "Hosts", "Live query", "Train", "Pareto", "Action map", "Queries", "Transfer",
         "Traffic"]
# `page.evaluate(CUT_OFF)`: what is drawn cut, by kind, as its text. A metric, button or label is cut when
# Streamlit ends it with an ellipsis (text-overflow: ellipsis) and its text is wider than its box, or when it
# sticks out of a box that clips it (a segmented control's last option, say). A select shows its value (or
# placeholder) in a text input, which clips it with no ellipsis: it is cut when that text, measured in the
# input's font, is wider than the input's content box. A name card (`ui.name_metric`) is cut when it breaks a
# word over two lines (it may wrap between words, and after ":", "_" or "-").
CUT_OFF = """() => {
  const ellipsized = e => [e, ...e.querySelectorAll("*")].some(x => x.scrollWidth > x.clientWidth + 1
      && getComputedStyle(x).textOverflow === "ellipsis");
  const outside = e => {
    const { left, right } = e.getBoundingClientRect();
    for (let box = e.parentElement; box; box = box.parentElement) {
      const edges = box.getBoundingClientRect();
      if (getComputedStyle(box).overflowX !== "visible" && (right > edges.right + 1 || left < edges.left - 1)) {
        return true;
      }
    }
    return false;
  };
  const found = selector => [...document.querySelectorAll(selector)]  // with a text (not a table's icon toolbar)
      .filter(e => e.offsetParent !== null && e.innerText.trim() && (ellipsized(e) || outside(e)))
      .map(e => e.innerText);
  const pen = document.createElement("canvas").getContext("2d");
  const clipped = input => {
    const style = getComputedStyle(input);
    pen.font = style.font;
    const room = input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    return pen.measureText(input.value || input.placeholder).width > room + 1;
  };
  const broken = card => {  // a name card's words drawn over two lines (a break inside a word)
    const words = [];
    const walker = document.createTreeWalker(card, NodeFilter.SHOW_TEXT);
    for (let text = walker.nextNode(); text; text = walker.nextNode()) {
      for (const word of text.data.matchAll(/[^\\s-]+-?/g)) {
        const range = document.createRange();
        range.setStart(text, word.index);
        range.setEnd(text, word.index + word[0].length);
        if (new Set([...range.getClientRects()].map(line => Math.round(line.top))).size > 1) words.push(word[0]);
      }
    }
    return words;
  };
  const selects = [...document.querySelectorAll(
      '[data-testid="stSelectbox"] input, [data-testid="stMultiSelect"] input')]
      .filter(input => input.offsetParent !== null && clipped(input)).map(input => input.value || input.placeholder);
  return {
    metrics: found('[data-testid="stMetricLabel"], [data-testid="stMetricValue"], [data-testid="stMetricDelta"]'),
    buttons: found('[data-testid^="stBaseButton"], [data-testid="stButtonGroup"] button, '
                   + '[data-testid="stPageLink-NavLink"]'),
    selects,
    labels: found('[data-testid="stWidgetLabel"], [data-testid="stCheckbox"] label'),
    words: [...document.querySelectorAll("[data-card]")].filter(card => card.offsetParent !== null).flatMap(broken),
  };
}"""
# the columns a page's first table is sorted and read by: on screen without scrolling, where its grid renders
# a column header (it renders the columns in view only, the others once scrolled to)
READ_BY = {"Queries": ("regret", "router", "oracle")}
NOTHING_CUT = {"metrics": [], "buttons": [], "selects": [], "labels": [], "words": []}

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]  # a real browser: scripts/test.sh runs the e2e
# tests after the default suite


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
    cut: dict[tuple[int, str], dict[str, list[str]]] = {}  # what each page draws cut, every page visited
    with browser_page() as page:
        page.on("request", lambda request: None if request.url.startswith((dashboard, "data:", "blob:"))
                else elsewhere.append(request.url))
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 1000})
            page.goto(dashboard)
            expect(page.get_by_role("heading", name="Overview")).to_be_visible(timeout=STARTUP_TIMEOUT_S * 1000)
            for title in PAGES:
                sidebar_link(page, title).click()
                expect(page.get_by_role("heading", name=title, exact=True)).to_be_visible(timeout=60_000)
                idle(page)
                open_every_section(page)  # what a page draws only once opened is checked too
                expect(page.get_by_test_id("stException")).to_have_count(0)
                if (shown := page.evaluate(CUT_OFF)) != NOTHING_CUT:
                    cut[width, title] = {kind: texts for kind, texts in shown.items() if texts}
                for column in READ_BY.get(title, ()):
                    expect(page.get_by_test_id("stDataFrame").first.get_by_role(  # its headers have no size
                        "columnheader", name=column, exact=True, include_hidden=True)).to_have_count(1)
    assert cut == {}
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
