"""Fault suite, kills: `kill -9` at random moments, then resume; the store must end as an
uninterrupted run leaves it.

Per command: one uninterrupted reference run on a copy of the same starting store, then on
another copy a series of runs each killed with SIGKILL, each resuming what the previous left,
then one run to the end. Each kill is aimed at a seeded random moment between a tenth and a half
of the work the run has left (estimated from the compared tables' rows against the
reference's, after the command's start-up time, measured as a rerun with nothing left to do), and
must land: a run that ends by itself before its kill fails the test, and after each kill the
process must have died by SIGKILL (return code -9) with work left (fewer compared rows than the
reference). After every kill: no duplicate key, no half-written checkpoint. At the end: the same
rows as the reference (timestamps, latencies and job ids aside), and no job left "running" by a
dead process (`forge_core.jobs` reports those as interrupted). Each test prints "N of N kills
landed" (`pytest -m kills -s` shows it). Counts: 20 kills of `forge enumerate`, 5 each of
`forge data import`, `forge store load-demo`, `forge train --stage 1`, `forge train --stage 2`
and `forge eval --protocol fresh`. About 40 command runs, so they are deselected from the default
run and `scripts/test.sh` runs them as a second step (`pytest -m kills`).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from answering_server import AnsweringServer
from conftest import copy_store, require_demo_export, synthetic_outcomes

from forge_core import jobs
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


def rows(store: Store, names: tuple[str, ...]) -> int:
    """Rows in the named tables (names from this file only)."""
    with store.connect() as connection:
        return sum(connection.execute(f"SELECT count(*) FROM {name}").fetchone()[0] for name in names)


def kill_at_random(store: Store, command: list[str], kills: int, rng: random.Random, check: Callable[[Store], None],
                   reference: Store, names: tuple[str, ...], duration: float, startup: float = 0.0) -> int:
    """`kills` runs of the command on `store`, each resuming the previous and killed with SIGKILL
    at a random moment between a tenth and a half of its estimated work (`duration` of
    the reference run after `startup`, times the share of `names`' rows still missing); `check`
    runs after every kill. Fails unless every kill lands: the run still going when the kill comes,
    dead by SIGKILL, with rows still missing. Prints and returns the count of kills that landed."""
    target, start = rows(reference, names), rows(store, names)
    landed = 0
    for run in range(1, kills + 1):
        left = (target - rows(store, names)) / (target - start)
        moment = startup + rng.uniform(0.1, 0.5) * left * (duration - startup)
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   env={**os.environ, "FORGE_STORE": str(store.path)})
        try:
            code = process.wait(timeout=moment)
            pytest.fail(f"run {run} ended by itself (exit {code}) before its kill at {moment:.2f} s: no kill landed")
        except subprocess.TimeoutExpired:
            process.kill()
        assert process.wait() == -signal.SIGKILL, f"run {run}: not killed by SIGKILL"
        assert rows(store, names) < target, f"run {run}: killed at {moment:.2f} s after its work was done"
        check(store)
        landed += 1
    print(f"{' '.join(command[3:5])}: {landed} of {kills} kills landed")
    return landed


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


def kill_and_resume(reference: Store, killed: Store, command: list[str], kills: int, seed: int,
                    names: tuple[str, ...], resumes: bool = True) -> None:
    """The reference run, `kills` killed runs on the other store (see `kill_at_random`), one run
    to the end, then the same `names` tables as the reference. A command that `resumes` from its
    stored rows has its start-up time measured as a rerun on the finished reference; one that
    starts again (training) is killed within its whole duration."""
    duration = run_to_end(reference, command)
    startup = run_to_end(reference, command) if resumes else 0.0
    kill_at_random(killed, command, kills, random.Random(seed), no_duplicates, reference, names, duration, startup)
    run_to_end(killed, command)
    assert_same_tables(killed, reference, names)


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
    kill_and_resume(reference, killed, command, 5, SEED, ("imports", "examples", "documents", "split_manifests", "splits"))


def test_kill_store_load_demo(tmp_path: Path) -> None:
    require_demo_export()
    reference, killed = Store(tmp_path / "reference.duckdb"), Store(tmp_path / "killed.duckdb")
    command = forge("store", "load-demo")
    kill_and_resume(reference, killed, command, 5, SEED + 1, ("arm_outcomes", "probe_outcomes", "features", "checkpoints"))


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
        kill_and_resume(reference, killed, command, 20, SEED + 2, ("arm_outcomes",))
    no_job_left_running(killed)


def kill_training(outcomes: Store, tmp_path: Path, command: list[str], seed: int) -> None:
    """Kill a training command 5 times, resume it, and compare with an uninterrupted run."""
    reference, killed = two_copies(outcomes, tmp_path)
    # content-hashed ids: the very same router; training starts again after a kill
    kill_and_resume(reference, killed, command, 5, seed, ("checkpoints",), resumes=False)
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
        kill_and_resume(reference, killed, command, 5, SEED + 5, ("fresh_results",))

