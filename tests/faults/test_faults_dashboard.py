"""Fault suite, the dashboard: every page loads with no exception on an empty store, on the demo
store, and while a `forge enumerate` in another process writes outcomes to the same store file
(which still finishes).

For the running job, the store is a copy of the trained synthetic-outcome store (outcomes,
features, a Stage-1 checkpoint), so every page has something to read; the job enumerates a slow
OpenAI-compatible test double (tests/support/answering_server.py) on dev queries that have no outcomes
yet. The server is slow while the pages load (the job is sure to be writing), then fast, so the
job ends soon after.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from forge_core import config, jobs
from forge_core.config import PROJECT_ROOT
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.store import Store

from support.answering_server import AnsweringServer, held_after
from support.app_store import PAGE_RUN_TIMEOUT_S
from support.resources import require_demo_export
from support.stores import copy_store

pytestmark = pytest.mark.faults

SCRIPTS = [PROJECT_ROOT / "app" / "main.py", *sorted((PROJECT_ROOT / "pages").glob("*.py"))]
QUERIES = 40  # musique dev queries: 240 calls, about 60 s at the slow pace; the last two are held until the pages ran


def load_every_page() -> dict[str, AppTest]:
    """Run the navigation script (the Overview page) and every page script once, on fresh reads;
    each page run, by script name."""
    apps = {}
    for script in SCRIPTS:
        st.cache_data.clear()
        apps[script.name] = app = AppTest.from_file(str(script), default_timeout=PAGE_RUN_TIMEOUT_S).run()
        assert not app.exception, (script.name, app.exception)
    return apps


def test_every_page_loads_on_an_empty_store() -> None:
    overview = load_every_page()["main.py"]  # conftest points FORGE_STORE at a new, empty store
    assert "The store is empty" in overview.info[0].value


@pytest.mark.e2e  # the whole demo store, every view computed afresh (90 s): after the default suite
def test_every_page_loads_on_the_demo_store(imported_store: Store, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo store as `forge store load-demo` leaves it: its rows, and its Action map arrays in
    the cache (computing the demo's UMAP afresh was about 45% of the page runs alone at load 5-6; the
    Action map computes its arrays on the small store in tests/app/test_app_pages.py)."""
    from forge_core.precompute.demo_store import load_demo

    require_demo_export()
    store = copy_store(imported_store, tmp_path)
    loaded = load_demo(store, config.demo_dir(), config.benchmarks_dir(), map_cache=config.cache_dir() / "umap")
    assert loaded.added["arm_outcomes"] > 0 and loaded.map_arrays > 0
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    overview = load_every_page()["main.py"]
    assert overview.title[0].value == "Overview" and not overview.info  # the demo outcomes, no "run this first"


def stored_rows(store: Store) -> int:
    return len(store.arm_outcomes("slow"))


def test_every_page_loads_while_an_enumeration_writes_to_the_store(
        trained_store: tuple[Store, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = copy_store(trained_store[0], tmp_path)
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    release = threading.Event()
    with AnsweringServer(delay_s=0.5) as server:
        server.on_request = held_after(QUERIES * 6 - 2, release)  # the job cannot end before the pages are done
        save_host_config(store, HostConfig(name="slow", kind="openai", model="m", base_url=server.base_url,
                                           max_retries=2, max_concurrency=2, timeout_s=3600.0))
        job = subprocess.Popen(
            [sys.executable, "-m", "forge_core.cli", "enumerate", "--host", "slow", "--split", "dev", "--benchmark",
             "musique", "--per-benchmark", str(QUERIES), "--concurrency", "2", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ})
        try:
            # waits end on what the job does, not on a clock (a hang ends at pytest's --timeout)
            while stored_rows(store) == 0:  # the job is writing
                assert job.poll() is None, job.communicate()
                time.sleep(0.2)
            rows_before = stored_rows(store)
            load_every_page()
            while stored_rows(store) == rows_before:  # every page in a few seconds: again, until the job wrote
                assert job.poll() is None, job.communicate()
                load_every_page()
            assert job.poll() is None  # still writing after the last page
            assert stored_rows(store) > rows_before  # and it wrote while the pages loaded
            server.delay_s = 0.0
            release.set()
            stdout, stderr = job.communicate()
        finally:
            release.set()
            if job.poll() is None:
                job.kill()
    assert job.returncode == 0, stderr
    assert stored_rows(store) == QUERIES * 6
    (_, progress), *_ = jobs.recent_jobs(store)
    assert progress.status == "finished" and progress.done == QUERIES * 6, progress
