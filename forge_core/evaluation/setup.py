"""What an evaluation runs on: its settings, the checkpoint of every FORGE router it selects, and
the one step that writes before an evaluation reads (`prepare_evaluation`: features and the
Stage-1 routers still missing). The protocols (`cached`, `fresh_online`) only read."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from forge_core.data.catalog import check_benchmarks
from forge_core.errors import InvalidInput, MissingStep
from forge_core.evaluation.settings import EvaluationSettings
from forge_core.evidence.embedders import embedder_name
from forge_core.evidence.retrievers import evaluated_retriever_hash, retriever_option
from forge_core.policies.base import Policy
from forge_core.policies.conditioned import conditioned_policies
from forge_core.policies.context import EvalContext, evaluation_context
from forge_core.policies.registry import (
    Baseline,
    TrainedRouter,
    build_baselines,
    has_dev_fallback,
    registered,
    variants,
)
from forge_core.policies.routers import FallbackPolicy, RouterPolicy
from forge_core.routing.features import compute_features
from forge_core.routing.utility import CostWeights
from forge_core.store import Store
from forge_core.training.request import TrainRequest
from forge_core.training.settings import Stage1Config

log = logging.getLogger(__name__)

def check_evaluation(store: Store, settings: EvaluationSettings) -> None:
    """Refuse, with a one-line `ForgeError`, settings the store cannot evaluate: unknown
    benchmarks, or a host without stored outcomes (the settings checked their own values)."""
    if settings.benchmarks is not None:
        check_benchmarks(store, settings.benchmarks)
    if settings.host not in store.hosts_with_outcomes():
        raise MissingStep(f"no outcomes for host '{settings.host}': run `forge enumerate --host {settings.host}` first")
    evaluated_retriever_hash(store, settings.host, settings.retriever)


@dataclass(frozen=True)
class EvaluationSetup:
    """What an evaluation runs on: the context, the evaluated rows, the (unfitted) policies and
    the checkpoint of every FORGE router, selected or not."""

    context: EvalContext
    rows: np.ndarray
    policies: list[Policy]
    router_checkpoints: dict[str, str]


def settings_context(store: Store, settings: EvaluationSettings) -> EvalContext:
    """The `evaluation_context` of the settings (their host, alphabet, weights, split seed,
    benchmarks, accounting and retriever)."""
    return evaluation_context(store, settings.host, settings.n_arms, settings.weights,
                              settings.split_seed, settings.benchmarks, settings.accounting,
                              evaluated_retriever_hash(store, settings.host, settings.retriever))


def evaluation_setup(store: Store, settings: EvaluationSettings, base: EvalContext | None = None,
                     checkpoints: Sequence[str] | None = None) -> EvaluationSetup:
    """The complete queries of the split, and the baselines and FORGE routers (all, or the named
    ones). It only reads: `prepare_evaluation` computes what it needs first. `base`: the
    `settings_context` of settings that differ at most in their cost weights and training seed,
    already loaded; the evaluation runs on it at the settings' weights and reuses its weight-free
    fits (a sweep or repeated runs load the outcome table once). `checkpoints`: these router
    checkpoints, each named by its id (a cost-conditioned one decides at the settings' weights), in
    place of the FORGE routers matched to the settings (the Pareto page's choice)."""
    host, names = settings.host, settings.policy_names
    if base is None:
        base = settings_context(store, settings)
    context = base.at(settings.weights)
    rows = context.rows(settings.split)
    if not len(rows):
        raise InvalidInput(f"no complete {settings.split} queries for host '{host}'")
    baselines = registered(Baseline)
    chosen_baselines = build_baselines([n for n in (names or baselines) if n in baselines])
    if checkpoints is not None:
        routers: list[Policy] = [RouterPolicy(checkpoint, checkpoint) for checkpoint in checkpoints]
        return EvaluationSetup(context, rows, chosen_baselines + routers, {c: c for c in checkpoints})
    routers = router_policies(store, settings)
    policies = chosen_baselines + routers
    policies += [FallbackPolicy(r) for r in routers if has_dev_fallback(r.name)]
    conditioned = conditioned_policies(store, host, settings.n_arms, settings.split_seed, settings.seed,
                                       settings.benchmarks, required=names or (),
                                       retriever_hash=context.table.retriever_hash)
    policies += conditioned
    routers += conditioned
    if names:
        policies = [p for p in policies if p.name in names]
    return EvaluationSetup(context, rows, policies, {r.name: r.checkpoint_id for r in routers})


def _wanted_lineage(settings: EvaluationSettings, variant: str) -> dict:
    benchmarks = list(settings.benchmarks) if settings.benchmarks is not None else None
    return {"variant": variant, "n_arms": settings.n_arms, "lambda_in": settings.weights.lambda_in,
            "lambda_out": settings.weights.lambda_out, "split_seed": settings.split_seed, "seed": settings.seed,
            "benchmarks": benchmarks, "embedder": embedder_name()}


def router_policies(store: Store, settings: EvaluationSettings) -> list[Policy]:
    """The FORGE routers: per variant, the checkpoint of the latest stage (Stage 2 before Stage 1)
    trained with the settings' cost weights, split seed and seed; among several trained on the
    same data as the newest of them (say a GRPO and a Dr. GRPO run), the best dev utility. A
    variant without one is refused: `prepare_evaluation` is the step that trains it."""
    policies: list[Policy] = []
    evidence = evaluated_retriever_hash(store, settings.host, settings.retriever)
    for name, variant in variants(TrainedRouter).items():
        checkpoint = _matching_checkpoint(store, settings.host, _wanted_lineage(settings, variant), evidence)
        if checkpoint is None:
            raise MissingStep(f"no {variant} router for host '{settings.host}' with these weights and seeds "
                             f"on embedder '{embedder_name()}' under retriever '{settings.retriever}': "
                             f"`forge eval` trains it first, or `forge train --variant {variant}"
                             f"{retriever_option(settings.retriever)}`")
        policies.append(RouterPolicy(checkpoint, name))
    return policies


def weights_with_routers(store: Store, settings: EvaluationSettings) -> list[CostWeights]:
    """The cost weights at which `router_policies` finds every FORGE variant's router for the
    settings (their host, alphabet, seeds, benchmarks, embedder and retriever; the settings' own
    weights aside), in increasing order: where a view that needs those routers works without training."""
    evidence = evaluated_retriever_hash(store, settings.host, settings.retriever)
    stored = store.checkpoints(settings.host)["lineage"].map(json.loads)
    pairs = sorted({(float(lineage["lambda_in"]), float(lineage["lambda_out"])) for lineage in stored
                    if lineage.get("lambda_in") is not None and lineage.get("lambda_out") is not None})
    found = []
    for lambda_in, lambda_out in pairs:
        at = CostWeights(lambda_in, lambda_out)
        wanted = dataclasses.replace(settings, weights=at)
        if all(_matching_checkpoint(store, settings.host, _wanted_lineage(wanted, variant), evidence) is not None
               for variant in variants(TrainedRouter).values()):
            found.append(at)
    return found


def train_missing_routers(store: Store, settings: EvaluationSettings) -> list[str]:
    """Train a Stage-1 router (seconds on the demo store) for every FORGE variant that has no
    checkpoint matching the settings; returns the new checkpoint ids. Needs the features."""
    from forge_core.training.trainer import train_router  # imports torch: only when a router is missing

    trained = []
    evidence = evaluated_retriever_hash(store, settings.host, settings.retriever)
    for name, variant in variants(TrainedRouter).items():
        if _matching_checkpoint(store, settings.host, _wanted_lineage(settings, variant), evidence) is None:
            log.info("training a Stage-1 %s router for %s", variant, name)
            trained.append(train_router(store, TrainRequest(
                host=settings.host, variant=variant, n_arms=settings.n_arms, lambda_in=settings.weights.lambda_in,
                lambda_out=settings.weights.lambda_out, split_seed=settings.split_seed, benchmarks=settings.benchmarks,
                stage1=Stage1Config(seed=settings.seed), retriever=settings.retriever)))
    return trained


def prepare_evaluation(store: Store, settings: EvaluationSettings,
                       on_features: Callable[[int, int], None] | None = None) -> list[str]:
    """The one step that writes before an evaluation reads: the features of every enumerated
    query of the host (`on_features(done, total)` follows them), and the Stage-1 routers still
    missing for these settings; returns the ids of the routers it trained."""
    return prepare_evaluations(store, [settings], on_features)


def prepare_evaluations(store: Store, evaluations: Sequence[EvaluationSettings],
                        on_features: Callable[[int, int], None] | None = None) -> list[str]:
    """`prepare_evaluation` for several settings (a sweep, repeated runs, a transfer): the
    features once per distinct host, benchmarks and retriever, then the routers still missing for
    each of the settings; returns the ids of the routers it trained."""
    for host, benchmarks, retriever in dict.fromkeys((s.host, s.benchmarks, s.retriever) for s in evaluations):
        compute_features(store, host, benchmarks, on_progress=on_features, retriever=retriever)
    return [checkpoint for settings in evaluations for checkpoint in train_missing_routers(store, settings)]


def _matching_checkpoint(store: Store, host: str, wanted: dict, evidence: str = "") -> str | None:
    match = store.find_checkpoints(host, evidence, **wanted)
    if match.empty:
        return None
    candidates = match[match["stage"] == match["stage"].max()]  # newest first
    # dev utilities compare only on the same data: that of the newest candidate
    candidates = candidates[candidates["store_snapshot"] == candidates["store_snapshot"].iloc[0]]
    dev_utility = candidates["metrics"].map(lambda metrics: json.loads(metrics).get("dev_utility", -np.inf))
    return str(candidates.loc[dev_utility.idxmax(), "checkpoint_id"])


