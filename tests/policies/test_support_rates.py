"""Support rates: exact shares over the verdicts of the chosen arms, coverage of a partial run, and
the rates in the Pareto points and `forge eval`'s cached report."""

from __future__ import annotations

import numpy as np
import pytest

from forge_core.policies.support_rates import support_rate_frame, support_summary, support_verdicts
from forge_core.routing.outcome_table import load_outcome_table
from forge_core.routing.utility import CostWeights
from forge_core.store import Store

from support.judging import write_support_verdicts
from support.stores import copy_store

HOST = "synthetic-host"


def test_rates_count_the_chosen_arms_verdicts_only_and_say_the_coverage() -> None:
    scores = np.array([[1.0, 0.0], [1.0, 0.5], [np.nan, 1.0], [0.0, np.nan]])
    benchmarks = np.array(["a", "a", "b", "b"])
    first = support_summary(scores, np.array([0, 0, 0, 0]), benchmarks)
    assert first == {"support_rate": 0.5, "unsupported_rate": 0.5, "support_coverage": 0.75,
                     "ci_support_rate": [0.5, 0.5], "ci_unsupported_rate": [0.5, 0.5],
                     "support_per_benchmark": {
                         "a": {"support_rate": 1.0, "unsupported_rate": 0.0, "support_coverage": 1.0},
                         "b": {"support_rate": 0.0, "unsupported_rate": 1.0, "support_coverage": 0.5}}}
    second = support_summary(scores, np.array([1, 1, 1, 0]), benchmarks)
    assert (second["support_rate"], second["unsupported_rate"], second["support_coverage"]) == (0.25, 0.5, 1.0)
    low, high = second["ci_support_rate"]
    assert 0 <= low < 0.25 < high <= 0.5
    # by hand: the chosen verdicts are a (contradicted, not enough info) and b (supported,
    # contradicted). Resampled within each benchmark, a's support share is always 0 and b's is 0, 1/2
    # or 1 (chances 1/4, 1/2, 1/4): the macro is 0, 0.25 or 0.5 with a quarter of the mass at each
    # end, so the 2.5th and 97.5th percentiles are the ends. The unsupported shares of a and b are
    # each 0, 1/2 or 1: the macro runs from 0 to 1 in quarters, each end with chance 1/16 > 2.5%.
    assert second["ci_support_rate"] == [0.0, 0.5]
    assert second["ci_unsupported_rate"] == [0.0, 1.0]
    none = support_summary(np.full((2, 2), np.nan), np.array([0, 1]), np.array(["a", "b"]))
    assert none == {"support_rate": None, "unsupported_rate": None, "support_coverage": 0.0,
                    "ci_support_rate": None, "ci_unsupported_rate": None,
                    "support_per_benchmark": {}}


def write_verdicts(store: Store, by_arm: dict[str, float]) -> None:
    write_support_verdicts(store, HOST, by_arm)


@pytest.fixture()
def store(outcome_store, tmp_path) -> Store:
    return copy_store(outcome_store, tmp_path)


def test_pareto_points_give_each_policy_its_own_rate_and_name_the_evaluator(store) -> None:
    from forge_core.evaluation.cached import CachedRequest, pareto_points
    from forge_core.evaluation.settings import EvaluationSettings

    request = CachedRequest(EvaluationSettings(HOST, "test", weights=CostWeights(0.1, 0.2)), checkpoints=())
    empty = pareto_points(store, request)
    assert empty["support_evaluator"] is None
    assert all(p["support_rate"] is None and p["support_coverage"] == 0.0 for p in empty["points"])
    write_verdicts(store, {"raw:no_think": 1.0, "direct:no_think": 0.0})
    points = {p["policy"]: p for p in pareto_points(store, request)["points"]}
    assert (points["always_raw"]["support_rate"], points["always_raw"]["support_coverage"]) == (1.0, 1.0)
    assert (points["always_direct"]["support_rate"], points["always_direct"]["support_coverage"]) == (0.0, 1.0)
    assert points["always_summary"]["support_rate"] is None
    assert pareto_points(store, request)["support_evaluator"] == "judge:double@cfg1"


def test_the_overview_frame_has_one_row_per_arm_and_benchmark_with_verdicts(store) -> None:
    write_verdicts(store, {"raw:no_think": 1.0, "direct:no_think": 0.5})
    table = load_outcome_table(store, HOST).split("test")
    frame = support_rate_frame(support_verdicts(store, table), table)
    assert set(frame["arm"]) == {"raw:no_think", "direct:no_think"}
    raw = frame[(frame["arm"] == "raw:no_think") & (frame["benchmark"] == "macro")].iloc[0]
    direct = frame[(frame["arm"] == "direct:no_think") & (frame["benchmark"] == "macro")].iloc[0]
    assert (raw["support_rate"], direct["support_rate"], direct["unsupported_rate"]) == (1.0, 0.0, 0.0)
    assert set(frame["benchmark"]) == {"musique", "popqa", "2wikimultihopqa", "macro"}


def test_the_cached_report_has_the_rates_beside_gold_recall_and_its_evaluator(store) -> None:
    import json

    from forge_core.evaluation.cached import evaluate
    from forge_core.evaluation.settings import EvaluationSettings
    from forge_core.evaluation.setup import prepare_evaluation

    settings = EvaluationSettings(HOST, split="test", policy_names=("always_raw", "always_direct", "always_summary"))
    prepare_evaluation(store, settings)  # the routers the setup loads
    write_verdicts(store, {"raw:no_think": 1.0, "direct:no_think": 0.0})
    report = json.loads(json.dumps(evaluate(store, settings)))  # what `forge eval --json` prints
    assert report["support_evaluator"] == "judge:double@cfg1"
    raw, direct, summary = (report["policies"][name] for name in ("always_raw", "always_direct", "always_summary"))
    assert "gold_recall" in raw and (raw["support_rate"], raw["unsupported_rate"]) == (1.0, 0.0)
    assert (direct["support_rate"], direct["unsupported_rate"], direct["support_coverage"]) == (0.0, 1.0, 1.0)
    assert set(raw["support_per_benchmark"]) == {"musique", "popqa", "2wikimultihopqa"}
    assert (summary["support_rate"], summary["support_coverage"]) == (None, 0.0)
