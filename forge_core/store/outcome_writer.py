"""Batched outcome writes from a background thread, so host calls never wait on the store.

An enumeration finishes hundreds of calls a second against a fast host. Opening the DuckDB file
and committing once per outcome on the event loop would stall every call in flight, so finished
outcomes go into a queue (a non-blocking put) and one writer thread commits them in batches:
every `flush_rows` rows or `flush_seconds` after the oldest unwritten row, whichever comes first,
and on `close` (normal end, cancel, Ctrl-C).

Guarantees:
- Each batch is one transaction: a kill leaves every row of it or none (never a partial row).
- Rows are keyed (host, benchmark, example_id, arm|probe) and written INSERT OR REPLACE, and a
  batch keeps the last row of a key: never a duplicate.
- Durability bound: a row waits at most `flush_seconds` plus the commit before it, then its
  own commit: a kill -9 loses at most the outcomes finished in about the last second (with the
  defaults and commits of well under 0.25 s); a rerun plans exactly those calls again.
- Each commit is a short transaction on a connection opened for it, so other processes (the
  dashboard) read between batches.

Opening the file is most of a batch's cost (DuckDB starts a database instance: tens of CPU
milliseconds, whatever the batch's size), so a batch is committed early only once `flush_rows`
rows wait (well past what a fast host finishes in `flush_seconds`), and a running job's progress
rides on the batches: given `progress`, each batch's transaction also stores the job's counts and
reads its status, which goes to `on_job_status` (the dashboard's cancel request), instead of a
connection of their own.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Self

from forge_core.records import ArmOutcome, ProbeOutcome
from forge_core.store.connection import FileAttacher
from forge_core.store.database import JobCounts, Store, row_values

log = logging.getLogger(__name__)

FLUSH_ROWS = 4096  # commit early once this many rows wait (8,000 calls a second at FLUSH_SECONDS)
FLUSH_SECONDS = 0.5  # otherwise commit what waits this often


class OutcomeWriter:
    """Commits arm and probe outcomes in batches from one background thread.

    Use as a context manager (or call `close`): leaving writes every queued row. `put` never
    blocks and never wakes the thread for a single row (the thread wakes on a timer, or when a
    batch is full). A failed commit is raised from the next `put` or from `close`; rows of later
    batches are not written after a failure, so a rerun redoes them.

    `progress` (called on the writer thread) gives the job's counts to store with each batch, and
    `on_job_status` receives the job's status each batch reads (on the writer thread: keep it to
    setting a flag).
    """

    def __init__(self, store: Store, flush_rows: int | None = None, flush_seconds: float | None = None,
                 progress: Callable[[], JobCounts] | None = None,
                 on_job_status: Callable[[str], None] | None = None) -> None:
        """`flush_rows` and `flush_seconds` default to `FLUSH_ROWS` and `FLUSH_SECONDS`."""
        self.store = store
        self.flush_rows = FLUSH_ROWS if flush_rows is None else flush_rows
        self.flush_seconds = FLUSH_SECONDS if flush_seconds is None else flush_seconds
        self.progress = progress
        self.on_job_status = on_job_status
        self.rows_written = 0
        self.batches_written = 0
        self._pending: list[ArmOutcome | ProbeOutcome] = []
        self._pending_lock = threading.Lock()
        self._wake = threading.Event()
        self._closing = False
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="forge-outcome-writer", daemon=True)
        self._thread.start()

    def put(self, outcome: ArmOutcome | ProbeOutcome) -> None:
        """Queue one finished outcome for the next batch (returns at once)."""
        if self._error is not None:
            raise self._error
        with self._pending_lock:
            self._pending.append(outcome)
            full = len(self._pending) >= self.flush_rows
        if full:
            self._wake.set()

    def close(self) -> None:
        """Write every queued row, stop the thread, and raise a commit failure if there was one."""
        self._closing = True
        self._wake.set()
        self._thread.join()
        if self._error is not None:
            raise self._error

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    # ------------------------------------------------------------ the writer thread

    def _run(self) -> None:
        attacher = FileAttacher()  # the thread's own database, which attaches the store file for each batch
        try:
            while True:
                self._wake.wait(self.flush_seconds)
                self._wake.clear()
                closing = self._closing  # read before taking the batch: rows put before close are in it
                with self._pending_lock:
                    batch, self._pending = self._pending, []
                if batch and self._error is None:
                    self._write(batch, attacher)
                if closing:
                    return
        finally:
            attacher.close()

    def _write(self, batch: list, attacher: FileAttacher) -> None:
        arms = _last_per_key(o for o in batch if isinstance(o, ArmOutcome))
        probes = _last_per_key(o for o in batch if isinstance(o, ProbeOutcome))
        try:
            status = self.store.write_outcomes(arms, probes, self.progress() if self.progress else None, attacher)
        except BaseException as error:  # surfaced to the caller by put/close
            log.info("outcome writer: a batch of %d rows was not written (a rerun redoes them): %s", len(batch), error)
            self._error = error
            return
        self.rows_written += len(arms) + len(probes)
        self.batches_written += 1
        if status is not None and self.on_job_status is not None:
            self.on_job_status(status)


def _last_per_key(outcomes) -> list:
    """The outcomes with one row per primary key (the last one wins, as a later write would)."""
    by_key = {row_values(outcome)[:4]: outcome for outcome in outcomes}
    return list(by_key.values())
