"""Dashboard caches: what the two results kept on disk save the Pareto and Action map pages.

On the store at FORGE_STORE (the demo store: `forge data import && forge store load-demo`) and a
fresh temporary cache directory, for one host:
- crossfit reports: every finished crossfit run's report (bootstrap intervals) computed and kept
  (`finished_crossfit_reports` with a cache directory), then read back;
- action map: the newest checkpoint's test-split action map with its UMAP computed and kept
  (`compute_action_map` with `umap_cache`), then again with the UMAP read back.
Imports and the features check happen before the clock starts, as in a running dashboard process.
Prints one JSON line: seconds of each step, the number of runs and of map queries.
Run: `.venv/bin/python bench/dashboard_caches.py [--host embedded]`.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from forge_core import config
from forge_core.evaluation.crossfit import finished_crossfit_reports
from forge_core.reports.action_map import compute_action_map
from forge_core.routing.features import compute_features
from forge_core.store import Store


def timed(function, *args, **kwargs) -> tuple[object, float]:
    """The function's result and its wall time in seconds."""
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="embedded")
    arguments = parser.parse_args()
    store = Store(config.store_path())
    compute_features(store, arguments.host)
    checkpoint_id = str(store.checkpoints(arguments.host)["checkpoint_id"].iloc[0])
    with tempfile.TemporaryDirectory() as directory:
        cache = Path(directory)
        reports, reports_computed = timed(finished_crossfit_reports, store, arguments.host, cache / "crossfit")
        _, reports_read = timed(finished_crossfit_reports, store, arguments.host, cache / "crossfit")
        action_map, map_computed = timed(compute_action_map, store, arguments.host, checkpoint_id, "test",
                                         umap_cache=cache / "umap")
        _, map_read = timed(compute_action_map, store, arguments.host, checkpoint_id, "test", umap_cache=cache / "umap")
    print(json.dumps({
        "store": str(store.path), "host": arguments.host, "crossfit_runs": len(reports),
        "crossfit_reports_computed_s": round(reports_computed, 2), "crossfit_reports_read_s": round(reports_read, 2),
        "checkpoint": checkpoint_id, "map_queries": len(action_map.keys),
        "action_map_umap_computed_s": round(map_computed, 2), "action_map_umap_read_s": round(map_read, 2)}))


if __name__ == "__main__":
    main()
