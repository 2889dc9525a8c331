"""Evaluate policies on the enumeration table: F1, EM and cost per benchmark and macro, paired
bootstrap CIs, oracle agreement, action distributions, the dev fallback rule, lambda sweeps and
the Pareto frontier.

This is the Cached protocol: it counts the tokens of the calls a policy makes for its answer
(the routed arm, plus any earlier cascade stage). The Fresh Online protocol, which runs the host
on every call a new query needs, is `forge_core.fresh_online`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from forge_core.checkpoints import latest_checkpoint
from forge_core.outcomes import load_outcome_table
from forge_core.policies import BASELINES, Decisions, EvalContext, FixedArm, Policy, RouterPolicy, build_baselines
from forge_core.store import Store
from forge_core.stage1 import Stage1Config
from forge_core.training import TrainRequest, train_router
from forge_core.utility import DEFAULT_LAMBDA_IN, DEFAULT_LAMBDA_OUT, boltzmann_target, oracle_actions

if TYPE_CHECKING:
    from forge_core.answering import ArmAnswer
    from forge_core.fresh_online import LiveQuery

log = logging.getLogger(__name__)

ROUTER_POLICIES = {"forge_full": "full", "forge_lite": "lite", "bge_bm25_kl": "bge"}
N_BOOTSTRAP = 1000
FIXED_ARMS_FOR_FALLBACK = ("direct:no_think", "summary:no_think", "raw:no_think")


@dataclass(frozen=True)
class PolicyOutcome:
    """A policy's per-row results on the evaluated split."""

    name: str
    actions: np.ndarray  # [n]
    f1: np.ndarray  # [n]
    em: np.ndarray  # [n]
    utility: np.ndarray  # [n] utility of the answering arm minus the cost of earlier calls
    cached_tokens: np.ndarray  # [n]


def score_decisions(context: EvalContext, rows: np.ndarray, name: str, decisions: Decisions) -> PolicyOutcome:
    """Per-row scores and costs of a policy's decisions."""
    table, index = context.table, np.arange(len(rows))
    actions = decisions.actions
    extra_cost = decisions.extra_tokens / (context.normalizer.max_input_tokens + context.normalizer.max_output_tokens)
    return PolicyOutcome(
        name=name, actions=actions, f1=table.f1[rows, actions], em=table.em[rows, actions],
        utility=context.utility[rows][index, actions] - context.lambda_in * extra_cost,
        cached_tokens=table.cost[rows, actions] + decisions.extra_tokens,
    )


def macro(values: np.ndarray, benchmarks: np.ndarray) -> float:
    """Mean over benchmarks of the per-benchmark means."""
    return float(np.mean([values[benchmarks == b].mean() for b in np.unique(benchmarks)]))


def paired_bootstrap_ci(a: np.ndarray, b: np.ndarray, benchmarks: np.ndarray, n_boot: int = N_BOOTSTRAP,
                        seed: int = 0) -> tuple[float, float]:
    """95% percentile CI of macro(a) - macro(b), resampling query pairs within each benchmark."""
    rng = np.random.default_rng(seed)
    diff = a - b
    per_benchmark = []
    for benchmark in np.unique(benchmarks):
        values = diff[benchmarks == benchmark]
        samples = rng.integers(0, len(values), size=(n_boot, len(values)))
        per_benchmark.append(values[samples].mean(axis=1))
    macro_diffs = np.mean(per_benchmark, axis=0)
    low, high = np.percentile(macro_diffs, [2.5, 97.5])
    return float(low), float(high)


def action_distribution(actions: np.ndarray, n_arms: int) -> np.ndarray:
    """Share of rows answered by each arm."""
    return np.bincount(actions, minlength=n_arms) / max(len(actions), 1)


def kl_divergence(p: np.ndarray, q: np.ndarray, floor: float = 1e-6) -> float:
    """KL(p || q) with q floored (a policy may never pick an arm the target weights)."""
    q = np.maximum(q, floor)
    q = q / q.sum()
    mask = p > 0
    return float(np.sum(p[mask] * (np.log(p[mask]) - np.log(q[mask]))))


def summarize(outcome: PolicyOutcome, context: EvalContext, rows: np.ndarray, reference: PolicyOutcome | None) -> dict:
    """The JSON summary of one policy."""
    benchmarks, tokens = context.table.benchmarks[rows], outcome.cached_tokens
    target = boltzmann_target(context.utility[rows]).mean(axis=0)
    distribution = action_distribution(outcome.actions, len(context.table.arms))
    summary = {
        "macro_f1": macro(outcome.f1, benchmarks),
        "macro_em": macro(outcome.em, benchmarks),
        "macro_utility": macro(outcome.utility, benchmarks),
        "cost_k": macro(tokens, benchmarks) / 1000.0,
        "per_benchmark": {
            b: {"f1": float(outcome.f1[benchmarks == b].mean()), "em": float(outcome.em[benchmarks == b].mean()),
                "cost_k": float(tokens[benchmarks == b].mean() / 1000.0), "queries": int((benchmarks == b).sum())}
            for b in np.unique(benchmarks)
        },
        "oracle_agreement": float((outcome.actions == oracle_actions(context.utility[rows])).mean()),
        "action_distribution": dict(zip(context.table.arms, distribution.round(4).tolist())),
        "kl_to_boltzmann_target": kl_divergence(target, distribution),
        "ci_vs_always_raw": list(paired_bootstrap_ci(outcome.f1, reference.f1, benchmarks)) if reference else None,
    }
    return summary


def router_policies(store: Store, host: str, n_arms: int, lambda_in: float, lambda_out: float,
                    split_seed: int = 0, seed: int = 0) -> list[Policy]:
    """The FORGE routers: per variant, the checkpoint of the latest stage (Stage 2 before Stage 1)
    trained with these cost weights, split seed and seed; among several trained on the same data
    as the newest of them (say a GRPO and a Dr. GRPO run), the best dev utility; a missing one is trained with Stage 1 first (seconds on the
    demo store)."""
    policies: list[Policy] = []
    for name, variant in ROUTER_POLICIES.items():
        wanted = {"variant": variant, "n_arms": n_arms, "lambda_in": lambda_in, "lambda_out": lambda_out,
                  "split_seed": split_seed, "seed": seed}
        checkpoint = _matching_checkpoint(store, host, wanted)
        if checkpoint is None:
            log.info("training a Stage-1 %s router for %s", variant, name)
            checkpoint = train_router(store, TrainRequest(
                host=host, variant=variant, n_arms=n_arms, lambda_in=lambda_in, lambda_out=lambda_out,
                split_seed=split_seed, stage1=Stage1Config(seed=seed)))
        policies.append(RouterPolicy(checkpoint, name))
    return policies


def _matching_checkpoint(store: Store, host: str, wanted: dict) -> str | None:
    frame = store.checkpoints(host)
    if frame.empty:
        return None
    frame = frame.assign(lineage=frame["lineage"].map(json.loads), metrics=frame["metrics"].map(json.loads))
    match = frame[frame["lineage"].map(lambda lineage: all(lineage.get(k) == v for k, v in wanted.items()))]
    if match.empty:
        return None
    candidates = match[match["stage"] == match["stage"].max()]  # newest first
    # dev utilities compare only on the same data: that of the newest candidate
    snapshots = candidates["lineage"].map(lambda lineage: lineage["store_snapshot"])
    candidates = candidates[snapshots == snapshots.iloc[0]]
    dev_utility = candidates["metrics"].map(lambda metrics: metrics.get("dev_utility", -np.inf))
    return str(candidates.loc[dev_utility.idxmax(), "checkpoint_id"])


def dev_fallback(context: EvalContext, router: RouterPolicy, seed: int = 0) -> dict[str, str]:
    """Per benchmark: "router" where the lower 95% bound of the router's dev utility gain over the
    best fixed arm is positive, else that fixed arm's name (the paper's fallback rule)."""
    dev = context.rows("dev")
    utility = context.utility[dev]
    benchmarks = context.table.benchmarks[dev]
    router_actions = router.decide(context, dev).actions
    router_utility = utility[np.arange(len(dev)), router_actions]
    rule = {}
    for benchmark in np.unique(benchmarks):
        mask = benchmarks == benchmark
        fixed = {arm: utility[mask, context.arm(arm)].mean() for arm in FIXED_ARMS_FOR_FALLBACK}
        best_arm = max(fixed, key=fixed.get)
        gain = router_utility[mask] - utility[mask, context.arm(best_arm)]
        low, _ = paired_bootstrap_ci(gain, np.zeros_like(gain), np.full(mask.sum(), benchmark), seed=seed)
        rule[str(benchmark)] = "router" if low > 0 else best_arm
    return rule


class FallbackPolicy(Policy):
    """A router used only on benchmarks where the dev fallback rule keeps it."""

    def __init__(self, router: RouterPolicy) -> None:
        self.router = router
        self.name = f"{router.name}_fallback"

    def fit(self, context: EvalContext) -> None:
        self.rule = dev_fallback(context, self.router)

    def decide(self, context: EvalContext, rows: np.ndarray) -> Decisions:
        decisions = self.router.decide(context, rows)
        benchmarks = context.table.benchmarks[rows]
        actions = decisions.actions.copy()
        for benchmark, choice in self.rule.items():
            if choice != "router":
                actions[benchmarks == benchmark] = context.arm(choice)
        return Decisions(actions, decisions.extra_tokens)

    async def answer_live(self, query: LiveQuery) -> ArmAnswer:
        choice = self.rule.get(query.benchmark, "router")
        if choice == "router":
            return await self.router.answer_live(query)
        return await query.answer(choice)


def evaluation_context(store: Store, host: str, n_arms: int, lambda_in: float, lambda_out: float,
                       split_seed: int = 0) -> EvalContext:
    """Complete queries with probes (so every policy sees the same rows) and the train normalizer."""
    table = load_outcome_table(store, host, n_arms, split_seed)
    with_probes = ~np.isnan(table.probe_tokens)
    if with_probes.any():
        table = table.subset(with_probes)
    return EvalContext(store, table, table.fit_normalizer(), lambda_in, lambda_out)


def policy_outcomes(context: EvalContext, rows: np.ndarray, policies: Sequence[Policy],
                    on_policy: Callable[[str], None] | None = None) -> dict[str, PolicyOutcome]:
    """Fit each policy on train/dev and score its decisions on `rows`."""
    outcomes = {}
    for policy in policies:
        if on_policy:
            on_policy(policy.name)
        policy.fit(context)
        outcomes[policy.name] = score_decisions(context, rows, policy.name, policy.decide(context, rows))
    return outcomes


def pareto_points(store: Store, host: str, split: str, lambda_in: float, lambda_out: float,
                  checkpoint_ids: Sequence[str] = (), n_arms: int = 6, by_benchmark: bool = False) -> dict:
    """Cost/quality points of the fixed arms, the baselines (re-tuned for these weights), the
    oracle and the given checkpoints, without training anything; plus the frontier indices.
    Each point: policy, benchmark ("all" unless `by_benchmark`), cost_k, macro_f1, macro_utility."""
    context = evaluation_context(store, host, n_arms, lambda_in, lambda_out)
    rows = context.rows(split)
    if not len(rows):
        raise ValueError(f"no complete {split} queries for host '{host}'")
    policies = build_baselines() + [RouterPolicy(c, c) for c in checkpoint_ids]
    outcomes = policy_outcomes(context, rows, policies)
    benchmarks = context.table.benchmarks[rows]
    points = []
    for name, outcome in outcomes.items():
        if by_benchmark:
            for benchmark in np.unique(benchmarks):
                mask = benchmarks == benchmark
                points.append(_point(name, str(benchmark), outcome.cached_tokens[mask].mean(),
                                     outcome.f1[mask].mean(), outcome.utility[mask].mean()))
        else:
            points.append(_point(name, "all", macro(outcome.cached_tokens, benchmarks),
                                 macro(outcome.f1, benchmarks), macro(outcome.utility, benchmarks)))
    frontier = [] if by_benchmark else pareto_frontier([(p["cost_k"], p["macro_f1"]) for p in points])
    return {"points": points, "frontier": frontier, "queries": int(len(rows))}


def _point(policy: str, benchmark: str, tokens: float, f1: float, utility: float) -> dict:
    return {"policy": policy, "benchmark": benchmark, "cost_k": float(tokens) / 1000.0,
            "macro_f1": float(f1), "macro_utility": float(utility)}


@dataclass(frozen=True)
class EvaluationSettings:
    """What an evaluation is asked for; every protocol (Cached, repeated, sweep, Fresh Online)
    takes one."""

    host: str = "embedded"  # whose outcomes, features and routers
    split: str = "test"  # the split evaluated (dev or test)
    n_arms: int = 6  # alphabet size: 3, 6 or 12
    lambda_in: float = DEFAULT_LAMBDA_IN  # input-token cost weight
    lambda_out: float = DEFAULT_LAMBDA_OUT  # output-token cost weight
    policy_names: tuple[str, ...] | None = None  # only these policies (default: every one)
    split_seed: int = 0  # which of the three train/dev/test splits
    seed: int = 0  # training seed of routers fitted on the fly


@dataclass(frozen=True)
class EvaluationSetup:
    """What an evaluation runs on: the context, the evaluated rows, the (unfitted) policies and
    the checkpoint of every FORGE router, selected or not."""

    context: EvalContext
    rows: np.ndarray
    policies: list[Policy]
    router_checkpoints: dict[str, str]


def evaluation_setup(store: Store, settings: EvaluationSettings) -> EvaluationSetup:
    """Features computed, the complete queries of the split, and the baselines and FORGE routers
    (all, or the named ones)."""
    from forge_core.features import compute_features

    host, names = settings.host, settings.policy_names
    compute_features(store, host)
    context = evaluation_context(store, host, settings.n_arms, settings.lambda_in, settings.lambda_out,
                                 settings.split_seed)
    rows = context.rows(settings.split)
    if not len(rows):
        raise ValueError(f"no complete {settings.split} queries for host '{host}'")
    routers = router_policies(store, host, settings.n_arms, settings.lambda_in, settings.lambda_out,
                              settings.split_seed, settings.seed)
    policies = build_baselines([n for n in (names or BASELINES) if n in BASELINES]) + routers
    policies += [FallbackPolicy(r) for r in routers if r.name == "forge_full"]
    if names:
        unknown = sorted(set(names) - {p.name for p in policies})
        if unknown:
            raise ValueError(f"unknown policies: {', '.join(unknown)} (known: {', '.join(p.name for p in policies)})")
        policies = [p for p in policies if p.name in names]
    return EvaluationSetup(context, rows, policies, {r.name: r.checkpoint_id for r in routers})


def evaluate(store: Store, settings: EvaluationSettings = EvaluationSettings(),
             on_policy: Callable[[str], None] | None = None) -> dict:
    """The Cached protocol: `{"policies": {name: summary}, "queries": n, ...}` for the baselines
    and FORGE routers."""
    setup = evaluation_setup(store, settings)
    context, rows = setup.context, setup.rows
    outcomes = policy_outcomes(context, rows, setup.policies, on_policy)
    reference = outcomes.get("always_raw") or score_decisions(
        context, rows, "always_raw", FixedArm("raw:no_think").decide(context, rows))
    return {
        "host": settings.host, "split": settings.split, "protocol": "cached", "queries": int(len(rows)),
        "lambda_in": settings.lambda_in, "lambda_out": settings.lambda_out, "arms": list(context.table.arms),
        "policies": {name: summarize(o, context, rows, reference) for name, o in outcomes.items()},
    }


def pareto_frontier(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the (cost, quality) points no other point beats on both (lower cost, higher
    quality), sorted by cost."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    frontier, best_quality = [], -np.inf
    for i in order:
        if points[i][1] > best_quality:
            frontier.append(i)
            best_quality = points[i][1]
    return frontier


def lambda_sweep(store: Store, grid: Sequence[tuple[float, float]], settings: EvaluationSettings = EvaluationSettings(),
                 on_point: Callable[[float, float], None] | None = None) -> dict:
    """Every policy's (cost, F1) point at each (lambda_in, lambda_out) of the grid, routers
    retrained (Stage 1) and baselines re-tuned per point, and the Pareto frontier over all
    points (lowest cost for the highest macro F1). The settings' own cost weights are ignored."""
    points = []
    for lambda_in, lambda_out in grid:
        if on_point:
            on_point(lambda_in, lambda_out)
        report = evaluate(store, dataclasses.replace(settings, lambda_in=lambda_in, lambda_out=lambda_out))
        points += [{"policy": name, "lambda_in": lambda_in, "lambda_out": lambda_out, "cost_k": row["cost_k"],
                    "macro_f1": row["macro_f1"], "macro_utility": row["macro_utility"]}
                   for name, row in report["policies"].items()]
    frontier = pareto_frontier([(p["cost_k"], p["macro_f1"]) for p in points])
    return {"host": settings.host, "split": settings.split, "points": points, "frontier": frontier}


def repeated_evaluation(store: Store, settings: EvaluationSettings = EvaluationSettings(),
                        split_seeds: Sequence[int] = (0, 1, 2), seeds: Sequence[int] = (0, 1, 2),
                        on_run: Callable[[int, int], None] | None = None) -> dict:
    """The paper's protocol: every split seed x training seed, then mean and SD per policy of
    macro F1, macro EM, cost and utility. The settings' own seeds are ignored."""
    runs = []
    for split_seed in split_seeds:
        for seed in seeds:
            if on_run:
                on_run(split_seed, seed)
            runs.append(evaluate(store, dataclasses.replace(settings, split_seed=split_seed, seed=seed))["policies"])
    summary = {}
    for name in runs[0]:
        summary[name] = {"runs": len(runs)}
        for metric in ("macro_f1", "macro_em", "cost_k", "macro_utility"):
            values = np.array([run[name][metric] for run in runs])
            summary[name][f"{metric}_mean"] = float(values.mean())
            summary[name][f"{metric}_sd"] = float(values.std(ddof=1)) if len(values) > 1 else 0.0
    return {"host": settings.host, "split": settings.split, "protocol": "cached", "split_seeds": list(split_seeds),
            "seeds": list(seeds), "policies": summary}
