"""Evaluate policies on the enumeration table: F1, EM and cost per benchmark and macro, paired
bootstrap CIs, oracle agreement, action distributions, the dev fallback rule, lambda sweeps and
the Pareto frontier.

This is the Cached protocol: it reads every call's tokens from the stored outcomes. By default
it charges what a deployment pays, every host call a decision needs on a new query (probes,
earlier cascade stages and the answer; `accounting="deploy"`); `accounting="answer"` is the
paper's Cached cost, the answering call only (see `forge_core.evaluation.context`). The Fresh
Online protocol, which makes those calls on the host, is `forge_core.evaluation.fresh_online`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from forge_core.errors import InvalidInput, MissingStep
from forge_core.evaluation.conditioned import CONDITIONED_POLICIES, conditioned_policies
from forge_core.evaluation.context import Decisions, EvalContext, evaluation_context
from forge_core.evaluation.policies import BASELINES, FallbackPolicy, FixedArm, Policy, RouterPolicy, build_baselines
from forge_core.evaluation.statistics import (
    action_distribution,
    kl_divergence,
    macro,
    paired_bootstrap_ci,
    pareto_frontier,
)
from forge_core.routing.embedders import embedder_name
from forge_core.routing.features import compute_features
from forge_core.routing.utility import (
    DEFAULT_LAMBDA_IN,
    DEFAULT_LAMBDA_OUT,
    boltzmann_target,
    check_accounting,
    check_cost_weights,
    oracle_actions,
)
from forge_core.store import Store
from forge_core.training.stage1 import Stage1Config
from forge_core.training.trainer import TrainRequest, train_router

log = logging.getLogger(__name__)

EVALUATED_SPLITS = ("dev", "test")
ROUTER_POLICIES = {"forge_full": "full", "forge_lite": "lite", "bge_bm25_kl": "bge"}
FALLBACK_ROUTER = "forge_full"  # the router the dev fallback rule wraps (`FallbackPolicy`)


def known_policy_names() -> tuple[str, ...]:
    """Every policy name `forge eval --policy` accepts."""
    return (*BASELINES, *ROUTER_POLICIES, FallbackPolicy.name_for(FALLBACK_ROUTER), *CONDITIONED_POLICIES)


@dataclass(frozen=True)
class PolicyOutcome:
    """A policy's per-row results on the evaluated split, under both accountings."""

    name: str
    actions: np.ndarray  # [n]
    f1: np.ndarray  # [n]
    em: np.ndarray  # [n]
    answer_tokens: np.ndarray  # [n] tokens in + out of the answering call
    deploy_tokens: np.ndarray  # [n] tokens of every call the decision needs (probes, earlier stages, answer)
    calls: np.ndarray  # [n] host calls the decision needs on a new query
    answer_utility: np.ndarray  # [n] utility of the answering arm alone (the paper's Cached view)
    deploy_utility: np.ndarray  # [n] minus the cost of every earlier call
    accounting: str  # which of the two `utility` and `tokens` are

    @property
    def utility(self) -> np.ndarray:
        """[n] utility under the evaluation's accounting."""
        return self.deploy_utility if self.accounting == "deploy" else self.answer_utility

    @property
    def tokens(self) -> np.ndarray:
        """[n] token cost under the evaluation's accounting."""
        return self.deploy_tokens if self.accounting == "deploy" else self.answer_tokens


def score_decisions(context: EvalContext, rows: np.ndarray, name: str, decisions: Decisions) -> PolicyOutcome:
    """Per-row scores and costs of a policy's decisions."""
    table, index, actions = context.table, np.arange(len(rows)), decisions.actions
    answer_tokens = table.cost[rows, actions]
    answer_utility = context.utility[rows][index, actions]
    prior_cost = context.call_cost(decisions.prior_tokens_in, decisions.prior_tokens_out)
    return PolicyOutcome(
        name=name, actions=actions, f1=table.f1[rows, actions], em=table.em[rows, actions],
        answer_tokens=answer_tokens,
        deploy_tokens=answer_tokens + decisions.prior_tokens_in + decisions.prior_tokens_out,
        calls=1 + decisions.prior_calls, answer_utility=answer_utility, deploy_utility=answer_utility - prior_cost,
        accounting=context.accounting)


def cost_summary(outcome: PolicyOutcome, benchmarks: np.ndarray, mask: np.ndarray | slice = slice(None)) -> dict:
    """Macro token costs (k tokens a query) under both accountings, `cost_k` being the one of the
    evaluation's accounting, and host calls a query; over the rows of `mask`."""
    def mean(values: np.ndarray) -> float:
        return macro(values[mask].astype(np.float64), benchmarks[mask])

    return {"cost_k": mean(outcome.tokens) / 1000.0, "deploy_cost_k": mean(outcome.deploy_tokens) / 1000.0,
            "answer_cost_k": mean(outcome.answer_tokens) / 1000.0, "calls_per_query": mean(outcome.calls)}


def summarize(outcome: PolicyOutcome, context: EvalContext, rows: np.ndarray, reference: PolicyOutcome | None) -> dict:
    """The JSON summary of one policy."""
    benchmarks = context.table.benchmarks[rows]
    target = boltzmann_target(context.utility[rows]).mean(axis=0)
    distribution = action_distribution(outcome.actions, len(context.table.arms))
    summary = {
        "macro_f1": macro(outcome.f1, benchmarks),
        "macro_em": macro(outcome.em, benchmarks),
        "macro_utility": macro(outcome.utility, benchmarks),
        **cost_summary(outcome, benchmarks),
        "per_benchmark": {
            b: {"f1": float(outcome.f1[benchmarks == b].mean()), "em": float(outcome.em[benchmarks == b].mean()),
                **cost_summary(outcome, benchmarks, benchmarks == b), "queries": int((benchmarks == b).sum())}
            for b in np.unique(benchmarks)
        },
        "oracle_agreement": float((outcome.actions == oracle_actions(context.utility[rows])).mean()),
        "action_distribution": dict(zip(context.table.arms, distribution.round(4).tolist())),
        "kl_to_boltzmann_target": kl_divergence(target, distribution),
        "ci_vs_always_raw": list(paired_bootstrap_ci(outcome.f1, reference.f1, benchmarks)) if reference else None,
    }
    return summary


def _wanted_lineage(settings: EvaluationSettings, variant: str) -> dict:
    benchmarks = list(settings.benchmarks) if settings.benchmarks is not None else None
    return {"variant": variant, "n_arms": settings.n_arms, "lambda_in": settings.lambda_in,
            "lambda_out": settings.lambda_out, "split_seed": settings.split_seed, "seed": settings.seed,
            "benchmarks": benchmarks, "embedder": embedder_name()}


def router_policies(store: Store, settings: EvaluationSettings) -> list[Policy]:
    """The FORGE routers: per variant, the checkpoint of the latest stage (Stage 2 before Stage 1)
    trained with the settings' cost weights, split seed and seed; among several trained on the
    same data as the newest of them (say a GRPO and a Dr. GRPO run), the best dev utility. A
    variant without one is refused: `train_missing_routers` is the step that trains it."""
    policies: list[Policy] = []
    for name, variant in ROUTER_POLICIES.items():
        checkpoint = _matching_checkpoint(store, settings.host, _wanted_lineage(settings, variant))
        if checkpoint is None:
            raise MissingStep(f"no {variant} router for host '{settings.host}' with these weights and seeds "
                             f"on embedder '{embedder_name()}': "
                             f"`forge eval` trains it, or `forge train --variant {variant}`")
        policies.append(RouterPolicy(checkpoint, name))
    return policies


def train_missing_routers(store: Store, settings: EvaluationSettings) -> list[str]:
    """Train a Stage-1 router (seconds on the demo store) for every FORGE variant that has no
    checkpoint matching the settings; returns the new checkpoint ids. Needs the features."""
    trained = []
    for name, variant in ROUTER_POLICIES.items():
        if _matching_checkpoint(store, settings.host, _wanted_lineage(settings, variant)) is None:
            log.info("training a Stage-1 %s router for %s", variant, name)
            trained.append(train_router(store, TrainRequest(
                host=settings.host, variant=variant, n_arms=settings.n_arms, lambda_in=settings.lambda_in,
                lambda_out=settings.lambda_out, split_seed=settings.split_seed, benchmarks=settings.benchmarks,
                stage1=Stage1Config(seed=settings.seed))))
    return trained


def prepare_evaluation(store: Store, settings: EvaluationSettings,
                       on_features: Callable[[int, int], None] | None = None) -> None:
    """The one step that writes before an evaluation reads: the features of every enumerated
    query of the host (`on_features(done, total)` follows them), and the Stage-1 routers still
    missing for these settings."""
    compute_features(store, settings.host, settings.benchmarks, on_progress=on_features)
    train_missing_routers(store, settings)


def _matching_checkpoint(store: Store, host: str, wanted: dict) -> str | None:
    match = store.find_checkpoints(host, **wanted)
    if match.empty:
        return None
    candidates = match[match["stage"] == match["stage"].max()]  # newest first
    # dev utilities compare only on the same data: that of the newest candidate
    candidates = candidates[candidates["store_snapshot"] == candidates["store_snapshot"].iloc[0]]
    dev_utility = candidates["metrics"].map(lambda metrics: json.loads(metrics).get("dev_utility", -np.inf))
    return str(candidates.loc[dev_utility.idxmax(), "checkpoint_id"])


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
                  checkpoint_ids: Sequence[str] = (), n_arms: int = 6, by_benchmark: bool = False,
                  accounting: str = "deploy", base: EvalContext | None = None) -> dict:
    """Cost/quality points of the fixed arms, the baselines (re-tuned for these weights), the
    oracle and the given checkpoints (a cost-conditioned one decides at these weights), without
    training anything; plus the frontier indices. Each point: policy, benchmark ("all" unless
    `by_benchmark`), cost_k and macro_utility under `accounting`, macro_f1. `base`: the host's
    `evaluation_context` already loaded (any weights, this accounting and alphabet), whose
    weight-free fits are reused: what a slider step recomputes is only what the weights change."""
    if base is None:
        base = evaluation_context(store, host, n_arms, lambda_in, lambda_out, accounting=accounting)
    context = base.at(lambda_in, lambda_out)
    rows = context.rows(split)
    if not len(rows):
        raise InvalidInput(f"no complete {split} queries for host '{host}'")
    policies = build_baselines() + [RouterPolicy(c, c) for c in checkpoint_ids]
    outcomes = policy_outcomes(context, rows, policies)
    benchmarks = context.table.benchmarks[rows]
    points = []
    for name, outcome in outcomes.items():
        if by_benchmark:
            for benchmark in np.unique(benchmarks):
                mask = benchmarks == benchmark
                points.append(_point(name, str(benchmark), outcome.tokens[mask].mean(),
                                     outcome.f1[mask].mean(), outcome.utility[mask].mean()))
        else:
            points.append(_point(name, "all", macro(outcome.tokens, benchmarks),
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
    benchmarks: tuple[str, ...] | None = None  # only these benchmarks' queries (default: every one)
    accounting: str = "deploy"  # "deploy": every call a decision needs; "answer": the answering call only

    def __post_init__(self) -> None:
        check_cost_weights(self.lambda_in, self.lambda_out)
        check_accounting(self.accounting)
        if self.split not in EVALUATED_SPLITS:
            raise InvalidInput(f"the evaluated split is dev or test, not '{self.split}' (routers and baselines "
                             "are fitted on train)")
        unknown = sorted(set(self.policy_names or ()) - set(known_policy_names()))
        if unknown:
            raise InvalidInput(f"unknown policies: {', '.join(unknown)} (known: {', '.join(known_policy_names())})")


@dataclass(frozen=True)
class EvaluationSetup:
    """What an evaluation runs on: the context, the evaluated rows, the (unfitted) policies and
    the checkpoint of every FORGE router, selected or not."""

    context: EvalContext
    rows: np.ndarray
    policies: list[Policy]
    router_checkpoints: dict[str, str]


def evaluation_setup(store: Store, settings: EvaluationSettings) -> EvaluationSetup:
    """The complete queries of the split, and the baselines and FORGE routers (all, or the named
    ones). It only reads: `prepare_evaluation` computes what it needs first."""
    host, names = settings.host, settings.policy_names
    context = evaluation_context(store, host, settings.n_arms, settings.lambda_in, settings.lambda_out,
                                 settings.split_seed, settings.benchmarks, settings.accounting)
    rows = context.rows(settings.split)
    if not len(rows):
        raise InvalidInput(f"no complete {settings.split} queries for host '{host}'")
    routers = router_policies(store, settings)
    policies = build_baselines([n for n in (names or BASELINES) if n in BASELINES]) + routers
    policies += [FallbackPolicy(r) for r in routers if r.name == FALLBACK_ROUTER]
    conditioned = conditioned_policies(store, host, settings.n_arms, settings.split_seed, settings.seed,
                                       settings.benchmarks, required=names or ())
    policies += conditioned
    routers += conditioned
    if names:
        policies = [p for p in policies if p.name in names]
    return EvaluationSetup(context, rows, policies, {r.name: r.checkpoint_id for r in routers})


def evaluate(store: Store, settings: EvaluationSettings = EvaluationSettings(),
             on_policy: Callable[[str], None] | None = None) -> dict:
    """The Cached protocol: `{"policies": {name: summary}, "queries": n, ...}` for the baselines
    and FORGE routers (reads only; see `prepare_evaluation`)."""
    setup = evaluation_setup(store, settings)
    context, rows = setup.context, setup.rows
    outcomes = policy_outcomes(context, rows, setup.policies, on_policy)
    reference = outcomes.get("always_raw") or score_decisions(
        context, rows, "always_raw", FixedArm("raw:no_think").decide(context, rows))
    return {
        "host": settings.host, "split": settings.split, "protocol": "cached", "accounting": settings.accounting,
        "queries": int(len(rows)), "lambda_in": settings.lambda_in, "lambda_out": settings.lambda_out,
        "arms": list(context.table.arms),
        "policies": {name: summarize(o, context, rows, reference) for name, o in outcomes.items()},
    }


def lambda_sweep(store: Store, grid: Sequence[tuple[float, float]], settings: EvaluationSettings = EvaluationSettings(),
                 on_point: Callable[[float, float], None] | None = None) -> dict:
    """Every policy's (cost, F1) point at each (lambda_in, lambda_out) of the grid, routers
    trained (Stage 1) where missing and baselines re-tuned per point, and the Pareto frontier over
    all points (lowest cost for the highest macro F1). The settings' own cost weights are ignored."""
    points = []
    for lambda_in, lambda_out in grid:
        if on_point:
            on_point(lambda_in, lambda_out)
        point_settings = dataclasses.replace(settings, lambda_in=lambda_in, lambda_out=lambda_out)
        prepare_evaluation(store, point_settings)
        report = evaluate(store, point_settings)
        points += [{"policy": name, "lambda_in": lambda_in, "lambda_out": lambda_out, "cost_k": row["cost_k"],
                    "macro_f1": row["macro_f1"], "macro_utility": row["macro_utility"]}
                   for name, row in report["policies"].items()]
    frontier = pareto_frontier([(p["cost_k"], p["macro_f1"]) for p in points])
    return {"host": settings.host, "split": settings.split, "accounting": settings.accounting, "points": points,
            "frontier": frontier}


def repeated_evaluation(store: Store, settings: EvaluationSettings = EvaluationSettings(),
                        split_seeds: Sequence[int] = (0, 1, 2), seeds: Sequence[int] = (0, 1, 2),
                        on_run: Callable[[int, int], None] | None = None) -> dict:
    """The paper's protocol: every split seed x training seed, then mean and SD per policy of
    macro F1, macro EM, cost and utility, routers trained where missing. The settings' own seeds
    are ignored."""
    runs = []
    for split_seed in split_seeds:
        for seed in seeds:
            if on_run:
                on_run(split_seed, seed)
            run_settings = dataclasses.replace(settings, split_seed=split_seed, seed=seed)
            prepare_evaluation(store, run_settings)
            runs.append(evaluate(store, run_settings)["policies"])
    summary = {}
    for name in runs[0]:
        summary[name] = {"runs": len(runs)}
        for metric in ("macro_f1", "macro_em", "cost_k", "deploy_cost_k", "answer_cost_k", "macro_utility"):
            values = np.array([run[name][metric] for run in runs])
            summary[name][f"{metric}_mean"] = float(values.mean())
            summary[name][f"{metric}_sd"] = float(values.std(ddof=1)) if len(values) > 1 else 0.0
    return {"host": settings.host, "split": settings.split, "protocol": "cached", "accounting": settings.accounting,
            "split_seeds": list(split_seeds),
            "seeds": list(seeds), "policies": summary}
