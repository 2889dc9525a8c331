"""The Pareto page's next slider step, computed while the browser draws this one.

A step's own work is scoring every policy and deciding at new weights (about 0.15 s of Python on a
2-core machine); then the browser draws the step (about 0.1 s) while the server is idle. So after
each step the page asks for the step that would follow if the sliders keep
moving as they last moved (`next_weights`), and one background thread computes it through the
page's own cached functions: when the step comes, its results are there, or being made (Streamlit's
caches lock per key: the step waits for them rather than computing them twice). Only the newest
request waits for the thread; one it has not started is dropped when a newer one comes, or when any
page's run starts (`give_way`, called by the navigation). The thread starts on a step once the run
that asked for it has ended: the two share one interpreter, and a step computed meanwhile delayed the
run's last messages by a tenth of a second. After the page's first run the next step waits a moment
longer (`pareto_view.FIRST_DRAW_S`): it loads the routing stack, seconds of CPU that slowed the
browser's drawing of the page when started at once, and of the next page when the user moved on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from app.weights import WEIGHT_MAX, WEIGHT_STEP
from forge_core.errors import ForgeError
from forge_core.routing.utility import CostWeights

log = logging.getLogger(__name__)

# One thread: the next step competes only with the current one's drawing (for a core). Not a daemon (an
# executor's threads never are): a process that exits waits for it rather than stopping it inside
# torch or DuckDB, which aborts the process.
_worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="forge-next-step")
_waiting: Future | None = None
_superseded = threading.Event()  # set when a newer request comes: the newest request's own event
_lock = threading.Lock()
RUN_END_WAIT_S = 1.0  # the longest a step waits for the run that asked for it to end
POLL_S = 0.005  # how often that wait looks whether the run has ended


def next_weights(current: CostWeights, previous: CostWeights | None) -> CostWeights | None:
    """The weights of the step after `current` if the sliders move again as they moved from `previous`
    (before any move, or when they did not move: lambda_in one slider step up); None when that leaves
    the sliders' range."""
    if previous is None or previous == current:
        move_in, move_out = WEIGHT_STEP, 0.0
    else:
        move_in, move_out = current.lambda_in - previous.lambda_in, current.lambda_out - previous.lambda_out
    upcoming = (round(current.lambda_in + move_in, 2), round(current.lambda_out + move_out, 2))
    if not all(0.0 <= value <= WEIGHT_MAX for value in upcoming):
        return None
    return CostWeights(*upcoming)


def prefetch(*parts: Callable[[], object], after_s: float = 0.0, after_run: threading.Thread | None = None) -> Future:
    """Run the `parts` of a next step in order on the prefetch thread once it is free, once the thread
    `after_run` (the script run asking) has ended, and `after_s` seconds later; a task still waiting there
    gives way to a newer one (only the newest next step is worth computing), and one computing stops
    before its next part. What a part cannot do for a user's reason (a `ForgeError`) the step itself will
    say; any other error is logged. Returns the task's future."""
    global _waiting, _superseded
    with _lock:
        _stop_current()
        _superseded = threading.Event()
        _waiting = _worker.submit(_logged, parts, after_s, after_run, _superseded)
        return _waiting


def give_way() -> None:
    """Drop the task waiting on the prefetch thread, or still in its `after_s`, and stop one computing
    before its next part: a page run is starting, so the step it was computed for may never come, and it
    would compete with that page's drawing (the Pareto page asks again at the end of its run)."""
    with _lock:
        _stop_current()


def _stop_current() -> None:
    """Under `_lock`: drop the current task if it has not started, else stop it before its next part."""
    if _waiting is not None:
        _waiting.cancel()  # False, and harmless, when it has started or finished
    _superseded.set()


def _logged(parts: tuple[Callable[[], object], ...], after_s: float, after_run: threading.Thread | None,
            superseded: threading.Event) -> None:
    if not _ended(after_run, superseded) or superseded.wait(after_s):  # a newer request came meanwhile
        return
    try:
        for part in parts:
            if superseded.is_set():  # the rest is no longer wanted
                return
            part()
    except ForgeError:
        pass
    except Exception:
        log.exception("computing the next slider step ahead failed (the step will compute it itself)")


def _ended(run: threading.Thread | None, superseded: threading.Event) -> bool:
    """Wait until the thread `run` has ended (at most `RUN_END_WAIT_S`); False if `superseded` meanwhile."""
    deadline = time.monotonic() + RUN_END_WAIT_S
    while run is not None and run.is_alive() and time.monotonic() < deadline:
        if superseded.wait(POLL_S):
            return False
    return True
