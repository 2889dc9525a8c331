"""Fault suite, kills: `kill -9` at random moments, then resume; the store must end as an
uninterrupted run leaves it.

Per command: one uninterrupted reference run on a copy of the same starting store, then on
another copy a series of runs each killed at a random moment (seeded) between a quarter and all
of the reference run's duration, each resuming what the previous left, then one run to the end.
After every kill: no duplicate key, no half-written checkpoint. At the end: the same rows as the
reference (timestamps, latencies and job ids aside), and no job left "running" by a dead process
(`forge_core.jobs` reports those as interrupted). Counts: 20 kills of `forge enumerate`, 5 each of
`forge data import`, `forge store load-demo`, `forge train --stage 1`, `forge train --stage 2`
and `forge eval --protocol fresh`. About 40 command runs, so they are deselected from the default
run and `scripts/test.sh` runs them as a second step (`pytest -m kills`).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from conftest import copy_store, synthetic_outcomes
from support.answering_server import AnsweringServer

from forge_core import config, jobs
from forge_core.data.importing import import_benchmarks
from forge_core.evaluation.cached import EvaluationSettings, prepare_evaluation
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.routing.features import compute_features
from forge_core.store import Store

pytestmark = [pytest.mark.faults, pytest.mark.kills]

HOST = "synthetic-host"
SEED = 2026
VOLATILE = {"imported_at", "created_at", "started_at", "finished_at", "latency_ms", "updated_at", "logged_at",
            "job_id", "pid"}  # columns that differ between two correct runs


def forge(*args: str) -> list[str]:
    """A `forge` command line run by this interpreter."""
    return [sys.executable, "-m", "forge_core.cli", *args]


def run_to_end(store: Store, command: list[str]) -> float:
    """Run a command to completion on the store; its wall time."""
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "FORGE_STORE": str(store.path)},
                            timeout=600)
    assert result.returncode == 0, result.stderr
    return time.monotonic() - started


def kill_at_random(store: Store, command: list[str], kills: int, duration: float, rng: random.Random,
                   check: Callable[[Store], None]) -> None:
    """`kills` runs of the command, each killed with SIGKILL at a random moment, each resuming the
    previous; `check` runs on the store after every kill."""
    for _ in range(kills):
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   env={**os.environ, "FORGE_STORE": str(store.path)})
        time.sleep(rng.uniform(duration / 4, duration))
        process.kill()
        process.wait()
        check(store)


def table(store: Store, name: str) -> pd.DataFrame:
    """A table's rows without the columns that differ between two correct runs, sorted."""
    with store.connect() as connection:
        frame = connection.execute(f"SELECT * FROM {name}").fetchdf()  # names from this file only
    frame = frame.drop(columns=[c for c in frame.columns if c in VOLATILE])
    frame = frame.astype(str)
    return frame.sort_values(list(frame.columns)).reset_index(drop=True)


def assert_same_tables(store: Store, reference: Store, names: tuple[str, ...]) -> None:
    for name in names:
        pd.testing.assert_frame_equal(table(store, name), table(reference, name), obj=name)


def no_duplicates(store: Store) -> None:
    """DuckDB enforces the primary keys; a duplicate would have failed the insert. Here: every
    stored checkpoint loads (none half-written) and every outcome row is whole."""
    from forge_core.routing.checkpoints import load_checkpoint

    for checkpoint_id in store.checkpoints()["checkpoint_id"]:
        load_checkpoint(store, checkpoint_id)
    with store.connect() as connection:
        partial = connection.execute(
            "SELECT count(*) FROM arm_outcomes WHERE error IS NULL AND (answer IS NULL OR f1 IS NULL)").fetchone()[0]
    assert partial == 0


def no_job_left_running(store: Store) -> None:
    for kind in ("enumerate", "train"):
        for _, progress in jobs.recent_jobs(store, kind, limit=100):
            assert progress.status not in ("running", "cancelling"), progress


@pytest.fixture(scope="module")
def trained_outcomes(tmp_path_factory: pytest.TempPathFactory, benchmarks_root: Path) -> Store:
    """Synthetic outcomes with features and a Stage-1 Lite router (the parent of Stage 2)."""
    store = Store(tmp_path_factory.mktemp("kills") / "store.duckdb")
    benchmarks = ("musique", "popqa")
    import_benchmarks(store, benchmarks_root, list(benchmarks))
    synthetic_outcomes(store, HOST, {"train": 40, "dev": 20, "test": 20}, benchmarks)
    compute_features(store, HOST)
    prepare_evaluation(store, EvaluationSettings(HOST))
    return store


def two_copies(source: Store, tmp_path: Path) -> tuple[Store, Store]:
    return copy_store(source, tmp_path / "reference"), copy_store(source, tmp_path / "killed")


def test_kill_data_import(tmp_path: Path, benchmarks_root: Path) -> None:
    reference, killed = Store(tmp_path / "reference.duckdb"), Store(tmp_path / "killed.duckdb")
    command = forge("data", "import", "--benchmarks-dir", str(benchmarks_root))
    duration = run_to_end(reference, command)
    kill_at_random(killed, command, 5, duration, random.Random(SEED), no_duplicates)
    run_to_end(killed, command)
    assert_same_tables(killed, reference, ("imports", "examples", "documents", "split_manifests", "splits"))


def test_kill_store_load_demo(tmp_path: Path) -> None:
    if not (config.demo_dir() / "arm_outcomes.parquet").exists():
        pytest.skip("no committed demo export")
    reference, killed = Store(tmp_path / "reference.duckdb"), Store(tmp_path / "killed.duckdb")
    command = forge("store", "load-demo")
    duration = run_to_end(reference, command)
    kill_at_random(killed, command, 5, duration, random.Random(SEED + 1), no_duplicates)
    run_to_end(killed, command)
    assert_same_tables(killed, reference, ("arm_outcomes", "probe_outcomes", "features", "checkpoints"))


def test_kill_enumeration(tmp_path: Path, benchmarks_root: Path) -> None:
    source = Store(tmp_path / "source.duckdb")
    import_benchmarks(source, benchmarks_root, ["fever"])
    reference, killed = two_copies(source, tmp_path)
    with AnsweringServer(delay_s=0.05) as server:
        for store in (reference, killed):
            save_host_config(store, HostConfig(name="test-host", kind="openai", model="m", base_url=server.base_url,
                                               max_retries=2, max_concurrency=4))
        command = forge("enumerate", "--host", "test-host", "--split", "train", "--benchmark", "fever",
                        "--per-benchmark", "30", "--concurrency", "4")
        duration = run_to_end(reference, command)
        kill_at_random(killed, command, 20, duration, random.Random(SEED + 2), no_duplicates)
        run_to_end(killed, command)
    assert_same_tables(killed, reference, ("arm_outcomes",))
    no_job_left_running(killed)


def kill_training(outcomes: Store, tmp_path: Path, command: list[str], seed: int) -> None:
    """Kill a training command 5 times, resume it, and compare with an uninterrupted run."""
    reference, killed = two_copies(outcomes, tmp_path)
    duration = run_to_end(reference, command)
    kill_at_random(killed, command, 5, duration, random.Random(seed), no_duplicates)
    run_to_end(killed, command)
    assert_same_tables(killed, reference, ("checkpoints",))  # content-hashed ids: the very same router
    no_job_left_running(killed)


def test_kill_stage1_training(trained_outcomes: Store, tmp_path: Path) -> None:
    kill_training(trained_outcomes, tmp_path, forge("train", "--stage", "1", "--host", HOST, "--variant", "lite",
                                                    "--seed", "5", "--max-epochs", "30", "--patience", "30"), SEED + 3)


def test_kill_stage2_training(trained_outcomes: Store, tmp_path: Path) -> None:
    kill_training(trained_outcomes, tmp_path, forge("train", "--stage", "2", "--host", HOST, "--variant", "lite",
                                                    "--steps", "300", "--log-every", "50"), SEED + 4)


def test_kill_fresh_online_evaluation(trained_outcomes: Store, tmp_path: Path) -> None:
    reference, killed = two_copies(trained_outcomes, tmp_path)
    with AnsweringServer(delay_s=0.05) as server:
        for store in (reference, killed):
            save_host_config(store, HostConfig(name=HOST, kind="openai", model="test", base_url=server.base_url,
                                               max_retries=0))
        command = forge("eval", "--host", HOST, "--protocol", "fresh", "--per-benchmark", "4",
                        "--policy", "always_direct", "--policy", "always_raw", "--policy", "forge_lite",
                        "--policy", "frugal_cascade")
        duration = run_to_end(reference, command)
        kill_at_random(killed, command, 5, duration, random.Random(SEED + 5), no_duplicates)
        run_to_end(killed, command)
    assert_same_tables(killed, reference, ("fresh_results",))

