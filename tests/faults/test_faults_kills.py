"""Fault suite, kills: `kill -9` in the middle of real work, then resume; the store must end as
an uninterrupted run leaves it.

Per command: one uninterrupted reference run on a copy of the starting store; then on another
copy a series of runs, each resuming what the previous left and killed with SIGKILL once it has
done a seeded random share (10% to 60%) of the work it has left, as the run itself shows that
work (never a guess from the clock):
- `forge data import`: the line it prints after each benchmark's transaction (benchmarks already
  stored print "unchanged"); the kill follows the j-th line, never the last, so it lands while a
  benchmark not yet stored is read or written;
- `forge store load-demo` prints nothing until it ends, so its killed runs go through
  `tests/faults/kill_tap.py`, which prints a line as each table's insert begins; the kill follows the
  line of one of the first three compared tables (of four): within that table's transaction or
  the next, with the checkpoints still missing;
- `forge enumerate` and `forge eval --protocol fresh`: the test server counts the requests; the
  kill comes as request k arrives, before it is answered, k a share of the rows still missing
  (every missing row needs one request or more, so the run always has requests left);
- `forge train --stage 1` and `--stage 2`: the run's job row (`done` of `total` epochs or steps),
  read through a read-only connection; the kill comes while that connection is open, so the run
  cannot store anything between the reading and the kill.
Each kill must land: the process died by SIGKILL (return code -9) with rows still missing from the
compared tables. A run that ends by itself, or whose kill comes after its work is stored, does not
count: its store is restored from the copy taken before it and it is repeated with the kill aimed
at half the share, at most twice, then the test fails. After every kill: no duplicate key, no
half-written checkpoint. At the end: the same rows as the reference (timestamps, latencies and job
ids aside), and no job left "running" by a dead process (`forge_core.jobs` reports those as
interrupted). Each test prints "N of N kills landed with work left", the runs repeated and where
each kill came (`pytest -m kills -s` shows it). Counts: 20 kills of `forge enumerate`, 5 each of
`forge data import`, `forge store load-demo`, `forge train --stage 1`, `forge train --stage 2`
and `forge eval --protocol fresh`: 57 command runs (45 killed, 6 reference, 6 last), so they are
deselected from the default run and `scripts/test.sh` runs them as a second step
(`pytest -m kills`).
"""

from __future__ import annotations

import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from forge_core import jobs
from forge_core.data.importers import BENCHMARK_FILES
from forge_core.data.importing import import_benchmarks
from forge_core.evaluation.settings import EvaluationSettings
from forge_core.evaluation.setup import prepare_evaluation
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.routing.features import compute_features
from forge_core.store import EXPORTED_TABLES, Store

from kill_tap import TAP_PREFIX
from support.answering_server import AnsweringServer
from support.resources import require_demo_export
from support.stores import copy_store, synthetic_outcomes

pytestmark = [pytest.mark.faults, pytest.mark.kills]

HOST = "synthetic-host"
SEED = 2026
VOLATILE = {"imported_at", "created_at", "started_at", "finished_at", "latency_ms", "updated_at", "logged_at",
            "job_id", "pid"}  # columns that differ between two correct runs
SHARES = (0.1, 0.6)  # a kill comes after a share of the run's remaining work drawn from this range
REPEATS = 2  # times a run whose kill did not land is repeated (store restored, half the share)
POLL_S = 0.02  # between two readings of the store by `AtJobProgress`
RUN_TIMEOUT_S = 300  # a killed run still going after this long fails the test
TAP = Path(__file__).with_name("kill_tap.py")


def forge(*args: str) -> list[str]:
    """A `forge` command line run by this interpreter."""
    return [sys.executable, "-m", "forge_core.cli", *args]


def label(command: list[str]) -> str:
    """What a `forge` command line's printed count is about: `data import`, `train --stage 1`."""
    words = command[3:]
    first_option = next((i for i, word in enumerate(words) if word.startswith("--")), len(words))
    kept = [f"{word} {value}" for word, value in zip(words, words[1:]) if word in ("--stage", "--protocol")]
    return " ".join([*words[:first_option], *kept])


def store_env(store: Store) -> dict[str, str]:
    """The environment of a command run on `store`, its output unbuffered."""
    return {**os.environ, "FORGE_STORE": str(store.path), "PYTHONUNBUFFERED": "1"}


def run_to_end(store: Store, command: list[str]) -> None:
    """Run a command to completion on the store."""
    result = subprocess.run(command, capture_output=True, text=True, env=store_env(store), timeout=600)
    assert result.returncode == 0, result.stderr


def count_rows(connection: duckdb.DuckDBPyConnection, names: tuple[str, ...]) -> int:
    """Rows in the named tables (names from this file only)."""
    return sum(connection.execute(f"SELECT count(*) FROM {name}").fetchone()[0] for name in names)


def rows(store: Store, names: tuple[str, ...]) -> int:
    """Rows in the named tables of a store no process is writing."""
    with store.connect() as connection:
        return count_rows(connection, names)


@dataclass(frozen=True)
class Work:
    """What the killed runs have to do: fill the `names` tables of `store` to `target` rows."""

    store: Store
    names: tuple[str, ...]
    target: int

    def missing(self) -> int:
        """Rows still missing (no process running)."""
        return self.target - rows(self.store, self.names)


class Trigger:
    """Where a killed run is killed. `kill_at` watches a started run until its progress passes
    `share` of the work it has left, sends SIGKILL and says where ("request 12", "job at 4 of 30");
    None when the run ended first."""

    stderr: int = subprocess.DEVNULL  # what the run's stderr goes to

    def command(self, command: list[str]) -> list[str]:
        """The command a killed run runs (the reference and the last run run `command`)."""
        return command

    def kill_at(self, process: subprocess.Popen, work: Work, share: float) -> str | None:
        raise NotImplementedError


@dataclass
class AfterLine(Trigger):
    """Kill right after the run's j-th stderr line matching `pattern` (its first group names what
    the line reports); j = `line_for(work, share)`. With `tapped`, the run goes through
    `tests/faults/kill_tap.py` (a line as each insert begins)."""

    pattern: str
    line_for: Callable[[Work, float], int]
    tapped: bool = False
    stderr: int = subprocess.PIPE

    def command(self, command: list[str]) -> list[str]:
        return [sys.executable, str(TAP), *command[3:]] if self.tapped else command

    def kill_at(self, process: subprocess.Popen, work: Work, share: float) -> str | None:
        goal, seen = self.line_for(work, share), 0
        for line in process.stderr:
            match = re.match(self.pattern, line)
            seen += bool(match)
            if match and seen == goal:
                process.kill()
                return f"after line {goal} ({match.group(1)})"
        return None


def benchmark_line(work: Work, share: float) -> int:
    """`forge data import` prints a line per benchmark, in a fixed order, those already stored
    first ("unchanged"). The j-th line, j at least one and at least the benchmarks stored, and
    below the count of benchmarks: the kill lands in a benchmark not yet stored."""
    stored, total = rows(work.store, ("imports",)), len(BENCHMARK_FILES)
    return max(1, stored + math.floor(share * (total - stored)))


def table_line(work: Work, share: float) -> int:
    """`store load-demo` inserts the compared tables in `work.names` order, each in its own
    transaction, in every run (rows already there are skipped): the line of one of the tables
    before the last, so the last is still missing when the kill comes."""
    return min(1 + math.floor(share * len(work.names)), len(work.names) - 1)


@dataclass
class AtRequest(Trigger):
    """Kill as the test server receives the run's k-th request, before answering it, with k a
    `share` of the rows still missing: each needs a request or more, so some are always left."""

    server: AnsweringServer

    def kill_at(self, process: subprocess.Popen, work: Work, share: float) -> str | None:
        goal, first = max(1, math.floor(share * work.missing())), len(self.server.received)
        fired = threading.Event()

        def on_request(number: int) -> bool:
            if number - first != goal:
                return False
            process.kill()
            fired.set()
            return True

        self.server.on_request = on_request
        try:
            process.wait()
        finally:
            self.server.on_request = None
        return f"request {goal}" if fired.is_set() else None


class AtJobProgress(Trigger):
    """Kill once the run's job row reaches a `share` of its total (epochs or steps), read with a
    read-only connection while the compared rows are still missing; the kill comes, and the
    process is dead, before that connection closes, so nothing is stored after the reading."""

    def kill_at(self, process: subprocess.Popen, work: Work, share: float) -> str | None:
        while process.poll() is None:
            try:
                connection = duckdb.connect(str(work.store.path), read_only=True)
            except duckdb.IOException:  # the run holds the store
                time.sleep(POLL_S / 2)
                continue
            try:
                reached = self.reached(connection, process.pid, share)
                if reached and count_rows(connection, work.names) < work.target:
                    process.kill()
                    process.wait()
                    return reached
            finally:
                connection.close()
            time.sleep(POLL_S)
        return None

    @staticmethod
    def reached(connection: duckdb.DuckDBPyConnection, pid: int, share: float) -> str | None:
        """"job at 4 of 30" once the running job of `pid` has done `share` of its total, else None."""
        row = connection.execute("SELECT done, total FROM jobs WHERE pid = ? AND status = 'running'", [pid]).fetchone()
        if row is None or row[0] < max(1, math.ceil(share * row[1])):
            return None
        return f"job at {row[0]} of {row[1]}"


def restore(store: Store, saved: Store) -> None:
    """Put back the store files saved by `copy_store` (no process is using either)."""
    shutil.copyfile(saved.path, store.path)
    wal, saved_wal = (Path(f"{path}.wal") for path in (store.path, saved.path))
    wal.unlink(missing_ok=True)
    if saved_wal.exists():
        shutil.copyfile(saved_wal, wal)


class Watchdog:
    """Kills a run still going after `RUN_TIMEOUT_S` (a trigger waits for the run to end)."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.fired = threading.Event()
        self.timer = threading.Timer(RUN_TIMEOUT_S, self.kill, args=(process,))
        self.timer.start()

    def kill(self, process: subprocess.Popen) -> None:
        self.fired.set()
        process.kill()

    def cancel(self) -> None:
        self.timer.cancel()


def killed_run(work: Work, command: list[str], trigger: Trigger, share: float, run: int) -> tuple[str, int]:
    """One run of `command` on `work.store` killed by `trigger` with work left; returns where the
    kill came and how often the run was repeated (see the module docstring)."""
    assert work.missing() > 0, f"run {run}: no work left to kill"
    saved = copy_store(work.store, work.store.path.parent / "before-run")
    for repeat in range(REPEATS + 1):
        process = subprocess.Popen(trigger.command(command), stdout=subprocess.DEVNULL, stderr=trigger.stderr,
                                   text=True, env=store_env(work.store))
        watchdog = Watchdog(process)
        try:
            where = trigger.kill_at(process, work, share)
            code = process.wait()
        finally:
            watchdog.cancel()
            if process.stderr:
                process.stderr.close()
        assert not watchdog.fired.is_set(), f"run {run}: still going after {RUN_TIMEOUT_S} s"
        if where is None:
            assert code == 0, f"run {run}: ended by itself with exit code {code}"
        else:
            assert code == -signal.SIGKILL, f"run {run}: not killed by SIGKILL (exit code {code})"
            if work.missing() > 0:
                no_duplicates(work.store)
                return where, repeat
        restore(work.store, saved)  # the kill did not land: the run's work was done
        share /= 2
    pytest.fail(f"run {run}: no kill landed with work left in {REPEATS + 1} tries")


def kill_and_resume(reference: Store, killed: Store, command: list[str], kills: int, seed: int,
                    names: tuple[str, ...], trigger: Trigger) -> None:
    """The reference run; `kills` runs on the other store, each resuming the previous and killed
    by `trigger`; one run to the end; then the same `names` tables as the reference. Prints the
    kills that landed, the runs repeated and where each kill came."""
    run_to_end(reference, command)
    work, rng = Work(killed, names, rows(reference, names)), random.Random(seed)
    landed, repeats, places = 0, 0, []
    for run in range(1, kills + 1):
        where, repeated = killed_run(work, command, trigger, rng.uniform(*SHARES), run)
        landed, repeats = landed + 1, repeats + repeated
        places.append(f"{where} ({work.target - work.missing()} of {work.target} rows)")
    print(f"\n{label(command)}: {landed} of {kills} kills landed with work left, {repeats} runs repeated; "
          + "; ".join(places))
    run_to_end(killed, command)
    assert_same_tables(killed, reference, names)


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
    trigger = AfterLine(r"([\w-]+): \d+ examples, \d+ documents", benchmark_line)
    tables = ("imports", "examples", "documents", "split_manifests", "splits")
    kill_and_resume(reference, killed, command, 5, SEED, tables, trigger)


def test_kill_store_load_demo(tmp_path: Path) -> None:
    require_demo_export()
    reference, killed = Store(tmp_path / "reference.duckdb"), Store(tmp_path / "killed.duckdb")
    command = forge("store", "load-demo", "--no-precompute")  # the tables only: what is compared
    names = ("arm_outcomes", "probe_outcomes", "features", "checkpoints")
    assert names == EXPORTED_TABLES[:4]  # the order `load-demo` inserts them in (see `table_line`)
    trigger = AfterLine(re.escape(TAP_PREFIX) + f"({'|'.join(names)})$", table_line, tapped=True)
    kill_and_resume(reference, killed, command, 5, SEED + 1, names, trigger)


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
        kill_and_resume(reference, killed, command, 20, SEED + 2, ("arm_outcomes",), AtRequest(server))
    no_job_left_running(killed)


def kill_training(outcomes: Store, tmp_path: Path, command: list[str], seed: int) -> None:
    """Kill a training command 5 times, run it to the end and compare with an uninterrupted run
    (training starts again after a kill; content-hashed ids: the very same router)."""
    reference, killed = two_copies(outcomes, tmp_path)
    kill_and_resume(reference, killed, command, 5, seed, ("checkpoints",), AtJobProgress())
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
        kill_and_resume(reference, killed, command, 5, SEED + 5, ("fresh_results",), AtRequest(server))

