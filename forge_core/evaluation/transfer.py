"""Transfer: routers trained on one host (the source) route another host's queries (the target).

The FORGE paper applies a router trained on one host zero-shot to others and names the failure
(a target that knows more than the source) and its remedy, a target-side calibration of the last
linear layer on a few labelled target queries. This protocol measures both on stored outcomes:

- **Zero-shot.** The source host's FORGE routers (the checkpoints the Cached protocol would select
  for the source, trained only on source data, with the source's feature standardization) decide
  on the target's evaluated queries. A Lite router needs no target call to route; a Full router's
  probes come from the target host (its stored probe outcomes), and are charged to it.
- **Calibrated.** With `calibrate` sizes K, each transferred router's trunk is frozen and its
  heads (the last linear layers) are refitted on K target queries drawn from the target's train
  or dev split (never the evaluated split): KL distillation to the target's Boltzmann target over
  the whole alphabet. Each K is drawn `CALIBRATION_DRAWS` times; a query's calibrated utility is
  the mean over the draws (the utility to expect from calibrating on K random target queries).
  The first draw's router is stored (unless `store_calibrated` is off: the dashboard's view, which
  only reads) as a checkpoint of the target host, with its source checkpoint, K and the
  calibration split in its lineage (`calibrated_from`, ...); checkpoint selection
  (`Store.find_checkpoints`) never picks it, so it is used only when named.
- **References.** The target's fixed arms, its Always-Raw and best fixed arm, its oracle
  (descriptive), and its own FORGE routers trained on target data (`target_forge_lite`, the upper
  reference a calibration tries to catch up with).

Every policy is scored on the same target rows with the target's cost normalizer and the
evaluation's accounting, with paired bootstrap 95% intervals of its utility against the target's
Always-Raw, its best fixed arm (highest macro utility on the evaluated rows) and its own Lite router.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Callable

import numpy as np
import torch

from forge_core.arms import RAW_NO_THINK
from forge_core.errors import InvalidInput
from forge_core.evaluation.cached import retriever_fields
from forge_core.evaluation.setup import evaluation_setup, router_policies
from forge_core.evaluation.transfer_request import TransferRequest
from forge_core.policies.baselines import FixedArm, Oracle
from forge_core.policies.context import EvalContext
from forge_core.policies.kinds import FIXED_ARM_KIND, ORACLE_KIND
from forge_core.policies.outcomes import PolicyOutcome, cost_summary, policy_outcomes, score_decisions
from forge_core.policies.routers import RouterPolicy
from forge_core.routing.checkpoints import LoadedCheckpoint, save_checkpoint
from forge_core.routing.routers import Router
from forge_core.routing.utility import boltzmann_target
from forge_core.statistics import macro, paired_bootstrap_ci
from forge_core.store import Store
from forge_core.training.stage1 import kl_loss

log = logging.getLogger(__name__)

TRANSFERRED = {"forge_lite": "transfer_forge_lite", "forge_full": "transfer_forge_full"}  # source name -> ours
TARGET_REFERENCE = "target_forge_lite"  # the target's own Lite router: the upper reference
CALIBRATION_DRAWS = 3  # draws of K calibration queries per K
CALIBRATION_STEPS = 200  # full-batch AdamW steps on the heads
CALIBRATION_LR = 1e-2  # their learning rate


def run_transfer(store: Store, request: TransferRequest, on_step: Callable[[str], None] | None = None) -> dict:
    """The transfer report: every policy on the target's evaluated queries (module docstring)."""
    request.check(store)
    target = evaluation_setup(store, request.target_settings())
    context, rows = target.context, target.rows
    fixed = [FixedArm(arm) for arm in context.table.arms]
    target_lite = RouterPolicy(target.router_checkpoints["forge_lite"], TARGET_REFERENCE)
    transferred = [RouterPolicy(policy.checkpoint_id, TRANSFERRED[policy.name])
                   for policy in router_policies(store, request.source_settings()) if policy.name in TRANSFERRED]
    outcomes = policy_outcomes(context, rows, [*fixed, Oracle(), target_lite, *transferred], on_step)
    calibration = {}
    for policy in transferred:
        for k in request.calibrate:
            if on_step:
                on_step(f"calibrating {policy.name} on {k} target queries")
            name = f"{policy.name}_cal{k}"
            outcomes[name], router = calibrated_outcome(context, rows, policy, request, k, name)
            checkpoint_id = save_calibrated(store, policy.checkpoint, router, request, k) \
                if request.store_calibrated else None
            calibration.setdefault(policy.name, []).append({"k": k, "policy": name, "checkpoint_id": checkpoint_id})
    return _report(request, context, rows, outcomes, calibration)


def refit_heads(router: Router, x: np.ndarray, utility: np.ndarray, seed: int) -> Router:
    """A copy of `router` whose trunk is frozen and whose heads (every parameter outside the trunk:
    the last linear layers, and the factorized router's support embedding) are refitted by KL
    distillation to the Boltzmann target of `utility` [n, K] on features `x` [n, d] (standardized)."""
    calibrated = copy.deepcopy(router)
    calibrated.eval()  # the frozen trunk runs without dropout
    for parameter in calibrated.trunk.parameters():
        parameter.requires_grad_(False)
    heads = [parameter for name, parameter in calibrated.named_parameters() if not name.startswith("trunk.")]
    features = torch.as_tensor(x, dtype=torch.float32)
    target = torch.as_tensor(boltzmann_target(utility), dtype=torch.float32)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        optimizer = torch.optim.AdamW(heads, lr=CALIBRATION_LR, weight_decay=0.01)
        for _ in range(CALIBRATION_STEPS):
            loss = kl_loss(target, calibrated.log_probs(features))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return calibrated


def calibration_rows(context: EvalContext, split: str, k: int, draw: int) -> np.ndarray:
    """K target rows of `split` (all of them when it has fewer), drawn with the seed (K, draw)."""
    candidates = context.rows(split)
    if not len(candidates):
        raise InvalidInput(f"host '{context.table.host}' has no complete {split} queries to calibrate on")
    rng = np.random.default_rng([k, draw])
    return np.sort(rng.choice(candidates, size=min(k, len(candidates)), replace=False))


def calibrated_outcome(context: EvalContext, rows: np.ndarray, policy: RouterPolicy, request: TransferRequest,
                       k: int, name: str) -> tuple[PolicyOutcome, Router]:
    """The transferred router calibrated on K target queries, scored on `rows`: per row, the mean
    over `CALIBRATION_DRAWS` draws of the K queries (the actions are those of the first draw); and
    the first draw's calibrated router."""
    draws, routers = [], []
    for draw in range(CALIBRATION_DRAWS):
        chosen = calibration_rows(context, request.calibration_split, k, draw)
        x = policy.checkpoint.standardizer.transform(policy.features(context)[chosen])
        router = refit_heads(policy.checkpoint.router, x, context.utility[chosen], seed=draw)
        routers.append(router)
        calibrated = copy.copy(policy)
        calibrated.name, calibrated.checkpoint = name, dataclasses.replace(policy.checkpoint, router=router)
        draws.append(score_decisions(context, rows, calibrated, calibrated.decide(context, rows)))
    first = draws[0]
    averaged = {field: np.mean([getattr(d, field) for d in draws], axis=0) for field in AVERAGED_FIELDS}
    return dataclasses.replace(first, **averaged), routers[0]


def save_calibrated(store: Store, source: LoadedCheckpoint, router: Router, request: TransferRequest, k: int) -> str:
    """Store a calibrated router as a checkpoint of the target host: the source checkpoint's
    lineage (features, standardizer, normalizer) plus `calibrated_from`, `source_host`,
    `calibration_k`, `calibration_split` and `calibration_split_seed`. Its id is a content hash, so
    a rerun of the same calibration stores nothing new. Returns the checkpoint id."""
    lineage = {**source.lineage, "calibrated_from": source.checkpoint_id, "source_host": request.source_host,
               "calibration_k": k, "calibration_split": request.calibration_split,
               "calibration_split_seed": request.split_seed}
    record = {"stage": source.record["stage"], "host": request.target_host, "variant": source.variant,
              "n_arms": source.record["n_arms"], "parent": None, "lineage": lineage,
              "metrics": {"calibration_k": k}, "training_log": []}
    return save_checkpoint(store, router, record)


AVERAGED_FIELDS = ("f1", "em", "answer_tokens", "deploy_tokens", "calls", "answer_utility", "deploy_utility")


def _report(request: TransferRequest, context: EvalContext, rows: np.ndarray, outcomes: dict[str, PolicyOutcome],
            calibration: dict[str, list[dict]]) -> dict:
    benchmarks = context.table.benchmarks[rows]
    fixed = [outcome for outcome in outcomes.values() if outcome.kind == FIXED_ARM_KIND]
    best = max(fixed, key=lambda outcome: macro(outcome.utility, benchmarks))
    references = {"always_raw": outcomes[FixedArm(RAW_NO_THINK).name], "best_fixed": best,
                  "target_router": outcomes[TARGET_REFERENCE]}
    policies = {}
    for name, outcome in outcomes.items():
        policies[name] = {
            "kind": outcome.kind, "macro_f1": macro(outcome.f1, benchmarks),
            "macro_utility": macro(outcome.utility, benchmarks), **cost_summary(outcome, benchmarks),
            "deployable": outcome.kind != ORACLE_KIND,
            "ci_f1_vs_always_raw": list(paired_bootstrap_ci(outcome.f1, references["always_raw"].f1, benchmarks)),
            **{f"ci_utility_vs_{key}": list(paired_bootstrap_ci(outcome.utility, reference.utility, benchmarks))
               for key, reference in references.items()},
        }
    curves = {router: [{**point, **policies[point["policy"]]} for point in points]
              for router, points in calibration.items()}
    return {"protocol": "transfer", "source_host": request.source_host, "target_host": request.target_host,
            "split": request.split, "split_seed": request.split_seed, "accounting": request.accounting,
            **request.weights.to_dict(), "queries": int(len(rows)),
            "calibration_split": request.calibration_split, "best_fixed_policy": best.name,
            "best_fixed_arm": context.table.arms[int(best.actions[0])], "policies": policies, "calibration": curves,
            "arm_mix": arm_mix(context, rows, outcomes)} | retriever_fields(request.retriever,
                                                                            context.table.retriever_hash)


def arm_mix(context: EvalContext, rows: np.ndarray, outcomes: dict[str, PolicyOutcome]) -> dict[str, dict]:
    """Per benchmark, per deciding policy (routers and the oracle), the share of queries sent to
    each arm it uses: where a transferred allocation departs from the target oracle's."""
    benchmarks = context.table.benchmarks[rows]
    mixes: dict[str, dict] = {}
    for benchmark in sorted(set(benchmarks)):
        in_benchmark = benchmarks == benchmark
        mixes[benchmark] = {
            name: {context.table.arms[arm]: round(float(share), 4) for arm, share in
                   enumerate(np.bincount(outcome.actions[in_benchmark], minlength=len(context.table.arms))
                             / in_benchmark.sum()) if share > 0}
            for name, outcome in outcomes.items() if outcome.kind != FIXED_ARM_KIND}
    return mixes
