"""A page whose view the background process is still computing shows its progress and computes
nothing itself (AppTest); once the process has finished, the page reads the view."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from forge_core import config
from forge_core.precompute.background_views import compute_views
from forge_core.precompute.view_cache import ViewStep, view_name
from forge_core.reports import tables
from forge_core.store import Store

from support.stores import copy_store

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 180


@pytest.fixture
def small_store(outcome_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    store = copy_store(outcome_store, tmp_path)
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    st.cache_data.clear()
    return store


@pytest.fixture
def computing(small_store: Store) -> Iterator[threading.Event]:
    """A background computation holding its lock, on the Pareto page's view, until the event is set."""
    host = small_store.hosts_with_outcomes()[0]
    started, release = threading.Event(), threading.Event()
    step = ViewStep(view_name("pareto", host), "the Pareto points", lambda: started.set() or release.wait())
    worker = threading.Thread(target=compute_views, args=(small_store, config.cache_dir(), [step]))
    worker.start()
    started.wait()
    yield release
    release.set()
    worker.join()


def test_the_pareto_page_waits_for_its_view_and_then_reads_it(computing: threading.Event,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    scored = []
    report = tables.pareto_report
    monkeypatch.setattr(tables, "pareto_report", lambda *args, **kwargs: scored.append(1) or report(*args, **kwargs))
    page = AppTest.from_file(str(PROJECT_ROOT / "pages" / "pareto.py"), default_timeout=TIMEOUT_S).run()

    assert not page.exception
    progress = page.get("progress")
    assert len(progress) == 1 and "Computing the dashboard's first views in the background" in progress[0].proto.text
    assert scored == [] and not page.get("vega_lite_chart")  # nothing computed beside the background process

    computing.set()
    while compute_running():
        threading.Event().wait(0.05)  # a hang ends at pytest's --timeout
    page.run()
    assert not page.exception and not page.get("progress")
    assert scored and page.get("vega_lite_chart")


def compute_running() -> bool:
    from forge_core.precompute.background_views import views_progress

    return views_progress(config.cache_dir()).running
