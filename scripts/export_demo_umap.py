"""Compute the Action map's UMAP (and its clusters) of every host's default router on each split of
the store, and write them to the demo export (`data/demo/umap_coordinates.parquet`), so
`forge store load-demo` puts them in the cache and a fresh store's first Action map or Queries
view does not compute one. Run after `forge store export` on the demo store:

    python scripts/export_demo_umap.py [--out data/demo/umap_coordinates.parquet]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from forge_core import config
from forge_core.precompute.map_cache import MAP_CACHE_FILE, export_map_cache
from forge_core.reports.action_map import SPLITS, compute_action_map
from forge_core.routing.checkpoints import default_router
from forge_core.routing.features import compute_features
from forge_core.store import Store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=config.demo_dir() / MAP_CACHE_FILE)
    arguments = parser.parse_args()
    store = Store(config.store_path())
    with tempfile.TemporaryDirectory() as cache:
        for host in store.hosts_with_outcomes():
            checkpoint_id = default_router(store, host)
            if checkpoint_id is None:
                continue
            compute_features(store, host)
            for split in SPLITS:
                started = time.perf_counter()
                compute_action_map(store, host, checkpoint_id, split, umap_cache=Path(cache))
                print(f"{host} {checkpoint_id} {split}: {time.perf_counter() - started:.1f} s", file=sys.stderr)
        count = export_map_cache(Path(cache), arguments.out)
    print(f"{count} cached arrays -> {arguments.out}")


if __name__ == "__main__":
    main()
