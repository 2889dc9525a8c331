"""Train routers from the store: assemble the data, run Stage 1 or Stage 2, save a checkpoint.

The data: the host's complete queries (every arm stored) with features of the chosen variant,
standardized with train statistics; utilities with costs normalized by train maxima. Leakage is
refused by construction: the standardizer and normalizer only fit on "train". What to train, checked,
is `forge_core.training.request`'s `TrainRequest`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from forge_core.arms import parse_arm
from forge_core.errors import InvalidInput, MissingStep
from forge_core.evidence.answering import answer_with_arm, load_retriever, retrieve_evidence, score_arm_answer
from forge_core.evidence.embedders import embedder_name
from forge_core.evidence.retrievers import check_router_retriever, get_retriever_config, retriever_option
from forge_core.hosts.base import Host
from forge_core.hosts.lifetime import hosted
from forge_core.hosts.registry import config_hash, get_host_config
from forge_core.records import ArmOutcome
from forge_core.rewards.sources import GOLD, proxy_rewards
from forge_core.routing.checkpoints import load_checkpoint, save_checkpoint
from forge_core.routing.conditioning import WEIGHT_COLUMNS, CostConditioning, conditioned_rows
from forge_core.routing.features import (
    Standardizer,
    assemble_features,
    embedding_width,
    feature_names,
    router_standardizer,
)
from forge_core.routing.outcome_table import OutcomeTable, load_outcome_table
from forge_core.routing.routers import Router, build_router
from forge_core.routing.utility import CostNormalizer, oracle_actions
from forge_core.store import Store, job_run, utc_now
from forge_core.training.request import VARIANTS, TrainRequest
from forge_core.training.settings import STORED_CONFIG_KEYS, Stage1Config, Stage2Config
from forge_core.training.stage1 import train_stage1
from forge_core.training.stage2 import table_reward_fn, train_stage2
from forge_core.training.threads import one_torch_thread

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class TrainingData:
    """Aligned rows: outcomes, standardized features, and the fitted preprocessing."""

    table: OutcomeTable
    features: np.ndarray  # [N, d] standardized
    standardizer: Standardizer
    normalizer: CostNormalizer
    feature_names: tuple[str, ...]
    embedder: str

    def rows(self, split: str) -> np.ndarray:
        """Row indices of one split."""
        return np.flatnonzero(self.table.splits == split)

    def snapshot_hash(self) -> str:
        """Hash of the data the router sees: keys, splits, scores and token counts."""
        digest = hashlib.sha256()
        digest.update(repr(self.table.keys).encode())
        digest.update(repr(self.table.splits.tolist()).encode())
        for matrix in (self.table.f1, self.table.tokens_in, self.table.tokens_out):
            digest.update(np.ascontiguousarray(matrix, dtype=np.float64).tobytes())
        return digest.hexdigest()[:16]


def request_training_data(store: Store, request: TrainRequest) -> TrainingData:
    """The data a request trains on: the complete queries, also those without gold answers when
    the reward is a proxy (then with the proxy in place of F1)."""
    data = prepare_training_data(store, request.host, request.variant, request.n_arms, request.split_seed,
                                 request.benchmarks, labeled_only=request.training_reward == GOLD,
                                 retriever_hash=request.retriever_hash(store))
    return with_reward(store, data, request.training_reward)


def prepare_training_data(store: Store, host: str, variant: str, n_arms: int, split_seed: int = 0,
                          benchmarks: Sequence[str] | None = None, labeled_only: bool = True,
                          retriever_hash: str = "") -> TrainingData:
    """Complete queries (of `benchmarks` when given) under one retriever configuration (its hash;
    "": the default BM25) with their stored features, standardized on train (compute the features
    first: `forge_core.routing.features.compute_features`); with `labeled_only` False, queries
    without gold answers too (for training on a proxy reward). The retrieval features are each
    retriever's own scores, standardized on its train queries like every structured feature: a
    z-score that means "retrieval confidence against the training queries under the same
    evidence" for every kind (BM25 scores, cosines, reciprocal-rank sums)."""
    if variant not in VARIANTS:
        raise InvalidInput(f"unknown variant '{variant}' (known: {', '.join(VARIANTS)})")
    table = load_outcome_table(store, host, n_arms, split_seed, benchmarks, labeled_only, retriever_hash)
    if variant == "full":
        table = table.subset(table.has_probes)
        if not len(table):
            raise MissingStep(f"no query of host '{host}' has probes: run `forge enumerate --probes`")
    raw = assemble_features(store, host, variant, table.keys, retriever_hash=retriever_hash)
    train = table.splits == "train"
    if not train.any() or not (table.splits == "dev").any():
        option = retriever_option(table.retriever)
        raise MissingStep(f"host '{host}' needs complete train and dev queries: run `forge enumerate --host "
                          f"{host} --split train{option}` and `--split dev`")
    standardizer = router_standardizer(raw[train], variant, "train")
    return TrainingData(table, standardizer.transform(raw), standardizer, table.fit_normalizer(),
                        tuple(feature_names(variant, embedding_width(variant, raw))), embedder_name())


def with_reward(store: Store, data: TrainingData, source: str) -> TrainingData:
    """The training data with `source`'s rewards in place of F1, on the rows whose every arm has
    one (gold: unchanged). Refuses a reward with no train or dev row."""
    if source == GOLD:
        return data
    rewards, complete = proxy_rewards(store, data.table, source)
    table = dataclasses.replace(data.table, f1=rewards).subset(complete)
    return dataclasses.replace(data, table=table, features=data.features[complete])


def _router_inputs(data: TrainingData, request: TrainRequest, rows: np.ndarray) -> np.ndarray:
    """The router's inputs for `rows` at the request's weights (weight columns when conditioned)."""
    if request.conditioning is None:
        return data.features[rows]
    return request.conditioning.inputs(data.features[rows], request.weights)


def _dev_metrics(router: torch.nn.Module, data: TrainingData, utility: np.ndarray,
                 request: TrainRequest) -> dict[str, float]:
    """The chosen arms' dev metrics. A router trained on a proxy reward has `dev_proxy_reward` (the
    proxy's mean) where a gold-trained one has `dev_f1`: its table holds the proxy in place of F1,
    and its dev utility is the proxy's utility."""
    dev = data.rows("dev")
    with torch.no_grad():
        actions = router.log_probs(torch.as_tensor(_router_inputs(data, request, dev))).argmax(dim=1).numpy()
    chosen = np.arange(len(dev))
    return {
        "dev_utility": float(utility[dev][chosen, actions].mean()),
        _reward_metric(request): float(data.table.f1[dev][chosen, actions].mean()),
        "dev_cost_tokens": float(data.table.cost[dev][chosen, actions].mean()),
        "dev_oracle_agreement": float((actions == oracle_actions(utility[dev])).mean()),
        "dev_queries": int(len(dev)),
        "train_queries": int(len(data.rows("train"))),
    }


def _reward_metric(request: TrainRequest) -> str:
    return "dev_f1" if request.training_reward == GOLD else "dev_proxy_reward"


def _lineage(request: TrainRequest, data: TrainingData, host_hashes: list[str], stage_config: Any) -> dict[str, Any]:
    """Where a checkpoint comes from (hashed into its id). A cost-conditioned router's lineage has
    a `conditioning` and no weights (lambda_in and lambda_out None); a router of one weight pair's
    has no `conditioning` key at all, so its id is the one it had before conditioning existed."""
    conditioning = request.conditioning
    lineage = _weight_pair_lineage(request, data, host_hashes, stage_config)
    if conditioning is None:
        return lineage
    lineage["input_dim"] += len(WEIGHT_COLUMNS)
    return lineage | {"lambda_in": None, "lambda_out": None, "conditioning": conditioning.to_dict()}


def _weight_pair_lineage(request: TrainRequest, data: TrainingData, host_hashes: list[str],
                         stage_config: Any) -> dict[str, Any]:
    # the keys are those of older versions (`router` holds `router_kind`, the config's `arms` its
    # `warm_start_arms`): checkpoint ids hash them
    return {
        "store_snapshot": data.snapshot_hash(), "host": request.host, "host_config_hashes": host_hashes,
        "variant": request.variant, "embedder": data.embedder, "feature_names": list(data.feature_names),
        "input_dim": int(data.features.shape[1]), "router": request.router_kind, "n_arms": request.n_arms,
        "lambda_in": request.lambda_in, "lambda_out": request.lambda_out, "tau": request.stage1.tau,
        "split_seed": request.split_seed, "seed": stage_config.seed,
        "benchmarks": list(request.benchmarks) if request.benchmarks is not None else None, "stage": request.stage,
        "config": _stored_config(stage_config), "parent": request.parent,
        "standardizer": data.standardizer.to_dict(), "normalizer": data.normalizer.to_dict(),
    } | _reward_lineage(request) | _retriever_lineage(data)


def _retriever_lineage(data: TrainingData) -> dict[str, str]:
    """The evidence a checkpoint was trained under, in its lineage: the retriever configuration's
    hash, left out for the default BM25 evidence (""), so earlier checkpoints keep their ids."""
    return {"retriever_hash": data.table.retriever_hash} if data.table.retriever_hash else {}


def _stored_config(stage_config: Any) -> dict[str, Any]:
    """A stage config as the lineage stores it: renamed fields under their older names."""
    return {STORED_CONFIG_KEYS.get(key, key): value for key, value in dataclasses.asdict(stage_config).items()}


def _reward_lineage(request: TrainRequest) -> dict[str, str]:
    """The reward a checkpoint was trained on, in its lineage (`reward` for Stage 1, `stage2_reward`
    for Stage 2, whose parent's lineage holds the Stage-1 one); gold is left out, so checkpoints
    trained on gold keep the ids they had before rewards were a choice."""
    if request.training_reward == GOLD:
        return {}
    return {"stage2_reward" if request.stage == 2 else "reward": request.training_reward}


def train_router(store: Store, request: TrainRequest, on_log: Callable[[dict[str, Any]], None] | None = None) -> str:
    """Train one router as requested and store its checkpoint; returns the checkpoint id.

    Runs on one torch thread (`one_torch_thread`).
    """
    with one_torch_thread():
        return _train_router(store, request, on_log)


class TrainingCancelled(Exception):
    """A training job was asked to stop (the jobs table says "cancelling"): it stores no checkpoint."""


def train_router_job(store: Store, request: TrainRequest,
                     on_log: Callable[[dict[str, Any]], None] | None = None) -> str | None:
    """`train_router` as a job: a jobs-table row, every log row stored as it comes (the dashboard
    draws the curves from them while training runs), the checkpoint id in the final message.

    A cancel request (`forge_core.jobs.cancel_job`) is noticed at the next log row (a Stage-1
    epoch, a logged Stage-2 step): the run stops, the job closes as "cancelled" and no checkpoint
    is stored (the state so far is discarded); returns None then."""
    total = request.stage2.steps if request.stage == 2 else request.stage1.max_epochs
    with job_run(store, "train", request.to_dict(), total) as job:
        seq = 0

        def log_row(row: dict[str, Any]) -> None:
            nonlocal seq
            seq += 1
            store.append_job_log(job.job_id, seq, row)
            job.progress(int(row.get("step", row.get("epoch", seq))))
            if on_log:
                on_log(row)
            stored = store.job(job.job_id)
            if stored is not None and stored["status"] == "cancelling":
                unit = "step" if "step" in row else "epoch"
                raise TrainingCancelled(f"cancelled at {unit} {row.get(unit, seq)} of {total}: no checkpoint kept")

        try:
            checkpoint_id = train_router(store, request, log_row)
        except TrainingCancelled as cancelled:
            log.info("training job %s %s", job.job_id, cancelled)
            job.end("cancelled", str(cancelled))
            return None
        job.end("finished", checkpoint_id)
        return checkpoint_id


def _train_router(store: Store, request: TrainRequest, on_log: Callable[[dict[str, Any]], None] | None) -> str:
    data = request_training_data(store, request)
    utility = data.table.utility(data.normalizer, request.weights)
    host_hashes = store.host_config_hashes(request.host)
    metrics: dict[str, Any] = {}
    if request.stage == 1:
        router, log_rows, request = _run_stage1(data, utility, request, on_log)
        stage_config: Any = request.stage1
    else:  # stage 2 (`TrainRequest` admits no other)
        router, log_rows, request, metrics["selected_step"] = _run_stage2(store, data, utility, request, on_log)
        stage_config = request.stage2
    record = {
        "stage": request.stage, "host": request.host, "variant": request.variant, "n_arms": request.n_arms,
        "parent": request.parent, "lineage": _lineage(request, data, host_hashes, stage_config),
        "metrics": _dev_metrics(router, data, utility, request) | metrics, "training_log": log_rows,
    }
    return save_checkpoint(store, router, record)


@dataclass(frozen=True)
class FitRows:
    """What a router is fitted on: router inputs and [N, K] utilities of the train and dev rows,
    and for a cost-conditioned Stage 1 the fresh train rows of each later epoch."""

    x_train: np.ndarray
    u_train: np.ndarray
    x_dev: np.ndarray
    u_dev: np.ndarray
    epoch_rows: Callable[[int], tuple[np.ndarray, np.ndarray]] | None = None


def fit_rows(x: np.ndarray, utility: np.ndarray, table: OutcomeTable, normalizer: CostNormalizer, train: np.ndarray,
             dev: np.ndarray, conditioning: CostConditioning | None, seed: int, stage: int) -> FitRows:
    """The rows a router of `stage` is fitted on, from standardized features `x` and `utility` of
    every table row: the `train` and `dev` rows as they are, or for a cost-conditioned router
    their copies at seeded drawn weights (see `forge_core.routing.conditioning`)."""
    if conditioning is None:
        return FitRows(x[train], utility[train], x[dev], utility[dev])

    def drawn(rows: np.ndarray, stream: int, copies: int) -> tuple[np.ndarray, np.ndarray]:
        return conditioned_rows(conditioning, x, table, normalizer, rows, [seed, stream], copies)

    dev_rows = drawn(dev, 0, conditioning.fixed_draws)
    if stage == 2:
        return FitRows(*drawn(train, 1, conditioning.fixed_draws), *dev_rows)
    return FitRows(*drawn(train, 1, conditioning.draws), *dev_rows,
                   epoch_rows=lambda epoch: drawn(train, epoch, conditioning.draws))


def fit_stage1_router(rows: FitRows, config: Stage1Config, kind: str = "factorized",
                      on_epoch: Callable[[Any], None] | None = None) -> Router:
    """A new router of `kind` trained with Stage 1 on `rows`, early-stopped on their dev rows
    (kept in memory; `train_router` stores checkpoints)."""
    torch.manual_seed(config.seed)
    router = build_router(kind, rows.x_train.shape[1], rows.u_train.shape[1])
    train_stage1(router, rows.x_train, rows.u_train, rows.x_dev, rows.u_dev, config, on_epoch=on_epoch,
                 epoch_rows=rows.epoch_rows)
    return router


def dev_utility_of(router: Router, x_dev: np.ndarray, u_dev: np.ndarray) -> float:
    """Mean utility of the router's argmax arm on the dev rows."""
    with torch.no_grad():
        actions = router.log_probs(torch.as_tensor(x_dev)).argmax(dim=1).numpy()
    return float(u_dev[np.arange(len(x_dev)), actions].mean())


def fit_stage2_router(parent: Router, rows: FitRows, config: Stage2Config) -> Router:
    """A copy of `parent` refined with Stage 2 on the replayed table rewards of `rows`, keeping
    the state of best dev utility (kept in memory; `train_router` stores checkpoints)."""
    router = build_router(parent.kind, parent.input_dim, parent.n_arms)
    router.load_state_dict(parent.state_dict())
    train_stage2(router, parent, rows.x_train, table_reward_fn(rows.u_train), config,
                 dev_utility=lambda candidate: dev_utility_of(candidate, rows.x_dev, rows.u_dev))
    return router


def _request_rows(data: TrainingData, utility: np.ndarray, request: TrainRequest, seed: int) -> FitRows:
    return fit_rows(data.features, utility, data.table, data.normalizer, data.rows("train"), data.rows("dev"),
                    request.conditioning, seed, request.stage)


def _run_stage1(data: TrainingData, utility: np.ndarray, request: TrainRequest, on_log: Callable | None):
    rows: list[dict[str, Any]] = []

    def on_epoch(epoch: Any) -> None:
        rows.append(dataclasses.asdict(epoch))
        if on_log:
            on_log(rows[-1])

    router = fit_stage1_router(_request_rows(data, utility, request, request.stage1.seed), request.stage1,
                               request.router_kind, on_epoch)
    return router, rows, request


def _run_stage2(store: Store, data: TrainingData, utility: np.ndarray, request: TrainRequest, on_log: Callable | None):
    parent_id = request.parent or request.default_parent(store)
    if parent_id is None:
        option = retriever_option(request.retriever)
        raise MissingStep(f"Stage 2 starts from a Stage-1 checkpoint: run `forge train --stage 1 --variant "
                          f"{request.variant}{option}` first")
    parent = load_checkpoint(store, parent_id)
    check_router_retriever(parent_id, parent.lineage, get_retriever_config(store, request.retriever))
    if parent.lineage["feature_names"] != list(data.feature_names) or parent.record["n_arms"] != request.n_arms:
        raise InvalidInput(f"checkpoint {parent_id} was trained on other features or another alphabet")
    if parent.conditioning != request.conditioning:
        raise InvalidInput(f"checkpoint {parent_id} is {'not ' if parent.conditioning is None else ''}"
                           "cost-conditioned (or on another weight range): Stage 2 keeps its parent's conditioning")
    request = dataclasses.replace(request, parent=parent_id, router_kind=parent.lineage["router"])
    router = build_router(request.router_kind, parent.router.input_dim, request.n_arms)
    router.load_state_dict(parent.router.state_dict())
    train = data.rows("train")
    rows = _request_rows(data, utility, request, request.stage2.seed)
    if request.rewards == "table":
        reward_fn = table_reward_fn(rows.u_train)
    else:  # "live" (`TrainRequest` admits no other)
        reward_fn = LiveRewards(store, request, data, train).reward_fn
    log_rows: list[dict[str, Any]] = []

    def on_row(row: dict[str, Any]) -> None:
        log_rows.append(row)
        if on_log:
            on_log(row)

    result = train_stage2(router, parent.router, rows.x_train, reward_fn, request.stage2, on_log=on_row,
                          dev_utility=lambda candidate: dev_utility_of(candidate, rows.x_dev, rows.u_dev))
    return router, log_rows, request, result.selected_step


class LiveRewards:
    """Stage-2 rewards from the live host: a (query, arm) already stored is reused; a missing one
    is run on the host (concurrently within a rollout), written to the store and then reused."""

    def __init__(self, store: Store, request: TrainRequest, data: TrainingData, rows: np.ndarray) -> None:
        self.store, self.request, self.data, self.rows = store, request, data, rows
        self.utility = data.table.utility(data.normalizer, request.weights)[rows]
        self.known = ~np.isnan(self.utility)
        self.host_config = get_host_config(store, request.host)

    def reward_fn(self, query_indices: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """Utilities of the sampled actions, fetching any missing outcome from the host first."""
        missing = {(int(q), int(a)) for q, row in zip(query_indices, actions) for a in row
                   if not self.known[q, a]}
        if missing:
            asyncio.run(self._fetch(sorted(missing)))
        return self.utility[query_indices[:, None], actions]

    async def _fetch(self, pairs: list[tuple[int, int]]) -> None:
        async with hosted(self.host_config) as client:
            await asyncio.gather(*(self._fetch_one(client, q, a) for q, a in pairs))

    async def _fetch_one(self, client: Host, query: int, action: int) -> None:
        benchmark, example_id = self.data.table.keys[self.rows[query]]
        example = self.store.examples(benchmark, [example_id])[0]
        arm = parse_arm(self.data.table.arms[action])
        evidence = retrieve_evidence(load_retriever(self.store, benchmark), example.question)
        started = utc_now()
        answer = await answer_with_arm(client, evidence, arm, example.is_fever)
        f1, em = score_arm_answer(answer, example.answers, example.is_fever)
        self.store.write_arm_outcome(ArmOutcome(
            self.request.host, benchmark, example_id, arm.name, answer.answer, answer.extracted, f1, em,
            answer.tokens_in, answer.tokens_out, answer.tokens_reasoning, answer.latency_ms, None, 1,
            config_hash(self.host_config), started, utc_now(), answer.reasoning_method))
        c_in, c_out = self.data.normalizer.transform(np.array([answer.tokens_in]), np.array([answer.tokens_out]))
        self.utility[query, action] = self.request.weights.utility(f1, c_in[0], c_out[0])
        self.known[query, action] = True
