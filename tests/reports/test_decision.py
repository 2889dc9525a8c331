"""A stored crossfit report's per-policy verdicts, the run at given weights, and its named points."""

from __future__ import annotations

import pandas as pd

from forge_core.reports.decision import decidable_policies, report_at_weights
from forge_core.reports.tables import crossfit_frame, merge_identical_points
from forge_core.routing.utility import CostWeights


def _row(utility: float, low: float, high: float, kind: str = "router") -> dict:
    return {"macro_utility": utility, "macro_f1": utility + 0.1, "cost_k": 0.2, "ci_f1": [0.0, 1.0],
            "ci_utility_vs_best_fixed": [low, high], "deployable": kind != "oracle", "kind": kind}


def _report(policies: dict, lambda_in: float = 0.6, accounting: str = "deploy") -> dict:
    return {"lambda_in": lambda_in, "lambda_out": lambda_in, "accounting": accounting,
            "best_fixed_policy": "always_summary", "best_fixed_arm": "summary:no_think",
            "policies": {"always_summary": _row(0.20, 0.0, 0.0, "fixed arm"),
                         "always_raw_cot": _row(0.25, 0.01, 0.09, "fixed arm"),  # cannot be: still never deployed
                         "oracle": _row(0.60, 0.35, 0.45, "oracle"), **policies}}


def test_only_a_policy_whose_interval_lies_above_zero_is_decidable() -> None:
    """The per-policy verdict the crossfit table shows (what to deploy is `evaluation.decide`'s):
    the lower bound decides; fixed arms and the oracle never are."""
    report = _report({"forge_lite": _row(0.235, 0.017, 0.051), "forge_full": _row(0.25, -0.01, 0.11),
                      "ridge_utility": _row(0.21, 0.002, 0.018, "baseline")})
    assert decidable_policies(report) == {"always_summary": False, "always_raw_cot": False, "oracle": False,
                                          "forge_lite": True, "forge_full": False, "ridge_utility": True}


def test_the_crossfit_table_has_a_decidable_column() -> None:
    frame = crossfit_frame(_report({"forge_lite": _row(0.235, 0.017, 0.051)})).set_index("policy")
    assert frame["decidable"].to_dict() == {"always_summary": False, "always_raw_cot": False, "oracle": False,
                                            "forge_lite": True}


def test_report_at_weights_matches_weights_and_accounting() -> None:
    reports = [_report({}, 0.6, "answer"), _report({}, 0.6), _report({}, 0.1)]
    assert report_at_weights(reports, CostWeights(0.6, 0.6), "deploy") is reports[1]
    assert report_at_weights(reports, CostWeights(0.6, 0.6), "answer") is reports[0]
    assert report_at_weights(reports, CostWeights(0.3, 0.3), "deploy") is None


def test_identical_points_are_merged_into_one_labelled_point() -> None:
    frame = pd.DataFrame({"policy": ["always_summary", "tiermem", "forge_lite"],
                          "kind": ["fixed arm", "baseline", "router"], "benchmark": "all",
                          "cost_k": [0.3, 0.3, 0.3], "macro_f1": [0.4, 0.4, 0.41], "macro_utility": [0.2, 0.2, 0.2],
                          "on_frontier": [False, True, True]})
    merged = merge_identical_points(frame).set_index("policy")
    assert list(merged.index) == ["always_summary = tiermem", "forge_lite"]
    assert merged.loc["always_summary = tiermem", "policies"] == ("always_summary", "tiermem")
    assert merged.loc["always_summary = tiermem", "kind"] == "fixed arm"
    assert merged.loc["always_summary = tiermem", "on_frontier"]  # on the frontier when either is
    assert merged.loc["forge_lite", "policies"] == ("forge_lite",)
