"""`forge decide`'s rule on small synthetic out-of-fold tables (exact numbers), its names kept in
step with the registry, and its one-line refusal without a conditioned crossfit run."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from forge_core.errors import MissingStep
from forge_core.evaluation import crossfit
from forge_core.evaluation.decide import (
    CONDITIONED_VARIANTS,
    FLOOR_POLICY,
    conditioned_run,
    decide_from_outcomes,
    floor_verdict,
)
from forge_core.policies.kinds import BASELINE_KIND, FIXED_ARM_KIND, ROUTER_KIND
from forge_core.policies.registry import ConditionedRouter, variants
from forge_core.store import Store

N = 40  # queries, one benchmark


def frame(name: str, kind: str, arm: str, utility: np.ndarray, f1: np.ndarray, tokens_in: float,
          tokens_out: float) -> pd.DataFrame:
    return pd.DataFrame({"policy": name, "kind": kind, "row": np.arange(N), "benchmark": "b",
                         "example_id": [f"q{i}" for i in range(N)], "arm": arm, "f1": f1, "utility": utility,
                         "tokens_in": tokens_in, "tokens_out": tokens_out})


def table(router_utility: np.ndarray) -> pd.DataFrame:
    """Raw: utility 0.5 +- 0.1 alternating; Summary: 0.49 +- 0.1 in the opposite phase (so the
    difference -0.01 +- 0.2 is not decidable) at fewer tokens; the floor 0.3; and one router."""
    sign = np.where(np.arange(N) % 2 == 0, 1.0, -1.0)
    raw, summary = 0.5 + 0.1 * sign, 0.49 - 0.1 * sign
    return pd.concat([
        frame("always_raw", FIXED_ARM_KIND, "raw:no_think", raw, raw + 0.1, 380.0, 4.0),
        frame("always_summary", FIXED_ARM_KIND, "summary:no_think", summary, summary + 0.05, 250.0, 4.0),
        frame(FLOOR_POLICY, BASELINE_KIND, "summary:no_think", np.full(N, 0.3), np.full(N, 0.4), 250.0, 4.0),
        frame("forge_lite_cond", ROUTER_KIND, "summary:no_think", router_utility, router_utility, 300.0, 10.0)])


def test_a_cheaper_policy_not_decidably_worse_is_preferred() -> None:
    decided = decide_from_outcomes(table(np.full(N, 0.45)))
    assert decided["best_fixed_policy"] == "always_raw"
    assert decided["leader"] == "always_raw"
    assert decided["router_candidates"] == []  # the router does not beat raw decidably
    assert sorted(decided["tied_with_leader"]) == ["always_raw", "always_summary"]
    assert decided["deploy"] == "always_summary" and decided["deploy_arm"] == "summary:no_think"
    summary = decided["policies"]["always_summary"]
    assert summary["macro_utility"] == pytest.approx(0.49)
    assert summary["gain_vs_best_fixed"]["utility"]["difference"] == pytest.approx(-0.01)
    low, high = summary["gain_vs_best_fixed"]["utility"]["ci"]
    assert low < 0 < high
    assert summary["gain_vs_best_fixed"]["tokens_in"]["difference"] == pytest.approx(-130.0)
    assert summary["gain_vs_best_fixed"]["tokens_out"]["difference"] == pytest.approx(0.0)
    assert summary["vs_floor"]["difference"] == pytest.approx(0.19)


def test_a_decidable_gain_wins_over_cheaper_arms() -> None:
    decided = decide_from_outcomes(table(np.full(N, 0.6)))
    assert decided["router_candidates"] == ["forge_lite_cond"]
    assert decided["leader"] == "forge_lite_cond"
    assert decided["tied_with_leader"] == ["forge_lite_cond"]  # both arms are decidably below it
    assert decided["deploy"] == "forge_lite_cond" and decided["deploy_arm"] is None
    gain = decided["policies"]["forge_lite_cond"]["gain_vs_best_fixed"]
    assert gain["utility"]["difference"] == pytest.approx(0.1)
    assert gain["utility"]["ci"][0] > 0
    assert gain["tokens_in"]["difference"] == pytest.approx(-80.0)
    assert gain["tokens_out"]["difference"] == pytest.approx(6.0)


def test_the_floor_verdict_reads_the_interval() -> None:
    assert floor_verdict({"difference": 0.02, "ci": [0.005, 0.04]}) == "decidably above"
    assert floor_verdict({"difference": -0.024, "ci": [-0.045, -0.005]}) == "decidably below"
    assert floor_verdict({"difference": -0.004, "ci": [-0.012, 0.004]}) == "not decidably different from"
    decided = decide_from_outcomes(table(np.full(N, 0.45)))
    assert floor_verdict(decided["policies"]["always_summary"]["vs_floor"]) == "decidably above"


def test_the_names_match_the_registry() -> None:
    assert CONDITIONED_VARIANTS == variants(ConditionedRouter)
    assert FLOOR_POLICY == crossfit.FLOOR_POLICY


def test_without_a_conditioned_crossfit_run_it_names_the_command(tmp_path) -> None:
    store = Store(tmp_path / "empty.duckdb")
    with pytest.raises(MissingStep, match=r"run `forge eval crossfit --host embedded`"):
        conditioned_run(store, "embedded")


def test_every_interval_is_its_pairs_own_bootstrap() -> None:
    from forge_core.statistics import paired_bootstrap_ci

    rng = np.random.default_rng(7)
    router = 0.45 + 0.2 * rng.random(N)
    outcomes = table(router)
    decided = decide_from_outcomes(outcomes)
    column = {name: frame.sort_values("row") for name, frame in outcomes.groupby("policy")}
    benchmarks = column["always_raw"]["benchmark"].to_numpy()

    def interval(name: str, other: str, key: str) -> tuple[float, float]:
        return paired_bootstrap_ci(column[name][key].to_numpy(), column[other][key].to_numpy(), benchmarks)

    router_row = decided["policies"]["forge_lite_cond"]
    for key in ("utility", "f1", "tokens_in", "tokens_out"):
        assert router_row["gain_vs_best_fixed"][key]["ci"] == pytest.approx(
            interval("forge_lite_cond", "always_raw", key), abs=1e-12)
    assert router_row["vs_floor"]["ci"] == pytest.approx(interval("forge_lite_cond", FLOOR_POLICY, "utility"),
                                                         abs=1e-12)
