"""The dashboard's slow first views, computed once when the outcomes arrive (`forge store
load-demo`, also when run again on a loaded store, and `forge app`'s first run) rather than on a page's first view:
the stored crossfit runs' reports (the Action map and the Pareto page's crossfit view) and the
decision at the default weights (the Pareto page: its first computation trains each fold's
conditioned routers, a minute or more), and the Transfer page's first view (between the first two
hosts: its calibrations train each transferred router's heads 9 times). Each is kept under the cache
directory where the pages read it (`crossfit/`, `decide/`, `transfer/`), in files named by the run
id and the weights (a transfer report: by its request, the routers it uses and the store's row
counts), so a result that no longer matches the store is simply never read."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from forge_core.errors import MissingStep
from forge_core.evaluation.crossfit import finished_crossfit_reports
from forge_core.evaluation.decide import decide
from forge_core.evaluation.file_cache import cached_file
from forge_core.evaluation.setup import router_policies
from forge_core.evaluation.transfer import TransferRequest, run_transfer
from forge_core.evidence.retrievers import evaluated_retriever_hash
from forge_core.identity import canonical_hash
from forge_core.routing.utility import CostWeights
from forge_core.store import Store

log = logging.getLogger(__name__)

CROSSFIT_CACHE = "crossfit"  # under the cache directory: what the dashboard's crossfit views read
TRANSFER_CACHE = "transfer"  # under the cache directory: the Transfer page's reports
TRANSFER_VIEW_SIZES = (25, 50, 100)  # the calibration sizes K the Transfer page opens on
TRANSFER_VIEW_VERSION = 1  # bumped when a transfer report's contents change


def default_transfer_request(hosts: Sequence[str]) -> TransferRequest | None:
    """The request the Transfer page opens on: the first host's routers on the second host's
    queries at the default weights, calibrated on the target's train split, storing nothing
    (None with fewer than two hosts)."""
    if len(hosts) < 2:
        return None
    return TransferRequest(hosts[0], hosts[1], weights=CostWeights(), calibrate=TRANSFER_VIEW_SIZES,
                           calibration_split="train", store_calibrated=False)


def transfer_view(store: Store, request: TransferRequest, cache_dir: Path) -> dict:
    """The transfer report of a request that stores nothing (`store_calibrated` off), computed once
    and kept under `cache_dir` (`transfer/`) in a file named by the request, the routers it uses
    and the store's row counts. A missing router is `MissingStep`, as from `run_transfer`."""
    if request.store_calibrated:
        raise ValueError("a transfer that stores its calibrated routers is a write, not a view")
    request.check(store)
    routers = [policy.checkpoint_id for settings in request.evaluations()
               for policy in router_policies(store, settings)]
    key = canonical_hash("transfer-view", TRANSFER_VIEW_VERSION, {
        "request": _request_identity(store, request), "routers": routers, "rows": store.table_counts()})
    path = Path(cache_dir) / TRANSFER_CACHE / f"{key[:20]}.json"
    return cached_file(path, lambda: run_transfer(store, request), lambda file: json.loads(file.read_text()),
                       lambda file, report: file.write_text(json.dumps(report)))


def _request_identity(store: Store, request: TransferRequest) -> dict:
    """The request's fields, its retriever as the configuration hash (never the name), omitted for
    the default BM25 evidence so views kept before retrievers existed keep their keys."""
    identity = dataclasses.asdict(request)
    evidence = evaluated_retriever_hash(store, request.target_host, identity.pop("retriever"))
    return identity | ({"retriever_hash": evidence} if evidence else {})


def precompute_views(store: Store, cache_dir: Path, on_step: Callable[[str], None] | None = None) -> list[str]:
    """For every host with outcomes: its finished crossfit runs' reports and `forge decide` at the
    default weights under the deployment's accounting (what the Pareto page opens on), and with two
    hosts the Transfer page's first view (`default_transfer_request`), each kept in `cache_dir`;
    returns one line per host (and one for the transfer) saying what is ready (`on_step` gets each
    line first)."""
    say = on_step or (lambda line: None)
    lines = []
    for host in store.hosts_with_outcomes():
        reports = finished_crossfit_reports(store, host, Path(cache_dir) / CROSSFIT_CACHE)
        decided = "no decision (no Stage-1 crossfit run with the cost-conditioned routers)"
        weights = CostWeights()
        try:
            decide(store, host, weights, Path(cache_dir), "deploy",
                   on_fold=lambda done, total: say(f"{host}: fold {done} of {total} of the decision's routers trained"))
            decided = f"the decision at λ_in {weights.lambda_in:g} / λ_out {weights.lambda_out:g}"
        except MissingStep as missing:
            log.info("precompute: %s", missing)
        line = f"{host}: {len(reports)} crossfit reports and {decided} ready"
        say(line)
        lines.append(line)
    transfer = default_transfer_request(store.hosts_with_outcomes())
    if transfer is not None:
        try:
            transfer_view(store, transfer, Path(cache_dir))
            line = f"the transfer from {transfer.source_host} to {transfer.target_host} at the default weights ready"
        except MissingStep as missing:
            line = f"no transfer view ({str(missing).rstrip('.')})"
        say(line)
        lines.append(line)
    return lines
