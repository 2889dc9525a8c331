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

from forge_core.arms import parse_arm
from forge_core.policies.arm_mix import ArmMix, parse_mix
from forge_core.policies.base import Policy
from forge_core.policies.context import Decisions, EvalContext
from forge_core.policies.kinds import ROUTER_KIND
from forge_core.policies.mix_hull import ArmOutcomes, best_mix
from forge_core.policies.outcomes import score_decisions
from forge_core.routing.guard import GUARD_ALPHA, Guard, calibrated_guard
from forge_core.statistics import macro

GUARD_SUFFIX = "_guard"  # a guarded router's name: the router's name and this
MIX_GUARD_SUFFIX = "_mix_guard"  # a router guarded with the cost-matched mix as its fallback (`MixGuardedRouter`)


def guarded_router(name: str) -> str:
    """The router a guard's policy name guards (`<router>_guard`, `<router>_mix_guard`); any other name itself."""
    if not name.endswith(GUARD_SUFFIX):
        return name
    return name.removesuffix(MIX_GUARD_SUFFIX) if name.endswith(MIX_GUARD_SUFFIX) else name.removesuffix(GUARD_SUFFIX)


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
    dev, decisions = dev_decisions(context, router)
    return calibrated_guard(decisions.actions, decisions.margin, context.utility[dev], fallback,
                            context.table.arms[fallback], alpha)


def dev_decisions(context: EvalContext, router: Policy) -> tuple[np.ndarray, Decisions]:
    """The dev rows and a fitted router's decisions there, with its margins (a policy that gives
    none is refused: only a router can be guarded)."""
    dev = context.rows("dev")
    decisions = router.decide(context, dev)
    if decisions.margin is None:
        raise ValueError(f"policy '{router.name}' gives no margin: only a router can be guarded")
    return dev, decisions


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

    def fallback_actions(self, context: EvalContext, rows: np.ndarray) -> np.ndarray:
        """[n] the fallback arm's index on each row."""
        return np.full(len(rows), context.arm(self.guard.fallback_arm), dtype=np.int64)

    def decide(self, context: EvalContext, rows: np.ndarray) -> Decisions:
        routed = self.router.decide(context, rows)
        fallback = self.fallback_actions(context, rows)
        deviate = self.guard.deviates(routed.actions, routed.margin, fallback)
        return Decisions(np.where(deviate, routed.actions, fallback), routed.prior_tokens_in,
                         routed.prior_tokens_out, routed.prior_calls, routed.margin, fallback)


class MixGuardedRouter(GuardedRouter):
    """A guarded router whose fallback is the cost-matched mix of fixed arms: the best mix
    (`mix_hull.best_mix`) at the router's own macro tokens on the train and dev rows, each query
    falling back to the arm the mix draws for its question (`arm_mix.ArmMix.arm_for`, as `forge
    serve` draws it). The threshold is chosen on the dev rows' deviations from their drawn arms."""

    @staticmethod
    def name_for(router_name: str) -> str:
        """The policy name of the mix-guard around a router (`GuardedRouter.__init__` names it so)."""
        return f"{router_name}{MIX_GUARD_SUFFIX}"

    def fit(self, context: EvalContext) -> None:
        self.guard = fit_mix_guard(context, self.router, self.alpha)

    def fallback_actions(self, context: EvalContext, rows: np.ndarray) -> np.ndarray:
        return drawn_arms(context, rows, parse_mix(self.guard.mix, len(context.table.arms)))


def fit_mix_guard(context: EvalContext, router: Policy, alpha: float = GUARD_ALPHA) -> Guard:
    """The guard around a fitted `router` whose fallback is its cost-matched mix on the train and dev
    rows (`cost_matched_mix`); the threshold is chosen on the dev rows' deviations from their drawn arms."""
    mix = cost_matched_mix(context, router, np.concatenate([context.rows("train"), context.rows("dev")]))
    dev, decisions = dev_decisions(context, router)
    return calibrated_guard(decisions.actions, decisions.margin, context.utility[dev], drawn_arms(context, dev, mix),
                            mix.option, alpha, mix=mix.option)


def cost_matched_mix(context: EvalContext, router: Policy, rows: np.ndarray) -> ArmMix:
    """The mix of fixed arms of highest macro F1 that spends the router's own macro tokens on `rows`
    (`mix_hull.best_mix`); the cheapest arm alone where the router spends less than every arm."""
    benchmarks = context.table.benchmarks[rows]
    spent = score_decisions(context, rows, router, router.decide(context, rows)).tokens
    arms = ArmOutcomes(tuple(context.table.arms), context.table.f1[rows].T,
                       context.table.cost[rows].T.astype(np.float64), benchmarks)
    mix = best_mix(arms, macro(spent, benchmarks))
    if mix is None:
        cheapest = int(np.argmin([tokens for tokens, _ in arms.points()]))
        return ArmMix((parse_arm(arms.names[cheapest]),), (1.0,))
    return ArmMix(tuple(parse_arm(arm) for arm in mix.arms), mix.shares)


def guard_for_question(guard: Guard, question: str, n_arms: int) -> Guard:
    """`guard` for one question: under a mix fallback, its fallback is the arm the mix draws for the
    question (`arm_mix.ArmMix.arm_for`, the same draw wherever the question is asked); else `guard`."""
    if guard.mix is None:
        return guard
    return guard.drawn(parse_mix(guard.mix, n_arms).arm_for(question)[0].name)


def drawn_arms(context: EvalContext, rows: np.ndarray, mix: ArmMix) -> np.ndarray:
    """[n] the arm index `mix` draws for each row's question."""
    questions = row_questions(context)
    return np.array([context.arm(mix.arm_for(questions[row])[0].name) for row in rows], dtype=np.int64)


def row_questions(context: EvalContext) -> list[str]:
    """Every row's question, in row order: read from the store once per context (kept in its
    weight-free results, which a Ray fold task gets with it)."""
    return context.weight_free(("questions",), lambda: _read_questions(context))


def _read_questions(context: EvalContext) -> list[str]:
    keys = context.table.keys
    texts: dict[tuple[str, str], str] = {}
    for benchmark in dict.fromkeys(benchmark for benchmark, _ in keys):
        ids = [example_id for b, example_id in keys if b == benchmark]
        texts |= {(benchmark, e.example_id): e.question for e in context.store.examples(benchmark, ids)}
    return [texts[key] for key in keys]
