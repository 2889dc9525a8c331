"""The Pareto page states `forge decide`'s decision at the sliders' weights (AppTest): at a weight
pair no crossfit run is stored at, with its gains, the floor and the serve command; and a decided
router can be marked as the host's default router."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from app.decision_view import SERVE_LEAD
from app.step_prefetch import give_way, prefetch
from forge_core.evaluation import decide as decide_module
from forge_core.reports.checkpoint_views import short_id
from forge_core.reports.mix_view import HULL_NAME
from forge_core.store import Store

from support.app_store import PAGE_RUN_TIMEOUT_S
from support.pareto_page import points_table
from support.stores import copy_store
from support.vega_charts import layer_drawing, vega_charts

PROJECT_ROOT = Path(__file__).resolve().parents[2]
HOST = "synthetic-host"


@pytest.fixture(scope="module")
def crossfit_store(conditioned_store: tuple[Store, str], tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, str]:
    """The conditioned store with a 2-fold Stage-1 crossfit run (with the conditioned routers) at 0.6 / 0.6,
    of the conditioned checkpoint's recipe (its Stage-1 settings), so a decision can name it."""
    from forge_core.evaluation.crossfit import CrossfitSettings, run_crossfit
    from forge_core.training.settings import Stage1Config

    store = copy_store(conditioned_store[0], tmp_path_factory.mktemp("decide-crossfit"))
    run_crossfit(store, CrossfitSettings(HOST, lambda_in=0.6, lambda_out=0.6, folds=2,
                                         stage1=Stage1Config(max_epochs=30, patience=5)))
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
    return AppTest.from_file(str(PROJECT_ROOT / "pages" / "pareto.py"), default_timeout=PAGE_RUN_TIMEOUT_S).run()


RECOMMENDATIONS = ("Deploy ", "deploy the fixed arm")  # how a decision's sentence names what to deploy


def recommendations(app: AppTest) -> list[str]:
    """Every statement on the page that says what to deploy."""
    return [str(element.value) for element in [*app.success, *app.info, *app.warning]
            if any(phrase in str(element.value) for phrase in RECOMMENDATIONS)]


def idle_prefetch_thread() -> None:
    """Drop what earlier tests left for the prefetch thread and wait until it is idle (a page run by a test
    before asks for its next step 2 s later, which would run during the next test)."""
    give_way()
    prefetch(lambda: None).result(timeout=PAGE_RUN_TIMEOUT_S)


def serve_line(app: AppTest) -> str:
    """The serve command the decision shows (inline code after `SERVE_LEAD`)."""
    line = next(str(element.value) for element in app.markdown if str(element.value).startswith(SERVE_LEAD))
    return line.removeprefix(SERVE_LEAD).strip("`")


def decided_at(store: Store, lambda_in: float, lambda_out: float) -> dict:
    """The library's decision at these weights: what the CLI prints and the page must state."""
    from forge_core import config
    from forge_core.routing.utility import CostWeights

    return decide_module.decide(store, HOST, CostWeights(lambda_in, lambda_out), config.cache_dir())


def test_the_decision_is_stated_where_no_run_is_stored(decide_app: tuple[Store, str]) -> None:
    store, _ = decide_app
    app = pareto()  # the sliders at 0.1 / 0.2; the only crossfit run is at 0.6 / 0.6
    assert not app.exception, app.exception
    decided = decided_at(store, 0.1, 0.2)
    stated = recommendations(app)
    assert len(stated) == 1 and stated[0] == f"**{decided['sentence']}**"  # one recommendation, the CLI's
    assert "λ_in 0.1 / λ_out 0.2" in stated[0]
    gains = app.table[0].value
    assert list(gains.index) == ["utility", "macro F1", "tokens a query"]
    shown = gains.columns[0].split(" − ")[0]
    gain = decided["policies"][shown]["gain_vs_best_fixed"]
    for row, key in (("utility", "utility"), ("macro F1", "f1"), ("tokens a query", "tokens")):
        assert gains.loc[row].iloc[0] == pytest.approx(round(gain[key]["difference"], 3))
        assert gains.loc[row, "95% low"] == pytest.approx(round(gain[key]["ci"][0], 3))
    assert (gains["95% low"] <= gains["95% high"]).all()
    assert "the linear floor ridge_utility" in texts(app.caption)
    assert f"Recipe `{decided['recipe']['recipe_id']}`" in texts(app.caption)
    served = tuple(f"forge {verb} --host synthetic-host {flag} " for verb, flag in
                   (("serve", "--router"), ("serve", "--arm"), ("train", "--variant")))
    assert serve_line(app).startswith(served) and serve_line(app) == decided["serve_command"]
    assert not app.code  # inline, not a code block (its highlighter's script slowed the page's first render)
    assert "`forge decide --host synthetic-host --lambda-in 0.1 --lambda-out 0.2` gives the same" in texts(app.caption)
    points = points_table(app)  # the Pareto table: tokens in and out apart, summing to the cost
    assert ((points["tokens_in"] + points["tokens_out"]) / 1000 - points["cost_k"]).abs().max() < 1e-9
    assert (points["tokens_in"] > points["tokens_out"]).all()  # prompts outweigh short answers


def test_the_crossfit_view_states_no_second_recommendation(decide_app: tuple[Store, str]) -> None:
    store, _ = decide_app
    app = pareto()
    app.segmented_control[0].set_value("crossfit").run()  # the run at 0.6 / 0.6, the sliders at 0.1 / 0.2
    assert not app.exception, app.exception
    decided = decided_at(store, 0.1, 0.2)  # its folds are the one stored run's, shown in the view
    assert recommendations(app) == [f"**{decided['sentence']}**"]
    shown = next(box for box in app.selectbox if box.label == "Crossfit run").value
    assert decided["run_ids"] == [shown["run_id"]]
    assert "The decision above rests on this run." in texts(app.caption)
    guards = next(frame.value for frame in app.dataframe if "realized_risk" in frame.value.columns)
    assert set(guards["policy"]) == {name + suffix for name in ("forge_full", "forge_lite", "bge_bm25_kl",
                                                                 "forge_lite_cond", "forge_full_cond")
                                     for suffix in ("_guard", "_mix_guard")}  # the best fixed arm's, the mix's
    assert ((guards["gain_low"] <= guards["gain"]) & (guards["gain"] <= guards["gain_high"])).all()
    assert "Guarded routers" in [header.value for header in app.subheader]
    assert "`forge serve --router CKPT --guard RISK --guard-fallback arm|mix` serves it" in texts(app.caption)
    from app import data

    report = data.crossfit_reports(store, data.store_version(store), HOST)[0]
    ((spec, points), _) = vega_charts(app)  # the run's points, drawn as the test split's are, and its gains
    assert {"calculate": json.dumps(HULL_NAME), "as": "line"} in layer_drawing(spec, "on_hull")["transform"]
    hull = points[points["on_hull"]].sort_values("cost_k")  # the points the hull line is drawn through
    vertices = report["mix_hull"]["all"]
    assert np.allclose(hull["cost_k"], [vertex["tokens"] / 1000 for vertex in vertices])
    assert np.allclose(hull["macro_f1"], [vertex["f1"] for vertex in vertices])
    at_the_run = decided_at(store, 0.6, 0.6)  # the stored run decides there: its guards compete (`forge serve --guard`)
    assert {"forge_lite_cond_guard", "forge_lite_cond_mix_guard"} <= set(at_the_run["policies"])
    assert not {"forge_lite_cond_guard", "forge_lite_cond_mix_guard"} & set(at_the_run["excluded"])


def test_a_decided_router_is_marked_as_the_default(decide_app: tuple[Store, str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    store, checkpoint_id = decide_app
    real_rule = decide_module.decide_from_outcomes

    def rule_deciding_the_lite_router(outcomes, budget_tokens=None):  # a test double: the real rule, its choice forced
        return {**real_rule(outcomes, budget_tokens), "deploy": "forge_lite_cond",
                "router_candidates": ["forge_lite_cond"]}

    monkeypatch.setattr(decide_module, "decide_from_outcomes", rule_deciding_the_lite_router)
    app = pareto()
    assert not app.exception, app.exception
    assert f"Deploy forge_lite_cond (Lite cond. stage 1 · {short_id(checkpoint_id)})" in texts(app.success)  # its name
    assert serve_line(app) == (f"forge serve --host {HOST} --router {checkpoint_id} --lambda-in 0.1 "
                                 "--lambda-out 0.2")
    assert store.marked_default_router(HOST) is None
    next(button for button in app.button if button.label == "Mark as the default router").click().run()
    assert not app.exception, app.exception
    assert store.marked_default_router(HOST) == checkpoint_id


def test_the_next_slider_step_is_computed_while_this_one_is_drawn(decide_app: tuple[Store, str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """After each run the page computes, on its prefetch thread, the step that continues the sliders'
    last move (lambda_in one step up before any move): that step's script then scores and decides
    nothing itself, and the next guess follows the move just made (here lambda_out by 0.02)."""
    import threading

    from app import pareto_view
    from forge_core.reports import tables

    idle_prefetch_thread()
    ahead = []
    real_prefetch = pareto_view.prefetch
    monkeypatch.setattr(pareto_view, "prefetch",
                        lambda *parts, after_s, after_run: ahead.append(real_prefetch(*parts)) or ahead[-1])
    computed: list[tuple[str, tuple[float, float]]] = []  # (thread, weights) of every scoring and decision

    def recorded(function, weights_of):
        def call(*args, **kwargs):
            weights = weights_of(*args)
            computed.append((threading.current_thread().name, (weights.lambda_in, weights.lambda_out)))
            return function(*args, **kwargs)
        return call

    monkeypatch.setattr(tables, "pareto_report",
                        recorded(tables.pareto_report, lambda _, request, *rest: request.settings.weights))
    monkeypatch.setattr(decide_module, "decide",
                        recorded(decide_module.decide, lambda _, host, weights, *rest: weights))

    def step(slider: str, value: float) -> list[tuple[str, tuple[float, float]]]:
        """Wait for what the page computes ahead, then move a slider: what is computed from then on."""
        for future in ahead:
            future.result(timeout=PAGE_RUN_TIMEOUT_S)
        computed.clear()
        next(s for s in app.slider if slider in s.label).set_value(value).run()
        assert not app.exception, app.exception
        for future in ahead:
            future.result(timeout=PAGE_RUN_TIMEOUT_S)
        return computed[:]

    app = pareto()
    assert not app.exception, app.exception
    after_first_step = step("lambda_in", 0.11)
    assert "λ_in 0.11 / λ_out 0.2" in texts(app.success) + texts(app.info)
    assert all(thread.startswith("forge-next-step") for thread, _ in after_first_step)  # the step computed nothing
    assert {weights for _, weights in after_first_step} == {(0.12, 0.2)}  # the next one, ahead
    assert len(after_first_step) == 2  # scored once and decided once
    after_second_step = step("lambda_out", 0.22)
    assert {weights for thread, weights in after_second_step if thread.startswith("forge-next-step")} == {(0.11, 0.24)}


def test_no_decision_is_computed_ahead_while_the_fold_routers_are_being_trained(
        decide_app: tuple[Store, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """While the background process still trains the fold routers the decision needs (its `any_weights`
    view), the next step's points are computed ahead but not its decision (it would train them twice)."""
    import threading

    from app import pareto_view
    from app.views_progress import views_ready

    idle_prefetch_thread()
    ahead, decided_ahead = [], []
    real_prefetch, real_decide = pareto_view.prefetch, decide_module.decide
    monkeypatch.setattr(pareto_view, "prefetch",
                        lambda *parts, after_s, after_run: ahead.append(real_prefetch(*parts)) or ahead[-1])
    def ready(*names: str) -> bool:  # the background process's fold routers (`any_weights`): still training
        return not any(name.startswith("any_weights") for name in names) and views_ready(*names)

    monkeypatch.setattr(pareto_view, "views_ready", ready)

    def decide(*args, **kwargs):
        decided_ahead.append(threading.current_thread().name.startswith("forge-next-step"))
        return real_decide(*args, **kwargs)

    monkeypatch.setattr(decide_module, "decide", decide)
    app = pareto()
    assert not app.exception, app.exception
    for future in ahead:
        future.result(timeout=PAGE_RUN_TIMEOUT_S)
    assert ahead and not any(decided_ahead)  # a step was computed ahead, its decision not


WEIGHT_PAIRS = [(0.6, 0.6), (0.1, 0.2)] + [(round(0.05 * k, 2), round(0.08 * k, 2)) for k in range(1, 19)]


def test_the_cli_and_the_page_name_the_same_policy_at_20_weight_pairs(decide_app: tuple[Store, str]) -> None:
    """`forge decide --json` and the Pareto page's decision (`app.data.decision_at`, as the page
    calls it) at 20 weight pairs, one of them the stored run's: the same policy, checkpoint and runs;
    at the stored run's weights its crossfit view (the report's best fixed arm and `decidable`
    column, `crossfit_frame`) names the same best fixed arm and routers as the one rule."""

    from typer.testing import CliRunner

    from app import data
    from forge_core import cli
    from forge_core.reports.tables import crossfit_frame
    from forge_core.routing.utility import CostWeights

    store, _ = decide_app
    assert len(set(WEIGHT_PAIRS)) == 20
    for lambda_in, lambda_out in WEIGHT_PAIRS:
        result = CliRunner().invoke(cli.app, ["decide", "--host", HOST, "--lambda-in", str(lambda_in),
                                              "--lambda-out", str(lambda_out), "--json"])
        assert result.exit_code == 0, result.output
        printed = json.loads(result.stdout)
        shown = data.decision_at(store, data.store_version(store), HOST, CostWeights(lambda_in, lambda_out), "deploy")
        assert (printed["policy"], printed["checkpoint_id"], printed["crossfit_run_ids"]) == (
            shown["deploy"], shown["checkpoint_id"], shown["run_ids"]), (lambda_in, lambda_out)
        assert printed["sentence"] == shown["sentence"]
    report = data.crossfit_reports(store, data.store_version(store), HOST)[0]  # the run at 0.6 / 0.6
    decided = data.decision_at(store, data.store_version(store), HOST, CostWeights(0.6, 0.6), "deploy")
    assert decided["run_ids"] == [report["run_id"]]
    assert report["best_fixed_policy"] == decided["best_fixed_policy"]
    frame = crossfit_frame(report)
    servable = set(frame["policy"]) - set(decided["excluded"])
    assert set(frame[frame["decidable"]]["policy"]) & servable == set(decided["router_candidates"])


def test_a_decision_at_new_weights_reuses_the_folds_and_equals_a_fresh_one(decide_app: tuple[Store, str],
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A slider step decides at new weights from the same loaded context: the run's folds (splits,
    normalizers, the floor read from the fold file) are made once for it, and the rows are those of a
    decision made from nothing at the same weights."""
    from forge_core import config
    from forge_core.evaluation import fold_decisions
    from forge_core.routing.utility import CostWeights

    store, _ = decide_app
    run = store.crossfit_runs(HOST).iloc[0]
    settings = json.loads(run["settings"])

    def outcomes(weights: CostWeights, base=None) -> pd.DataFrame:
        return fold_decisions.out_of_fold_outcomes(store, run["run_id"], settings, weights, "deploy",
                                                   config.cache_dir(), base=base)[0]

    outcomes(CostWeights(0.6, 0.6))  # the fold file, trained once
    made = []
    real_folds = fold_decisions.crossfit_folds
    monkeypatch.setattr(fold_decisions, "crossfit_folds", lambda *args: made.append(args[0]) or real_folds(*args))
    base = fold_decisions.decision_context(store, settings, "deploy")
    outcomes(CostWeights(0.1, 0.2), base)
    stepped = outcomes(CostWeights(0.3, 0.2), base)
    assert len(made) == 1  # two weight pairs, one set of folds
    fresh = outcomes(CostWeights(0.3, 0.2))
    assert len(made) == 2 and set(stepped["policy"]) >= {"ridge_utility"}
    pd.testing.assert_frame_equal(stepped, fresh)
