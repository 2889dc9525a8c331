"""One lifecycle for every job that keeps a row in the jobs table (enumeration, judging, training,
crossfit): `with job_run(store, kind, params, total) as job:` opens the row as running and closes
it exactly once, whatever ends the block: "finished" (or what the block set with `job.end`) on a
normal exit, "failed" on an exception, "interrupted" on Ctrl-C or a signal turned into one."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from forge_core.store.database import JobCounts, Store


@dataclass
class JobRun:
    """An open job row: report progress with `progress`, set how it ends with `end`."""

    store: Store
    job_id: str
    status: str = "finished"
    message: str = ""
    done: int | None = None  # final counts given to `end`, written when the row closes
    errors: int = 0

    def progress(self, done: int, errors: int = 0, message: str = "") -> None:
        """Store the progress so far (the dashboard reads it while the job runs)."""
        self.store.update_job(self.job_id, done, errors, message)

    def end(self, status: str, message: str = "", done: int | None = None, errors: int | None = None) -> None:
        """How the job ends if the block exits normally (say "cancelled"), its final message and,
        if given, its final counts: recorded here, written when the block closes the row."""
        self.status, self.message = status, message
        if done is not None:
            self.done = done
        if errors is not None:
            self.errors = errors


def first_line(error: BaseException) -> str:
    """The first line of an error's message, else its type's name: a job row's message."""
    text = str(error)
    return text.splitlines()[0] if text else type(error).__name__


@contextmanager
def job_run(store: Store, kind: str, params: dict[str, Any], total: int,
            job_id: str | None = None) -> Iterator[JobRun]:
    """Open a jobs-table row for the block and close it when the block ends (see the module's
    docstring). A message the block set with `end` is kept on failure (say its counts so far);
    else the error's first line is the message. Counts given to `end` are written on closing."""
    job = JobRun(store, job_id or f"{kind}-{uuid.uuid4().hex[:10]}")
    store.create_job(job.job_id, kind, params, total, os.getpid())
    try:
        yield job
    except BaseException as error:
        job.status = "failed" if isinstance(error, Exception) else "interrupted"
        job.message = job.message or first_line(error)
        raise
    finally:
        final = JobCounts(job.job_id, job.done, job.errors) if job.done is not None else None
        store.finish_job(job.job_id, job.status, job.message, final)
