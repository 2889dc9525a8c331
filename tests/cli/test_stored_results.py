"""Every stored result the docs quote is printed again by its command on a fresh `load-demo`
store: no training, no host call (the embedded host's model is absent, so any call would fail),
under 30 s each, and the numbers are those of the export (recomputed here from its Parquet files
without forge_core's report code)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from forge_core import config
from forge_core.store import Store

from support.resources import require_demo_export
from support.stores import copy_store

TIME_LIMIT_S = 30.0
DEMO = config.demo_dir()


def stored_runs() -> list[dict]:
    """The settings of every crossfit run in the demo export (none when it is absent)."""
    path = DEMO / "crossfit_runs.parquet"
    if not path.exists():
        return []
    return [json.loads(settings) for settings in pd.read_parquet(path)["settings"]]


def crossfit_command(settings: dict) -> list[str]:
    return ["eval", "crossfit", "--folds", str(settings["folds"]), "--lambda-in", f"{settings['lambda_in']:g}",
            "--lambda-out", f"{settings['lambda_out']:g}", "--stage", str(settings["stage"]),
            "--split-seed", str(settings["split_seed"]), "--accounting", settings["accounting"],
            # Stage 1 trains the whole alphabet by default since #35; the stored runs name the paper's warm start
            "--warm-arms", str(settings["stage1"].get("warm_start_arms", settings["stage1"].get("arms", 6))), "--json"]


@pytest.fixture(scope="module")
def demo_store(imported_store: Store, tmp_path_factory: pytest.TempPathFactory) -> Store:
    require_demo_export()
    store = copy_store(imported_store, tmp_path_factory.mktemp("demo"))
    store.load_export_once(DEMO)
    return store


def run_offline(store: Store, tmp_path: Path, args: list[str]) -> dict:
    """Run `forge ARGS` on a copy of the store with no model to start a host from; checks the time
    limit and that nothing was trained or computed into the store; returns the printed JSON."""
    store = copy_store(store, tmp_path / "store")
    tables = ("checkpoints", "crossfit_results", "fresh_results", "jobs")
    before = {table: store.table_counts()[table] for table in tables}
    env = {**os.environ, "FORGE_STORE": str(store.path), "FORGE_CACHE_DIR": str(tmp_path / "cache"),
           "FORGE_MODELS_DIR": str(tmp_path / "no-models")}
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "forge_core.cli", *args], capture_output=True, text=True,
                            env=env, timeout=120)
    elapsed = time.perf_counter() - started
    assert result.returncode == 0, result.stderr[-2000:]
    assert elapsed < TIME_LIMIT_S, f"forge {' '.join(args)} took {elapsed:.1f} s"
    after = {table: store.table_counts()[table] for table in tables}
    assert after == before, f"forge {' '.join(args)} trained or computed something: {before} -> {after}"
    return json.loads(result.stdout)


def macro(frame: pd.DataFrame, column: str) -> float:
    return float(frame.groupby("benchmark")[column].mean().mean())


@pytest.mark.parametrize("settings", stored_runs(), ids=lambda s: "{accounting}-stage{stage}-{lambda_in:g}-"
                         "{lambda_out:g}-seed{split_seed}".format(**s))
def test_every_stored_crossfit_run_is_printed_by_its_command(demo_store: Store, tmp_path: Path,
                                                             settings: dict) -> None:
    report = run_offline(demo_store, tmp_path, crossfit_command(settings))
    rows = pd.read_parquet(DEMO / "crossfit_results.parquet")
    rows = rows[rows["run_id"] == report["run_id"]]
    assert not rows.empty, f"{report['run_id']} is not a run of the export"
    column = f"{settings['accounting']}_utility"
    expected = {policy: macro(frame, column) for policy, frame in rows.groupby("policy")}
    assert set(report["policies"]) == set(expected)
    for policy, utility in expected.items():
        assert report["policies"][policy]["macro_utility"] == pytest.approx(utility, abs=1e-12), policy


def test_the_stored_fresh_run_is_printed_without_a_host(demo_store: Store, tmp_path: Path) -> None:
    report = run_offline(demo_store, tmp_path, ["eval", "fresh", "--split", "test", "--per-benchmark", "5", "--json"])
    rows = pd.read_parquet(DEMO / "fresh_results.parquet")
    rows = rows[rows["run_id"] == report["run_id"]]
    assert set(report["policies"]) == set(rows["policy"])
    for policy, frame in rows.groupby("policy"):
        assert report["policies"][policy]["macro_f1"] == pytest.approx(macro(frame, "f1"), abs=1e-12), policy


@pytest.mark.parametrize("args", [["eval", "--split", "test", "--json"],
                                  ["eval", "--split", "test", "--accounting", "answer", "--json"],
                                  ["store", "summary", "--json"]], ids=" ".join)
def test_the_cached_tables_are_printed_without_training(demo_store: Store, tmp_path: Path, args: list[str]) -> None:
    assert run_offline(demo_store, tmp_path, args)
