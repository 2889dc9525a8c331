"""The Transfer page: a source host's routers on a target host that knows more, zero-shot and
calibrated, read from stored outcomes (synthetic outcomes on real questions)."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from app import data
from forge_core import config
from forge_core.evaluation import transfer as transfer_module
from forge_core.precompute.view_cache import TRANSFER_CACHE
from forge_core.store import Store

from support.lazy_sections import TRANSFER_POLICIES, opened
from support.stores import copy_store

PAGE = Path(__file__).resolve().parents[2] / "pages" / "transfer.py"
TIMEOUT_S = 180


def by_label(widgets, label: str):
    matches = [widget for widget in widgets if widget.label == label]
    assert len(matches) == 1, f"{label!r}: {[w.label for w in widgets]}"
    return matches[0]


def test_the_page_opens_on_the_hosts_the_background_views_computed_its_report_for(
        two_host_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = copy_store(two_host_store, tmp_path)
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    st.cache_data.clear()
    first, second = store.hosts_with_outcomes()
    monkeypatch.setattr(data, "transfer_opening", lambda *_: (second, first))  # not the hosts' own order
    app = AppTest.from_file(str(PAGE), default_timeout=TIMEOUT_S).run()
    assert not app.exception, app.exception
    assert by_label(app.selectbox, "Source host (whose routers)").value == second
    assert by_label(app.selectbox, "Target host (whose queries and costs)").value == first


@pytest.mark.e2e  # end to end: the Transfer page trains its routers (about 15 s)
def test_the_page_trains_what_is_missing_then_shows_transfer_and_calibration(
        two_host_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = copy_store(two_host_store, tmp_path)
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    st.cache_data.clear()
    app = AppTest.from_file(str(PAGE), default_timeout=TIMEOUT_S).run()
    assert not app.exception, app.exception
    by_label(app.selectbox, "Source host (whose routers)").set_value("synthetic-host").run()
    by_label(app.selectbox, "Target host (whose queries and costs)").set_value("knowing-host")
    by_label(app.slider, "lambda_in").set_value(0.6)
    by_label(app.slider, "lambda_out").set_value(0.6).run()
    assert "needs routers trained at exactly these weights" in app.info[0].value  # nothing trained yet: it says so
    by_label(app.button, "Train the missing routers").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]

    verdict = app.markdown[0].value
    assert "Zero-shot, synthetic-host's Lite router is worse than knowing-host's own Lite router" in verdict
    assert len(app.get("vega_lite_chart")) == 2  # the target's frontier, utility against K
    mix = app.table[0].value
    assert list(mix.columns) == ["oracle", "transfer_forge_lite", "transfer_forge_lite_cal100", "target_forge_lite"]
    assert "raw:no_think" in mix.loc["musique", "transfer_forge_lite"]  # the source's habit, which the target
    assert "raw:no_think" not in mix.loc["musique", "oracle"]  # does not need
    assert not store.checkpoints()["lineage"].str.contains("calibrated_from").any()  # the page stores nothing
    assert not app.dataframe  # every policy's row is drawn once its section is opened
    policies = opened(app, TRANSFER_POLICIES).dataframe[0].value
    assert {"transfer_forge_lite", "target_forge_lite"} <= set(policies["policy"]) and "gain_low" in policies.columns

    # the report is kept under the cache directory: a new process's first view reads it, computing nothing
    kept = list((config.cache_dir() / TRANSFER_CACHE).glob("*.json"))
    assert len(kept) == 1
    st.cache_data.clear()
    monkeypatch.setattr(transfer_module, "run_transfer", lambda *_: pytest.fail("the kept report was computed again"))
    app.run()
    assert not app.exception and app.markdown[0].value == verdict
