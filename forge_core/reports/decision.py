"""What to deploy at a cost weight, and whether the data decide it.

The rule is the paper's dev fallback rule applied to cross-fitted results: a policy beats the best
fixed arm decidably when the lower bound of the paired bootstrap 95% interval of its utility gain
over that arm is above zero. Among the policies that do, the one of highest macro utility is the
one to deploy; when none does, the best fixed arm is (a router that may not beat it is not worth
its risk), or rather the cheapest fixed arm whose utility is not decidably below it (its interval
contains 0: e.g. Summary beside Raw at the same utility for fewer tokens). The oracle is descriptive
only and never a candidate; nor are fixed arms, which never beat the best fixed arm. `forge decide`
(`forge_core.evaluation.decide`) applies the same rule at any weights.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from forge_core.policies.kinds import FIXED_ARM_KIND, ORACLE_KIND
from forge_core.routing.utility import CostWeights


@dataclass(frozen=True)
class Decision:
    """The deployment decision of one crossfit run (one cost weight, one accounting)."""

    deploy: str  # the policy to deploy (the best fixed arm's policy when nothing beats it decidably)
    best_fixed_policy: str  # e.g. "always_summary"
    best_fixed_arm: str  # e.g. "summary:no_think"
    decidable: bool  # True: `deploy` beats the best fixed arm with the interval above zero
    gain: float  # macro utility gain of `deploy` over the best fixed arm (0.0 when it is that arm)
    gain_low: float  # paired bootstrap 95% interval of the gain
    gain_high: float
    weights: CostWeights  # the run's cost weights

    def sentence(self) -> str:
        """One line: e.g. "Deploy forge_lite: +0.035 utility [+0.017, +0.051] over summary:no_think"."""
        if self.decidable:
            return (f"Deploy {self.deploy}: {self.gain:+.3f} utility [{self.gain_low:+.3f}, {self.gain_high:+.3f}] "
                    f"over {self.best_fixed_arm}")
        if self.deploy == self.best_fixed_policy:
            return f"No policy beats {self.best_fixed_arm} decidably here: deploy the fixed arm ({self.deploy})"
        return (f"No policy beats {self.best_fixed_arm} decidably here: deploy the fixed arm ({self.deploy}), "
                f"{self.gain:+.3f} utility [{self.gain_low:+.3f}, {self.gain_high:+.3f}], not decidably below "
                f"{self.best_fixed_policy} for fewer tokens")

    def to_dict(self) -> dict:
        """JSON-ready, the weights as the flat `lambda_in`/`lambda_out` keys reports use, and the sentence."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "weights"}
        return {**fields, **self.weights.to_dict(), "sentence": self.sentence()}


def decidable_policies(report: dict) -> dict[str, bool]:
    """Per policy of a crossfit report: True when the 95% interval of its utility gain over the
    run's best fixed arm lies above zero; the oracle and the fixed arms (by their `Policy.kind`)
    are never candidates, so False."""
    return {name: row["kind"] not in (FIXED_ARM_KIND, ORACLE_KIND) and row["ci_utility_vs_best_fixed"][0] > 0
            for name, row in report["policies"].items()}


def crossfit_decision(report: dict) -> Decision:
    """The decision of a crossfit report (see the module docstring for the rule)."""
    policies = report["policies"]
    best_fixed = report["best_fixed_policy"]
    best_utility = policies[best_fixed]["macro_utility"]
    winners = [name for name, decidable in decidable_policies(report).items() if decidable]
    weights = CostWeights(float(report["lambda_in"]), float(report["lambda_out"]))
    if not winners:
        cheapest = _cheapest_not_decidably_below(policies, best_fixed)
        low, high = policies[cheapest]["ci_utility_vs_best_fixed"] if cheapest != best_fixed else (0.0, 0.0)
        return Decision(cheapest, best_fixed, report["best_fixed_arm"], False,
                        policies[cheapest]["macro_utility"] - best_utility, float(low), float(high), weights)
    chosen = max(winners, key=lambda name: policies[name]["macro_utility"])
    low, high = policies[chosen]["ci_utility_vs_best_fixed"]
    return Decision(chosen, best_fixed, report["best_fixed_arm"], True,
                    policies[chosen]["macro_utility"] - best_utility, float(low), float(high), weights)


def _cheapest_not_decidably_below(policies: dict, best_fixed: str) -> str:
    """The fixed arm of fewest tokens whose utility interval against the best fixed arm contains 0
    (the best fixed arm itself when no cheaper one is)."""
    tied = [name for name, row in policies.items() if row["kind"] == FIXED_ARM_KIND
            and row["ci_utility_vs_best_fixed"][0] <= 0 <= row["ci_utility_vs_best_fixed"][1]]
    return min([best_fixed, *tied], key=lambda name: (policies[name]["cost_k"], name != best_fixed))


def report_at_weights(reports: Sequence[dict], weights: CostWeights, accounting: str,
                      tolerance: float = 1e-9) -> dict | None:
    """The first (newest) stored crossfit report at these cost weights and accounting, else None."""
    for report in reports:
        if (abs(report["lambda_in"] - weights.lambda_in) <= tolerance
                and abs(report["lambda_out"] - weights.lambda_out) <= tolerance
                and report["accounting"] == accounting):
            return report
    return None
