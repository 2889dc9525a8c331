"""Out-of-fold decisions at any cost weights, from the folds of a stored crossfit run.

A crossfit run stores its policies' decisions at its own weights only, and its fold routers live in
memory. The cost-conditioned routers take the weights as input, so one training per fold serves
every weight pair: each fold's conditioned routers are trained again once with the run's settings
and seeds (the same routers: at the run's weights they make its stored decisions again, measured as
`reproduced_share`), beside the weight-free part of the linear floor `ridge_utility` (its ridge fits
of F1, c_in and c_out), and kept in one file (`torch.load(weights_only=True)`). At any weights,
each fold's held-out queries are then decided by the fixed arms, the floor (its penalty re-chosen
on the fold's inner dev part at those weights) and the conditioned routers, in seconds.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import json
import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from sklearn.linear_model import Ridge

from forge_core.engines import DEFAULT_ENGINE
from forge_core.evaluation.crossfit import (
    FLOOR_POLICY,
    STAGE_CONFIG_RENAMES,
    CrossfitSettings,
    FoldRouter,
    crossfit_folds,
    crossfit_run_id,
)
from forge_core.evaluation.file_cache import cached_file
from forge_core.policies.base import Policy
from forge_core.policies.baselines import FixedArm, RidgeUtility
from forge_core.policies.context import EvalContext, evaluation_context
from forge_core.policies.outcomes import score_decisions
from forge_core.policies.registry import ConditionedRouter, variants
from forge_core.routing.conditioning import CostConditioning
from forge_core.routing.features import Standardizer, compute_features
from forge_core.routing.routers import build_router
from forge_core.routing.utility import CostWeights
from forge_core.store import Store
from forge_core.training.settings import Stage1Config, Stage2Config
from forge_core.training.threads import one_thread

log = logging.getLogger(__name__)

FOLD_FILE_VERSION = 1  # layout of the fold file: bump when it changes
CONDITIONED_VARIANTS = variants(ConditionedRouter)  # policy name -> feature variant


def settings_from_dict(stored: dict) -> CrossfitSettings:
    """`CrossfitSettings` from a run's stored JSON (older field names renamed, missing conditioning
    the default)."""
    stage1 = {STAGE_CONFIG_RENAMES.get(key, key): value for key, value in stored["stage1"].items()}
    known1 = {f.name for f in dataclasses.fields(Stage1Config)}
    known2 = {f.name for f in dataclasses.fields(Stage2Config)}
    top = {f.name for f in dataclasses.fields(CrossfitSettings)} - {"stage1", "stage2", "conditioning"}
    return CrossfitSettings(
        **{key: value for key, value in stored.items() if key in top},
        stage1=Stage1Config(**{k: v for k, v in stage1.items() if k in known1}),
        stage2=Stage2Config(**{k: v for k, v in stored["stage2"].items() if k in known2}),
        conditioning=_stored_conditioning(stored))


def _stored_conditioning(stored: dict) -> CostConditioning | None:
    """A run's conditioning: None when it had none; the default for a run stored before conditioning
    was recorded, as its run id reads it (`crossfit_identity`)."""
    if "conditioning" not in stored:
        return CostConditioning()
    return None if stored["conditioning"] is None else CostConditioning.from_dict(stored["conditioning"])


def fold_file(cache_dir: Path, run_id: str) -> Path:
    """Where a run's retrained fold routers and floor fits are kept."""
    return Path(cache_dir) / "decide" / f"{run_id}.folds.v{FOLD_FILE_VERSION}.pt"


def _fold_router(name: str, settings: CrossfitSettings) -> FoldRouter:
    stage1 = dataclasses.replace(settings.stage1, seed=settings.seed)
    return FoldRouter(name, CONDITIONED_VARIANTS[name], stage1, conditioning=settings.conditioning)


def _router_record(policy: FoldRouter) -> dict:
    return {"state": policy.router.state_dict(), "kind": policy.router.kind, "input_dim": policy.router.input_dim,
            "standardizer": json.dumps(policy.standardizer.to_dict())}


def _floor_record(components: tuple[Standardizer, dict[float, Ridge]]) -> dict:
    standardizer, models = components
    return {"standardizer": json.dumps(standardizer.to_dict()), "alphas": list(models),
            "coef": [torch.as_tensor(model.coef_) for model in models.values()],
            "intercept": [torch.as_tensor(model.intercept_) for model in models.values()]}


def _trained_fold(settings: CrossfitSettings, context: EvalContext) -> tuple[dict, list[dict[str, np.ndarray]]]:
    """One fold's conditioned routers and floor fits as the fold file keeps them, and the routers'
    held-out rows at the run's weights."""
    trained = {}
    for name in CONDITIONED_VARIANTS:
        trained[name] = _fold_router(name, settings)
        trained[name].fit(context)
    record = {"routers": {name: _router_record(policy) for name, policy in trained.items()},
              "floor": _floor_record(RidgeUtility.fit_components(context))}
    at_run = context.at(settings.weights)
    return record, [_policy_rows(at_run, at_run.rows("test"), policy) for policy in trained.values()]


def _train_each_fold(settings: CrossfitSettings, contexts: list[EvalContext],
                     on_fold: Callable[[int, int], None] | None, engine: str,
                     address: str | None) -> list[tuple[dict, list[dict[str, np.ndarray]]]]:
    """`_trained_fold` of every fold, in fold order: in this process, or as Ray tasks."""
    if engine == "ray":
        from forge_core.evaluation.crossfit_ray import BASELINE_VARIANT, map_folds_on_ray, shipped

        read = {BASELINE_VARIANT, *CONDITIONED_VARIANTS.values()}
        return map_folds_on_ray(_trained_fold, [(settings, shipped(context, read)) for context in contexts], on_fold,
                                address)
    trained = []
    with one_thread():  # BLAS too: the floor's ridge fits come out as on a Ray task, bit for bit
        for fold, context in enumerate(contexts):
            trained.append(_trained_fold(settings, context))
            log.info("fold decisions: fold %d of %d trained", fold + 1, len(contexts))
            if on_fold:
                on_fold(fold + 1, len(contexts))
    return trained


def _train_folds(run_id: str, settings: CrossfitSettings, contexts: list[EvalContext],
                 on_fold: Callable[[int, int], None] | None, engine: str = DEFAULT_ENGINE,
                 address: str | None = None) -> dict:
    """Each fold's conditioned routers and floor fits (on `engine`), and the share of the run's
    stored decisions the routers make again at its weights."""
    trained = _train_each_fold(settings, contexts, on_fold, engine, address)
    decided = _frame([rows for _, fold_rows in trained for rows in fold_rows])
    return {"folds": [record for record, _ in trained],
            "reproduced_share": _reproduced_share(contexts[0].store, run_id, decided)}


def _reproduced_share(store: Store, run_id: str, decided: pd.DataFrame) -> dict[str, float]:
    stored = store.crossfit_results(run_id)
    shares = {}
    for name in CONDITIONED_VARIANTS:
        keys = ["benchmark", "example_id"]
        joined = decided[decided["policy"] == name][[*keys, "arm"]].merge(
            stored[stored["policy"] == name][[*keys, "arm"]], on=keys, suffixes=("", "_stored"))
        shares[name] = float((joined["arm"] == joined["arm_stored"]).mean()) if len(joined) else 0.0
    return shares


def _loaded_router(name: str, record: dict, settings: CrossfitSettings) -> FoldRouter:
    policy = _fold_router(name, settings)
    policy.router = build_router(record["kind"], int(record["input_dim"]), settings.n_arms)
    policy.router.load_state_dict(record["state"])
    policy.router.eval()
    policy.standardizer = Standardizer.from_dict(json.loads(record["standardizer"]))
    return policy


def _loaded_floor(record: dict) -> tuple[Standardizer, dict[float, Ridge]]:
    models = {}
    for alpha, coef, intercept in zip(record["alphas"], record["coef"], record["intercept"]):
        model = Ridge(alpha=alpha)
        model.coef_, model.intercept_ = coef.numpy(), intercept.numpy()
        model.n_features_in_ = model.coef_.shape[1]
        models[float(alpha)] = model
    return Standardizer.from_dict(json.loads(record["standardizer"])), models


def decision_context(store: Store, stored_settings: dict, accounting: str) -> EvalContext:
    """The evaluation context a run's fold decisions read (features computed first), at the default
    weights: pass it as `base` to decide at many weights with one load of outcomes and features."""
    settings = settings_from_dict(stored_settings)
    compute_features(store, settings.host, retriever=settings.retriever)
    return evaluation_context(store, settings.host, settings.n_arms, CostWeights(), accounting=accounting,
                              retriever_hash=stored_settings.get("retriever_hash", ""))


def out_of_fold_outcomes(store: Store, run_id: str, stored_settings: dict, weights: CostWeights, accounting: str,
                         cache_dir: Path, on_fold: Callable[[int, int], None] | None = None,
                         base: EvalContext | None = None, engine: str = DEFAULT_ENGINE,
                         address: str | None = None) -> tuple[pd.DataFrame, dict[str, float]]:
    """One row per (policy, query) at `weights`: the held-out decision of every fixed arm, the floor
    and each conditioned router, with F1, utility and tokens in and out (under `accounting`); and
    the routers' `reproduced_share`. The fold file is made on the first call (`on_fold(done, total)`
    follows it; with `engine` "ray" its folds are trained as Ray tasks, `address` the cluster to
    join). `base`: the run's `decision_context` under `accounting`, already loaded."""
    settings = settings_from_dict(stored_settings)
    base = (base or decision_context(store, stored_settings, accounting)).at(weights)
    if crossfit_run_id(settings.to_dict(stored_settings.get("retriever_hash", "")), base) != run_id:
        log.warning("fold decisions: the store's outcomes changed since crossfit run %s", run_id)
    path = fold_file(cache_dir, run_id)
    contexts = [context.at(weights) for context in _fold_contexts(base, run_id, settings, path)]
    stored = cached_file(path, lambda: _train_folds(run_id, settings, contexts, on_fold, engine, address),
                         lambda file: _read_fold_file(str(file), file.stat().st_mtime_ns),
                         lambda file, value: torch.save(value, file))
    routers = _fold_routers(str(path), path.stat().st_mtime_ns, json.dumps(stored_settings, sort_keys=True))
    with one_thread():
        rows = [policy_rows for context, fold, fold_routers in zip(contexts, stored["folds"], routers)
                for policy_rows in _fold_outcomes(context, fold, fold_routers)]
    return _frame(rows), stored["reproduced_share"]


def _fold_contexts(base: EvalContext, run_id: str, settings: CrossfitSettings, path: Path) -> list[EvalContext]:
    """The run's fold contexts, made once per base context (kept with its weight-free results, which its
    `at` copies share) and version of the fold file `path`: a decision at new weights reuses their splits,
    normalizers and weight-free fits, the floor loaded from the fold file among them."""
    version = path.stat().st_mtime_ns if path.exists() else None
    return base.weight_free(("crossfit folds", run_id, version), lambda: [
        context for _, context in crossfit_folds(base, settings.folds, settings.dev_fraction, settings.split_seed)])


# A fold file and its routers are read and built once per version of the file (`modified_ns`): the
# dashboard's slider steps decide at one new weight pair after another from the same file.
@functools.lru_cache(maxsize=4)
def _read_fold_file(path: str, modified_ns: int) -> dict:
    return torch.load(io.BytesIO(Path(path).read_bytes()), weights_only=True)


@functools.lru_cache(maxsize=4)
def _fold_routers(path: str, modified_ns: int, settings_json: str) -> list[list[FoldRouter]]:
    settings = settings_from_dict(json.loads(settings_json))
    return [[_loaded_router(name, record, settings) for name, record in fold["routers"].items()]
            for fold in _read_fold_file(path, modified_ns)["folds"]]


def _fold_outcomes(context: EvalContext, fold: dict, routers: list[FoldRouter]) -> list[dict[str, np.ndarray]]:
    """One fold's held-out rows of every fixed arm, the floor and the fold's conditioned routers."""
    context.weight_free((FLOOR_POLICY,), lambda: _loaded_floor(fold["floor"]))
    policies: list[Policy] = [FixedArm(arm) for arm in context.table.arms] + [RidgeUtility()]
    for policy in policies:
        policy.fit(context)
    return [_policy_rows(context, context.rows("test"), policy) for policy in [*policies, *routers]]


def _frame(columns: list[dict[str, np.ndarray]]) -> pd.DataFrame:
    """One frame of many policies' rows (`_policy_rows`), made once."""
    return pd.DataFrame({name: np.concatenate([rows[name] for rows in columns]) for name in columns[0]})


def _policy_rows(context: EvalContext, rows: np.ndarray, policy: Policy) -> dict[str, np.ndarray]:
    """A policy's held-out rows as columns: its arm, F1, utility and tokens (in, out and in all)
    under the accounting."""
    decisions = policy.decide(context, rows)
    outcome = score_decisions(context, rows, policy, decisions)
    table, actions = context.table, decisions.actions
    tokens_in, tokens_out = table.tokens_in[rows, actions], table.tokens_out[rows, actions]
    if context.accounting == "deploy":
        tokens_in, tokens_out = tokens_in + decisions.prior_tokens_in, tokens_out + decisions.prior_tokens_out
    return {"policy": np.full(len(rows), policy.name, dtype=object),
            "kind": np.full(len(rows), policy.kind, dtype=object), "row": rows,
            "benchmark": table.benchmarks[rows], "example_id": table.example_ids[rows],
            "arm": np.asarray(table.arms, dtype=object)[actions], "f1": np.asarray(outcome.f1, dtype=np.float64),
            "utility": np.asarray(outcome.utility, dtype=np.float64), "tokens_in": tokens_in.astype(np.float64),
            "tokens_out": tokens_out.astype(np.float64), "tokens": (tokens_in + tokens_out).astype(np.float64)}
