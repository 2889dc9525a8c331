"""A grid of crossfit runs (weights x split seeds) sent to Ray from one command, as one batch of
fold tasks: each run has the in-process run's id and stores its rows, bit for bit."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from forge_core.evaluation.crossfit import CrossfitSettings, run_crossfit
from forge_core.store import Store

pytestmark = pytest.mark.e2e  # a local Ray cluster: scripts/test.sh runs the e2e tests after the default suite

HOST = "synthetic-host"
# `--lambda-in 0.1,0.6 --lambda-out 0.6 --split-seed 0,1 --folds 2`, in the order the command makes them
GRID = [CrossfitSettings(HOST, lambda_in=weight, lambda_out=0.6, folds=2, split_seed=seed)
        for weight in (0.1, 0.6) for seed in (0, 1)]
ORDER = ["fold", "policy", "benchmark", "example_id"]


def stored_rows(store: Store, run_id: str) -> pd.DataFrame:
    """Every stored column of a run but when each fold was written."""
    return store.crossfit_results(run_id).drop(columns="finished_at").sort_values(ORDER, ignore_index=True)


def test_a_grid_sent_to_ray_in_one_command_equals_the_in_process_runs(outcome_store: Store, ray_local,
                                                                      tmp_path) -> None:
    from support.stores import copy_store

    local, on_ray = copy_store(outcome_store, tmp_path / "local"), copy_store(outcome_store, tmp_path / "ray")
    expected = [run_crossfit(local, settings)["run_id"] for settings in GRID]
    assert len(set(expected)) == len(GRID)

    address = ray_local.get_runtime_context().gcs_address
    result = subprocess.run(
        [sys.executable, "-m", "forge_core.cli", "eval", "crossfit", "--host", HOST, "--folds", "2",
         "--lambda-in", "0.1,0.6", "--lambda-out", "0.6", "--split-seed", "0,1", "--engine", "ray",
         "--address", address, "--json"],
        capture_output=True, text=True, env={**os.environ, "FORGE_STORE": str(on_ray.path)})
    assert result.returncode == 0, result.stderr
    reports = json.loads(result.stdout)["runs"]
    assert [report["run_id"] for report in reports] == expected
    assert [(r["lambda_in"], r["split_seed"]) for r in reports] == [(s.lambda_in, s.split_seed) for s in GRID]

    jobs = on_ray.jobs("crossfit")  # the whole grid was one batch: one job, every run's folds
    assert len(jobs) == 1 and jobs.iloc[0]["status"] == "finished"
    params = json.loads(jobs.iloc[0]["params"])
    assert params["engine"] == "ray" and params["run_ids"] == expected
    for run_id in expected:
        pd.testing.assert_frame_equal(stored_rows(on_ray, run_id), stored_rows(local, run_id), check_exact=True)


def test_a_grid_value_that_is_no_split_seed_is_refused_in_one_line(tmp_path) -> None:
    result = subprocess.run([sys.executable, "-m", "forge_core.cli", "eval", "crossfit", "--host", HOST,
                             "--split-seed", "0,1.5", "--engine", "ray"],
                            capture_output=True, text=True,
                            env={**os.environ, "FORGE_STORE": str(tmp_path / "empty.duckdb")})
    assert result.returncode == 2, result.stderr
    assert "--split-seed takes whole numbers of 0 or more, not 1.5" in result.stderr
    assert "Traceback" not in result.stderr
