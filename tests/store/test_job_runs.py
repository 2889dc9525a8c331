"""The one job lifecycle (`job_run`): a row opened as running is closed exactly once, as finished,
as the block said (cancelled), failed (an exception) or interrupted (Ctrl-C), with its last counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from forge_core.store import Store, job_run


def closed_row(store: Store, job_id: str) -> dict:
    row = store.job(job_id)
    assert row is not None and row["finished_at"] is not None
    return row


def test_a_normal_exit_finishes_the_job_with_its_last_counts(tmp_path: Path) -> None:
    store = Store(tmp_path / "store.duckdb")
    with job_run(store, "train", {"seed": 0}, 10) as job:
        assert store.job(job.job_id)["status"] == "running"
        job.progress(4, 1)
        assert store.job(job.job_id)["done"] == 4  # written at once: the dashboard reads it
    row = closed_row(store, job.job_id)
    assert (row["status"], row["done"], row["errors"], row["kind"]) == ("finished", 4, 1, "train")
    assert job.job_id.startswith("train-")


def test_the_block_can_say_how_it_ends(tmp_path: Path) -> None:
    store = Store(tmp_path / "store.duckdb")
    with job_run(store, "train", {}, 10, job_id="train-given") as job:
        job.end("cancelled", "cancelled at epoch 3 of 10", done=3)
        assert store.job("train-given")["done"] == 0  # counts given to `end` are written on closing
    row = closed_row(store, "train-given")
    assert (row["status"], row["message"], row["done"]) == ("cancelled", "cancelled at epoch 3 of 10", 3)


@pytest.mark.parametrize(("error", "status"), [(ValueError("disk full\nmore"), "failed"),
                                               (KeyboardInterrupt(), "interrupted")])
def test_an_error_closes_the_job_and_propagates(tmp_path: Path, error: BaseException, status: str) -> None:
    store = Store(tmp_path / "store.duckdb")
    with pytest.raises(type(error)):
        with job_run(store, "crossfit", {}, 5) as job:
            job.progress(2)
            raise error
    row = closed_row(store, job.job_id)
    assert (row["status"], row["done"]) == (status, 2)
    assert row["message"] == ("disk full" if status == "failed" else "KeyboardInterrupt")


def test_a_message_the_block_set_survives_a_failure(tmp_path: Path) -> None:
    store = Store(tmp_path / "store.duckdb")
    with pytest.raises(OSError):
        with job_run(store, "enumerate", {}, 5) as job:
            job.end("finished", "3 calls, 0 errors")
            raise OSError("the store refused a batch")
    assert (closed_row(store, job.job_id)["status"], closed_row(store, job.job_id)["message"]) == \
        ("failed", "3 calls, 0 errors")
