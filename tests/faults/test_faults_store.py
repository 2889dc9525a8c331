"""Fault suite, the store under stress: another process holding the write lock, a store written by
an older schema, a damaged checkpoint blob, a read-only store folder, and a disk that fills up
(in the middle of an enumeration, a data import, when training saves its checkpoint, and a real
full tmpfs): one clear line, nothing half-written, and the next run continues."""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from test_faults_kills import assert_same_tables, forge, no_duplicates, no_job_left_running, run_to_end, table

from forge_core.data.importing import import_benchmarks
from forge_core.enumeration.planning import EnumerationPlan
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.routing.checkpoints import CheckpointError, load_checkpoint
from forge_core.store import SCHEMA_VERSION, Store, StoreError
from forge_core.store.schema import MIGRATIONS

from support.answering_server import AnsweringServer
from support.enumeration import host_config as enumeration_host
from support.enumeration import run as run_enumeration
from support.stores import copy_store

pytestmark = pytest.mark.faults

FULL_AT_COMMIT = 3  # the first commits land (the job row, an outcome batch), then the disk is full
# holds the store's lock until the test ends it (stdin stays open): a command that did not give up would hang
HOLD_LOCK = "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('holding', flush=True); sys.stdin.read()"


def test_a_store_held_by_another_process_is_a_clear_bounded_wait(tmp_path: Path) -> None:
    store = Store(tmp_path / "store.duckdb")
    store.schema_version()  # create it
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(store.path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        result = subprocess.run([sys.executable, "-m", "forge_core.cli", "data", "stats"], capture_output=True,
                                text=True,
                                env={**os.environ, "FORGE_STORE": str(store.path), "FORGE_STORE_LOCK_WAIT": "2"})
        assert holder.poll() is None  # bounded: the command gave up while the lock was still held
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == 2 and "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "is held by another process; waited 2 s" in lines[0], result.stderr
    assert store.benchmark_stats() == {}  # usable again once the other process has gone


def test_a_store_of_an_older_schema_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    connection = duckdb.connect(str(path))
    connection.execute(MIGRATIONS[0])
    connection.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    connection.execute("INSERT INTO hosts VALUES ('kept', '{}', NULL)")
    connection.close()
    store = Store(path)
    assert store.schema_version() == SCHEMA_VERSION
    assert store.host_names() == ["kept"]  # rows written under the old schema are still there


def test_a_damaged_checkpoint_is_refused_by_its_id_and_the_rest_stay_usable(trained_store, tmp_path: Path) -> None:
    from forge_core.evaluation.settings import EvaluationSettings
    from forge_core.evaluation.setup import train_missing_routers

    store = copy_store(trained_store[0], tmp_path)
    train_missing_routers(store, EvaluationSettings("synthetic-host"))
    damaged, *others = list(store.checkpoints()["checkpoint_id"])
    with store.transaction() as connection:
        connection.execute("UPDATE checkpoints SET state = ? WHERE checkpoint_id = ?", [b"not a torch file", damaged])
    with pytest.raises(CheckpointError, match=f"checkpoint '{damaged}' is damaged"):
        load_checkpoint(store, damaged)
    assert others and all(load_checkpoint(store, other).router is not None for other in others)
    result = subprocess.run([sys.executable, "-m", "forge_core.cli", "train", "--stage", "2",
                             "--host", "synthetic-host", "--parent", damaged], capture_output=True, text=True,
                            env={**os.environ, "FORGE_STORE": str(store.path)})
    assert result.returncode == 2 and f"checkpoint '{damaged}' is damaged" in result.stderr
    assert "Traceback" not in result.stderr


def _make_read_only(folder: Path) -> None:
    """Make a folder and its files unwritable, for root too (root ignores permission bits, not the
    immutable attribute); skip where neither works."""
    if os.geteuid() != 0:
        for path in [*folder.iterdir(), folder]:
            path.chmod(0o555)
        return
    if subprocess.run(["chattr", "+i", *map(str, folder.iterdir()), str(folder)], capture_output=True).returncode:
        pytest.skip("cannot make a folder read-only for root here (chattr +i refused)")


def _make_writable(folder: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(folder), *map(str, folder.iterdir())], check=True)
    else:
        for path in [folder, *folder.iterdir()]:
            path.chmod(0o755)


def test_a_store_in_a_read_only_folder_is_one_clear_line(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    folder.mkdir()
    store = Store(folder / "store.duckdb")
    store.schema_version()
    before = store.path.read_bytes()
    _make_read_only(folder)
    try:
        result = subprocess.run([sys.executable, "-m", "forge_core.cli", "data", "stats"], capture_output=True,
                                text=True, env={**os.environ, "FORGE_STORE": str(store.path)})
    finally:
        _make_writable(folder)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(lines) == 1 and "cannot open the store" in lines[0] and "FORGE_STORE" in lines[0], result.stderr
    assert store.path.read_bytes() == before
    assert store.benchmark_stats() == {}


def on_a_full_disk(store: Store, full_at: int, *arguments: str) -> subprocess.CompletedProcess:
    """Run `forge arguments` on the store with a disk full from the `full_at`-th commit on
    (tests/faults/full_disk.py; 0: never full)."""
    return subprocess.run([sys.executable, str(Path(__file__).with_name("full_disk.py")), str(full_at), *arguments],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "FORGE_STORE": str(store.path)})


def commits_of(store: Store, *arguments: str) -> int:
    """Run `forge arguments` to the end on the store; the number of store commits it made."""
    result = on_a_full_disk(store, 0, *arguments)
    assert result.returncode == 0, result.stderr
    return int(re.search(r"full_disk: (\d+) commits", result.stdout).group(1))


def assert_one_full_disk_line(result: subprocess.CompletedProcess, store: Store) -> None:
    """Exit code 2, no traceback, and one error line naming the store and the full disk, last."""
    errors = [line for line in result.stderr.splitlines() if line.startswith(("error", "ERROR"))]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert len(errors) == 1 and f"cannot write the store {store.path}: no space left on device" in errors[0], errors
    assert result.stderr.rstrip().endswith(errors[0])  # (host retry warnings may come before it)


def test_a_full_disk_during_enumeration_is_one_line_and_the_next_run_continues(tmp_path: Path,
                                                                               benchmarks_root: Path) -> None:
    source = Store(tmp_path / "source.duckdb")
    import_benchmarks(source, benchmarks_root, ["fever"])
    reference, full = copy_store(source, tmp_path / "reference"), copy_store(source, tmp_path / "full")
    with AnsweringServer(delay_s=0.05) as server:  # 180 calls, 4 at a time: several 0.5 s batches
        for store in (reference, full):
            save_host_config(store, HostConfig(name="test-host", kind="openai", model="m", base_url=server.base_url,
                                               max_retries=2, max_concurrency=4))
        arguments = ["enumerate", "--host", "test-host", "--split", "train", "--benchmark", "fever",
                     "--per-benchmark", "30", "--concurrency", "4"]
        run_to_end(reference, forge(*arguments))
        assert_one_full_disk_line(on_a_full_disk(full, FULL_AT_COMMIT, *arguments), full)
        written = table(full, "arm_outcomes")
        expected = table(reference, "arm_outcomes")
        assert 0 < len(written) < len(expected)  # some batches landed before the disk filled up
        no_duplicates(full)
        assert written.merge(expected).shape[0] == len(written)  # every row written is whole and right
        no_job_left_running(full)
        run_to_end(full, forge(*arguments))  # the disk has room again: the next run continues
    assert_same_tables(full, reference, ("arm_outcomes",))
    no_job_left_running(full)


def test_a_full_disk_during_data_import_leaves_whole_benchmarks(tmp_path: Path, benchmarks_root: Path) -> None:
    reference, full = Store(tmp_path / "reference.duckdb"), Store(tmp_path / "full.duckdb")
    arguments = ["data", "import", "--benchmarks-dir", str(benchmarks_root)]
    run_to_end(reference, forge(*arguments))
    assert_one_full_disk_line(on_a_full_disk(full, 1, *arguments), full)  # a new store: its schema is refused
    with duckdb.connect(str(full.path)) as connection:  # the first migration was refused whole: no table
        assert connection.execute("SELECT count(*) FROM information_schema.tables").fetchone()[0] == 0
    assert full.schema_version() == SCHEMA_VERSION  # with room again: from here on, one commit per benchmark
    assert_one_full_disk_line(on_a_full_disk(full, 3, *arguments), full)  # the third benchmark's commit fails
    imported, whole = full.imported_benchmarks(), reference.benchmark_stats()
    assert len(imported) == 2  # the first two, whole (examples, documents, splits), and nothing of the third
    assert full.benchmark_stats() == {benchmark: whole[benchmark] for benchmark in imported}
    run_to_end(full, forge(*arguments))
    assert_same_tables(full, reference, ("imports", "examples", "documents", "split_manifests", "splits"))


@pytest.mark.e2e  # end to end: a Stage 2 training process on a full disk (about 24 s)
def test_a_full_disk_when_training_saves_its_checkpoint_leaves_none_half_written(outcome_store: Store,
                                                                                 tmp_path: Path) -> None:
    reference, full = copy_store(outcome_store, tmp_path / "reference"), copy_store(outcome_store, tmp_path / "full")
    arguments = ["train", "--stage", "1", "--host", "synthetic-host", "--variant", "lite", "--max-epochs", "5"]
    commits = commits_of(reference, *arguments)  # ..., the checkpoint, the job closed as finished
    assert_one_full_disk_line(on_a_full_disk(full, commits - 1, *arguments), full)
    no_duplicates(full)
    assert full.checkpoints().empty
    no_job_left_running(full)
    run_to_end(full, forge(*arguments))
    assert_same_tables(full, reference, ("checkpoints",))


def test_a_really_full_disk_is_a_store_error_and_the_rows_before_it_stay(tmp_path: Path) -> None:
    """The same on a real full disk: a 3 MB tmpfs (root only; skipped where mounting is refused)."""
    from forge_core.records import ArmOutcome
    from forge_core.store import utc_now

    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        store, batches = Store(disk / "store.duckdb"), 0
        with pytest.raises(StoreError, match=f"cannot write the store {store.path}: no space left on device"):
            for batches in range(1, 100):
                now = utc_now()
                store.write_outcomes([ArmOutcome("h", "b", f"q{batches}-{i}", "direct:no_think", "x" * 300, "x",
                                                 0.5, 0.0, 1, 1, 0, 1.0, None, 1, "c", now, now)
                                      for i in range(500)], [])
        stored = store.arm_outcomes("h")
        assert len(stored) == (batches - 1) * 500 > 0 and stored["example_id"].is_unique  # whole batches only
        subprocess.run(["mount", "-o", "remount,size=16m", str(disk)], check=True)  # space freed
        store.write_outcomes([ArmOutcome("h", "b", "after", "direct:no_think", "y", "y", 1.0, 1.0, 1, 1, 0, 1.0, None,
                                         1, "c", now, now)], [])
        assert len(store.arm_outcomes("h")) == len(stored) + 1
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_a_disk_full_only_for_outcome_batches_closes_the_job_as_failed(tmp_path: Path, benchmarks_root: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """In this process: the writer's first batch lands, the disk refuses the next (an OSError inside
    the batch's transaction), the job's own row can still be written."""
    store = Store(tmp_path / "store.duckdb")
    import_benchmarks(store, benchmarks_root, ["fever"])
    plan = EnumerationPlan(host="test-host", split="train", benchmarks=("fever",), per_benchmark=30, concurrency=4)
    write_outcomes, batches = Store.write_outcomes, []

    def disk_fills_after_one_batch(self: Store, arms, probes, progress=None, attacher=None) -> str | None:
        batches.append(len(arms))
        if len(batches) == 1:
            return write_outcomes(self, arms, probes, progress, attacher)
        with self.transaction():
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Store, "write_outcomes", disk_fills_after_one_batch)
    with AnsweringServer(delay_s=0.05) as server:
        with pytest.raises(StoreError, match=f"cannot write the store {store.path}: no space left on device"):
            run_enumeration(store, plan, enumeration_host(server.base_url))
        (first,) = store.jobs("enumerate").to_dict("records")
        assert first["status"] == "failed" and first["done"] > batches[0]
        assert len(store.arm_outcomes("test-host")) == batches[0] > 0  # the first batch, whole
        monkeypatch.undo()  # room again
        report = run_enumeration(store, plan, enumeration_host(server.base_url))
    assert report.status == "finished" and report.calls == 180 - batches[0]
    assert len(store.arm_outcomes("test-host")) == 180
