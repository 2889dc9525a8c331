"""Adds the guarded routers' out-of-fold rows (`<router>_guard`) to every crossfit run of a store
that lacks them, so a run stored before the guards existed prints them without training anything;
with `--export DIR`, writes every guard row as the export's added part
`crossfit_results.guards.parquet` (loaded by `forge store load-demo` with the rest of the demo data).

A guard is fitted around its router, so each fold's routers are trained again (their Stage-1
parents too for a Stage-2 run) with the run's settings and seed. A guard's rows are stored only
where the retrained router decides every held-out query of every fold as the stored router did
(the same arm, and the same margin where the stored row has one: older runs kept none); otherwise
the guard would be around another router, and it is left out of the run and named. A run whose data
changed since it was stored (its id no longer matches) is skipped and named. Resumable by run: a run
is stored when all its folds are fitted, and a guard stored is not fitted again.

    FORGE_STORE=/tmp/demo/forge.duckdb .venv/bin/python scripts/guard_crossfit_rows.py --export data/demo
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from forge_core.evaluation.crossfit import crossfit_folds, crossfit_policies, crossfit_run_id, missing_policies
from forge_core.evaluation.fold_decisions import settings_from_dict
from forge_core.evaluation.fold_rows import fold_rows
from forge_core.policies.context import evaluation_context
from forge_core.policies.guard import GuardedRouter
from forge_core.store import Store
from forge_core.store.exports import export_part
from forge_core.training.threads import one_torch_thread

log = logging.getLogger("guard_crossfit_rows")
GUARD_ROWS_WHERE = "policy LIKE '%\\_guard' ESCAPE '\\'"  # the export part's rows: every GuardedRouter (mix guards too)
DECISION_COLUMNS = ["policy", "benchmark", "example_id", "arm", "margin"]  # what must match the stored router


def add_guard_rows(store: Store, run_id: str, stored_settings: dict) -> int:
    """Fit the guards missing from one run on every fold, and store those whose router was
    retrained as stored on every fold (a guard with rows on some folds only would be reported on
    some queries only); returns the rows added (-1: the run was skipped)."""
    settings = settings_from_dict(stored_settings)
    base = evaluation_context(store, settings.host, settings.n_arms, settings.weights, accounting=settings.accounting,
                              retriever_hash=stored_settings.get("retriever_hash", ""))
    if crossfit_run_id(stored_settings, base) != run_id:
        log.warning("%s: its data changed since it was stored; skipped", run_id)
        return -1
    stored = store.crossfit_results(run_id)
    fitted_rows, differing = {}, set()
    for fold, context in crossfit_folds(base, settings.folds, settings.dev_fraction, settings.split_seed):
        done = set(stored.loc[stored["fold"] == fold, "policy"])
        policies = crossfit_policies(settings, context.table.arms)
        guards = [policy for policy in policies if isinstance(policy, GuardedRouter)
                  and policy.name not in done and policy.router.name in done]
        if not guards:
            continue
        routers = list({id(guard.router): guard.router for guard in guards}.values())  # a router once, however guarded
        fitted, _ = missing_policies(policies, done - {router.name for router in routers})
        with one_torch_thread():
            rows = fold_rows(context, context.rows("test"), fitted, [*routers, *guards], None)
        fold_differing = _differing_routers(rows, stored[stored["fold"] == fold], [router.name for router in routers])
        if fold_differing:
            log.warning("%s fold %d: retrained %s decide otherwise than stored", run_id, fold,
                        ", ".join(fold_differing))
        differing |= {guard.name for guard in guards if guard.router.name in fold_differing}
        fitted_rows[fold] = rows[rows["policy"].isin([guard.name for guard in guards])]
    added = 0
    for fold, rows in fitted_rows.items():
        kept = rows[~rows["policy"].isin(differing)]
        if len(kept):
            store.write_crossfit_fold(run_id, fold, kept)
            added += len(kept)
    if differing:
        log.warning("%s: no rows for %s (their routers were not retrained as stored)", run_id,
                    ", ".join(sorted(differing)))
    return added


def _differing_routers(retrained: pd.DataFrame, stored: pd.DataFrame, routers: list[str]) -> list[str]:
    """The routers whose retrained held-out decisions differ from the stored ones (arm, or margin
    where one was stored)."""
    def decisions(frame: pd.DataFrame, name: str) -> pd.DataFrame:
        chosen = frame.loc[frame["policy"] == name, DECISION_COLUMNS]
        return chosen.sort_values(["benchmark", "example_id"]).reset_index(drop=True)

    differing = []
    for name in routers:
        new, old = decisions(retrained, name), decisions(stored, name)
        keys = ["benchmark", "example_id", "arm"]
        same = len(new) == len(old) and new[keys].equals(old[keys])
        stored_margin = old["margin"].to_numpy(float)
        known = ~np.isnan(stored_margin)  # runs stored before margins were kept have none to compare
        if same and known.any():
            same = np.allclose(new["margin"].to_numpy(float)[known], stored_margin[known], rtol=0, atol=1e-9)
        if not same:
            differing.append(name)
            log.warning("  %s: %d of %d held-out arms differ", name, _arms_differing(new, old), len(old))
    return differing


def _arms_differing(new: pd.DataFrame, old: pd.DataFrame) -> int:
    """How many held-out queries the retrained router sends to another arm (all, when the rows differ)."""
    if len(new) != len(old) or not new[["benchmark", "example_id"]].equals(old[["benchmark", "example_id"]]):
        return len(old)
    return int((new["arm"] != old["arm"]).sum())


def main() -> None:
    """Every run of the store (or one, `--run`), then the export part when asked."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", help="only this run id")
    parser.add_argument("--export", type=Path, help="write the guards' rows as DIR/crossfit_results.guards.parquet")
    arguments = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from forge_core import config

    store = Store(config.store_path())
    runs = store.crossfit_runs()
    for run_id, settings in zip(runs["run_id"], runs["settings"]):
        if arguments.run in (None, run_id):
            log.info("%s: %d guard rows added", run_id, add_guard_rows(store, run_id, json.loads(settings)))
    if arguments.export:
        arguments.export.mkdir(parents=True, exist_ok=True)
        rows = export_part(store, arguments.export, "crossfit_results", "guards", GUARD_ROWS_WHERE)
        log.info("%d guard rows written to %s", rows, arguments.export)


if __name__ == "__main__":
    main()
