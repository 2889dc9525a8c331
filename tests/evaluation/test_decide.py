"""`forge decide`'s one rule on small synthetic out-of-fold tables (exact numbers): only servable
policies compete, a router only on a decidable gain, the cheapest among the policies tied with the
leader, a token budget as a constraint; its names kept in step with the registry."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from forge_core.errors import InvalidInput
from forge_core.evaluation import crossfit
from forge_core.evaluation.decide import (
    CONDITIONED_VARIANTS,
    FLOOR_POLICY,
    ROUTER_VARIANTS,
    conditioned_anchor,
    decide_from_outcomes,
    exclusion_reason,
    floor_verdict,
    run_at_weights,
)
from forge_core.evaluation.recipe import default_recipe
from forge_core.evaluation.recipe_choice import MeasuredRecipe
from forge_core.policies.kinds import BASELINE_KIND, FIXED_ARM_KIND, ORACLE_KIND, ROUTER_KIND
from forge_core.policies.registry import ConditionedRouter, TrainedRouter, variants
from forge_core.routing.utility import CostWeights

N = 40  # queries, one benchmark
SIGN = np.where(np.arange(N) % 2 == 0, 1.0, -1.0)  # alternating +1 / -1


def frame(name: str, kind: str, arm: str, utility: np.ndarray, f1: np.ndarray, tokens: float) -> pd.DataFrame:
    return pd.DataFrame({"policy": name, "kind": kind, "row": np.arange(N), "benchmark": "b", "arm": arm,
                         "f1": f1, "utility": utility, "tokens": tokens})


def table(router_utility: np.ndarray, *extra: pd.DataFrame) -> pd.DataFrame:
    """Raw: utility 0.5 +- 0.1 alternating; Summary: 0.49 +- 0.1 in the opposite phase (so the
    difference -0.01 +- 0.2 is not decidable) at fewer tokens; the floor 0.3; one router."""
    raw, summary = 0.5 + 0.1 * SIGN, 0.49 - 0.1 * SIGN
    return pd.concat([
        frame("always_raw", FIXED_ARM_KIND, "raw:no_think", raw, raw + 0.1, 384.0),
        frame("always_summary", FIXED_ARM_KIND, "summary:no_think", summary, summary + 0.05, 254.0),
        frame(FLOOR_POLICY, BASELINE_KIND, "summary:no_think", np.full(N, 0.3), np.full(N, 0.4), 254.0),
        frame("forge_lite_cond", ROUTER_KIND, "summary:no_think", router_utility, router_utility, 310.0), *extra])


def test_a_cheaper_policy_not_decidably_worse_is_preferred() -> None:
    decided = decide_from_outcomes(table(np.full(N, 0.45)))
    assert decided["best_fixed_policy"] == "always_raw"
    assert decided["leader"] == "always_raw"
    assert decided["router_candidates"] == []  # the router does not beat raw decidably
    assert sorted(decided["tied_with_leader"]) == ["always_raw", "always_summary"]
    assert decided["deploy"] == "always_summary" and decided["deploy_arm"] == "summary:no_think"
    assert decided["challenger"] == "forge_lite_cond"
    summary = decided["policies"]["always_summary"]
    assert summary["macro_utility"] == pytest.approx(0.49)
    assert summary["gain_vs_best_fixed"]["utility"]["difference"] == pytest.approx(-0.01)
    low, high = summary["gain_vs_best_fixed"]["utility"]["ci"]
    assert low < 0 < high
    assert summary["gain_vs_best_fixed"]["tokens"]["difference"] == pytest.approx(-130.0)
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
    assert gain["tokens"]["difference"] == pytest.approx(-74.0)


def test_a_router_whose_interval_only_reaches_above_zero_is_no_candidate() -> None:
    """A mean gain of +0.04 whose 95% interval straddles zero: the highest utility, yet no candidate
    (the lower bound decides, never the upper)."""
    router = 0.54 + 0.3 * SIGN  # the raw arm plus 0.04 +- 0.2: its interval is about [-0.02, +0.10]
    decided = decide_from_outcomes(table(router))
    low, high = decided["policies"]["forge_lite_cond"]["gain_vs_best_fixed"]["utility"]["ci"]
    assert low < 0 < high
    assert decided["router_candidates"] == []
    assert decided["leader"] == "always_raw" and decided["deploy"] == "always_summary"


def test_a_cheaper_arm_decidably_below_the_leader_is_not_tied() -> None:
    """Direct is far cheaper but decidably worse than Raw: Raw's tie set leaves it out."""
    direct = frame("always_direct", FIXED_ARM_KIND, "direct:no_think", 0.5 + 0.1 * SIGN - 0.05, np.full(N, 0.2), 40.0)
    decided = decide_from_outcomes(table(np.full(N, 0.45), direct))
    high = decided["policies"]["always_direct"]["gain_vs_best_fixed"]["utility"]["ci"][1]
    assert high < 0
    assert "always_direct" not in decided["tied_with_leader"]
    assert decided["deploy"] == "always_summary"


def test_what_cannot_be_served_never_competes_and_says_why() -> None:
    """Ridge and a literature baseline beat the best fixed arm decidably; neither is deployed, each
    is reported with its reason; the oracle is not even a row."""
    cascade = frame("frugal_cascade", BASELINE_KIND, "raw:no_think", np.full(N, 0.9), np.full(N, 0.9), 300.0)
    oracle = frame("oracle", ORACLE_KIND, "raw:no_think", np.full(N, 1.0), np.full(N, 1.0), 1.0)
    ridge = frame(FLOOR_POLICY + "_copy", BASELINE_KIND, "raw:no_think", np.full(N, 0.8), np.full(N, 0.8), 300.0)
    decided = decide_from_outcomes(table(np.full(N, 0.45), cascade, oracle, ridge))
    assert decided["deploy"] == "always_summary"
    assert decided["router_candidates"] == []
    assert set(decided["excluded"]) == {FLOOR_POLICY, "frugal_cascade", FLOOR_POLICY + "_copy"}
    assert decided["excluded"][FLOOR_POLICY].startswith("the linear floor")
    assert "oracle" not in decided["policies"]
    assert decided["policies"]["frugal_cascade"]["gain_vs_best_fixed"]["utility"]["ci"][0] > 0


def test_a_budget_keeps_out_what_is_decidably_over_it() -> None:
    """At a budget of 300 tokens Raw (384) is decidably over it: Summary is the best fixed arm, and the
    router, 310 +- 20 tokens a query, is over it too (its interval's lower bound is above 300). At 312,
    inside the router's interval, the router is within the budget (the lower bound decides)."""
    outcomes = table(np.full(N, 0.6))
    outcomes.loc[outcomes["policy"] == "forge_lite_cond", "tokens"] = 310.0 + 20.0 * SIGN
    decided = decide_from_outcomes(outcomes, budget_tokens=300.0)
    assert decided["best_fixed_policy"] == "always_summary"
    assert set(decided["over_budget"]) == {"always_raw", "forge_lite_cond"}
    assert decided["deploy"] == "always_summary"
    within = decide_from_outcomes(outcomes, budget_tokens=312.0)
    low, high = within["policies"]["forge_lite_cond"]["tokens_ci"]
    assert low < 312.0 < high
    assert within["deploy"] == "forge_lite_cond" and within["budget_tokens"] == 312.0
    with pytest.raises(InvalidInput, match="no fixed arm meets a budget of 100 tokens"):
        decide_from_outcomes(outcomes, budget_tokens=100.0)


def test_the_floor_verdict_reads_the_interval() -> None:
    assert floor_verdict({"difference": 0.02, "ci": [0.005, 0.04]}) == "decidably above"
    assert floor_verdict({"difference": -0.024, "ci": [-0.045, -0.005]}) == "decidably below"
    assert floor_verdict({"difference": -0.004, "ci": [-0.012, 0.004]}) == "not decidably different from"


def test_the_names_match_the_registry() -> None:
    assert CONDITIONED_VARIANTS == variants(ConditionedRouter)
    assert ROUTER_VARIANTS == variants(TrainedRouter) | variants(ConditionedRouter)
    assert FLOOR_POLICY == crossfit.FLOOR_POLICY
    assert exclusion_reason("forge_full_fallback", ROUTER_KIND).startswith("the dev fallback rule")
    assert exclusion_reason("always_raw_cot", FIXED_ARM_KIND) is None
    for guard in ("forge_lite_guard", "forge_lite_cond_mix_guard"):  # served with `forge serve --guard`
        assert exclusion_reason(guard, ROUTER_KIND) is None
    assert exclusion_reason("ridge_utility_mix_guard", ROUTER_KIND).startswith("a guard around ridge_utility")


def test_every_interval_is_its_pairs_own_bootstrap() -> None:
    from forge_core.statistics import paired_bootstrap_ci

    rng = np.random.default_rng(7)
    outcomes = table(0.45 + 0.2 * rng.random(N))
    decided = decide_from_outcomes(outcomes)
    column = {name: rows.sort_values("row") for name, rows in outcomes.groupby("policy")}
    benchmarks = column["always_raw"]["benchmark"].to_numpy()

    def interval(name: str, other: str, key: str) -> tuple[float, float]:
        return paired_bootstrap_ci(column[name][key].to_numpy(), column[other][key].to_numpy(), benchmarks)

    router_row = decided["policies"]["forge_lite_cond"]
    for key in ("utility", "f1", "tokens"):
        assert router_row["gain_vs_best_fixed"][key]["ci"] == pytest.approx(
            interval("forge_lite_cond", "always_raw", key), abs=1e-12)
    assert router_row["vs_floor"]["ci"] == pytest.approx(interval("forge_lite_cond", FLOOR_POLICY, "utility"),
                                                         abs=1e-12)


def measured(run_id: str, lambda_in: float, lambda_out: float, split_seed: int = 0, stage: int = 1,
             accounting: str = "deploy", suffix: str = "") -> MeasuredRecipe:
    settings = {"lambda_in": lambda_in, "lambda_out": lambda_out, "split_seed": split_seed, "stage": stage,
                "accounting": accounting, "conditioning": {"draws": 1}}
    return MeasuredRecipe(default_recipe(6, "e"), run_id, suffix, "", settings)


def test_which_run_decides_is_never_a_matter_of_date() -> None:
    """Runs newest first: at stored weights the lowest split seed's run under the asked accounting, a
    run of the recipe's own stage before a newer Stage-2 run's parents; elsewhere the Stage-1 run
    nearest the default weights, whichever is newer."""
    runs = [measured("newest-far", 1.5, 1.5), measured("seed-1", 0.6, 0.6, split_seed=1),
            measured("answer", 0.6, 0.6, accounting="answer"), measured("parents", 0.6, 0.6, stage=2, suffix="_stage1"),
            measured("seed-0", 0.6, 0.6),
            measured("stage-2", 0.1, 0.2, stage=2), measured("oldest-near", 0.1, 0.2)]
    assert run_at_weights(runs, CostWeights(0.6, 0.6), "deploy").run_id == "seed-0"
    assert run_at_weights(runs, CostWeights(0.6, 0.6), "answer").run_id == "answer"
    assert run_at_weights(runs, CostWeights(0.37, 0.74), "deploy") is None
    assert conditioned_anchor(runs).run_id == "oldest-near"


def test_within_a_budget_the_best_mix_is_deployed_unless_a_router_beats_it() -> None:
    """Summary (254 tokens, F1 0.54) and Raw (384, F1 0.60) are the hull. At 300 tokens the router is
    over the budget: the mix of the two that spends 300 is deployed, as `forge serve --mix` with the
    shares to 9 digits (the rule's Summary stays the policy the table names). At 312 the router
    (F1 0.6) is decidably above the mix (0.567): it is deployed. At 500 the mix is Raw alone, the
    router is not decidably above it (F1 0.6 against 0.6 +- 0.1): Raw is deployed."""
    outcomes = table(np.full(N, 0.6))
    outcomes.loc[outcomes["policy"] == "forge_lite_cond", "tokens"] = 310.0 + 20.0 * SIGN
    at_300 = decide_from_outcomes(outcomes, budget_tokens=300.0)["mix"]
    assert at_300["arms"] == ["summary:no_think", "raw:no_think"]
    assert at_300["shares"] == pytest.approx([84 / 130, 46 / 130]) and at_300["tokens"] == 300.0
    assert at_300["gains"] == {} and at_300["deployed"] and at_300["servable"]
    assert decide_from_outcomes(outcomes, budget_tokens=300.0)["deploy_mix"] == (
        f"summary:no_think={84 / 130:.9g},raw:no_think={46 / 130:.9g}")
    at_312 = decide_from_outcomes(outcomes, budget_tokens=312.0)
    assert at_312["deploy_mix"] is None
    gain = at_312["mix"]["gains"]["forge_lite_cond"]
    assert gain["difference"] == pytest.approx(0.6 - (0.54 * 72 + 0.6 * 58) / 130) and gain["verdict"] == "above"
    assert not at_312["mix"]["deployed"] and at_312["deploy"] == "forge_lite_cond"
    at_500 = decide_from_outcomes(outcomes, budget_tokens=500.0)
    assert at_500["mix"]["arms"] == ["raw:no_think"] and at_500["mix"]["deployed"]
    assert at_500["deploy"] == "always_raw" and at_500["deploy_arm"] == "raw:no_think" and not at_500["deploy_mix"]
    assert decide_from_outcomes(outcomes)["mix"] is None  # no budget, no mix


def test_an_exact_tie_goes_to_fewer_tokens_then_the_name_whatever_the_listing_order() -> None:
    """Raw and Summary of the same utility on every query: the best fixed arm is the cheaper, Summary;
    two conditioned routers of the same utility and tokens, both decidably above it: the leader and
    the deployed policy is the first by name. The same whichever order the policies are listed in
    (a stored run lists them by name, fold decisions in their own order)."""
    tied = 0.5 + 0.1 * SIGN
    frames = {"always_raw": frame("always_raw", FIXED_ARM_KIND, "raw:no_think", tied, tied + 0.1, 384.0),
              "always_summary": frame("always_summary", FIXED_ARM_KIND, "summary:no_think", tied, tied, 254.0),
              "forge_lite_cond": frame("forge_lite_cond", ROUTER_KIND, "raw:no_think", np.full(N, 0.7),
                                       np.full(N, 0.7), 300.0),
              "forge_full_cond": frame("forge_full_cond", ROUTER_KIND, "raw:no_think", np.full(N, 0.7),
                                       np.full(N, 0.7), 300.0)}
    for order in (list(frames), list(reversed(frames))):
        decided = decide_from_outcomes(pd.concat([frames[name] for name in order]))
        assert decided["best_fixed_policy"] == "always_summary", order
        assert decided["leader"] == decided["deploy"] == "forge_full_cond", order
        assert decided["challenger"] == "forge_full_cond", order
