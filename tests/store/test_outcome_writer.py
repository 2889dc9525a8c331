"""The outcome writer's batches: a running job's progress and cancel check ride on them, each batch
attaches the store file to the writer's own database and lets it go again, and `close` writes
every row put before it."""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path

import duckdb
import pytest

from forge_core.records import ArmOutcome
from forge_core.store import Store
from forge_core.store.connection import FileAttacher
from forge_core.store.database import JobCounts
from forge_core.store.outcome_writer import OutcomeWriter

NOW = datetime(2026, 1, 1, 12, 0, 0)


def outcome(number: int) -> ArmOutcome:
    return ArmOutcome("h", "musique", f"q{number}", "direct:no_think", "an answer", "an answer", 1.0, 1.0, 10, 2, 0,
                      50.0, None, 1, "hash", NOW, NOW)


class CountingStore:
    """A store double that counts its batches and what each carried; its job reads as `status`."""

    def __init__(self, status: str = "running") -> None:
        self.status = status
        self.batches: list[tuple[int, JobCounts | None, bool]] = []  # rows, progress, attached
        self.lock = threading.Lock()

    def write_outcomes(self, arms, probes, progress=None, attacher=None) -> str | None:
        with self.lock:
            self.batches.append((len(arms) + len(probes), progress, attacher is not None))
        return self.status if progress is not None else None


def test_each_batch_carries_the_jobs_progress_and_hands_on_its_status() -> None:
    store = CountingStore(status="cancelling")
    done = [0]
    statuses: list[str] = []
    writer = OutcomeWriter(store, flush_rows=10_000, flush_seconds=3600.0,  # one batch: the one on close
                           progress=lambda: JobCounts("enumerate-1", done[0], 1), on_job_status=statuses.append)
    for number in range(300):
        writer.put(outcome(number))
        done[0] += 1
    writer.close()
    assert store.batches == [(300, JobCounts("enumerate-1", 300, 1), True)]  # one connection for rows and progress
    assert statuses == ["cancelling"]
    assert (writer.rows_written, writer.batches_written) == (300, 1)


def test_a_full_batch_is_written_before_the_timer_and_close_writes_the_rest() -> None:
    store = CountingStore()
    writer = OutcomeWriter(store, flush_rows=100, flush_seconds=3600.0)
    for number in range(250):
        writer.put(outcome(number))
    writer.close()
    assert sum(rows for rows, _, _ in store.batches) == 250  # none lost, whatever the thread's timing
    assert all(progress is None for _, progress, _ in store.batches)


def test_an_attached_transaction_commits_and_lets_the_file_go(tmp_path: Path) -> None:
    store = Store(tmp_path / "store.duckdb")
    store.create_job("enumerate-1", "enumerate", {}, 10, 1)
    attacher = FileAttacher()
    try:
        status = store.write_outcomes([outcome(1), outcome(2)], [], JobCounts("enumerate-1", 2, 0), attacher)
        assert status == "running"
        assert not (tmp_path / "store.duckdb.wal").exists()  # checkpointed on detaching
        with duckdb.connect(str(tmp_path / "store.duckdb")) as other:  # not held: another connection opens it
            assert other.execute("SELECT count(*) FROM arm_outcomes").fetchall() == [(2,)]
            assert other.execute("SELECT done FROM jobs").fetchall() == [(2,)]
        with pytest.raises(duckdb.Error), store.attached_transaction(attacher) as connection:
            connection.execute("INSERT INTO jobs (job_id) VALUES ('enumerate-1')")  # a duplicate key: rolled back
        store.request_job_cancel("enumerate-1")  # the failed transaction detached the file too
        assert store.write_outcomes([outcome(3)], [], JobCounts("enumerate-1", 3, 0), attacher) == "cancelling"
    finally:
        attacher.close()
    assert len(store.arm_outcomes("h")) == 3
