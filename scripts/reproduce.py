"""Rerun one stored crossfit run of the demo export from scratch and say how far it lands.

    python scripts/reproduce.py [--lambda-in 0.6] [--lambda-out 0.6] [--stage 2] [--split-seed 0] [--json]

Two stores in a scratch folder, both with the benchmarks imported: one with the whole demo export
(the stored run), one with the export less its crossfit runs. In the second, `run_crossfit` retrains
every learned policy of every fold (the routers in memory, as the stored run did) and decides the
held-out folds again. Per policy it reports the share of queries whose arm agrees with the stored
run and the macro utility difference (rerun minus stored) with its paired bootstrap 95% interval.
Both runs must have the same run id: it hashes the settings and the data, not the machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import pandas as pd

from forge_core.config import benchmarks_dir, demo_dir
from forge_core.data.importing import import_benchmarks
from forge_core.evaluation.crossfit import CrossfitSettings, crossfit_run_id, run_crossfit
from forge_core.policies.context import evaluation_context
from forge_core.statistics import macro, paired_bootstrap_ci
from forge_core.store import Store
from forge_core.store.schema import EXPORTED_TABLES
from forge_core.training.settings import PAPER_STAGE1

KEYS = ["policy", "benchmark", "example_id"]


def demo_store(path: Path, with_crossfit: bool) -> Store:
    """A store of the imported benchmarks and the demo export (with or without its crossfit runs)."""
    store = Store(path)
    import_benchmarks(store, benchmarks_dir())
    tables = [t for t in EXPORTED_TABLES if with_crossfit or not t.startswith("crossfit_")]
    store.load_exported(demo_dir(), tables=tables)
    return store


def compare(stored: pd.DataFrame, rerun: pd.DataFrame, accounting: str) -> dict[str, dict]:
    """Per policy of the stored run: arm agreement and the utility difference with its interval."""
    joined = stored.merge(rerun, on=KEYS, suffixes=("_stored", "_rerun")).sort_values(KEYS)
    column = f"{accounting}_utility"
    report = {}
    for policy, rows in joined.groupby("policy"):
        benchmarks = rows["benchmark"].to_numpy()
        new, old = rows[f"{column}_rerun"].to_numpy(), rows[f"{column}_stored"].to_numpy()
        report[policy] = {
            "queries": int(len(rows)),
            "arm_agreement": float((rows["arm_rerun"] == rows["arm_stored"]).mean()),
            "utility_difference": macro(new - old, benchmarks),
            "ci_utility_difference": list(paired_bootstrap_ci(new, old, benchmarks)),
        }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lambda-in", type=float, default=0.6)
    parser.add_argument("--lambda-out", type=float, default=0.6)
    parser.add_argument("--stage", type=int, default=2)
    parser.add_argument("--split-seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    settings = CrossfitSettings("embedded", lambda_in=args.lambda_in, lambda_out=args.lambda_out, stage=args.stage,
                                split_seed=args.split_seed, stage1=PAPER_STAGE1)  # the stored runs' Stage 1
    with tempfile.TemporaryDirectory() as scratch:
        stored_store = demo_store(Path(scratch) / "stored.duckdb", with_crossfit=True)
        base = evaluation_context(stored_store, settings.host, settings.n_arms, settings.weights,
                                  accounting=settings.accounting)
        stored_id = crossfit_run_id(settings.to_dict(), base)
        stored = stored_store.crossfit_results(stored_id)
        if stored.empty:
            raise SystemExit(f"the demo export holds no crossfit run of these settings ({stored_id})")
        rerun_store = demo_store(Path(scratch) / "rerun.duckdb", with_crossfit=False)
        report = run_crossfit(rerun_store, settings,
                              on_fold=lambda done, total: print(f"fold {done} of {total}", file=sys.stderr))
        policies = compare(stored, rerun_store.crossfit_results(report["run_id"]), settings.accounting)
    result = {"stored_run_id": stored_id, "rerun_run_id": report["run_id"], "policies": policies,
              "min_arm_agreement": min(p["arm_agreement"] for p in policies.values()),
              "max_abs_utility_difference": max(abs(p["utility_difference"]) for p in policies.values())}
    if args.json:
        print(json.dumps(result))
        return
    print(f"stored run {stored_id}, rerun {report['run_id']}")
    for name, row in sorted(policies.items()):
        low, high = row["ci_utility_difference"]
        print(f"{name:24s} arms agree {row['arm_agreement']:6.1%}  utility {row['utility_difference']:+.4f} "
              f"[{low:+.4f}, {high:+.4f}]")
    print(json.dumps({k: v for k, v in result.items() if k != "policies"}))


if __name__ == "__main__":
    main()
