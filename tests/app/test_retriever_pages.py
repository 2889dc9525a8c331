"""The pages under a retriever other than bm25: the Action map, Queries, Train and Transfer pages
read only its outcomes and routers (the Retriever select is shared across pages), and a retriever the
host has no outcomes under is one line naming the command that makes them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from forge_core.config import PROJECT_ROOT
from forge_core.evidence.retrievers import RetrieverConfig, retriever_hash, save_retriever_config
from forge_core.precompute.view_cache import precompute_views, view_name, view_steps
from forge_core.reports.action_map import compute_action_map
from forge_core.routing import features as features_module
from forge_core.store import Store
from forge_core.training.request import TrainRequest
from forge_core.training.settings import Stage1Config
from forge_core.training.trainer import train_router

from support.lazy_sections import TRAIN_REWARDS, opened
from support.stores import copy_store, outcomes_under_retriever

PAGES = PROJECT_ROOT / "pages"
TIMEOUT_S = 120
HOST = "synthetic-host"
DENSE = RetrieverConfig("dense", kind="dense", embedder="all-MiniLM-L6-v2")
DENSE_F1 = 0.987  # no synthetic outcome has this F1: it marks the rows made under dense
UNUSED = RetrieverConfig("bm25-k4", kind="bm25", k=4)  # configured, never enumerated
KEPT = "retriever_choice"  # app.ui.RETRIEVER_KEPT: the pick every page's Retriever select opens on


@pytest.fixture(scope="module")
def dense_store(tmp_path_factory: pytest.TempPathFactory, trained_store: tuple[Store, str]) -> tuple[Store, str]:
    """`trained_store` (a Lite router under bm25) with outcomes under dense, a Lite router trained
    under dense (its id) and a retriever without outcomes."""
    store = copy_store(trained_store[0], tmp_path_factory.mktemp("dense-pages"))
    outcomes_under_retriever(store, HOST, DENSE, DENSE_F1)
    save_retriever_config(store, UNUSED)
    dense_id = train_router(store, TrainRequest(host=HOST, variant="lite", retriever="dense",
                                                stage1=Stage1Config(max_epochs=3)))
    return store, dense_id


@pytest.fixture
def dense_app(dense_store: tuple[Store, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Store, str]:
    store = copy_store(dense_store[0], tmp_path)
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    return store, dense_store[1]


def under(name: str, retriever: str) -> AppTest:
    """A page run with `retriever` picked (as a pick on any other page leaves it)."""
    st.cache_data.clear()
    app = AppTest.from_file(str(PAGES / name), default_timeout=TIMEOUT_S)
    app.session_state[KEPT] = retriever
    return app.run()


def selected(app: AppTest, label: str):
    return next(widget for widget in app.selectbox if widget.label == label)


@pytest.mark.e2e  # end to end: a dense router trained and mapped (about 22 s)
def test_the_action_map_of_a_dense_router_reads_dense_outcomes(dense_store: tuple[Store, str]) -> None:
    store, dense_id = dense_store
    action_map = compute_action_map(store, HOST, dense_id, "test")
    assert action_map.retriever_hash == retriever_hash(DENSE)
    evidence_arms = [index for index, arm in enumerate(action_map.arms) if not arm.startswith("direct:")]
    assert np.allclose(action_map.f1[:, evidence_arms], DENSE_F1)  # Summary and Raw: dense's rows only


def test_the_kept_action_map_of_a_dense_default_router_computes_dense_features(
        dense_app: tuple[Store, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, dense_id = dense_app
    store.set_default_router(HOST, dense_id)
    asked = []

    def recorded(store, host, **options):  # a test double around the real computation: which evidence it was asked for
        asked.append(options.get("retriever"))
        return real(store, host, **options)

    real = features_module.compute_features
    monkeypatch.setattr(features_module, "compute_features", recorded)
    step = next(step for step in view_steps(store, tmp_path) if step.name == view_name("action_map", HOST))
    assert precompute_views(store, tmp_path, steps=[step]) == [f"{HOST}: the Action map of the default router: ready"]
    assert asked == ["dense"]


@pytest.mark.parametrize("script", ["action_map.py", "queries.py"])
def test_map_pages_under_dense_show_its_router_and_outcomes(script: str, dense_app: tuple[Store, str]) -> None:
    _, dense_id = dense_app
    app = under(script, "dense")
    assert not app.exception, app.exception
    assert selected(app, "Retriever").value == "dense"
    router = selected(app, "Checkpoint" if script == "action_map.py" else "Router")
    assert router.options == [router.format_func(dense_id)]  # the bm25 router is not offered
    if script == "queries.py":
        table = next(frame.value for frame in app.dataframe if "regret" in frame.value.columns)
        assert np.allclose(table["F1 raw:no_think"], DENSE_F1) and len(table) == 60


@pytest.mark.parametrize("script", ["action_map.py", "queries.py", "train.py", "overview.py", "pareto.py"])
def test_a_retriever_without_outcomes_is_one_line_with_its_command(script: str, dense_app: tuple[Store, str]) -> None:
    app = under(script, UNUSED.name)
    assert not app.exception, app.exception
    assert selected(app, "Retriever").format_func(UNUSED.name) == f"{UNUSED.name} (no outcomes)"
    assert app.info[-1].value == (f"No outcomes of host '{HOST}' under retriever '{UNUSED.name}' yet: `forge enumerate "
                                  f"--host {HOST} --retriever {UNUSED.name}` makes them.")


def test_train_page_under_dense_lists_its_routers_and_audits_its_answers(dense_app: tuple[Store, str]) -> None:
    _, dense_id = dense_app
    app = under("train.py", "dense")
    assert not app.exception, app.exception
    checkpoints = next(frame.value for frame in app.dataframe if "checkpoint" in frame.value.columns)
    assert list(checkpoints["checkpoint"]) == [dense_id]
    opened(app, TRAIN_REWARDS)
    captions = "\n".join(caption.value for caption in app.caption)
    assert "As `forge rewards audit --reward NAME --retriever dense`." in captions
    assert "`forge rewards judge --retriever dense`" in "\n".join(markdown.value for markdown in app.markdown)
    assert not app.error  # the consensus audit reads dense's answers
    next(control for control in app.segmented_control if control.label == "Proxy").set_value("judge").run()
    assert [error.value for error in app.error] == [
        f"host '{HOST}' has no judge rewards under retriever 'dense': run `forge rewards judge --host {HOST} "
        "--retriever dense`"]


def test_transfer_page_names_the_host_without_outcomes_under_the_retriever(
        two_host_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = copy_store(two_host_store, tmp_path)
    outcomes_under_retriever(store, HOST, DENSE, DENSE_F1)  # the source only
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    st.cache_data.clear()
    app = AppTest.from_file(str(PAGES / "transfer.py"), default_timeout=TIMEOUT_S)
    app.session_state[KEPT] = "dense"
    app.run()  # knowing-host lacks dense outcomes, as the source or as the target
    assert not app.exception, app.exception
    assert selected(app, "Retriever").value == "dense"
    assert app.info[-1].value == ("No outcomes of host 'knowing-host' under retriever 'dense' yet: `forge enumerate "
                                  "--host knowing-host --retriever dense` makes them.")
