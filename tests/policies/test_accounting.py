"""The deployment's accounting: every host call a decision needs is charged, with one formula."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from forge_core.evaluation.cached import evaluate
from forge_core.evaluation.crossfit import CrossfitSettings, run_crossfit, seed_spread
from forge_core.evaluation.settings import EvaluationSettings
from forge_core.evaluation.setup import prepare_evaluation
from forge_core.evidence.embedders import load_embedder
from forge_core.policies.baselines import FixedArm, FrugalCascade, RidgeUtility, SelfRouting
from forge_core.policies.context import Decisions, evaluation_context
from forge_core.policies.outcomes import score_decisions
from forge_core.policies.routers import FallbackPolicy
from forge_core.routing.utility import CostWeights
from forge_core.store import Store
from forge_core.training.settings import Stage1Config

from support.stores import copy_store

HOST = "synthetic-host"
SAMPLE_TOKENS_IN, SAMPLE_TOKENS_OUT = 3 * 60, 3 * 5  # the synthetic probes: 60 in, 5 out each


@pytest.fixture(scope="module")
def context(outcome_store: Store):
    return evaluation_context(outcome_store, HOST, 6, CostWeights(0.6, 0.6))


def test_probes_are_charged_once_and_the_greedy_probe_is_the_direct_answer(context) -> None:
    rows = context.rows("test")[:4]
    direct, raw = context.arm("direct:no_think"), context.arm("raw:no_think")
    decisions = context.probed_decisions(rows, np.array([direct, raw, raw, direct]))
    table = context.table
    assert decisions.prior_calls.tolist() == [3, 4, 4, 3]
    assert decisions.prior_tokens_in[0] == SAMPLE_TOKENS_IN  # answering Direct: the greedy probe is the answer
    assert decisions.prior_tokens_in[1] == SAMPLE_TOKENS_IN + table.tokens_in[rows[1], direct]
    assert decisions.prior_tokens_out[1] == SAMPLE_TOKENS_OUT + table.tokens_out[rows[1], direct]
    outcome = score_decisions(context, rows, FixedArm("raw:no_think"), decisions)
    assert outcome.calls.tolist() == [4, 5, 5, 4]
    assert outcome.deploy_tokens[1] == table.cost[rows[1], raw] + SAMPLE_TOKENS_IN + SAMPLE_TOKENS_OUT \
        + table.cost[rows[1], direct]
    # every earlier call is charged with the utility formula: lambda * tokens / train maximum
    normalizer = context.normalizer
    charge = 0.6 * decisions.prior_tokens_in[1] / normalizer.max_input_tokens \
        + 0.6 * decisions.prior_tokens_out[1] / normalizer.max_output_tokens
    assert outcome.answer_utility[1] - outcome.deploy_utility[1] == pytest.approx(charge)


def test_a_cascade_pays_each_earlier_stage_with_the_same_formula(context) -> None:
    rows = context.rows("dev")
    cascade = FrugalCascade()
    cascade.fit(context)
    decisions = cascade.decide(context, rows)
    stages = [context.arm(arm) for arm in FrugalCascade.STAGES]
    stage = np.array([stages.index(action) for action in decisions.actions])
    assert (decisions.prior_calls == stage).all()
    expected_in = np.array([context.table.tokens_in[row, stages[:s]].sum() for row, s in zip(rows, stage)])
    assert np.array_equal(decisions.prior_tokens_in, expected_in)


def test_self_routing_pays_its_probes_and_its_direct_attempt(context) -> None:
    rows = context.rows("test")
    policy = SelfRouting()
    policy.fit(context)
    outcome = score_decisions(context, rows, policy, policy.decide(context, rows))
    escalated = outcome.actions == context.arm("raw:no_think")
    assert set(outcome.calls[escalated]) <= {5} and set(outcome.calls[~escalated]) <= {4}


def test_the_paper_view_charges_the_answering_call_only(context) -> None:
    rows = context.rows("test")
    answer_context = evaluation_context(context.store, HOST, 6, CostWeights(0.6, 0.6), accounting="answer")
    decisions = context.probed_decisions(rows, np.full(len(rows), context.arm("raw:no_think")))
    utility = context.utility[rows][:, context.arm("raw:no_think")]
    assert np.array_equal(answer_context.realized_utility(rows, decisions), utility)
    assert (context.realized_utility(rows, decisions) < utility).all()
    with pytest.raises(ValueError, match="accounting is deploy or answer"):
        EvaluationSettings(HOST, accounting="cached")


def test_every_policy_reports_both_costs_and_its_calls(outcome_store: Store, tmp_path) -> None:
    store = copy_store(outcome_store, tmp_path)  # the shared store stays without checkpoints
    prepare_evaluation(store, EvaluationSettings(HOST))
    report = evaluate(store, EvaluationSettings(HOST))
    policies = report["policies"]
    assert report["accounting"] == "deploy"
    full, lite = policies["forge_full"], policies["forge_lite"]
    assert full["calls_per_query"] >= 4 and lite["calls_per_query"] == 1
    assert full["deploy_cost_k"] - full["answer_cost_k"] >= (SAMPLE_TOKENS_IN + SAMPLE_TOKENS_OUT) / 1000
    assert lite["deploy_cost_k"] == lite["answer_cost_k"] == lite["cost_k"]
    answer = evaluate(store, EvaluationSettings(HOST, accounting="answer"))["policies"]["forge_full"]
    assert answer["cost_k"] == answer["answer_cost_k"] == full["answer_cost_k"]
    assert answer["macro_utility"] > full["macro_utility"]  # the probes' price, no longer charged


def test_the_linear_floor_is_preprocessed_as_the_routers_are(context) -> None:
    ridge = RidgeUtility()
    ridge.fit(context)
    dim = load_embedder().dim
    assert ridge.standardizer.embedding_dim == dim  # the embedding columns are left as they are
    assert len(ridge.standardizer.mean) == context.features("lite").shape[1] - dim


def test_fallback_to_a_fixed_arm_drops_the_probes() -> None:
    decisions = Decisions(np.array([5, 5]), np.array([200.0, 200.0]), np.array([20.0, 20.0]), np.array([4, 4]))
    kept = decisions.where(np.array([True, False]), np.array([0, 2]))
    assert kept.actions.tolist() == [5, 2] and kept.prior_calls.tolist() == [4, 0]
    assert kept.prior_tokens_in.tolist() == [200.0, 0.0]
    assert kept.prior_tokens_out.tolist() == [20.0, 0.0]  # the probes' output tokens go too


class ProbingRouterDouble:
    """Stands in for a Full router (FallbackPolicy reads only its name and decisions): answers Raw
    on every row after the four probes."""

    name = "probing_double"

    def decide(self, context, rows: np.ndarray) -> Decisions:  # noqa: ANN001 (an EvalContext)
        return context.probed_decisions(rows, np.full(len(rows), context.arm("raw:no_think")))


def test_the_dev_fallback_charges_probe_tokens_only_where_the_router_answers(context) -> None:
    """FallbackPolicy.decide (through Decisions.where): a benchmark the dev rule sends to a fixed
    arm makes no probes, so its rows carry none of their input or output tokens."""
    rows = context.rows("test")
    policy = FallbackPolicy(ProbingRouterDouble())
    policy.rule = {"musique": "router", "popqa": "direct:no_think", "2wikimultihopqa": "direct:no_think"}
    decisions = policy.decide(context, rows)
    routed = context.table.benchmarks[rows] == "musique"
    direct = context.arm("direct:no_think")
    assert routed.sum() == 20 and (~routed).sum() == 40
    # routed: three samples (5 out each) and the greedy probe, Direct's own request (8 out)
    assert set(decisions.prior_tokens_out[routed].tolist()) == {SAMPLE_TOKENS_OUT + 8.0}
    assert decisions.prior_tokens_out[~routed].tolist() == [0.0] * 40
    assert decisions.prior_tokens_in[~routed].tolist() == [0.0] * 40
    assert decisions.prior_calls[~routed].tolist() == [0] * 40
    realized = context.realized_utility(rows, decisions)
    assert np.array_equal(realized[~routed], context.utility[rows[~routed], direct])  # nothing charged but Direct


@pytest.mark.e2e  # a flow that trains: a crossfit run with its fold routers (about 25 s on 2 busy cores)
def test_crossfit_charges_the_probes_and_compares_with_the_floor(outcome_store: Store, tmp_path) -> None:

    store = copy_store(outcome_store, tmp_path)
    env = {**os.environ, "FORGE_STORE": str(store.path)}
    command = [sys.executable, "-m", "forge_core.cli", "eval", "--host", HOST, "--protocol", "crossfit",
               "--folds", "2", "--lambda-in", "0.6", "--lambda-out", "0.6", "--json"]
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["accounting"] == "deploy"
    policies = report["policies"]
    full, lite = policies["forge_full"], policies["forge_lite"]
    assert full["deploy_cost_k"] - full["answer_cost_k"] >= (SAMPLE_TOKENS_IN + SAMPLE_TOKENS_OUT) / 1000
    assert lite["deploy_cost_k"] == lite["answer_cost_k"]
    for name in ("forge_full", "forge_lite", "bge_bm25_kl", "forge_full_fallback"):
        low, high = policies[name]["ci_utility_vs_floor"]
        assert low <= high
    assert "ci_utility_vs_floor" not in policies["ridge_utility"]
    assert report["across_split_seeds"]["split_seeds"] == [0]
    stored = json.loads(store.crossfit_runs(HOST).iloc[0]["settings"])
    assert stored["accounting"] == "deploy"  # the run records its accounting


@pytest.mark.e2e  # a flow that trains: crossfit runs at three split seeds (about 20 s on 2 busy cores)
def test_gains_are_decidable_only_above_zero_at_every_seed(outcome_store: Store, tmp_path) -> None:

    store = copy_store(outcome_store, tmp_path)
    reports = [run_crossfit(store, CrossfitSettings(HOST, folds=2, split_seed=seed,
                                                    stage1=Stage1Config(max_epochs=5))) for seed in (0, 1)]
    spread = seed_spread(reports)
    assert spread["split_seeds"] == [0, 1] and "oracle" not in spread["policies"]
    for name, row in spread["policies"].items():
        lows = [low for low, _ in row["intervals"]]
        assert row["decidable"] == (min(lows) > 0)
        assert row["spread"] == pytest.approx(max(row["gains"]) - min(row["gains"]))
    # a gain whose interval dips below zero at one seed is not decidable
    doctored = [dict(reports[0]), json.loads(json.dumps(reports[1]))]
    doctored[1]["policies"]["forge_lite"]["ci_utility_vs_best_fixed"] = [-0.01, 0.5]
    assert not seed_spread(doctored)["policies"]["forge_lite"]["decidable"]


def test_crossfit_runs_of_an_older_export_are_not_loaded(outcome_store: Store, tmp_path, caplog) -> None:

    store = copy_store(outcome_store, tmp_path / "a")
    export = tmp_path / "export"
    store.export_tables(export, ("arm_outcomes",))
    old = pd.DataFrame({"run_id": ["r"], "fold": [0], "policy": ["p"], "benchmark": ["b"], "example_id": ["e"],
                        "arm": ["raw:no_think"], "f1": [0.5], "utility": [0.4], "tokens": [700.0],
                        "finished_at": [pd.Timestamp("2026-11-01")]})
    old.to_parquet(export / "crossfit_results.parquet")
    pd.DataFrame({"run_id": ["r"], "host": [HOST], "settings": ["{}"], "folds": [1],
                  "created_at": [pd.Timestamp("2026-11-01")]}).to_parquet(export / "crossfit_runs.parquet")
    target = Store(tmp_path / "b.duckdb")
    added = target.load_exported(export)
    assert added["arm_outcomes"] > 0 and "crossfit_results" not in added and "crossfit_runs" not in added
    assert target.crossfit_runs().empty
    assert "older FORGE" in caplog.text
