"""A stored crossfit report's per-policy verdicts and the run at given weights, for the tables and
pages that show them. What to deploy is stated by one rule only, `forge_core.evaluation.decide`
(`decide_from_outcomes`): `forge decide`, the Pareto page and `forge eval crossfit` all call it.
"""

from __future__ import annotations

from collections.abc import Sequence

from forge_core.evaluation.deploy_rule import beats_best_fixed
from forge_core.routing.utility import CostWeights


def decidable_policies(report: dict) -> dict[str, bool]:
    """Per policy of a crossfit report: True when the 95% interval of its utility gain over the
    run's best fixed arm lies above zero; the oracle and the fixed arms (by their `Policy.kind`)
    are never above it, so False (the rule's own test, `deploy_rule.beats_best_fixed`)."""
    return {name: beats_best_fixed(row["kind"], row["ci_utility_vs_best_fixed"])
            for name, row in report["policies"].items()}


def report_at_weights(reports: Sequence[dict], weights: CostWeights, accounting: str,
                      tolerance: float = 1e-9) -> dict | None:
    """The first (newest) stored crossfit report at these cost weights and accounting, else None."""
    for report in reports:
        if (abs(report["lambda_in"] - weights.lambda_in) <= tolerance
                and abs(report["lambda_out"] - weights.lambda_out) <= tolerance
                and report["accounting"] == accounting):
            return report
    return None
