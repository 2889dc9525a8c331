"""The Pareto page states `forge decide`'s decision at the sliders' weights (AppTest): at a weight
pair no crossfit run is stored at, with its gains, the floor and the serve command; and a decided
router can be marked as the host's default router."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from forge_core.evaluation import decide as decide_module
from forge_core.store import Store

from support.stores import copy_store

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 180
HOST = "synthetic-host"


@pytest.fixture(scope="module")
def crossfit_store(conditioned_store: tuple[Store, str], tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, str]:
    """The conditioned store with a 2-fold Stage-1 crossfit run (with the conditioned routers) at 0.6 / 0.6."""
    from forge_core.evaluation.crossfit import CrossfitSettings, run_crossfit
    from forge_core.training.settings import Stage1Config

    store = copy_store(conditioned_store[0], tmp_path_factory.mktemp("decide-crossfit"))
    run_crossfit(store, CrossfitSettings(HOST, lambda_in=0.6, lambda_out=0.6, folds=2,
                                         stage1=Stage1Config(max_epochs=5)))
    return store, conditioned_store[1]


@pytest.fixture
def decide_app(crossfit_store: tuple[Store, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Store, str]:
    store = copy_store(crossfit_store[0], tmp_path)
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    st.cache_data.clear()
    return store, crossfit_store[1]


def texts(elements) -> str:
    return "\n".join(str(element.value) for element in elements)


def pareto() -> AppTest:
    return AppTest.from_file(str(PROJECT_ROOT / "pages" / "pareto.py"), default_timeout=TIMEOUT_S).run()


def test_the_decision_is_stated_where_no_run_is_stored(decide_app: tuple[Store, str]) -> None:
    app = pareto()  # the sliders at 0.1 / 0.2; the only crossfit run is at 0.6 / 0.6
    assert not app.exception, app.exception
    stated = texts(app.success) + texts(app.info)
    assert "Deploy " in stated and "λ_in 0.1 / λ_out 0.2" in stated
    gains = app.table[0].value
    assert list(gains.index) == ["utility", "macro F1", "tokens in a query", "tokens out a query"]
    assert (gains["95% low"] <= gains["95% high"]).all()
    assert "the linear floor ridge_utility" in texts(app.caption)
    served = tuple(f"forge serve --host synthetic-host {flag} " for flag in ("--router", "--arm"))
    assert app.code[0].value.startswith(served)
    assert "`forge decide --host synthetic-host --lambda-in 0.1 --lambda-out 0.2` gives the same" in texts(app.caption)
    points = app.dataframe[0].value  # the Pareto table: tokens in and out apart, summing to the cost
    assert ((points["tokens_in"] + points["tokens_out"]) / 1000 - points["cost_k"]).abs().max() < 1e-9
    assert (points["tokens_in"] > points["tokens_out"]).all()  # prompts outweigh short answers


def test_a_decided_router_is_marked_as_the_default(decide_app: tuple[Store, str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    store, checkpoint_id = decide_app
    real_rule = decide_module.decide_from_outcomes

    def rule_deciding_the_lite_router(outcomes):  # a test double: the real rule, its choice forced
        return {**real_rule(outcomes), "deploy": "forge_lite_cond", "router_candidates": ["forge_lite_cond"]}

    monkeypatch.setattr(decide_module, "decide_from_outcomes", rule_deciding_the_lite_router)
    app = pareto()
    assert not app.exception, app.exception
    assert f"checkpoint {checkpoint_id}" in texts(app.success)
    assert app.code[0].value == (f"forge serve --host {HOST} --router {checkpoint_id} --lambda-in 0.1 "
                                 "--lambda-out 0.2")
    assert store.marked_default_router(HOST) is None
    next(button for button in app.button if button.label == "Mark as the default router").click().run()
    assert not app.exception, app.exception
    assert store.marked_default_router(HOST) == checkpoint_id


def test_the_first_slider_step_finds_what_it_needs_loaded_in_the_background(
        decide_app: tuple[Store, str], monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from app import data

    st.cache_resource.clear()
    failures: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda hook: failures.append(hook.exc_value))
    app = pareto()
    warm = [thread for thread in threading.enumerate() if thread.name == "forge-warm-next-step"]
    assert len(warm) == 1
    warm[0].join(timeout=TIMEOUT_S)
    assert not warm[0].is_alive() and not failures

    loads: list[str] = []
    loaded = data.evaluation_context
    monkeypatch.setattr(data, "evaluation_context", lambda *args, **kwargs: loads.append("") or loaded(*args, **kwargs))
    next(s for s in app.slider if "lambda_in" in s.label).set_value(0.11).run()
    assert not app.exception, app.exception
    assert loads == []  # the outcomes and features were loaded by the warm-up, not by the step
    assert not [thread for thread in threading.enumerate() if thread.name == "forge-warm-next-step"]  # once
    assert "λ_in 0.11 / λ_out 0.2" in texts(app.success) + texts(app.info)
