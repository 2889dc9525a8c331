"""The dashboard's slow first views, computed once when the outcomes arrive (`forge store
load-demo`, also when run again on a loaded store, and `forge app`'s first run) rather than on a page's first view:
the stored crossfit runs' reports (the Action map and the Pareto page's crossfit view) and the
decision at the default weights (the Pareto page: its first computation trains each fold's
conditioned routers, a minute or more). Each is kept under the cache directory where the pages
read it (`crossfit/`, `decide/`), in files named by the run id and the weights, so a result that no
longer matches the store is simply never read."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from forge_core.errors import MissingStep
from forge_core.evaluation.crossfit import finished_crossfit_reports
from forge_core.evaluation.decide import decide
from forge_core.routing.utility import CostWeights
from forge_core.store import Store

log = logging.getLogger(__name__)

CROSSFIT_CACHE = "crossfit"  # under the cache directory: what the dashboard's crossfit views read


def precompute_views(store: Store, cache_dir: Path, on_step: Callable[[str], None] | None = None) -> list[str]:
    """For every host with outcomes: its finished crossfit runs' reports and `forge decide` at the
    default weights under the deployment's accounting (what the Pareto page opens on), each kept in
    `cache_dir`; returns one line per host saying what is ready (`on_step` gets each line first)."""
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
    return lines
