"""Overview reports: per-arm means, the utility oracle and coverage, with exact numbers."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from forge_core.evaluation.cached import CachedRequest
from forge_core.evaluation.settings import EvaluationSettings
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.policies.registry import build_baselines
from forge_core.policies.routers import FallbackPolicy, RouterPolicy
from forge_core.records import ArmOutcome, Example, SplitAssignment
from forge_core.reports.tables import (
    MACRO,
    ORACLE,
    coverage_frame,
    default_alphabet_size,
    oracle_choices,
    oracle_gap_summary,
    pareto_frame,
    pareto_highlights,
    pareto_report,
    policy_summary,
    require_train_and_dev,
    store_coverage,
)
from forge_core.routing.outcome_table import OutcomeTable, load_outcome_table
from forge_core.routing.utility import CostWeights
from forge_core.store import Store

ARMS = ("direct:no_think", "summary:no_think", "raw:no_think")
F1 = {"q1": (0.0, 0.5, 1.0), "q2": (1.0, 1.0, 1.0), "q3": (0.0, 0.0, 0.0), "q4": (0.5, 1.0, 1.0)}
TOKENS_IN = {"q4": (100, 200, 500)}  # the dev query's costs exceed the train maxima
TOKENS_OUT = {"q4": (10, 20, 40)}
SPLITS = {"q1": "train", "q2": "train", "q3": "train", "q4": "dev"}
BENCHMARKS = {"q1": "a", "q2": "a", "q3": "b", "q4": "b"}


def outcome(host: str, benchmark: str, example_id: str, arm: str, f1: float | None = 1.0,
            tokens: tuple[int, int] = (10, 2), error: str | None = None) -> ArmOutcome:
    now = datetime(2026, 1, 1)
    return ArmOutcome(host, benchmark, example_id, arm, "x", "x", f1, f1, tokens[0], tokens[1], 0, 5.0,
                      error, 1, "hash", now, now)


def import_fake_benchmark(store: Store, benchmark: str, splits: dict[str, str]) -> None:
    examples = [Example(benchmark, example_id, f"question {example_id}?", ("x",)) for example_id in splits]
    assignment = SplitAssignment(benchmark, 0, "sha", splits)
    store.import_benchmark(benchmark, Path(f"{benchmark}.json"), "sha", examples, [], [assignment])


@pytest.fixture
def table() -> OutcomeTable:
    """Four queries on two benchmarks, three arms, through the store."""
    store = Store(os.environ["FORGE_STORE"])
    for benchmark in ("a", "b"):
        import_fake_benchmark(store, benchmark, {q: SPLITS[q] for q in SPLITS if BENCHMARKS[q] == benchmark})
    for query, scores in F1.items():
        for k, arm in enumerate(ARMS):
            tokens = (TOKENS_IN.get(query, (50, 150, 250))[k], TOKENS_OUT.get(query, (10, 10, 20))[k])
            store.write_arm_outcome(outcome("h", BENCHMARKS[query], query, arm, scores[k], tokens))
    store.write_arm_outcome(outcome("h", "b", "q5", ARMS[0]))  # incomplete: left out
    return load_outcome_table(store, "h", n_arms=3)


def test_oracle_picks_the_utility_argmax_with_train_maxima(table: OutcomeTable) -> None:
    normalizer = table.fit_normalizer()
    assert (normalizer.max_input_tokens, normalizer.max_output_tokens) == (250.0, 20.0)
    # q1: U = [-0.12, 0.34, 0.70]; q2: [0.88, 0.84, 0.70]; q3: [-0.12, -0.16, -0.30];
    # q4 (dev, costs up to 2.0): [0.36, 0.72, 0.40]
    assert oracle_choices(table, normalizer).tolist() == [2, 0, 0, 1]
    # without cost weights only F1 counts and ties go to the lowest action index
    assert oracle_choices(table, normalizer, CostWeights(0.0, 0.0)).tolist() == [2, 0, 0, 1]
    # heavy output cost: q1 U = [-1.0, -0.5, -1.0]; q2 ties direct and summary at 0.0
    assert oracle_choices(table, normalizer, CostWeights(0.0, 2.0)).tolist() == [1, 0, 0, 0]


def test_policy_summary_exact_means(table: OutcomeTable) -> None:
    summary = policy_summary(table, table.fit_normalizer())
    assert list(summary["benchmark"]) == ["a"] * 4 + ["b"] * 4 + [MACRO] * 4
    assert list(summary["policy"][:4]) == [*ARMS, ORACLE]
    rows = {(r.policy, r.benchmark): r for r in summary.itertuples()}
    expected = {  # (queries, f1, tokens_in, tokens_out, tokens)
        ("direct:no_think", "a"): (2, 0.5, 50, 10, 60),
        ("direct:no_think", "b"): (2, 0.25, 75, 10, 85),
        ("direct:no_think", MACRO): (4, 0.375, 62.5, 10, 72.5),
        ("summary:no_think", MACRO): (4, 0.625, 162.5, 12.5, 175),
        ("raw:no_think", "b"): (2, 0.5, 375, 30, 405),
        ("raw:no_think", MACRO): (4, 0.75, 312.5, 25, 337.5),
        (ORACLE, "a"): (2, 1.0, 150, 15, 165),
        (ORACLE, "b"): (2, 0.5, 125, 15, 140),
        (ORACLE, MACRO): (4, 0.75, 137.5, 15, 152.5),
    }
    for key, (queries, f1, tokens_in, tokens_out, tokens) in expected.items():
        row = rows[key]
        assert (row.queries, row.f1, row.tokens_in, row.tokens_out, row.tokens) == pytest.approx(
            (queries, f1, tokens_in, tokens_out, tokens)), key
    assert set(summary.loc[summary["policy"] == ORACLE, "kind"]) == {ORACLE}
    assert set(summary.loc[summary["policy"] != ORACLE, "kind"]) == {"fixed"}


def test_oracle_gap_summary_counts_ties_as_agreement(table: OutcomeTable) -> None:
    normalizer = table.fit_normalizer()
    gaps = oracle_gap_summary(table, normalizer, CostWeights(0.0, 0.0))  # no costs: utility is F1, so equal F1 ties
    assert list(gaps["policy"]) == list(table.arms)
    utility = table.f1
    in_set = utility >= utility.max(axis=1, keepdims=True) - 1e-9
    for a, row in enumerate(gaps.itertuples()):
        per_benchmark = [(utility.max(axis=1) - utility[:, a])[table.benchmarks == b].mean() for b in ("a", "b")]
        agree = [in_set[table.benchmarks == b, a].mean() for b in ("a", "b")]
        assert row.regret == pytest.approx(np.mean(per_benchmark)) and row.regret >= 0
        assert row.oracle_agreement == pytest.approx(np.mean(agree))
    assert gaps["oracle_agreement"].sum() >= 1.0  # every query has at least one oracle arm; ties add more


def test_policy_summary_without_normalizer_has_fixed_arms_only(table: OutcomeTable) -> None:
    summary = policy_summary(table)
    assert ORACLE not in set(summary["policy"]) and len(summary) == 9


def test_coverage_uses_each_hosts_alphabet() -> None:
    store = Store(os.environ["FORGE_STORE"])
    save_host_config(store, HostConfig(name="thinker", kind="openai", model="m",
                                       base_url="http://127.0.0.1:1/v1", thinking="vllm-qwen3"))
    assert default_alphabet_size(store, "thinker") == 12
    assert default_alphabet_size(store, "embedded") == 6
    assert default_alphabet_size(store, "gone") == 6
    for arm in ("direct:no_think", "direct:cot", "summary:no_think", "summary:cot", "raw:no_think", "raw:cot"):
        store.write_arm_outcome(outcome("embedded", "musique", "q1", arm))
        store.write_arm_outcome(outcome("embedded", "musique", "q2", arm,
                                        error="timeout" if arm == "raw:cot" else None))
        store.write_arm_outcome(outcome("thinker", "musique", "q1", arm))
    coverage = store_coverage(store)
    assert coverage["embedded"]["queries_complete"] == 1
    assert coverage["thinker"]["queries_complete"] == 0  # 6 of its 12 arms
    frame = coverage_frame(coverage)
    assert frame.to_dict("records") == [
        {"host": "embedded", "arms": 6, "benchmark": "musique", "complete queries": 1, "with probes": 0}]


def test_coverage_counts_only_the_arms_of_the_alphabet() -> None:
    store = Store(os.environ["FORGE_STORE"])
    six = ("direct:no_think", "direct:cot", "summary:no_think", "summary:cot", "raw:no_think", "raw:cot")
    for arm in (*six, "raw:think_low"):
        store.write_arm_outcome(outcome("embedded", "musique", "q2", arm))
        # q1: five good arms, but one of the three no_think arms failed
        store.write_arm_outcome(outcome("embedded", "musique", "q1", arm,
                                        error="timeout" if arm == "direct:no_think" else None))
    assert store.coverage({"embedded": 3})["embedded"]["queries_complete"] == 1
    assert store.coverage({"embedded": 6})["embedded"]["queries_complete"] == 1
    with pytest.raises(ValueError, match="3, 6 or 12 arms"):
        store.coverage({"embedded": 5})


def _point(policy: str, kind: str, cost_k: float, macro_f1: float, macro_utility: float) -> dict:
    return {"policy": policy, "kind": kind, "benchmark": "all", "cost_k": cost_k, "macro_f1": macro_f1,
            "macro_utility": macro_utility}


POINTS = {"points": [
    _point("always_direct", "fixed arm", 0.1, 0.3, 0.28),
    _point("always_raw", "fixed arm", 0.7, 0.5, 0.35),
    _point("bm25_threshold", "baseline", 0.5, 0.45, 0.36),
    _point(ORACLE, ORACLE, 0.3, 0.6, 0.55),
    _point("ckpt-1", "router", 0.3, 0.55, 0.5),
], "frontier": [0, 3], "queries": 10}


def test_pareto_frame_kinds_and_frontier() -> None:
    frame = pareto_frame(POINTS)
    assert list(frame["kind"]) == ["fixed arm", "fixed arm", "baseline", ORACLE, "router"]
    assert list(frame["on_frontier"]) == [True, False, False, False, True]  # the oracle is a reference, off it


def test_policy_kinds_come_from_the_policy_classes() -> None:
    kinds = {policy.name: policy.kind for policy in build_baselines()}
    assert kinds["always_raw"] == "fixed arm" and kinds["oracle"] == ORACLE
    assert kinds["tiermem"] == kinds["ridge_utility"] == "baseline"
    assert RouterPolicy("ckpt", "my-run").kind == "router"
    assert FallbackPolicy(RouterPolicy("ckpt", "forge_full")).kind == "router"


def test_pareto_frame_frontier_per_benchmark() -> None:
    points = {"points": [
        {"policy": "a", "benchmark": "x", "cost_k": 0.1, "macro_f1": 0.3, "macro_utility": 0.0},
        {"policy": "b", "benchmark": "x", "cost_k": 0.2, "macro_f1": 0.2, "macro_utility": 0.0},
        {"policy": "a", "benchmark": "y", "cost_k": 0.1, "macro_f1": 0.1, "macro_utility": 0.0},
        {"policy": "b", "benchmark": "y", "cost_k": 0.2, "macro_f1": 0.2, "macro_utility": 0.0},
    ], "frontier": [], "queries": 4}
    assert list(pareto_frame(points)["on_frontier"]) == [True, False, True, True]


def test_pareto_highlights() -> None:
    highlights = pareto_highlights(pareto_frame(POINTS))
    assert (highlights["oracle_utility"], highlights["oracle_f1"], highlights["oracle_cost_k"]) == (0.55, 0.6, 0.3)
    assert (highlights["best_policy"], highlights["best_utility"]) == ("ckpt-1", 0.5)
    assert highlights["frontier"] == ["always_direct", "ckpt-1"]


def test_pareto_report_moves_with_the_weights(trained_store) -> None:
    store, checkpoint_id = trained_store

    def request(weights: CostWeights) -> CachedRequest:
        settings = EvaluationSettings("synthetic-host", "test", weights=weights)
        return CachedRequest(settings, checkpoints=(checkpoint_id,))

    cheap = pareto_report(store, request(CostWeights(0.0, 0.0)))
    costly = pareto_report(store, request(CostWeights(1.0, 1.0)))
    assert checkpoint_id in set(cheap["policy"]) and len(cheap) == 14  # 13 baselines (oracle, 3 gates) + 1 router
    oracle = {name: frame.set_index("policy").loc[ORACLE] for name, frame in (("cheap", cheap), ("costly", costly))}
    assert oracle["costly"]["cost_k"] < oracle["cheap"]["cost_k"]  # expensive tokens: the oracle buys fewer
    assert oracle["costly"]["macro_utility"] < oracle["cheap"]["macro_utility"]
    router = {name: frame.set_index("policy").loc[checkpoint_id]
              for name, frame in (("cheap", cheap), ("costly", costly))}
    assert router["cheap"]["cost_k"] == router["costly"]["cost_k"]  # a checkpoint keeps its decisions
    by_benchmark = pareto_report(store, request(CostWeights(0.1, 0.2)), by_benchmark=True)
    assert set(by_benchmark["benchmark"]) == {"musique", "popqa", "2wikimultihopqa"}
    assert by_benchmark.groupby("benchmark")["on_frontier"].any().all()


def test_pareto_report_needs_dev_queries(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    store.write_arm_outcome(*[outcome("h", "a", "q1", arm) for arm in ARMS])
    with pytest.raises(ValueError, match="no complete train queries"):
        require_train_and_dev(load_outcome_table(store, "h", 3))


def _crossfit_report(lambda_in: float, gains: dict[str, float]) -> dict:
    """A crossfit report with the best fixed arm at utility 0.3 and the given policies' gains."""
    def row(utility: float, cost: float, f1: float, kind: str = "router") -> dict:
        return {"kind": kind, "macro_utility": utility, "macro_f1": f1, "cost_k": cost, "ci_f1": [f1 - 0.02, f1 + 0.02],
                "ci_utility_vs_best_fixed": [utility - 0.3 - 0.01, utility - 0.3 + 0.01], "ci_f1_vs_always_raw": [0, 0]}
    policies = {"always_raw": row(0.3, 0.4, 0.35, "fixed arm"), "always_direct": row(0.1, 0.1, 0.2, "fixed arm"),
                ORACLE: row(0.5, 0.05, 0.6, ORACLE)}
    policies |= {name: row(0.3 + gain, 0.3, 0.36) for name, gain in gains.items()}
    return {"lambda_in": lambda_in, "lambda_out": lambda_in, "best_fixed_policy": "always_raw",
            "best_fixed_arm": "raw:no_think", "policies": policies}


def test_crossfit_frontier_leaves_the_oracle_out() -> None:
    from forge_core.reports.tables import crossfit_frame

    frame = crossfit_frame(_crossfit_report(0.1, {"forge_lite": 0.02})).set_index("policy")
    assert not frame.loc[ORACLE, "on_frontier"]  # cheaper and better than all, yet a reference only
    assert frame.loc["always_direct", "on_frontier"] and frame.loc["forge_lite", "on_frontier"]
    assert not frame.loc["always_raw", "on_frontier"]  # forge_lite: cheaper, higher F1
    assert frame.loc["forge_lite", "gain"] == pytest.approx(0.02)
    assert frame.loc["forge_lite", "kind"] == "router" and frame.loc["always_raw", "kind"] == "fixed arm"


def test_routing_gain_frame_follows_the_weights() -> None:
    from forge_core.reports.tables import routing_gain_frame

    reports = [_crossfit_report(1.5, {"forge_lite": 0.05, "ridge_utility": 0.0}),
               _crossfit_report(0.1, {"forge_lite": 0.02, "ridge_utility": 0.01})]
    frame = routing_gain_frame(reports)
    assert list(frame["weights"]) == ["0.1 / 0.1", "0.1 / 0.1", "1.5 / 1.5", "1.5 / 1.5"]  # by total weight
    lite = frame[frame["policy"] == "forge_lite"].set_index("weights")
    assert lite.loc["1.5 / 1.5", "oracle_share"] == pytest.approx(0.05 / 0.2)  # oracle gain 0.5 - 0.3
    assert lite.loc["0.1 / 0.1", "gain_low"] == pytest.approx(0.01)
    assert "forge_full" not in set(frame["policy"])  # absent from the reports: left out, not zero
