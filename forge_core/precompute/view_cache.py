"""The dashboard's slow first views, computed once when the outcomes arrive (a background process
that `forge store load-demo` and `forge app` start: `background_views`; `load-demo --wait` computes
them in the foreground) rather than on a page's first view: the stored crossfit runs' reports (the
Action map and the Pareto page's crossfit view) and the decision at the default weights with its fold
routers for any weights (the Pareto page: training them takes a minute or more), the Transfer page's
first view (between the first two hosts that have its routers: its calibrations train each transferred
router's heads 9 times), the Live query page's demo questions under each host's default router (deciding them loads
the training stack), the gold recall of every complete query's prompts (the Overview's and the
Pareto page's grounding columns: the evidence is rebuilt query by query), the Action map of each
host's default router (its router's decisions load the training stack), and the Train page's
consensus-reward audit at the default weights. Each is kept under the cache directory where the
pages read it (`crossfit/`, `decide/`, `transfer/`, `demo/`, `gold_recall/`, `action_map/`, `audit/`), in files named
by the run id and the weights (a transfer report, the demo questions and an audit: by their inputs
and the store's row counts), so a result that no longer matches the store is simply never read.
`view_steps` lists them, each named (`KIND/HOST`) as a page waiting for it asks for it."""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from forge_core.errors import MissingStep
from forge_core.evaluation.file_cache import cached_file
from forge_core.evidence.retrievers import evaluated_retriever_hash, retriever_name_for_hash
from forge_core.identity import canonical_hash
from forge_core.policies.grounding import gold_recall_matrix
from forge_core.reports.demo_questions import demo_questions_view
from forge_core.reports.tables import default_alphabet_size
from forge_core.routing.checkpoints import conditioning_of, default_router
from forge_core.routing.outcome_table import load_outcome_table
from forge_core.routing.utility import CostWeights
from forge_core.store import Store

# The evaluations behind the views import torch (seconds): imported where computed, so a page reading a
# kept view (`reward_audit_view`) does not load them.
if TYPE_CHECKING:
    import pandas as pd

    from forge_core.evaluation.cached import CachedRequest
    from forge_core.evaluation.transfer_request import TransferRequest
    from forge_core.reports.action_map import ActionMap
    from forge_core.reports.reliability import Reliability

log = logging.getLogger(__name__)

CROSSFIT_CACHE = "crossfit"  # under the cache directory: what the dashboard's crossfit views read
TRANSFER_CACHE = "transfer"  # under the cache directory: the Transfer page's reports
TRANSFER_VIEW_SIZES = (25, 50, 100)  # the calibration sizes K the Transfer page opens on
TRANSFER_VIEW_VERSION = 1  # bumped when a transfer report's contents change
AUDIT_CACHE = "audit"  # under the cache directory: the Train page's proxy-reward audits (per arm)
AUDIT_VIEW_VERSION = 1  # bumped when an audit report's contents change
AUDIT_VIEW_PROXY = "consensus"  # the proxy the Train page opens on (it needs no judge host)
PARETO_CACHE = "pareto"  # under the cache directory: the Pareto page's points and reliability tables
PARETO_VIEW_VERSION = 2  # bumped when the Pareto points or a reliability table change
ACTION_MAP_CACHE = "action_map"  # under the cache directory: the Action map page's maps
ACTION_MAP_VIEW_VERSION = 1  # bumped when an action map's contents or settings (UMAP, clusters) change


def default_transfer_request(store: Store, hosts: Sequence[str]) -> TransferRequest | None:
    """The request the Transfer page opens on: at the default weights, calibrated on the target's train
    split, storing nothing, from the first source to the first target (in `hosts`' order) that both have
    the routers it needs stored at those weights, else from the first host to the second (None with
    fewer than two hosts)."""
    from forge_core.evaluation.transfer_request import TransferRequest, stored_transfer_weights

    requests = [TransferRequest(source, target, weights=CostWeights(), calibrate=TRANSFER_VIEW_SIZES,
                                calibration_split="train", store_calibrated=False)
                for source in hosts for target in hosts if source != target]
    with_routers = (request for request in requests if request.weights in stored_transfer_weights(store, request))
    return next(with_routers, requests[0] if requests else None)


def transfer_view(store: Store, request: TransferRequest, cache_dir: Path,
                  compute: Callable[[], dict] | None = None) -> dict:
    """The transfer report of a request that stores nothing (`store_calibrated` off), computed once
    (`compute`, by default `run_transfer`) and kept under `cache_dir` (`transfer/`) in a file named by
    the request, the routers it uses and the store's row counts. A missing router is `MissingStep`, as
    from `run_transfer`. Reading a kept report loads no torch."""
    from forge_core.evaluation.setup import router_policies

    def transfer_report() -> dict:  # torch: imported only when a report is computed
        from forge_core.evaluation.transfer import run_transfer

        return run_transfer(store, request)

    if request.store_calibrated:
        raise ValueError("a transfer that stores its calibrated routers is a write, not a view")
    request.check(store)
    routers = [policy.checkpoint_id for settings in request.evaluations()
               for policy in router_policies(store, settings)]
    key = canonical_hash("transfer-view", TRANSFER_VIEW_VERSION, {
        "request": _request_identity(store, request), "routers": routers, "rows": _row_counts(store)})
    path = Path(cache_dir) / TRANSFER_CACHE / f"{key[:20]}.json"
    return cached_file(path, compute or transfer_report, lambda file: json.loads(file.read_text()),
                       lambda file, report: file.write_text(json.dumps(report)))


def reward_audit_view(store: Store, host: str, reward: str, n_arms: int, weights: CostWeights,
                      cache_dir: Path) -> dict:
    """`forge rewards audit --no-crossfit` (per arm, no router trained) of a proxy reward on the
    host at these weights, computed once and kept under `cache_dir` (`audit/`) in a file named by
    its inputs and the store's row counts."""
    key = canonical_hash("reward-audit", AUDIT_VIEW_VERSION, {
        "host": host, "reward": reward, "n_arms": n_arms, "weights": weights.to_dict(), "rows": _row_counts(store)})

    def compute() -> dict:
        from forge_core.evaluation.audit_request import RewardAuditRequest
        from forge_core.evaluation.proxy_audit import run_reward_audit

        return run_reward_audit(store, RewardAuditRequest(host=host, reward=reward, n_arms=n_arms, weights=weights,
                                                          routers=()))

    return cached_file(Path(cache_dir) / AUDIT_CACHE / f"{key[:20]}.json", compute,
                       lambda file: json.loads(file.read_text()),
                       lambda file, report: file.write_text(json.dumps(report)))


def pareto_view(store: Store, request: CachedRequest, by_benchmark: bool, cache_dir: Path,
                compute: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """The Pareto page's points of a Cached request (`compute`: `reports.tables.pareto_report`),
    computed once and kept under `cache_dir` (`pareto/`, Parquet) in a file named by the request
    (its retriever as the configuration hash), the facets and the store's row counts."""
    import pandas as pd

    identity = {"request": dataclasses.asdict(request), "by_benchmark": by_benchmark,
                "retriever_hash": evaluated_retriever_hash(store, request.settings.host, request.settings.retriever),
                "rows": _row_counts(store)}
    key = canonical_hash("pareto-view", PARETO_VIEW_VERSION, identity)
    return cached_file(Path(cache_dir) / PARETO_CACHE / f"points-{key[:20]}.parquet", compute, pd.read_parquet,
                       lambda file, frame: frame.to_parquet(file, index=False))


def reliability_view(store: Store, checkpoint_id: str, weights: CostWeights | None, cache_dir: Path,
                     compute: Callable[[], Reliability]) -> Reliability:
    """A checkpoint's reliability table at `weights` (`compute`: `checkpoint_reliability`), computed
    once and kept under `cache_dir` (`pareto/`) in a file named by the checkpoint, the weights and the
    store's row counts."""
    import pandas as pd

    from forge_core.reports.reliability import Reliability

    identity = {"checkpoint": checkpoint_id, "weights": weights.to_dict() if weights else None,
                "rows": _row_counts(store)}
    key = canonical_hash("reliability-view", PARETO_VIEW_VERSION, identity)

    def read(file: Path) -> Reliability:
        kept = json.loads(file.read_text())
        return Reliability(checkpoint_id, CostWeights(**kept["weights"]),
                           pd.DataFrame(kept["rows"], columns=kept["columns"]))

    def write(file: Path, found: Reliability) -> None:
        file.write_text(json.dumps({"weights": found.weights.to_dict(), "columns": list(found.table.columns),
                                    "rows": found.table.to_dict("split")["data"]}))

    return cached_file(Path(cache_dir) / PARETO_CACHE / f"reliability-{key[:20]}.json", compute, read, write)


def action_map_view(store: Store, checkpoint_id: str, split: str, benchmarks: Sequence[str] | None,
                    weights: CostWeights | None, cache_dir: Path, compute: Callable[[], ActionMap]) -> ActionMap:
    """A checkpoint's action map of a split (`compute`: `reports.action_map.compute_action_map`), only
    `benchmarks` when given, at `weights` (a cost-conditioned router's; None: its own), computed once
    and kept under `cache_dir` (`action_map/`, NumPy arrays, no pickles) in a file named by them and
    the store's row counts."""
    identity = {"checkpoint": checkpoint_id, "split": split, "benchmarks": list(benchmarks) if benchmarks else None,
                "weights": weights.to_dict() if weights else None, "rows": _row_counts(store)}
    key = canonical_hash("action-map-view", ACTION_MAP_VIEW_VERSION, identity)
    return cached_file(Path(cache_dir) / ACTION_MAP_CACHE / f"map-{key[:20]}.npz", compute, _read_action_map,
                       _write_action_map)


def _write_action_map(file: Path, action_map: ActionMap) -> None:
    """Every field of the map as an array of its own (`_read_action_map` reads it back exactly)."""
    fields = {field.name: getattr(action_map, field.name) for field in dataclasses.fields(action_map)}
    fields["weights"] = [action_map.weights.lambda_in, action_map.weights.lambda_out]
    with file.open("wb") as out:
        np.savez_compressed(out, **{name: np.asarray(value) for name, value in fields.items()})


def _read_action_map(file: Path) -> ActionMap:
    from forge_core.reports.action_map import ActionMap

    with np.load(file, allow_pickle=False) as kept:
        return ActionMap(
            checkpoint_id=str(kept["checkpoint_id"]), host=str(kept["host"]), split=str(kept["split"]),
            arms=tuple(map(str, kept["arms"])), keys=tuple((str(benchmark), str(example)) for benchmark, example
                                                           in kept["keys"]),
            questions=tuple(map(str, kept["questions"])), coordinates=kept["coordinates"], clusters=kept["clusters"],
            probabilities=kept["probabilities"], utility=kept["utility"], f1=kept["f1"], tokens_in=kept["tokens_in"],
            tokens_out=kept["tokens_out"], weights=CostWeights(*map(float, kept["weights"])),
            retriever_hash=str(kept["retriever_hash"]), tau=float(kept["tau"]))


def default_pareto_request(store: Store, host: str) -> CachedRequest:
    """The request the Pareto page opens on: the test split of the host's default alphabet at the
    default weights, the deployment's accounting, BM25 evidence, with its cost-conditioned routers
    (Lite first) and its default router."""
    from forge_core.evaluation.cached import CachedRequest
    from forge_core.evaluation.settings import EvaluationSettings
    from forge_core.policies.conditioned import conditioned_policies
    from forge_core.policies.registry import ConditionedRouter, variants

    n_arms = default_alphabet_size(store, host)
    policies = sorted(conditioned_policies(store, host, n_arms),
                      key=lambda policy: variants(ConditionedRouter)[policy.name] != "lite")
    routers = [policy.checkpoint_id for policy in policies]
    default = default_router(store, host)
    found = store.checkpoint(default) if default else None
    if found is not None and int(found[0]["n_arms"]) == n_arms and not found[0]["lineage"].get("retriever_hash"):
        routers.append(default)
    return CachedRequest(EvaluationSettings(host, "test", n_arms, CostWeights()),
                         checkpoints=tuple(dict.fromkeys(routers)))


def _pareto_views(store: Store, host: str, cache_dir: Path) -> None:
    """The Pareto page's first render at the default request: its points and each router's
    reliability table at the default weights."""
    from forge_core.reports.reliability import checkpoint_reliability
    from forge_core.reports.tables import pareto_report

    request = default_pareto_request(store, host)
    pareto_view(store, request, False, cache_dir, lambda: pareto_report(store, request, False))
    conditioned = {policy for policy in request.checkpoints
                   if conditioning_of(store.checkpoint(policy)[0]["lineage"]) is not None}
    for checkpoint_id in request.checkpoints:
        weights = CostWeights() if checkpoint_id in conditioned else None
        reliability_view(store, checkpoint_id, weights, cache_dir,
                         lambda: checkpoint_reliability(store, checkpoint_id, weights))


def _action_map(store: Store, host: str, cache_dir: Path) -> None:
    """The Action map page's first render: the host's default router's map of the test split, at the
    default weights when it is cost-conditioned, the features of its evidence computed first."""
    from forge_core.reports.action_map import compute_action_map
    from forge_core.routing.features import compute_features

    router = default_router(store, host)
    if router is None:
        raise MissingStep(f"host '{host}' has no router yet")
    lineage = store.checkpoint(router)[0]["lineage"]
    weights = CostWeights() if conditioning_of(lineage) is not None else None
    retriever = retriever_name_for_hash(store, lineage.get("retriever_hash", ""))

    def compute() -> ActionMap:
        compute_features(store, host, retriever=retriever)
        return compute_action_map(store, host, router, "test", umap_cache=cache_dir / "umap", weights=weights)

    action_map_view(store, router, "test", None, weights, cache_dir, compute)


def _demo_questions(store: Store, host: str, cache_dir: Path) -> None:
    """The Live query page's demo questions of the host's default router, when it is cost-conditioned."""
    router = default_router(store, host)
    found = store.checkpoint(router) if router else None
    if found is not None and conditioning_of(found[0]["lineage"]) is not None:
        demo_questions_view(store, host, router, cache_dir)


def _decision(store: Store, host: str, cache_dir: Path) -> None:
    """`forge decide` at the default weights under the deployment's accounting (the Pareto page's panel)."""
    from forge_core.evaluation.decide import decide

    decide(store, host, CostWeights(), cache_dir, "deploy")


def _any_weights(store: Store, host: str, cache_dir: Path) -> None:
    """The decision's fold routers, trained once, so that a decision at any other weights is seconds."""
    from forge_core.evaluation.decide import prepare_any_weights

    prepare_any_weights(store, host, cache_dir, on_fold=lambda done, total: log.info(
        "precompute: %s: fold %d of %d of the decision's routers for any weights trained", host, done, total))


def _crossfit_reports(store: Store, host: str, cache_dir: Path) -> None:
    from forge_core.evaluation.crossfit import finished_crossfit_reports

    finished_crossfit_reports(store, host, cache_dir / CROSSFIT_CACHE)


@dataclasses.dataclass(frozen=True)
class ViewStep:
    """One of the dashboard's slow first views, computed by `precompute_views`: `name` is what a
    page waiting for it asks for (`KIND/HOST`, or `transfer`), `label` what its progress says."""

    name: str
    label: str
    compute: Callable[[], object]


# Per host, in the order they are computed: the cheap views the first pages read first, the
# decision's fold routers (minutes) last. What each page waits for is named `KIND/HOST`.
HOST_VIEWS: tuple[tuple[str, str, Callable[[Store, str, Path], object]], ...] = (
    ("gold_recall", "the prompts' gold recall", lambda store, host, cache_dir: gold_recall_matrix(
        store, load_outcome_table(store, host, default_alphabet_size(store, host)))),
    ("crossfit", "the stored crossfit runs' reports", _crossfit_reports),
    ("pareto", "the Pareto points and reliability tables", _pareto_views),
    ("decision", "the decision at the default weights", _decision),
    ("action_map", "the Action map of the default router", _action_map),
    ("demo", "the Live query page's demo questions", _demo_questions),
    ("audit", "the consensus reward's audit", lambda store, host, cache_dir: reward_audit_view(
        store, host, AUDIT_VIEW_PROXY, default_alphabet_size(store, host), CostWeights(), cache_dir)),
    ("any_weights", "the decision's routers for any weights", _any_weights),
)
TRANSFER_STEP = "transfer"  # the Transfer page's first view (two hosts or more)


def view_name(kind: str, host: str) -> str:
    """The name of a host's precomputed view of one kind (`HOST_VIEWS`), as a page asks for it."""
    return f"{kind}/{host}"


def view_steps(store: Store, cache_dir: Path) -> list[ViewStep]:
    """Every slow first view of the store's hosts (`HOST_VIEWS`, host by host, the decision's fold
    routers of every host last), then with two hosts or more the Transfer page's (`default_transfer_request`)."""
    cache_dir = Path(cache_dir)
    hosts = store.hosts_with_outcomes()
    *first, last = HOST_VIEWS
    steps = [_host_step(view, store, host, cache_dir) for host in hosts for view in first]
    transfer = default_transfer_request(store, hosts)
    if transfer is not None:
        steps.append(ViewStep(TRANSFER_STEP, f"the transfer from {transfer.source_host} to {transfer.target_host}",
                              functools.partial(transfer_view, store, transfer, cache_dir)))
    return steps + [_host_step(last, store, host, cache_dir) for host in hosts]


def _host_step(view: tuple, store: Store, host: str, cache_dir: Path) -> ViewStep:
    kind, label, compute = view
    return ViewStep(view_name(kind, host), f"{host}: {label}", functools.partial(compute, store, host, cache_dir))


def _row_counts(store: Store) -> dict[str, int | str]:
    """The store's row counts and `outcomes_written` (part of every view's name, so a view of other
    rows is never read), counted once per version of the store file and its write-ahead log (a
    slider step names a view without counting again)."""
    versions = []
    for path in (store.path, store.path.with_name(store.path.name + ".wal")):
        try:
            versions.append(path.stat().st_mtime_ns)
        except OSError:
            versions.append(0)
    return dict(_counted(str(store.path), tuple(versions)))


@functools.lru_cache(maxsize=4)
def _counted(path: str, versions: tuple[int, ...]) -> tuple[tuple[str, int | str], ...]:
    store = Store(path)
    return tuple((store.table_counts() | store.outcomes_written()).items())


def _request_identity(store: Store, request: TransferRequest) -> dict:
    """The request's fields, its retriever as the configuration hash (never the name), omitted for
    the default BM25 evidence so views kept before retrievers existed keep their keys."""
    identity = dataclasses.asdict(request)
    evidence = evaluated_retriever_hash(store, request.target_host, identity.pop("retriever"))
    return identity | ({"retriever_hash": evidence} if evidence else {})


def precompute_views(store: Store, cache_dir: Path, on_step: Callable[[str], None] | None = None,
                     steps: Sequence[ViewStep] | None = None) -> list[str]:
    """Compute every view of `view_steps` (or `steps`) into `cache_dir`, in order; a view the store
    cannot make yet (no crossfit run, no router: `MissingStep`) is skipped with its reason. Returns
    one line per view saying it is ready or why not (`on_step` gets each line first)."""
    say = on_step or (lambda line: None)
    lines = []
    for step in view_steps(store, cache_dir) if steps is None else steps:
        try:
            step.compute()
            line = f"{step.label}: ready"
        except MissingStep as missing:
            line = f"{step.label}: none ({str(missing).rstrip('.')})"
        say(line)
        lines.append(line)
    return lines
