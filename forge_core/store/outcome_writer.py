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
"""

from __future__ import annotations

import logging
import threading
from types import TracebackType
from typing import Self

from forge_core.records import ArmOutcome, ProbeOutcome
from forge_core.store.database import Store, row_values

log = logging.getLogger(__name__)

FLUSH_ROWS = 512  # commit early once this many rows wait
FLUSH_SECONDS = 0.5  # otherwise commit what waits this often


class OutcomeWriter:
    """Commits arm and probe outcomes in batches from one background thread.

    Use as a context manager (or call `close`): leaving writes every queued row. `put` never
    blocks and never wakes the thread for a single row (the thread wakes on a timer, or when a
    batch is full). A failed commit is raised from the next `put` or from `close`; rows of later
    batches are not written after a failure, so a rerun redoes them.
    """

    def __init__(self, store: Store, flush_rows: int = FLUSH_ROWS, flush_seconds: float = FLUSH_SECONDS) -> None:
        self.store = store
        self.flush_rows = flush_rows
        self.flush_seconds = flush_seconds
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
        while True:
            self._wake.wait(self.flush_seconds)
            self._wake.clear()
            closing = self._closing  # read before taking the batch: rows put before close are in it
            with self._pending_lock:
                batch, self._pending = self._pending, []
            if batch and self._error is None:
                self._write(batch)
            if closing:
                return

    def _write(self, batch: list) -> None:
        arms = _last_per_key(o for o in batch if isinstance(o, ArmOutcome))
        probes = _last_per_key(o for o in batch if isinstance(o, ProbeOutcome))
        try:
            self.store.write_outcomes(arms, probes)
        except BaseException as error:  # surfaced to the caller by put/close
            log.info("outcome writer: a batch of %d rows was not written (a rerun redoes them): %s", len(batch), error)
            self._error = error
            return
        self.rows_written += len(arms) + len(probes)
        self.batches_written += 1


def _last_per_key(outcomes) -> list:
    """The outcomes with one row per primary key (the last one wins, as a later write would)."""
    by_key = {row_values(outcome)[:4]: outcome for outcome in outcomes}
    return list(by_key.values())
