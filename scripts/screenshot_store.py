"""Build a throwaway store for the training screenshots: three real benchmarks, synthetic arm and
probe outcomes (the test suite's rule: Raw helps long questions, Direct suffices for short ones)
for host "synthetic-host", and three checkpoints trained on them as jobs (so their curves are in
the store): Full Stage 1, Lite Stage 1, and Lite Stage 2 (GRPO) from it.

Usage: .venv/bin/python scripts/screenshot_store.py /tmp/forge-shots.duckdb
then:  FORGE_STORE=/tmp/forge-shots.duckdb .venv/bin/forge app --port 8502
and:   .venv/bin/python scripts/screenshots.py http://127.0.0.1:8502/ train pareto action_map

The outcomes are synthetic: never use this store for results.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from conftest import synthetic_outcomes  # noqa: E402  (the tests' synthetic-outcome rule)

from forge_core import config  # noqa: E402
from forge_core.data.importing import import_benchmarks  # noqa: E402
from forge_core.routing.features import compute_features  # noqa: E402
from forge_core.store import Store  # noqa: E402
from forge_core.training.stage1 import Stage1Config  # noqa: E402
from forge_core.training.stage2 import Stage2Config  # noqa: E402
from forge_core.training.trainer import TrainRequest, train_router_job  # noqa: E402

HOST = "synthetic-host"
BENCHMARKS = ("musique", "popqa", "2wikimultihopqa")
PER_SPLIT = {"train": 150, "dev": 60, "test": 60}


def main(path: Path) -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if path.exists():
        raise SystemExit(f"{path} exists: choose a new path (this script only builds fresh stores)")
    store = Store(path)
    import_benchmarks(store, config.benchmarks_dir(), list(BENCHMARKS))
    synthetic_outcomes(store, HOST, PER_SPLIT, BENCHMARKS)
    compute_features(store, HOST)
    train_router_job(store, TrainRequest(host=HOST, variant="full", stage1=Stage1Config(max_epochs=40, seed=1)))
    lite = train_router_job(store, TrainRequest(host=HOST, variant="lite", stage1=Stage1Config(max_epochs=40)))
    train_router_job(store, TrainRequest(host=HOST, variant="lite", stage=2, parent=lite,
                                         stage2=Stage2Config(steps=400, log_every=20)))
    print(path)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
