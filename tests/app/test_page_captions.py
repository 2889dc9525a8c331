"""What a page says matches what it does (#56): the Live query's corpus select follows a picked demo
question, the Retriever select says why a retriever measured on the Overview is not offered, and the
Transfer page at weights without routers says what it needs in a sentence and offers the weights it
has them at."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from forge_core.config import PROJECT_ROOT
from forge_core.evaluation.setup import train_missing_routers
from forge_core.evaluation.transfer_request import TransferRequest, stored_transfer_weights
from forge_core.reports.demo_questions import DemoQuestion
from forge_core.routing.features import compute_features
from forge_core.routing.utility import CostWeights
from forge_core.store import Store

from support.app_store import APP_BENCHMARKS, PAGE_RUN_TIMEOUT_S, build_app_store
from support.stores import copy_store

PAGES = PROJECT_ROOT / "pages"


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory, benchmarks_root: Path) -> Path:
    path = tmp_path_factory.mktemp("captions") / "store.duckdb"
    build_app_store(path, benchmarks_root)
    return path


def page(name: str, monkeypatch: pytest.MonkeyPatch, store_path: Path, state: dict | None = None) -> AppTest:
    monkeypatch.setenv("FORGE_STORE", str(store_path))
    st.cache_data.clear()
    app = AppTest.from_file(str(PAGES / name), default_timeout=PAGE_RUN_TIMEOUT_S)
    for key, value in (state or {}).items():
        app.session_state[key] = value
    return app.run()


def by_label(widgets, label: str):
    (widget,) = [widget for widget in widgets if widget.label == label]
    return widget


def test_the_live_querys_corpus_follows_the_picked_demo_question(store_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(store_path)
    other = APP_BENCHMARKS[1]  # not the select's first option
    example = store.examples(other, store.split_ids(other, "test")[:1])[0]
    demo = DemoQuestion(other, example.example_id, example.question, ("raw:no_think", "summary:no_think"))
    app = page("live_query.py", monkeypatch, store_path, {"live_demo_question": demo})
    assert not app.exception, app.exception
    corpus = by_label(app.selectbox, "Benchmark (corpus to retrieve from)")
    assert corpus.value == other and corpus.disabled  # the question's own corpus, said by the select
    assert by_label(app.radio, "Question").value == "Pick one from the benchmark"
    assert f"Demo question ({other})" in app.info[-1].value

    by_label(app.button, "Clear").click().run()  # cleared: the select is the user's again
    corpus = by_label(app.selectbox, "Benchmark (corpus to retrieve from)")
    assert not app.exception and not corpus.disabled
    assert by_label(app.radio, "Question").value == "Type one"


def test_a_measured_retriever_without_outcomes_is_named_with_why(store_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    store = copy_store(Store(store_path), store_path.parent / "measured")
    measured = {"name": "dense", "kind": "dense", "config_hash": "abc123def456",
                "recall_at_k": {"mean": 0.667, "ci95": [0.626, 0.709]}, "recall_vs_first_ci95": None,
                "summary_tokens_in": {"mean": 266.4, "ci95": [260.0, 272.0]},
                "raw_tokens_in": {"mean": 404.2, "ci95": [379.0, 429.0]}, "latency_ms": {"p50": 83.7, "p95": 121.8}}
    first = measured | {"name": "bm25", "kind": "bm25", "config_hash": ""}  # offered: measured and configured
    store.save_evidence_results(APP_BENCHMARKS[0], 3, 153, None, [first, measured])
    app = page("overview.py", monkeypatch, store.path)
    assert not app.exception, app.exception
    assert by_label(app.selectbox, "Retriever").options == ["bm25"]  # nothing to read under dense
    (said,) = [caption for caption in app.caption if caption.value == "dense: measured only, no outcomes"]
    assert "`forge retriever add dense --kind dense` then `forge enumerate --retriever dense`" in said.help


@pytest.mark.e2e  # end to end: the Transfer page trains its routers (about 20 s)
def test_transfer_at_other_weights_says_what_it_needs_and_offers_the_stored_ones(
        two_host_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = copy_store(two_host_store, tmp_path)
    stored = CostWeights(0.6, 0.6)
    request = TransferRequest("synthetic-host", "knowing-host", weights=stored, calibrate=(25,))
    for settings in request.evaluations():  # what the page's "Train the missing routers" does
        compute_features(store, settings.host)
        train_missing_routers(store, settings)
    assert stored_transfer_weights(store, request) == [stored]

    app = page("transfer.py", monkeypatch, store.path)
    by_label(app.selectbox, "Source host (whose routers)").set_value("synthetic-host").run()
    by_label(app.selectbox, "Target host (whose queries and costs)").set_value("knowing-host")
    by_label(app.slider, "lambda_in").set_value(1.0)
    by_label(app.slider, "lambda_out").set_value(1.0).run()
    assert not app.exception, app.exception
    said = app.info[0].value
    assert said.startswith("Transfer at λ_in 1 / λ_out 1 needs routers trained at exactly these weights on both hosts")
    assert "Both hosts have them at λ 0.6 / 0.6" in said
    by_label(app.button, "Open at 0.6 / 0.6").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    assert (by_label(app.slider, "lambda_in").value, by_label(app.slider, "lambda_out").value) == (0.6, 0.6)
    assert app.markdown[0].value.startswith("**Zero-shot, synthetic-host's Lite router is")
