"""Calibrate a cost-conditioned router to a target: at most T tokens a query, or at least a macro F1.

The weights move along a ray `lambda_out = ratio * lambda_in` (the paper's ratio is 2). The
protocol is crossfit's (`forge_core.evaluation.crossfit`): the complete queries are dealt into
folds; for each fold a conditioned router is trained on the other folds' train part, and on their
inner dev part the weights of the ray are scanned for the target:

- a token budget T: the smallest weights whose dev macro tokens a query are at most T (the most
  quality the budget buys);
- a macro F1 floor F: the largest weights whose dev macro F1 is at least F (the fewest tokens
  that keep it).

A fold where no weight of the ray meets the target on dev takes the end of the ray nearest to it
(and says so). The held-out fold is then decided at its fold's weights, so every query gets one
out-of-fold decision, and the realized macro tokens and F1 come with paired-bootstrap 95%
intervals, beside the target. Tokens are counted under the accounting (by default every host call
a decision needs on a new query). The weights to deploy the stored conditioned router with are the
folds' median along the ray.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from forge_core.engines import DEFAULT_ENGINE, check_engine
from forge_core.errors import InvalidInput, MissingStep
from forge_core.evaluation.crossfit import DEV_FRACTION, FoldRouter, crossfit_folds
from forge_core.evaluation.file_cache import cached_file
from forge_core.evaluation.settings import CALIBRATION_RATIO, CALIBRATION_VARIANT, CROSSFIT_FOLDS
from forge_core.evidence.retrievers import DEFAULT_RETRIEVER, evaluated_retriever_hash
from forge_core.identity import canonical_hash
from forge_core.policies.baselines import FixedArm
from forge_core.policies.context import EvalContext, evaluation_context
from forge_core.policies.mix_hull import ArmOutcomes, gains_over_best_mix
from forge_core.policies.outcomes import score_decisions
from forge_core.policies.registry import ConditionedRouter, variants
from forge_core.routing.conditioning import CostConditioning
from forge_core.routing.features import compute_features
from forge_core.routing.utility import CostWeights, check_accounting
from forge_core.statistics import Interval, macro, paired_bootstrap_ci
from forge_core.store import Store
from forge_core.training.settings import Stage1Config
from forge_core.training.threads import one_torch_thread

log = logging.getLogger(__name__)

RAY_POINTS = 41  # weights scanned along the ray on each fold's inner dev part
CONDITIONED_NAMES = {variant: name for name, variant in variants(ConditionedRouter).items()}  # variant -> policy name


@dataclass(frozen=True)
class CalibrationRequest:
    """A target for the conditioned router (a token budget or an F1 floor) and the ray to search."""

    budget_tokens: float | None = None  # at most this many tokens a query (macro over benchmarks)
    min_f1: float | None = None  # at least this macro F1 (a fraction in [0, 1])
    ratio: float = CALIBRATION_RATIO  # lambda_out / lambda_in along the searched ray
    host: str = "embedded"  # whose outcomes and features
    variant: str = CALIBRATION_VARIANT  # the conditioned router's features: lite or full
    n_arms: int = 6  # alphabet size
    folds: int = CROSSFIT_FOLDS  # crossfit folds (stratified by benchmark)
    split_seed: int = 0  # seeds the folds and inner dev parts
    dev_fraction: float = DEV_FRACTION  # share of each training part held out as inner dev
    seed: int = 0  # router training seed
    accounting: str = "deploy"  # tokens of every call a decision needs ("deploy") or the answer's
    conditioning: CostConditioning = field(default_factory=CostConditioning)
    stage1: Stage1Config = field(default_factory=Stage1Config)
    retriever: str = DEFAULT_RETRIEVER  # whose evidence the Summary and Raw outcomes were made under

    def __post_init__(self) -> None:
        if (self.budget_tokens is None) == (self.min_f1 is None):
            raise InvalidInput("give one target: a token budget (--budget-tokens) or a macro F1 floor (--min-f1)")
        if self.budget_tokens is not None and not (np.isfinite(self.budget_tokens) and self.budget_tokens > 0):
            raise InvalidInput(f"the token budget must be a positive number, not {self.budget_tokens}")
        if self.min_f1 is not None and not 0 <= self.min_f1 <= 1:
            raise InvalidInput(f"the F1 floor is a fraction in [0, 1], not {self.min_f1}")
        if not (np.isfinite(self.ratio) and self.ratio > 0):
            raise InvalidInput(f"the ratio lambda_out / lambda_in must be positive, not {self.ratio}")
        if self.variant not in CONDITIONED_NAMES:
            raise InvalidInput(f"calibrate a lite or full router, not '{self.variant}'")
        if self.folds < 2:
            raise InvalidInput(f"calibration needs at least 2 folds, not {self.folds}")
        check_accounting(self.accounting)

    @property
    def target(self) -> str:
        """The target in words."""
        if self.budget_tokens is not None:
            return f"at most {self.budget_tokens:g} tokens a query"
        return f"macro F1 at least {self.min_f1:g}"

    def ray(self) -> np.ndarray:
        """[RAY_POINTS] lambda_in values, log-spaced, whose pair (lambda_in, ratio * lambda_in)
        lies inside the conditioning's trained range."""
        low = max(self.conditioning.low, self.conditioning.low / self.ratio)
        high = min(self.conditioning.high, self.conditioning.high / self.ratio)
        return np.geomspace(low, high, RAY_POINTS)

    def base_context(self, store: Store) -> EvalContext:
        """The host's evaluation context the calibration runs on; refuses a store without complete
        queries (or, for a Full router, without probes)."""
        context = evaluation_context(store, self.host, self.n_arms, CostWeights(), accounting=self.accounting,
                                     retriever_hash=evaluated_retriever_hash(store, self.host, self.retriever))
        if self.variant == "full" and not context.table.has_probes.any():
            raise MissingStep(f"no complete query of host '{self.host}' has probes: run "
                              f"`forge enumerate --host {self.host} --probes`, or calibrate Lite")
        return context


@dataclass(frozen=True)
class FoldCalibration:
    """One fold: the weights chosen on its inner dev part and what they gave there."""

    fold: int
    weights: CostWeights  # along the request's ray
    dev_tokens: float  # macro tokens a query on the inner dev part at those weights
    dev_f1: float  # macro F1 there
    met_on_dev: bool  # False: no weight of the ray met the target; the nearest end was taken

    def to_dict(self) -> dict:
        """A JSON-ready record, the weights as their two keys."""
        return {"fold": self.fold, **self.weights.to_dict(), "dev_tokens": self.dev_tokens,
                "dev_f1": self.dev_f1, "met_on_dev": self.met_on_dev}


@dataclass(frozen=True)
class CalibrationResult:
    """The calibrated weights and the out-of-fold tokens and F1 they realize."""

    request: CalibrationRequest
    weights: CostWeights  # the folds' median along the ray: the weights to deploy with
    tokens: float  # realized macro tokens a query, out of fold
    tokens_ci: Interval  # its paired-bootstrap 95% interval
    f1: float  # realized macro F1, out of fold
    f1_ci: Interval
    target_met: bool  # the realized value meets the target
    queries: int
    folds: tuple[FoldCalibration, ...]
    mix: dict | None = None  # with a budget: the best mix of fixed arms at it, the router's F1 gain over it

    def to_json(self) -> dict:
        """A JSON-ready report: target beside realized."""
        request = self.request
        return {
            "host": request.host, "variant": request.variant, "accounting": request.accounting,
            "target": request.target, "budget_tokens": request.budget_tokens, "min_f1": request.min_f1,
            "ratio": request.ratio, **self.weights.to_dict(),
            "realized_tokens": self.tokens, "realized_tokens_ci": list(self.tokens_ci),
            "realized_f1": self.f1, "realized_f1_ci": list(self.f1_ci), "target_met": self.target_met,
            "queries": self.queries, "folds": [fold.to_dict() for fold in self.folds], "mix": self.mix,
        }


def _tokens_and_f1(context: EvalContext, router: FoldRouter, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    outcome = score_decisions(context, rows, router, router.decide(context, rows))
    return outcome.tokens.astype(np.float64), outcome.f1


def _choose(request: CalibrationRequest, lambdas: np.ndarray, tokens: np.ndarray, f1: np.ndarray) -> tuple[int, bool]:
    """Index into the ray of the chosen weights, and whether they meet the target on dev."""
    if request.budget_tokens is not None:
        meets = np.flatnonzero(tokens <= request.budget_tokens)
        return (int(meets[0]), True) if len(meets) else (len(lambdas) - 1, False)
    meets = np.flatnonzero(f1 >= request.min_f1)
    return (int(meets[-1]), True) if len(meets) else (0, False)


def _calibrate_fold(request: CalibrationRequest, context: EvalContext, fold: int) -> tuple[FoldCalibration, FoldRouter]:
    router = FoldRouter(CONDITIONED_NAMES[request.variant], request.variant,
                        dataclasses.replace(request.stage1, seed=request.seed), conditioning=request.conditioning)
    router.fit(context)
    dev = context.rows("dev")
    benchmarks = context.table.benchmarks[dev]
    lambdas = request.ray()
    scanned = [_tokens_and_f1(context.at(CostWeights(value, request.ratio * value)), router, dev) for value in lambdas]
    tokens = np.array([macro(t, benchmarks) for t, _ in scanned])
    f1 = np.array([macro(f, benchmarks) for _, f in scanned])
    index, met = _choose(request, lambdas, tokens, f1)
    chosen = float(lambdas[index])
    weights = CostWeights(chosen, request.ratio * chosen)
    return FoldCalibration(fold, weights, float(tokens[index]), float(f1[index]), met), router


def _calibrated_fold(request: CalibrationRequest, context: EvalContext,
                     fold: int) -> tuple[FoldCalibration, np.ndarray, np.ndarray]:
    """One fold calibrated on its inner dev part, and its held-out queries' tokens and F1 at the
    weights chosen there."""
    calibration, router = _calibrate_fold(request, context, fold)
    tokens, f1 = _tokens_and_f1(context.at(calibration.weights), router, context.rows("test"))
    return calibration, tokens, f1


def _calibrate_folds(request: CalibrationRequest, fold_contexts: list[tuple[int, EvalContext]],
                     on_fold: Callable[[int, int], None] | None, engine: str,
                     address: str | None) -> list[tuple[FoldCalibration, np.ndarray, np.ndarray]]:
    """`_calibrated_fold` of every fold, in fold order: in this process, or as Ray tasks."""
    if engine == "ray":
        from forge_core.evaluation.crossfit_ray import map_folds_on_ray, shipped

        return map_folds_on_ray(_calibrated_fold, [(request, shipped(context, {request.variant}), fold)
                                                   for fold, context in fold_contexts], on_fold, address)
    calibrated = []
    with one_torch_thread():
        for fold, context in fold_contexts:
            calibrated.append(_calibrated_fold(request, context, fold))
            log.info("calibration fold %d: %s", fold, calibrated[-1][0])
            if on_fold:
                on_fold(fold + 1, request.folds)
    return calibrated


def run_calibration(store: Store, request: CalibrationRequest, on_fold: Callable[[int, int], None] | None = None,
                    engine: str = DEFAULT_ENGINE, address: str | None = None) -> CalibrationResult:
    """Calibrate as `request` asks (see the module docstring); `on_fold(done, total)` follows the
    folds. Refuses what it cannot calibrate (`base_context`, and a benchmark with fewer complete
    queries than folds) before any work; computes missing features first; trains in memory only
    (no checkpoint is stored). With `engine` "ray" each fold is a Ray task (`address`: the cluster
    to join), with the same result."""
    check_engine(engine, address)
    base = request.base_context(store)
    fold_contexts = crossfit_folds(base, request.folds, request.dev_fraction, request.split_seed)
    compute_features(store, request.host, retriever=request.retriever)
    fold_contexts = list(fold_contexts)
    benchmarks = base.table.benchmarks
    tokens, f1 = np.zeros(len(benchmarks)), np.zeros(len(benchmarks))
    folds = []
    for (_, context), (calibration, fold_tokens, fold_f1) in zip(
            fold_contexts, _calibrate_folds(request, fold_contexts, on_fold, engine, address)):
        folds.append(calibration)
        held_out = context.rows("test")
        tokens[held_out], f1[held_out] = fold_tokens, fold_f1
    zeros = np.zeros_like(tokens)
    realized_tokens, realized_f1 = macro(tokens, benchmarks), macro(f1, benchmarks)
    met = (realized_tokens <= request.budget_tokens if request.budget_tokens is not None
           else realized_f1 >= request.min_f1)
    lambda_in = float(np.median([fold.weights.lambda_in for fold in folds]))
    mix = None if request.budget_tokens is None else mix_at_budget(base, request.budget_tokens,
                                                                   {CONDITIONED_NAMES[request.variant]: f1})
    return CalibrationResult(
        request, CostWeights(lambda_in, request.ratio * lambda_in), realized_tokens,
        paired_bootstrap_ci(tokens, zeros, benchmarks), realized_f1, paired_bootstrap_ci(f1, zeros, benchmarks),
        bool(met), len(benchmarks), tuple(folds), mix)


def mix_at_budget(context: EvalContext, budget_tokens: float, f1: dict[str, np.ndarray],
                  rows: np.ndarray | None = None) -> dict | None:
    """The best mix of the context's fixed arms within `budget_tokens` a query on `rows` (default:
    every row) and each policy's F1 gain over it with its paired interval (`f1`: policy -> its F1
    on those rows; `mix.gains_over_best_mix`; None below the cheapest arm's tokens)."""
    rows = np.arange(len(context.table.benchmarks)) if rows is None else rows
    fixed = [FixedArm(arm) for arm in context.table.arms]
    scored = [score_decisions(context, rows, arm, arm.decide(context, rows)) for arm in fixed]
    return gains_over_best_mix(ArmOutcomes.of(context.table.arms, scored, context.table.benchmarks[rows]),
                               budget_tokens, f1)


@dataclass(frozen=True)
class RayStart:
    """Weights along a ray at which a stored conditioned router meets a token budget on held-out queries."""

    weights: CostWeights
    tokens: float  # macro tokens a query at those weights, on the router's test split
    met: bool  # False: no weight of the ray met the budget; the ray's highest weights were taken
    queries: int
    mix: dict | None  # the best mix of fixed arms within the budget on those queries, the router's F1 gain over it


def ray_start_for_budget(store: Store, checkpoint_id: str, budget_tokens: float, ratio: float = CALIBRATION_RATIO,
                         accounting: str = "deploy") -> RayStart:
    """Calibration's rule applied to one stored conditioned router (no training): the smallest
    weights of the ray `(lambda_in, ratio * lambda_in)` whose macro tokens a query, on the test split
    of the router's own host under `accounting`, are at most `budget_tokens`; where `forge serve
    --budget-tokens` starts its controller. With them, the best mix of fixed arms within the budget
    on the same queries and the router's F1 gain over it there (`mix_at_budget`)."""
    from forge_core.policies.routers import RouterPolicy
    from forge_core.routing.checkpoints import load_checkpoint

    checkpoint = load_checkpoint(store, checkpoint_id)
    if checkpoint.conditioning is None:
        raise InvalidInput(f"router {checkpoint_id} is not cost-conditioned: it cannot be calibrated to a budget")
    record = checkpoint.record
    request = CalibrationRequest(budget_tokens=budget_tokens, ratio=ratio, host=record["host"],
                                 variant=checkpoint.variant if checkpoint.variant in CONDITIONED_NAMES else "lite",
                                 n_arms=record["n_arms"], conditioning=checkpoint.conditioning, accounting=accounting)
    context = evaluation_context(store, record["host"], record["n_arms"], CostWeights(),
                                 split_seed=record["lineage"].get("split_seed", 0), accounting=accounting,
                                 retriever_hash=record["lineage"].get("retriever_hash", ""))  # its evidence
    rows = context.rows("test")
    if len(rows) == 0:
        raise MissingStep(f"host '{record['host']}' has no complete test query to calibrate router {checkpoint_id} on")
    policy = RouterPolicy(checkpoint_id, "served")
    policy.fit(context)
    benchmarks = context.table.benchmarks[rows]
    lambdas = request.ray()
    scored = []
    for value in lambdas:
        at = context.at(CostWeights(float(value), ratio * float(value)))
        scored.append(score_decisions(at, rows, policy, policy.decide(at, rows)))
    tokens = [macro(outcome.tokens.astype(float), benchmarks) for outcome in scored]
    index, met = _choose(request, lambdas, np.array(tokens), np.zeros(len(lambdas)))
    chosen = float(lambdas[index])
    mix = mix_at_budget(context, budget_tokens, {checkpoint_id: scored[index].f1}, rows)
    return RayStart(CostWeights(chosen, ratio * chosen), float(tokens[index]), met, len(rows), mix)


def calibrated_weights(store: Store, request: CalibrationRequest, cache_dir: Path,
                       on_fold: Callable[[int, int], None] | None = None, engine: str = DEFAULT_ENGINE,
                       address: str | None = None) -> CostWeights:
    """`run_calibration`'s weights for `request` (its folds on `engine`), computed once per request
    and store data and kept as JSON under `cache_dir` (`forge decide --budget-tokens` without
    weights decides at them)."""
    data = request.base_context(store).table.data_hash()
    identity = {"request": dataclasses.asdict(request), "data": data}
    path = Path(cache_dir) / "calibration" / f"{canonical_hash('calibration', 1, identity)[:20]}.json"
    weights = cached_file(path, lambda: run_calibration(store, request, on_fold, engine, address).weights.to_dict(),
                          lambda file: json.loads(file.read_text()),
                          lambda file, value: file.write_text(json.dumps(value)))
    return CostWeights(weights["lambda_in"], weights["lambda_out"])
