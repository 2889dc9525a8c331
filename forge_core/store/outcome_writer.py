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
- Durability bound: a kill -9 loses at most the outcomes finished in the last `flush_seconds`
  plus the duration of the batch being committed (about a second with the defaults); a rerun
  plans exactly those calls again.
- Each commit is a short transaction on a connection opened for it, so other processes (the
  dashboard) read between batches.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
import time
from types import TracebackType
from typing import Self

from forge_core.records import ArmOutcome, ProbeOutcome
from forge_core.store.database import Store

log = logging.getLogger(__name__)

FLUSH_ROWS = 512  # commit once this many rows wait
FLUSH_SECONDS = 0.5  # commit at the latest this long after the oldest waiting row finished
_CLOSE = object()  # the sentinel that asks the thread to write what is left and stop


class OutcomeWriter:
    """Commits arm and probe outcomes in batches from one background thread.

    Use as a context manager (or call `close`): leaving writes every queued row. `put` never
    blocks. A failed commit is raised from the next `put` or from `close`; rows of later batches
    are not written after a failure, so a rerun redoes them.
    """

    def __init__(self, store: Store, flush_rows: int = FLUSH_ROWS, flush_seconds: float = FLUSH_SECONDS) -> None:
        self.store = store
        self.flush_rows = flush_rows
        self.flush_seconds = flush_seconds
        self.rows_written = 0
        self.batches_written = 0
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="forge-outcome-writer", daemon=True)
        self._thread.start()

    def put(self, outcome: ArmOutcome | ProbeOutcome) -> None:
        """Queue one finished outcome for the next batch (returns at once)."""
        if self._error is not None:
            raise self._error
        self._queue.put(outcome)

    def close(self) -> None:
        """Write every queued row, stop the thread, and raise a commit failure if there was one."""
        if self._thread.is_alive():
            self._queue.put(_CLOSE)
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
        closing = False
        while not closing:
            batch, closing = self._next_batch()
            if batch and self._error is None:
                self._write(batch)

    def _next_batch(self) -> tuple[list, bool]:
        """Rows until the batch is full, its oldest row has waited `flush_seconds`, or close."""
        first = self._queue.get()
        if first is _CLOSE:
            return [], True
        batch = [first]
        deadline = time.monotonic() + self.flush_seconds
        while len(batch) < self.flush_rows:
            try:
                item = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if item is _CLOSE:
                return batch, True
            batch.append(item)
        return batch, False

    def _write(self, batch: list) -> None:
        arms = _last_per_key(o for o in batch if isinstance(o, ArmOutcome))
        probes = _last_per_key(o for o in batch if isinstance(o, ProbeOutcome))
        try:
            self.store.write_outcomes(arms, probes)
        except BaseException as error:  # surfaced to the caller by put/close
            log.error("outcome writer: a batch of %d rows was not written: %s", len(batch), error)
            self._error = error
            return
        self.rows_written += len(arms) + len(probes)
        self.batches_written += 1


def _last_per_key(outcomes) -> list:
    """The outcomes with one row per primary key (the last one wins, as a later write would)."""
    by_key = {dataclasses.astuple(outcome)[:4]: outcome for outcome in outcomes}
    return list(by_key.values())
