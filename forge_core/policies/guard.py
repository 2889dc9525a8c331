"""A guarded router: the fallback (the best fixed arm) on every query, except where a router's
margin clears a threshold held out for a stated risk.

The router's margin is its implied utility advantage in utility units, tau * (log pi(chosen) -
log pi(runner-up)) (`forge_core.routing.confidence.margins`). The guard deviates from the fallback
arm on a query only where the router chooses another arm and its margin is at least the threshold.

The threshold is chosen on the fold's dev rows (training rows the router never fitted: they only
stopped its training early) for a risk `alpha`, the share of deviations that lose utility against
the fallback arm. Conformal risk control (Angelopoulos, Bates, Fisch, Lei and Schuster, ICLR 2024,
arXiv 2208.02814) picks, for a loss that falls as the threshold rises, the lowest threshold whose
empirical risk on n calibration queries, inflated as (n * risk + 1) / (n + 1) for the unseen query,
is at most alpha. Here the loss is counted among the deviations: with k dev deviations at or above
a threshold, l of which lose, the guard needs (l + 1) / (k + 1) <= alpha. That share is not
monotone in the threshold, so the scan runs from the highest margin down and stops before the
first threshold that fails (a step-down rule), once there are enough deviations for any to pass
(k >= 1 / alpha - 1; the losses among the highest margins still count); no threshold passes (the
guard never deviates) when even the highest margins lose too often or there are too few deviations.
CRC's guarantee is for the monotone loss; for the share of deviations the same correction is a
rule, not a proof: crossfit measures the realized share out of fold against alpha (`guard_report`).

A held query is answered by the fallback arm; a Full router's probes were still spent to know the
margin, so they are charged on every query.
"""

from __future__ import annotations

import numpy as np

from forge_core.policies.base import Policy
from forge_core.policies.context import Decisions, EvalContext
from forge_core.policies.kinds import ROUTER_KIND
from forge_core.routing.guard import GUARD_ALPHA, Guard, calibrated_guard
from forge_core.statistics import macro

GUARD_SUFFIX = "_guard"  # a guarded router's name: the router's name and this


def best_fixed_arm(context: EvalContext, rows: np.ndarray) -> int:
    """The arm of highest macro utility on these rows (an exact tie: the lower index)."""
    utility = context.utility[rows]
    benchmarks = context.table.benchmarks[rows]
    scores = [macro(utility[:, arm], benchmarks) for arm in range(utility.shape[1])]
    return int(np.argmax(scores))


def fit_guard(context: EvalContext, router: Policy, alpha: float = GUARD_ALPHA) -> Guard:
    """The guard around a fitted `router`: the fallback is the best fixed arm on the train and dev
    rows; the threshold is chosen on the dev rows' deviations (`calibrated_guard`)."""
    fallback = best_fixed_arm(context, np.concatenate([context.rows("train"), context.rows("dev")]))
    dev = context.rows("dev")
    decisions = router.decide(context, dev)
    if decisions.margin is None:
        raise ValueError(f"policy '{router.name}' gives no margin: only a router can be guarded")
    return calibrated_guard(decisions.actions, decisions.margin, context.utility[dev], fallback,
                            tuple(context.table.arms), alpha)


class GuardedRouter(Policy):
    """A router that leaves the best fixed arm only where its margin clears a threshold held out
    for the risk `alpha` (see the module docstring). Its margin column is the router's margin and
    its runner-up column the fallback arm, so the report counts deviations and their losses."""

    kind = ROUTER_KIND

    def __init__(self, router: Policy, alpha: float = GUARD_ALPHA) -> None:
        self.router, self.alpha = router, alpha
        self.name = self.name_for(router.name)

    @property
    def live_variant(self) -> str | None:
        """The router's feature variant."""
        return self.router.live_variant

    @property
    def live_embedder(self) -> str | None:
        """The router's embedder."""
        return self.router.live_embedder

    @staticmethod
    def name_for(router_name: str) -> str:
        """The policy name of the guard around a router."""
        return f"{router_name}{GUARD_SUFFIX}"

    def fit(self, context: EvalContext) -> None:
        self.guard = fit_guard(context, self.router, self.alpha)

    def decide(self, context: EvalContext, rows: np.ndarray) -> Decisions:
        routed = self.router.decide(context, rows)
        fallback = context.arm(self.guard.fallback_arm)
        deviate = self.guard.deviates(routed.actions, routed.margin, fallback)
        return Decisions(np.where(deviate, routed.actions, fallback), routed.prior_tokens_in,
                         routed.prior_tokens_out, routed.prior_calls, routed.margin,
                         np.full(len(rows), fallback, dtype=np.int64))
