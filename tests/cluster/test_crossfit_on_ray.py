"""Crossfit folds as Ray tasks: the run id and the rows of the in-process run, bit for bit, through an
interruption and a resume from the command line joining the cluster."""

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
AS_THE_CLI_RUNS_IT = CrossfitSettings(HOST, lambda_in=0.6, lambda_out=0.6, folds=2)  # `--folds 2 --lambda-* 0.6`
ORDER = ["fold", "policy", "benchmark", "example_id"]


def stored_rows(store: Store, run_id: str) -> pd.DataFrame:
    """Every stored column of a run but when each fold was written."""
    return store.crossfit_results(run_id).drop(columns="finished_at").sort_values(ORDER, ignore_index=True)


def forge(store: Store, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "forge_core.cli", *arguments], capture_output=True, text=True,
                          env={**os.environ, "FORGE_STORE": str(store.path)})


def test_an_interrupted_ray_run_resumed_from_the_cli_equals_the_in_process_run(outcome_store: Store, ray_local,
                                                                               tmp_path) -> None:
    from support.stores import copy_store

    local, on_ray = copy_store(outcome_store, tmp_path / "local"), copy_store(outcome_store, tmp_path / "ray")
    expected = run_crossfit(local, AS_THE_CLI_RUNS_IT)

    def interrupt(done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_crossfit(on_ray, AS_THE_CLI_RUNS_IT, engine="ray", on_fold=interrupt)
    assert on_ray.crossfit_runs(HOST).iloc[0]["folds_done"] == 1  # the first fold back was stored whole
    assert on_ray.jobs("crossfit").iloc[0]["status"] == "interrupted"

    address = ray_local.get_runtime_context().gcs_address
    resumed = forge(on_ray, "eval", "crossfit", "--host", HOST, "--folds", "2", "--lambda-in", "0.6",
                    "--lambda-out", "0.6", "--engine", "ray", "--address", address, "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["run_id"] == expected["run_id"]
    finished = on_ray.jobs("crossfit").iloc[0]
    assert finished["status"] == "finished" and json.loads(finished["params"])["engine"] == "ray"
    pd.testing.assert_frame_equal(stored_rows(on_ray, expected["run_id"]), stored_rows(local, expected["run_id"]),
                                  check_exact=True)


@pytest.mark.parametrize(("options", "says"), [
    (["--engine", "spark"], "--engine is local or ray, not 'spark'"),
    (["--address", "127.0.0.1:6379"], "--address names a Ray cluster: give it with --engine ray"),
])
def test_engine_options_are_checked_in_one_line(tmp_path, options: list[str], says: str) -> None:
    result = forge(Store(tmp_path / "empty.duckdb"), "eval", "crossfit", "--host", HOST, *options)
    assert result.returncode == 2 and says in result.stderr and "Traceback" not in result.stderr
