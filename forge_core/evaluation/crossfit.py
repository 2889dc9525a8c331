"""Cross-fitted evaluation: every complete query of a host gets one out-of-fold decision per
policy, so the intervals rest on all the queries rather than on a small test split.

Protocol. The complete queries (with probes, so every policy sees the same rows) are pooled
whatever their split and dealt into `folds` folds, stratified by benchmark (a seeded shuffle per
benchmark, then round robin). For each fold, the other folds are its training part; a seeded
`dev_fraction` of them per benchmark is the inner dev part (early stopping, selection, every
baseline's tuning) and the rest is "train" (standardizers, cost normalizer, fitting). Every
learned policy is fitted on that part only and then decides the held-out fold. Routers trained
here live in memory only: they are never stored as checkpoints, so `forge eval --protocol cached`
cannot pick them up.

Each fold's decisions are stored in one transaction (`crossfit_results`) under a run id hashed
from a canonical form of the settings (`crossfit_identity`) and the data, so an interrupted run
resumes at the first missing fold, a policy added since computes that policy's rows only, and the
dashboard reads finished runs without recomputing anything.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from forge_core import config
from forge_core.engines import DEFAULT_ENGINE, check_engine
from forge_core.errors import InvalidInput
from forge_core.evaluation import deploy_rule
from forge_core.evaluation.file_cache import cached_file
from forge_core.evaluation.fold_rows import fold_rows
from forge_core.evaluation.guard_measures import guard_measures, is_guard
from forge_core.evaluation.oracle_measures import (
    margin_reliability,
    oracle_measures,
    stage2_minus_stage1,
    utility_matrix,
)
from forge_core.evaluation.peer_units import output_tokens, peer_units
from forge_core.evaluation.settings import CROSSFIT_FOLDS, CROSSFIT_STAGE, CROSSFIT_STAGE2_STEPS, EvaluationSettings
from forge_core.evaluation.setup import check_evaluation
from forge_core.evidence.retrievers import evaluated_retriever_hash
from forge_core.identity import canonical_hash, canonical_json, without_defaults
from forge_core.policies.base import Policy
from forge_core.policies.baselines import FixedArm
from forge_core.policies.context import Decisions, EvalContext, evaluation_context
from forge_core.policies.guard import GuardedRouter, MixGuardedRouter
from forge_core.policies.kinds import FIXED_ARM_KIND, ORACLE_KIND, ROUTER_KIND
from forge_core.policies.mix_hull import ArmOutcomes, hull_gap, mix_hull, per_benchmark_hulls
from forge_core.policies.registry import ConditionedRouter, TrainedRouter, build_baselines, has_dev_fallback, variants
from forge_core.policies.routers import FallbackPolicy
from forge_core.routing.conditioning import CostConditioning
from forge_core.routing.confidence import margins
from forge_core.routing.features import compute_features, needs_probes, router_standardizer
from forge_core.routing.utility import DEFAULT_LAMBDA_IN, DEFAULT_LAMBDA_OUT, CostWeights, check_accounting
from forge_core.statistics import Interval, macro, paired_bootstrap_ci
from forge_core.store import Store, job_run
from forge_core.training.settings import PAPER_WARM_START_ARMS, STORED_CONFIG_KEYS, Stage1Config, Stage2Config

if TYPE_CHECKING:  # torch only when a fold is trained: printing a stored run needs none
    import pandas as pd

    from forge_core.routing.routers import Router
    from forge_core.training.trainer import FitRows

log = logging.getLogger(__name__)

FLOOR_POLICY = "ridge_utility"  # the strongest simple learner every router is compared with
DEV_FRACTION = 0.2  # share of each fold's training part (per benchmark) held out as inner dev
RUN_ID_VERSION = 1  # layout of `crossfit_identity` in the run id: bump when it changes
NESTED_SETTINGS = ("stage1", "stage2", "conditioning")  # settings that are dataclasses of their own
STAGE_CONFIG_RENAMES = {old: new for new, old in STORED_CONFIG_KEYS.items()}  # older stored name -> today's
IDENTITY_STAGE1_BASELINE = {"warm_start_arms": PAPER_WARM_START_ARMS}  # identity omits it at this value
# The retriever enters a run's identity as its configuration hash, omitted at "" (the default BM25
# evidence: runs stored before retrievers existed keep their ids); its name is only a label.
IDENTITY_RETRIEVER_BASELINE = {"retriever_hash": ""}
IDENTITY_LABELS = ("retriever",)
REPORT_VERSION = 8  # layout of `crossfit_report`: bump when it changes (cached reports are then recomputed)
REPORT_CACHE = "crossfit"  # under the cache directory: kept reports (the dashboard's view_cache.CROSSFIT_CACHE)


@dataclass(frozen=True)
class CrossfitSettings:
    """What a cross-fitted evaluation is asked for."""

    host: str = EvaluationSettings.host  # whose outcomes, features and policies
    n_arms: int = EvaluationSettings.n_arms  # alphabet size
    lambda_in: float = DEFAULT_LAMBDA_IN  # input-token cost weight
    lambda_out: float = DEFAULT_LAMBDA_OUT  # output-token cost weight
    accounting: str = EvaluationSettings.accounting  # what tuning, utilities and gains charge: "deploy" or "answer"
    folds: int = CROSSFIT_FOLDS  # number of folds (stratified by benchmark)
    stage: int = CROSSFIT_STAGE  # 1: Stage-1 routers; 2: Stage 2 on top (their Stage-1 parents reported too)
    split_seed: int = EvaluationSettings.split_seed  # seeds the fold and inner-dev assignment
    dev_fraction: float = DEV_FRACTION  # share of each training part (per benchmark) held out as inner dev
    seed: int = EvaluationSettings.seed  # router training seed
    stage1: Stage1Config = field(default_factory=Stage1Config)
    stage2: Stage2Config = field(default_factory=lambda: Stage2Config(steps=CROSSFIT_STAGE2_STEPS))
    conditioning: CostConditioning | None = field(default_factory=CostConditioning)  # the *_cond routers (None: none)
    retriever: str = EvaluationSettings.retriever  # whose evidence the Summary and Raw outcomes were made under

    @property
    def weights(self) -> CostWeights:
        """The cost weights as one value (validated on construction)."""
        return CostWeights(self.lambda_in, self.lambda_out)

    def __post_init__(self) -> None:
        CostWeights(self.lambda_in, self.lambda_out)  # validates the weights
        check_accounting(self.accounting)
        if self.folds < 2:
            raise InvalidInput(f"crossfit needs at least 2 folds, not {self.folds}")
        if self.stage not in (1, 2):
            raise InvalidInput(f"stage is 1 or 2, not {self.stage}")
        if not 0 < self.dev_fraction < 1:
            raise InvalidInput(f"dev_fraction must be in (0, 1), not {self.dev_fraction}")

    def check(self, store: Store) -> str:
        """Refuse, with a one-line `ForgeError`, a host without stored outcomes, or without any
        under the retriever (the settings checked their own values); returns the retriever's
        configuration hash ("": the default BM25)."""
        check_evaluation(store, EvaluationSettings(self.host, n_arms=self.n_arms, accounting=self.accounting,
                                                   retriever=self.retriever))
        return evaluated_retriever_hash(store, self.host, self.retriever)

    def to_dict(self, retriever_hash: str = "") -> dict:
        """JSON-ready settings (part of the run id), with the configuration hash of the retriever
        (`check` returns it; "": the default BM25 evidence)."""
        return dataclasses.asdict(self) | {"retriever_hash": retriever_hash}


def fold_assignment(benchmarks: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """[N] fold index per row: a seeded shuffle within each benchmark, dealt round robin."""
    rng = np.random.default_rng(seed)
    assignment = np.zeros(len(benchmarks), dtype=np.int64)
    for benchmark in np.unique(benchmarks):
        rows = np.flatnonzero(benchmarks == benchmark)
        if len(rows) < folds:
            raise InvalidInput(f"benchmark '{benchmark}' has {len(rows)} complete queries, fewer than {folds} folds")
        assignment[rng.permutation(rows)] = np.arange(len(rows)) % folds
    return assignment


def fold_splits(benchmarks: np.ndarray, assignment: np.ndarray, held_out: int, dev_fraction: float,
                seed: int) -> np.ndarray:
    """[N] split labels for one fold: "test" for the held-out fold, and in the other folds a
    seeded `dev_fraction` per benchmark as "dev", the rest "train"."""
    rng = np.random.default_rng([seed, held_out])
    splits = np.where(assignment == held_out, "test", "train").astype(object)
    for benchmark in np.unique(benchmarks):
        rows = rng.permutation(np.flatnonzero((benchmarks == benchmark) & (assignment != held_out)))
        splits[rows[: max(1, int(round(dev_fraction * len(rows))))]] = "dev"
    return splits.astype(str)


def fold_context(base: EvalContext, splits: np.ndarray) -> EvalContext:
    """The base context with one fold's split labels; its cost normalizer is fitted on the fold's
    train rows. Features are shared with the base context (read once)."""
    table = dataclasses.replace(base.table, splits=splits)
    return EvalContext(base.store, table, table.fit_normalizer(), base.weights, base.accounting,
                       base._features)


def crossfit_folds(base: EvalContext, folds: int, dev_fraction: float,
                   split_seed: int) -> Iterator[tuple[int, EvalContext]]:
    """Each fold's index and its `fold_context` (its held-out rows "test", the others' inner dev
    and train parts), made as the iteration reaches it. Refuses at the call, before any fold, a
    benchmark with fewer complete queries than folds (`fold_assignment`)."""
    benchmarks = base.table.benchmarks
    assignment = fold_assignment(benchmarks, folds, split_seed)
    return ((fold, fold_context(base, fold_splits(benchmarks, assignment, fold, dev_fraction, split_seed)))
            for fold in range(folds))


class FoldRouter(Policy):
    """A FORGE router trained in memory on the context's train rows (Stage 1, early-stopped on
    its dev rows), or with `parent` a Stage-2 refinement of that parent's router; with
    `conditioning` a cost-conditioned one, trained at drawn weights and deciding at the context's."""

    kind = ROUTER_KIND

    def __init__(self, name: str, variant: str, stage1: Stage1Config, stage2: Stage2Config | None = None,
                 parent: FoldRouter | None = None, conditioning: CostConditioning | None = None) -> None:
        self.name, self.live_variant = name, variant
        self.stage1, self.stage2, self.parent, self.conditioning = stage1, stage2, parent, conditioning

    def fit(self, context: EvalContext) -> None:
        from forge_core.training.trainer import fit_stage1_router, fit_stage2_router  # torch: only when training

        if self.parent is not None:
            self.standardizer = self.parent.standardizer
            x = self.standardizer.transform(context.features(self.live_variant))
            self.router = fit_stage2_router(self.parent.router, self._rows(context, x, self.stage2.seed, 2),
                                            self.stage2)
            return
        features = context.features(self.live_variant)
        self.standardizer = router_standardizer(features[context.rows("train")], self.live_variant, "train")
        x = self.standardizer.transform(features)
        self.router: Router = fit_stage1_router(self._rows(context, x, self.stage1.seed, 1), self.stage1)

    def _rows(self, context: EvalContext, x: np.ndarray, seed: int, stage: int) -> FitRows:
        """The fold's train and dev rows: at the context's weights, or conditioned at drawn ones."""
        from forge_core.training.trainer import fit_rows

        return fit_rows(x, context.utility, context.table, context.normalizer, context.rows("train"),
                        context.rows("dev"), self.conditioning, seed, stage)

    def decide(self, context: EvalContext, rows: np.ndarray) -> Decisions:
        import torch

        x = self.standardizer.transform(context.features(self.live_variant)[rows])
        if self.conditioning is not None:
            x = self.conditioning.inputs(x, context.weights)
        with torch.no_grad():
            probabilities = self.router.log_probs(torch.as_tensor(x)).exp().numpy()
        actions, runner_up, margin = margins(probabilities, tuple(context.table.arms))
        decisions = context.probed_decisions(rows, actions) if needs_probes(self.live_variant) \
            else Decisions.single(actions)
        return dataclasses.replace(decisions, margin=margin, runner_up=runner_up)


def crossfit_policies(settings: CrossfitSettings, arms: tuple[str, ...]) -> list[Policy]:
    """Fresh policies for one fold: every fixed arm of the alphabet, the baselines, the FORGE
    routers and, unless `conditioning` is None, the cost-conditioned ones (with `stage` 2 their
    Stage-1 parents too, named `<router>_stage1`), each router's guards (`<router>_guard` with the
    best fixed arm as its fallback, `<router>_mix_guard` with the cost-matched mix:
    `forge_core.policies.guard`) and the Full router's dev fallback."""
    fixed = [FixedArm(arm) for arm in arms]
    fixed_names = {policy.name for policy in fixed}
    policies: list[Policy] = fixed + [p for p in build_baselines() if p.name not in fixed_names]
    stage1 = dataclasses.replace(settings.stage1, seed=settings.seed)
    stage2 = dataclasses.replace(settings.stage2, seed=settings.seed)
    routers = [(name, variant, None) for name, variant in variants(TrainedRouter).items()]
    if settings.conditioning is not None:
        routers += [(name, variant, settings.conditioning) for name, variant in variants(ConditionedRouter).items()]
    for name, variant, conditioning in routers:
        if settings.stage == 2:
            parent = FoldRouter(f"{name}_stage1", variant, stage1, conditioning=conditioning)
            policies.append(parent)
            router = FoldRouter(name, variant, stage1, stage2, parent=parent, conditioning=conditioning)
        else:
            router = FoldRouter(name, variant, stage1, conditioning=conditioning)
        policies += [router, GuardedRouter(router), MixGuardedRouter(router)]
        if has_dev_fallback(name):
            policies.append(FallbackPolicy(router))
    return policies


def crossfit_identity(settings: dict) -> dict:
    """What a run's decisions depend on, from its settings (today's `to_dict`, or an older run's
    stored JSON): today's field names, no value at today's default, the stages' own seeds left out
    (the run's `seed` seeds them), Stage 1's `warm_start_arms` named unless it is the paper's 3 (the
    default when the first runs were stored: their ids stay), Stage 2 only for a Stage-2 run, and no
    conditioning when it is the default or None (it adds the conditioned routers, as another policy
    would be added); the retriever by its configuration hash, omitted for the default BM25 evidence
    (`IDENTITY_RETRIEVER_BASELINE`), never by its name."""
    defaults = CrossfitSettings().to_dict() | IDENTITY_RETRIEVER_BASELINE
    defaults["stage1"] = {**defaults["stage1"], **IDENTITY_STAGE1_BASELINE}
    identity = without_defaults({k: v for k, v in settings.items() if k not in NESTED_SETTINGS + IDENTITY_LABELS},
                                defaults)
    for stage_key in ("stage1", "stage2")[: settings["stage"]]:
        config = without_defaults(settings[stage_key], defaults[stage_key], STAGE_CONFIG_RENAMES)
        config.pop("seed", None)
        if config:
            identity[stage_key] = config
    conditioning = without_defaults(settings.get("conditioning") or {}, defaults["conditioning"])
    if conditioning:
        identity["conditioning"] = conditioning
    return identity


def crossfit_run_id(settings: dict, base: EvalContext) -> str:
    """A run id from the `crossfit_identity` of the settings (`CrossfitSettings.to_dict`, or an
    older run's stored JSON) and the evaluated data (keys and outcomes), so a rerun of the same
    settings on the same data resumes, a renamed field or an added policy keeps the run, and new
    data starts a new run."""
    identity = {"settings": crossfit_identity(settings), "data": base.table.data_hash()}
    return "crossfit-" + canonical_hash("crossfit", RUN_ID_VERSION, identity)[:12]


def missing_policies(policies: list[Policy], done: set[str]) -> tuple[list[Policy], list[Policy]]:
    """The policies to fit for a fold whose stored rows cover the policy names `done`, in order:
    every missing policy and what it is built on (a Stage-2 router's parent, a fallback's router);
    and the missing ones, whose rows are to be stored. A guard is fitted with its router only: a fold
    stored before the guards existed gets none (its router would be trained again, Stage 2 included,
    for rows derived from it)."""
    missing = [policy for policy in policies if policy.name not in done
               and not (isinstance(policy, GuardedRouter) and policy.router.name in done)]
    needed = {id(policy) for policy in missing}
    for policy in reversed(policies):
        if id(policy) in needed:
            needed |= {id(base) for base in _built_on(policy)}
    return [policy for policy in policies if id(policy) in needed], missing


def _built_on(policy: Policy) -> list[Policy]:
    if isinstance(policy, FoldRouter) and policy.parent is not None:
        return [policy.parent]
    if isinstance(policy, FallbackPolicy | GuardedRouter):
        return [policy.router]
    return []


@dataclass(frozen=True)
class CrossfitPlan:
    """One run's work, planned on the driver: its id, its stored settings and, per fold, the
    fold's context, the policies to fit and those whose rows are missing."""

    run_id: str
    settings: dict  # `CrossfitSettings.to_dict` with the retriever's hash: what the run stores
    work: list[tuple[int, EvalContext, list[Policy], list[Policy]]]

    @property
    def missing_folds(self) -> int:
        """How many folds still have rows to compute."""
        return sum(1 for *_, missing in self.work if missing)


def plan_crossfit(store: Store, settings: CrossfitSettings) -> CrossfitPlan:
    """Check the settings, compute missing features, register the run and plan what is missing of
    it: the (fold, policy) rows already stored under its id are not recomputed."""
    evidence = settings.check(store)
    compute_features(store, settings.host, retriever=settings.retriever)
    base = evaluation_context(store, settings.host, settings.n_arms, settings.weights,
                              accounting=settings.accounting, retriever_hash=evidence)
    run_id = crossfit_run_id(settings.to_dict(evidence), base)
    store.save_crossfit_run(run_id, settings.host, settings.to_dict(evidence), settings.folds)
    stored = store.crossfit_results(run_id)
    done = {fold: set(frame["policy"]) for fold, frame in stored.groupby("fold")}
    work = [(fold, context, *missing_policies(crossfit_policies(settings, context.table.arms), done.get(fold, set())))
            for fold, context in crossfit_folds(base, settings.folds, settings.dev_fraction, settings.split_seed)]
    return CrossfitPlan(run_id, settings.to_dict(evidence), work)


def run_crossfit(store: Store, settings: CrossfitSettings = CrossfitSettings(),
                 on_fold: Callable[[int, int], None] | None = None,
                 on_policy: Callable[[str], None] | None = None, engine: str = DEFAULT_ENGINE,
                 address: str | None = None) -> dict:
    """Run (or resume) a cross-fitted evaluation as a job and return its report.

    `on_fold(done, total)` follows the folds, `on_policy(name)` the policies within a fold (in
    this process only). The (fold, policy) rows already stored under the run id are not recomputed;
    a run stored whole is reported at once, without a job. Computes missing features first. With
    `engine` "ray" the folds are Ray tasks (`crossfit_ray`; `address`: the cluster to join), with the
    same run id and the same rows.
    """
    return run_crossfit_grid(store, [settings], on_fold, on_policy, engine, address)[0]


def run_crossfit_grid(store: Store, grid: list[CrossfitSettings], on_fold: Callable[[int, int], None] | None = None,
                      on_policy: Callable[[str], None] | None = None, engine: str = DEFAULT_ENGINE,
                      address: str | None = None) -> list[dict]:
    """`run_crossfit` for each settings of `grid` (weights, split seeds, ...), their reports in its
    order. In process the runs go one after another, each its own job; with `engine` "ray" every
    missing fold of every run is sent at once as one batch of Ray tasks, one job for the batch, each
    fold stored under its run as its task ends: the same run ids and rows as in process.
    `on_fold(done, total)` counts the grid's folds."""
    check_engine(engine, address)
    plans = [plan_crossfit(store, settings) for settings in grid]
    if engine == "ray" and any(plan.missing_folds for plan in plans):
        from forge_core.evaluation.crossfit_ray import run_plans_on_ray

        run_plans_on_ray(store, plans, on_fold, address)
    elif engine != "ray":
        total = sum(len(plan.work) for plan in plans)
        for index, plan in enumerate(plans):
            if plan.missing_folds:
                before = sum(len(earlier.work) for earlier in plans[:index])
                _run_folds(store, plan.settings, plan.run_id, plan.work,
                           on_fold and (lambda done, _, before=before: on_fold(before + done, total)), on_policy)
    return [crossfit_report(store, plan.run_id) for plan in plans]


def _run_folds(store: Store, settings: dict, run_id: str,
               work: list[tuple[int, EvalContext, list[Policy], list[Policy]]],
               on_fold: Callable[[int, int], None] | None, on_policy: Callable[[str], None] | None) -> None:
    """Fit and store each fold's missing policies (`work`: fold, context, policies to fit, policies
    to store) as one job (`settings`: the run's stored settings)."""
    from forge_core.training.threads import one_torch_thread

    folds = settings["folds"]
    with job_run(store, "crossfit", {"run_id": run_id, **settings}, folds) as job, one_torch_thread():
        for fold, context, fitted, missing in work:
            if missing:
                log.info("crossfit %s: fold %d of %d, %d policies", run_id, fold + 1, folds, len(missing))
                rows = fold_rows(context, context.rows("test"), fitted, missing, on_policy)
                store.write_crossfit_fold(run_id, fold, rows)
            job.progress(fold + 1)
            if on_fold:
                on_fold(fold + 1, folds)
        job.end("finished", run_id)


def learned_policies(report: dict) -> list[str]:
    """The policies of a crossfit report fitted on each fold's questions: FORGE's routers, the BGE
    router and the linear floor (`floor_policy`), in the report's order."""
    return [name for name, row in report["policies"].items()
            if row["kind"] == ROUTER_KIND or name == report["floor_policy"]]


def finished_crossfit_reports(store: Store, host: str, cache_dir: Path | None = None,
                              retriever_hash: str = "") -> list[dict]:
    """The reports of the host's finished crossfit runs under one retriever configuration (its
    hash; "": the default BM25 evidence), newest first (what the dashboard shows); with
    `cache_dir`, each is computed once and kept there (`cached_crossfit_report`)."""
    runs = store.crossfit_runs(host)
    evidence = runs["settings"].map(lambda settings: json.loads(settings).get("retriever_hash", ""))
    finished = runs[(runs["folds_done"] >= runs["folds"]) & (evidence == retriever_hash)]
    if cache_dir is None:
        return [crossfit_report(store, run_id) for run_id in finished["run_id"]]
    return [cached_crossfit_report(store, run_id, cache_dir) for run_id in finished["run_id"]]


def cached_crossfit_report(store: Store, run_id: str, cache_dir: Path) -> dict:
    """`crossfit_report` of a finished run, computed once (its bootstrap intervals take seconds)
    and kept as JSON in `cache_dir`: a run id hashes the settings and the data, and a finished
    run's decisions only grow (a policy added later, as the gates' and guards' rows were), so the
    file is named by the run's stored row count and stays valid until rows are added; REPORT_VERSION
    names the report's layout, so a new layout is computed afresh. Written atomically."""
    path = Path(cache_dir) / report_file_name(run_id, store.crossfit_result_count(run_id))
    return cached_file(path, lambda: crossfit_report(store, run_id), lambda file: json.loads(file.read_text()),
                       lambda file, report: file.write_text(json.dumps(report)))


def report_file_name(run_id: str, rows: int) -> str:
    """The kept report of a run with `rows` stored decisions (`cached_crossfit_report`)."""
    return f"{run_id}.v{REPORT_VERSION}.{rows}rows.json"


# Over 60 lines: one report, field by field (its docstring names each).
def crossfit_report(store: Store, run_id: str) -> dict:
    """The report of a stored run, under the accounting it ran with: per policy macro F1 (with its
    bootstrap 95% interval), macro utility, costs (k tokens per query, macro: `cost_k` under the
    run's accounting, `deploy_cost_k` every call, `answer_cost_k` the answering call), host calls
    a query, and the paired bootstrap 95% intervals of its F1 against Always-Raw, of its utility
    against the best fixed arm (the fixed arm of highest macro utility) and against the linear
    floor `ridge_utility` (same folds); and against the oracle set (`oracle_measures`): regret with its
    interval, tie-aware oracle agreement and per-benchmark cot share, with every policy's regret
    also under `regret` and each Stage-2 router's gain over its Stage-1 parent under
    `stage2_minus_stage1`; each router's `reliability` table (margin deciles against the realized
    utility difference), None with `margins_stored` false for a run stored before margins were; the
    cost-matched mix of fixed arms (`forge_core.policies.mix_hull`): its hull's vertices under `mix_hull`
    (overall and per benchmark, tokens a query under the run's accounting) and each policy's
    `hull_gap` (F1 above the best mix at its own tokens, with its paired interval; None below the
    cheapest arm's tokens); and the peers' units (`peer_units`: answers with retrieved evidence,
    thinking tokens against always-cot, tokens against Always-Raw's at its F1)."""
    runs = store.crossfit_runs()
    run = runs[runs["run_id"] == run_id]
    if run.empty:
        raise InvalidInput(f"no crossfit run '{run_id}'")
    settings = json.loads(run.iloc[0]["settings"])
    results = store.crossfit_results(run_id)
    if results["fold"].nunique() < settings["folds"]:
        raise InvalidInput(f"crossfit run '{run_id}' has {results['fold'].nunique()} of {settings['folds']} folds: "
                         "rerun it to finish")
    accounting = settings["accounting"]
    per_policy = {name: frame.sort_values(["benchmark", "example_id"]).reset_index(drop=True)
                  for name, frame in results.groupby("policy", sort=False)}
    benchmarks = per_policy["always_raw"]["benchmark"].to_numpy()

    def utility(name: str) -> np.ndarray:
        return per_policy[name][f"{accounting}_utility"].to_numpy()

    fixed = [name for name, frame in per_policy.items() if frame["kind"].iloc[0] == FIXED_ARM_KIND]
    best_fixed = deploy_rule.best_fixed(
        fixed, {name: macro(utility(name), benchmarks) for name in fixed},
        {name: macro(per_policy[name][f"{accounting}_tokens"].to_numpy(), benchmarks) for name in fixed})
    raw_f1 = per_policy["always_raw"]["f1"].to_numpy()
    tokens_out = output_tokens(store.arm_outcomes(settings["host"], retriever_hash=settings.get("retriever_hash", "")))
    arm_utility, arms = utility_matrix(per_policy, fixed, f"{accounting}_utility")
    mixes = fixed_arm_outcomes(per_policy, fixed, f"{accounting}_tokens", benchmarks)
    policies = {}
    for name, frame in per_policy.items():
        f1 = frame["f1"].to_numpy()
        costs = {kind: macro(frame[f"{kind}_tokens"].to_numpy(), benchmarks) / 1000.0 for kind in ("deploy", "answer")}
        policies[name] = {
            "kind": frame["kind"].iloc[0],
            "macro_f1": macro(f1, benchmarks), "macro_utility": macro(utility(name), benchmarks),
            "cost_k": costs[accounting], "deploy_cost_k": costs["deploy"], "answer_cost_k": costs["answer"],
            "calls_per_query": macro(frame["calls"].to_numpy(dtype=np.float64), benchmarks),
            "ci_f1": list(paired_bootstrap_ci(f1, np.zeros_like(f1), benchmarks)),
            "ci_f1_vs_always_raw": list(paired_bootstrap_ci(f1, raw_f1, benchmarks)),
            "ci_utility_vs_best_fixed": list(paired_bootstrap_ci(utility(name), utility(best_fixed), benchmarks)),
            "deployable": frame["kind"].iloc[0] != ORACLE_KIND,
            "hull_gap": hull_gap(mixes, f1, frame[f"{accounting}_tokens"].to_numpy(dtype=np.float64)),
            **oracle_measures(frame, arm_utility, arms, f"{accounting}_utility", benchmarks),
        }
        policies[name]["peer_units"] = peer_units(frame, per_policy["always_raw"], tokens_out, f"{accounting}_tokens",
                                                  benchmarks, policies[name]["ci_f1_vs_always_raw"])
        if is_guard(name):
            policies[name]["guard"] = guard_measures(frame, arm_utility, arms, f"{accounting}_utility", benchmarks)
        elif frame["kind"].iloc[0] == ROUTER_KIND:
            policies[name]["reliability"] = margin_reliability(frame, arm_utility, arms)
        if name != FLOOR_POLICY and FLOOR_POLICY in per_policy:
            policies[name]["ci_utility_vs_floor"] = list(
                paired_bootstrap_ci(utility(name), utility(FLOOR_POLICY), benchmarks))
    return {"protocol": "crossfit", "run_id": run_id, "settings": settings, "host": settings["host"],
            "accounting": accounting, "folds": settings["folds"], "stage": settings["stage"],
            "split_seed": settings["split_seed"],
            "lambda_in": settings["lambda_in"], "lambda_out": settings["lambda_out"],
            "queries": int(len(benchmarks)), "best_fixed_arm": per_policy[best_fixed]["arm"].iloc[0],
            "best_fixed_policy": best_fixed, "floor_policy": FLOOR_POLICY, "policies": policies,
            "regret": {name: row["regret"] for name, row in policies.items()},
            "margins_stored": any(row.get("reliability") for row in policies.values()),
            "mix_hull": {"all": mix_hull(mixes), "by_benchmark": per_benchmark_hulls(mixes)},
            "stage2_minus_stage1": stage2_minus_stage1(per_policy, f"{accounting}_utility", benchmarks)}


def fixed_arm_outcomes(per_policy: dict[str, pd.DataFrame], fixed: list[str], tokens: str,
                       benchmarks: np.ndarray) -> ArmOutcomes:
    """The fixed arms' per-query F1 and `tokens` column (rows in the frames' common order), named by arm."""
    return ArmOutcomes.of([per_policy[name]["arm"].iloc[0] for name in fixed],
                          [per_policy[name].rename(columns={tokens: "tokens"}) for name in fixed], benchmarks)


def seed_key(report: dict) -> str:
    """What runs share when they differ only in their split seed (fold and inner-dev draws)."""
    identity = crossfit_identity(report["settings"])
    return canonical_json({k: v for k, v in identity.items() if k != "split_seed"})


def seed_spread(reports: list[dict]) -> dict:
    """Across reports that differ only in their split seed: per deployable policy, its utility gain
    over each seed's best fixed arm with the paired 95% interval, the spread (largest minus
    smallest gain), and `decidable`: the interval above zero at every seed (likewise against the
    linear floor: `decidable_vs_floor`)."""
    reports = sorted(reports, key=lambda r: r["split_seed"])
    policies = {}
    for name in reports[0]["policies"]:
        rows = [r["policies"].get(name) for r in reports]
        if any(row is None for row in rows) or rows[0]["kind"] == ORACLE_KIND:
            continue
        gains = [row["macro_utility"] - r["policies"][r["best_fixed_policy"]]["macro_utility"]
                 for row, r in zip(rows, reports)]
        intervals = [row["ci_utility_vs_best_fixed"] for row in rows]
        floor = [row.get("ci_utility_vs_floor") for row in rows]
        policies[name] = {
            "gains": gains, "intervals": intervals, "spread": max(gains) - min(gains),
            "decidable": all(Interval.of(ci).above for ci in intervals),
            "floor_intervals": floor,
            "decidable_vs_floor": all(ci is not None and Interval.of(ci).above for ci in floor)}
    return {"split_seeds": [r["split_seed"] for r in reports],
            "best_fixed_arms": [r["best_fixed_arm"] for r in reports],
            "policies": policies}


def split_seed_spread(store: Store, report: dict, cache_dir: Path | None = None) -> dict:
    """`seed_spread` over the report and every finished run of its host whose settings differ from
    its own only in the split seed; their reports are read through `cached_crossfit_report` in
    `cache_dir` (default: the cache directory's REPORT_CACHE, where the dashboard keeps them), so
    printing each of a group's runs computes each sibling's report once, not once a print."""
    cache_dir = config.cache_dir() / REPORT_CACHE if cache_dir is None else cache_dir
    runs = store.crossfit_runs(report["host"])
    siblings = [run_id for run_id, settings, folds, done in
                zip(runs["run_id"], runs["settings"], runs["folds"], runs["folds_done"])
                if done >= folds and run_id != report["run_id"]
                and seed_key({"settings": json.loads(settings)}) == seed_key(report)]
    return seed_spread([report, *(cached_crossfit_report(store, run_id, cache_dir) for run_id in siblings)])

