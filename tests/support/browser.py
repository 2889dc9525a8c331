"""Real-browser helpers for the dashboard tests: `forge app` on a store, and a page of Debian's
chromium driven by Playwright."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from support.resources import require_module, require_or_skip

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
STARTUP_TIMEOUT_S = 60
ANSWER_TIMEOUT_S = 180  # the tiny host answers in seconds, but a loaded machine can take minutes
# `page.wait_for_function(PARETO_STEP_DONE, arg=<the oracle utility shown>, polling="raf")`: true once the
# Pareto page has rerun after a slider step (the oracle's utility card shows a new value and the script is
# done), checked every animation frame so a measured step is not rounded up by polling
PARETO_STEP_DONE = """before => {
    const card = [...document.querySelectorAll('[data-testid="stMetric"]')]
        .find(metric => metric.innerText.includes("Oracle utility"));
    const value = card && card.querySelector('[data-testid="stMetricValue"]').innerText;
    const idle = document.querySelector('[data-testid="stApp"]').dataset.testScriptState === "notRunning";
    return value !== undefined && value !== before && idle;
}"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def require_browser() -> None:
    """Skip (or fail, where resources are required) without chromium or playwright."""
    if not CHROMIUM.exists():
        require_or_skip("Debian chromium not installed (scripts/test.sh installs it with apt-get)")
    require_module("playwright.sync_api", "playwright is a test extra: pip install -e '.[test]'")


@contextlib.contextmanager
def running_dashboard(store_path: Path, log_path: Path) -> Iterator[str]:
    """`forge app` on a store until the block ends (SIGTERM); yields its URL once healthy."""
    port = free_port()
    forge = Path(sys.executable).with_name("forge")
    process = subprocess.Popen([str(forge), "app", "--port", str(port)], stdout=subprocess.DEVNULL,
                               stderr=log_path.open("w"), start_new_session=True,
                               env={**os.environ, "FORGE_STORE": str(store_path)})
    url = f"http://127.0.0.1:{port}"
    try:
        while not healthy(url):  # until it answers, or it exits (a hang ends at pytest's --timeout)
            assert process.poll() is None, log_path.read_text()
            time.sleep(0.2)
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


@contextlib.contextmanager
def browser_page() -> Iterator[Any]:
    """A page of Debian's chromium (headless), closed with the browser when the block ends."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser.new_page(viewport={"width": 1400, "height": 1100})
        finally:
            browser.close()


def healthy(url: str) -> bool:
    """Whether the Streamlit server at `url` says it is healthy."""
    try:
        return httpx.get(f"{url}/_stcore/health", timeout=2).text == "ok"
    except httpx.HTTPError:
        return False


@contextlib.contextmanager
def dashboard_with_fake_host(store_path: Path, log_path: Path) -> Iterator[str]:
    """`running_dashboard` on a store (a private copy) with `FAKE_HOST` saved, answered by an
    `AnsweringServer` until the block ends; yields the dashboard's URL."""
    from forge_core.hosts.base import HostConfig
    from forge_core.hosts.registry import save_host_config
    from forge_core.store import Store

    from support.answering_server import AnsweringServer
    from support.app_store import FAKE_HOST

    with AnsweringServer() as fake:
        save_host_config(Store(store_path), HostConfig(name=FAKE_HOST, kind="openai", model="m",
                                                       base_url=fake.base_url, max_retries=0, timeout_s=10.0))
        with running_dashboard(store_path, log_path) as url:
            yield url


def idle(page: Any) -> None:
    """Wait until the dashboard's script is not running (a rerun has finished, or has not started)."""
    from playwright.sync_api import expect

    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning",
                                                           timeout=ANSWER_TIMEOUT_S * 1000)


def open_every_section(page: Any) -> None:
    """Open each collapsed expander of the page in turn, waiting until the rerun it starts has drawn its
    content (a lazy section, `ui.lazy_sections`, draws nothing while closed)."""
    from playwright.sync_api import expect

    expanders = page.get_by_test_id("stExpander")
    for index in range(expanders.count()):
        expander = expanders.nth(index)
        if expander.locator("details[open]").count():
            continue
        expander.locator("summary").click()
        expect(expander.get_by_test_id("stExpanderDetails").get_by_test_id("stElementContainer").first
               ).to_be_attached(timeout=ANSWER_TIMEOUT_S * 1000)
        idle(page)


def pick_first_demo_question(page: Any) -> None:
    """Press the Live query demo list's first Pick and wait until the page shows the picked question. Waiting
    for the script to be idle alone races the rerun the press starts: a press of "Route and answer" made
    before that rerun runs interrupts it, and the page answers an empty question."""
    from playwright.sync_api import expect

    page.get_by_role("button", name="Pick").first.click()
    expect(page.get_by_role("radio", name="Pick one from the benchmark")).to_be_checked(
        timeout=ANSWER_TIMEOUT_S * 1000)
    idle(page)


def sidebar_link(page: Any, title: str) -> Any:
    """The sidebar's link to the page `title` (the Overview links some pages from its text too)."""
    return page.get_by_test_id("stSidebar").get_by_role("link", name=title, exact=True)
