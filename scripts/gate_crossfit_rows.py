"""Adds the training-free gates' out-of-fold rows (targ, dart, logprob_ladder) to every crossfit run
of a store that lacks them, on the run's own folds (its split seed, fold count and inner-dev share),
so a run stored before the gates existed prints them without computing anything; with `--export
DIR`, writes every gate row as the export's added part `crossfit_results.gates.parquet` (loaded by
`forge store load-demo` with the rest of the demo data). Only the gates are fitted: a run's other
policies, routers included, are left as stored. A run whose data changed since it was stored (its id
no longer matches) is skipped and named. `--refit` fits every gate again (their rows replace the
stored ones): after `forge gate-probes` enumerated more drafts.

    FORGE_STORE=/tmp/demo/forge.duckdb .venv/bin/python scripts/gate_crossfit_rows.py --export data/demo
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from forge_core.evaluation.crossfit import DEV_FRACTION, crossfit_folds, crossfit_run_id
from forge_core.evaluation.fold_rows import fold_rows
from forge_core.policies.context import evaluation_context
from forge_core.policies.gates import DARTGate, LogprobLadder, TARGGate
from forge_core.reports.gates import GATES
from forge_core.routing.utility import CostWeights
from forge_core.store import Store
from forge_core.store.exports import export_part

log = logging.getLogger("gate_crossfit_rows")
GATE_ROWS_WHERE = "policy IN ('targ', 'dart', 'logprob_ladder')"  # the export part's rows: GATES


def add_gate_rows(store: Store, run_id: str, settings: dict, refit: bool = False) -> int:
    """Fit and store the gates missing from each fold of one run (every gate with `refit`: after more
    drafts were enumerated, their rows replace the stored ones); returns the rows written (-1: skipped)."""
    base = evaluation_context(store, settings["host"], settings["n_arms"],
                              CostWeights(settings["lambda_in"], settings["lambda_out"]),
                              accounting=settings.get("accounting", "deploy"),
                              retriever_hash=settings.get("retriever_hash", ""))
    if crossfit_run_id(settings, base) != run_id:
        log.warning("%s: its data changed since it was stored; skipped", run_id)
        return -1
    stored = store.crossfit_results(run_id)
    done = {fold: set(frame["policy"]) for fold, frame in stored.groupby("fold")}
    added = 0
    for fold, context in crossfit_folds(base, settings["folds"], settings.get("dev_fraction", DEV_FRACTION),
                                        settings["split_seed"]):
        missing = [gate for gate in (TARGGate(), DARTGate(), LogprobLadder())
                   if refit or gate.name not in done.get(fold, ())]
        if missing:
            rows = fold_rows(context, context.rows("test"), missing, missing, None)
            store.write_crossfit_fold(run_id, fold, rows)
            added += len(rows)
    return added


def main() -> None:
    """Every run of the store, then the export part when asked."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--export", type=Path, help="write the gates' rows as DIR/crossfit_results.gates.parquet")
    parser.add_argument("--refit", action="store_true", help="fit every gate again (after more drafts were enumerated)")
    arguments = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from forge_core import config

    store = Store(config.store_path())
    runs = store.crossfit_runs()
    for run_id, settings in zip(runs["run_id"], runs["settings"]):
        written = add_gate_rows(store, run_id, json.loads(settings), arguments.refit)
        log.info("%s: %d gate rows written", run_id, written)
    if arguments.export:
        arguments.export.mkdir(parents=True, exist_ok=True)
        rows = export_part(store, arguments.export, "crossfit_results", "gates", GATE_ROWS_WHERE)
        log.info("%d rows of %s written to %s", rows, ", ".join(GATES), arguments.export)


if __name__ == "__main__":
    main()
