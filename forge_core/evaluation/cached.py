"""The Cached protocol: policies evaluated on the enumeration table. F1, EM and cost per benchmark
and macro, paired bootstrap CIs, oracle agreement, action distributions, repeated runs over split
and training seeds, lambda sweeps and the Pareto frontier.

It reads every call's tokens from the stored outcomes. By default it charges what a deployment
pays, every host call a decision needs on a new query (probes, earlier cascade stages and the
answer; `accounting="deploy"`); `accounting="answer"` is the paper's Cached cost, the answering
call only (see `forge_core.policies.context`). The Fresh Online protocol, which makes those
calls on the host, is `forge_core.evaluation.fresh_online`.

It only reads: the routers it evaluates must exist. `CachedRequest.evaluations()` and
`SweepRequest.evaluations()` name the settings whose features and Stage-1 routers
`forge_core.evaluation.setup.prepare_evaluation` computes first (the CLI does, and says so).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from forge_core.arms import RAW_NO_THINK
from forge_core.errors import InvalidInput
from forge_core.evaluation.settings import EvaluationSettings
from forge_core.evaluation.setup import check_evaluation, evaluation_setup, settings_context
from forge_core.policies.baselines import FixedArm
from forge_core.policies.context import EvalContext
from forge_core.policies.grounding import gold_recall_matrix, grounding_summary
from forge_core.policies.kinds import FIXED_ARM_KIND
from forge_core.policies.mix_hull import ArmOutcomes, hull_gap, mix_hull
from forge_core.policies.outcomes import PolicyOutcome, policy_outcomes, score_decisions, summarize
from forge_core.policies.support_rates import support_summary, support_verdicts
from forge_core.routing.utility import CostWeights
from forge_core.statistics import benchmark_masks, macro_over, pareto_frontier
from forge_core.store import Store

REPEATED_SEEDS = (0, 1, 2)  # the paper's 3 split seeds x 3 training seeds
REPEATED_METRICS = ("macro_f1", "macro_em", "cost_k", "deploy_cost_k", "answer_cost_k", "macro_utility")


@dataclass(frozen=True)
class CachedRequest:
    """`forge eval cached`: every policy on the enumerated outcomes of one split, once, or with
    `repeats` as mean and SD over the paper's 3 split seeds x 3 training seeds."""

    settings: EvaluationSettings = EvaluationSettings()
    repeats: bool = False  # mean +- SD over split seeds x training seeds (the settings' own seeds ignored)
    repeat_seeds: tuple[int, ...] = REPEATED_SEEDS  # with `repeats`: the split seeds, and the training seeds
    checkpoints: tuple[str, ...] | None = None  # these routers by id instead of the matched FORGE ones (Pareto page)

    def evaluations(self) -> list[EvaluationSettings]:
        """The settings of every evaluation this request runs (one, or one per split seed x
        training seed with `repeats`)."""
        if not self.repeats:
            return [self.settings]
        return [dataclasses.replace(self.settings, split_seed=split_seed, seed=seed)
                for split_seed in self.repeat_seeds for seed in self.repeat_seeds]

    def check(self, store: Store) -> None:
        """Refuse, with a one-line `ForgeError`, a request the store cannot answer."""
        check_evaluation(store, self.settings)


@dataclass(frozen=True)
class SweepRequest:
    """`forge sweep`: every policy at each (lambda_in, lambda_out) of a grid, and the Pareto
    frontier over all points (the settings' own cost weights are ignored)."""

    grid: tuple[tuple[float, float], ...]
    settings: EvaluationSettings = EvaluationSettings()

    def __post_init__(self) -> None:
        if not self.grid:
            raise InvalidInput("the sweep grid is empty: give at least one lambda_in and one lambda_out")

    def evaluations(self) -> list[EvaluationSettings]:
        """The settings of every grid point."""
        return [dataclasses.replace(self.settings, weights=CostWeights(li, lo)) for li, lo in self.grid]

    def check(self, store: Store) -> None:
        """Refuse, with a one-line `ForgeError`, a grid point's cost weights (each point's settings
        check their own) or a request the store cannot answer (the same at every point)."""
        self.evaluations()
        check_evaluation(store, self.settings)


@dataclass(frozen=True)
class CachedScores:
    """What one Cached evaluation scored: every policy's outcome on the split's complete queries,
    with the gold recall and support verdicts of their arms; `evaluate` summarizes it for
    `forge eval cached`, `pareto_points` draws it for the Pareto page."""

    context: EvalContext
    rows: np.ndarray
    outcomes: dict[str, PolicyOutcome]
    recall: np.ndarray  # [rows, arms] gold recall (NaN where not annotated)
    support: np.ndarray  # [rows, arms] support scores (NaN where not judged)
    support_evaluator: str | None

    @property
    def benchmarks(self) -> np.ndarray:
        """The benchmark of each scored query."""
        return self.context.table.benchmarks[self.rows]


def score_cached(store: Store, request: CachedRequest, on_policy: Callable[[str], None] | None = None,
                 base: EvalContext | None = None) -> CachedScores:
    """Fit and score the request's policies once (its settings; `repeats` aside). `base`: see
    `evaluation_setup`."""
    setup = evaluation_setup(store, request.settings, base, request.checkpoints)
    context, rows = setup.context, setup.rows
    outcomes = policy_outcomes(context, rows, setup.policies, on_policy)
    # Read from the store once per base context: a slider step reuses them.
    verdicts = context.weight_free(("support verdicts",), lambda: support_verdicts(store, context.table))
    recall = context.weight_free(("gold recall",), lambda: gold_recall_matrix(store, context.table))
    return CachedScores(context, rows, outcomes, recall[rows], verdicts.scores[rows], verdicts.evaluator)


def evaluate(store: Store, settings: EvaluationSettings = EvaluationSettings(),
             on_policy: Callable[[str], None] | None = None, base: EvalContext | None = None) -> dict:
    """One Cached evaluation: `{"policies": {name: summary}, "queries": n, ...}` for the
    baselines and FORGE routers. `base`: see `evaluation_setup`."""
    scores = score_cached(store, CachedRequest(settings), on_policy, base)
    context, rows, outcomes, benchmarks = scores.context, scores.rows, scores.outcomes, scores.benchmarks
    recall, support = scores.recall, scores.support
    raw = FixedArm(RAW_NO_THINK)
    reference = outcomes.get(raw.name) or score_decisions(context, rows, raw, raw.decide(context, rows))
    return {
        "host": settings.host, "split": settings.split, "protocol": "cached", "accounting": settings.accounting,
        "queries": int(len(rows)), **settings.weights.to_dict(),
        "arms": list(context.table.arms), "support_evaluator": scores.support_evaluator,
        "policies": {name: summarize(o, context, rows, reference) | grounding_summary(recall, o.actions, benchmarks)
                     | support_summary(support, o.actions, benchmarks) for name, o in outcomes.items()},
    } | retriever_fields(settings.retriever, context.table.retriever_hash)


def retriever_fields(retriever: str, config_hash: str) -> dict:
    """A report's retriever and its configuration hash; nothing for the default BM25 evidence (so
    reports made before retrievers existed read the same)."""
    return {"retriever": retriever, "retriever_hash": config_hash} if config_hash else {}


def run_cached(store: Store, request: CachedRequest, on_policy: Callable[[str], None] | None = None,
               on_run: Callable[[int, int], None] | None = None) -> dict:
    """The Cached protocol for a request: one evaluation (`evaluate`), or with `repeats` the mean
    and SD per policy of macro F1, EM, costs and utility over the nine runs (`on_run(done, total)`
    follows them)."""
    request.check(store)
    if not request.repeats:
        return evaluate(store, request.settings, on_policy)
    evaluations = request.evaluations()
    bases: dict[int, EvalContext] = {}  # one per split seed: the training seed changes only the routers
    runs = []
    for done, settings in enumerate(evaluations):
        if settings.split_seed not in bases:
            bases[settings.split_seed] = settings_context(store, settings)
        runs.append(evaluate(store, settings, base=bases[settings.split_seed])["policies"])
        if on_run:
            on_run(done + 1, len(evaluations))
    settings = request.settings
    return {"host": settings.host, "split": settings.split, "protocol": "cached", "accounting": settings.accounting,
            "split_seeds": list(request.repeat_seeds), "seeds": list(request.repeat_seeds),
            "policies": _mean_and_sd(runs)} | retriever_fields(settings.retriever,
                                                                bases[settings.split_seed].table.retriever_hash)


def _mean_and_sd(runs: list[dict]) -> dict:
    summary = {}
    for name in runs[0]:
        summary[name] = {"kind": runs[0][name]["kind"], "runs": len(runs)}
        for metric in REPEATED_METRICS:
            values = np.array([run[name][metric] for run in runs])
            summary[name][f"{metric}_mean"] = float(values.mean())
            summary[name][f"{metric}_sd"] = float(values.std(ddof=1)) if len(values) > 1 else 0.0
    return summary


def run_sweep(store: Store, request: SweepRequest, on_point: Callable[[float, float], None] | None = None) -> dict:
    """Every policy's (cost, F1) point at each grid point (baselines re-tuned per point), and the
    Pareto frontier over all points (lowest cost for the highest macro F1)."""
    request.check(store)
    base = settings_context(store, request.settings)  # the grid points differ only in their weights
    points = []
    for settings in request.evaluations():
        if on_point:
            on_point(settings.weights.lambda_in, settings.weights.lambda_out)
        report = evaluate(store, settings, base=base)
        points += [{"policy": name, "kind": row["kind"], **settings.weights.to_dict(), "cost_k": row["cost_k"],
                    "macro_f1": row["macro_f1"], "macro_utility": row["macro_utility"]}
                   for name, row in report["policies"].items()]
    frontier = pareto_frontier([(p["cost_k"], p["macro_f1"]) for p in points])
    settings = request.settings
    return {"host": settings.host, "split": settings.split, "accounting": settings.accounting, "points": points,
            "frontier": frontier} | retriever_fields(settings.retriever, base.table.retriever_hash)


def pareto_points(store: Store, request: CachedRequest, by_benchmark: bool = False,
                  base: EvalContext | None = None) -> dict:
    """The Pareto page's view of one Cached evaluation (`score_cached`, the scoring `forge eval
    cached` reports): cost/quality points of the fixed arms, the baselines (re-tuned for the
    weights), the oracle and the request's routers (its `checkpoints` on the page; a
    cost-conditioned one decides at these weights), without training anything; plus the frontier
    indices. Each point: policy, kind, benchmark ("all" unless `by_benchmark`), cost_k (k tokens a
    query), tokens_in and tokens_out (tokens a query, in and out apart) and macro_utility under
    the accounting, macro_f1, gold_recall (None where no benchmark has evidence annotations),
    support_rate and support_coverage (None and 0 without support verdicts; `support_evaluator`
    names who gave them); and each point against the mix of fixed arms on its queries (`on_hull`,
    `hull_f1`, `hull_gap` with `hull_gap_low`/`hull_gap_high`: `_hull_fields`; the hull is drawn
    through the fixed arms `on_hull`, in order of cost). `base`: the host's `evaluation_context`
    already loaded (any weights, this accounting and alphabet), whose weight-free fits are reused:
    what a slider step recomputes is only what the weights change."""
    scores = score_cached(store, request, base=base)
    benchmarks = scores.benchmarks
    masks = benchmark_masks(benchmarks)
    arms = _fixed_arms(scores.outcomes, benchmarks)
    points = []
    for outcome in scores.outcomes.values():
        if by_benchmark:
            for benchmark in np.unique(benchmarks):
                mask = benchmarks == benchmark
                points.append(_point(outcome, str(benchmark), outcome.tokens[mask].mean(),
                                     outcome.f1[mask].mean(), outcome.utility[mask].mean(),
                                     outcome.tokens_in[mask].mean())
                              | _decided_fields(scores, arms.of_benchmark(benchmark), outcome, mask))
        else:
            points.append(_point(outcome, "all", macro_over(outcome.tokens, masks),
                                 macro_over(outcome.f1, masks), macro_over(outcome.utility, masks),
                                 macro_over(outcome.tokens_in.astype(np.float64), masks))
                          | _decided_fields(scores, arms, outcome, np.ones(len(benchmarks), dtype=bool)))
    frontier = [] if by_benchmark else pareto_frontier([(p["cost_k"], p["macro_f1"]) for p in points])
    return {"points": points, "frontier": frontier, "queries": int(len(scores.rows)),
            "support_evaluator": scores.support_evaluator}


def _fixed_arms(outcomes: dict[str, PolicyOutcome], benchmarks: np.ndarray) -> ArmOutcomes:
    """The fixed arms' per-query F1 and tokens (under the accounting), named by policy."""
    fixed = [outcome for outcome in outcomes.values() if outcome.kind == FIXED_ARM_KIND]
    return ArmOutcomes.of([outcome.name for outcome in fixed], fixed, benchmarks)


def _decided_fields(scores: CachedScores, arms: ArmOutcomes, outcome: PolicyOutcome, mask: np.ndarray) -> dict:
    """A point's grounding (`_grounding`) and its place against the mix of fixed arms (`_hull_fields`) on the
    queries of `mask`. They depend only on the policy's decisions, F1 and tokens there, so each is computed
    once per loaded context (kept with its weight-free results): a slider step leaves most policies'
    decisions as they were, and those points reuse them."""
    digest = hashlib.blake2b(outcome.name.encode(), digest_size=16)
    for values in (scores.rows, mask, outcome.actions, outcome.f1, outcome.tokens):
        digest.update(np.ascontiguousarray(values).tobytes())
    return scores.context.weight_free(("decided point fields", digest.digest()), lambda: _grounding(
        scores.recall[mask], scores.support[mask], outcome.actions[mask], scores.benchmarks[mask])
        | _hull_fields(arms, outcome, mask))


def _hull_fields(arms: ArmOutcomes, outcome: PolicyOutcome, mask: np.ndarray) -> dict:
    """A point against the mix of fixed arms on its queries (`mask`): whether it is a vertex of their
    hull (`on_hull`), the best mix's F1 at its tokens (`hull_f1`) and its F1 gap to it with the paired
    95% interval (`hull_gap`, `hull_gap_low`, `hull_gap_high`); None below the cheapest arm's tokens."""
    gap = hull_gap(arms, outcome.f1[mask], outcome.tokens[mask].astype(np.float64))
    vertices = {vertex["arm"] for vertex in mix_hull(arms)}
    if gap is None:
        return {"on_hull": False, "hull_f1": None, "hull_gap": None, "hull_gap_low": None, "hull_gap_high": None}
    return {"on_hull": outcome.name in vertices, "hull_f1": gap["mix"]["f1"], "hull_gap": gap["difference"],
            "hull_gap_low": gap["ci"][0], "hull_gap_high": gap["ci"][1]}


def _grounding(recall: np.ndarray, support: np.ndarray, actions: np.ndarray, benchmarks: np.ndarray) -> dict:
    rates = support_summary(support, actions, benchmarks, intervals=False)
    return {"gold_recall": grounding_summary(recall, actions, benchmarks)["gold_recall"],
            "support_rate": rates["support_rate"], "support_coverage": rates["support_coverage"]}


def _point(outcome: PolicyOutcome, benchmark: str, tokens: float, f1: float, utility: float,
           tokens_in: float) -> dict:
    return {"policy": outcome.name, "kind": outcome.kind, "benchmark": benchmark, "cost_k": float(tokens) / 1000.0,
            "tokens_in": float(tokens_in), "tokens_out": float(tokens) - float(tokens_in),
            "macro_f1": float(f1), "macro_utility": float(utility)}
