"""The Pareto page's prefetch of the next slider step (`app.step_prefetch`): which weights it guesses,
and that only the newest request waits for its thread."""

from __future__ import annotations

import threading
import time

import pytest

from app import pareto_view, step_prefetch
from app.step_prefetch import give_way, next_weights, prefetch
from forge_core.evaluation.cached import CachedRequest
from forge_core.evaluation.settings import EvaluationSettings
from forge_core.routing.utility import CostWeights

TIMEOUT_S = 60


def test_the_guess_continues_the_last_move_within_the_sliders_range() -> None:
    assert next_weights(CostWeights(0.1, 0.2), None) == CostWeights(0.11, 0.2)  # before any move: lambda_in up
    assert next_weights(CostWeights(0.1, 0.2), CostWeights(0.1, 0.2)) == CostWeights(0.11, 0.2)
    assert next_weights(CostWeights(0.3, 0.2), CostWeights(0.31, 0.2)) == CostWeights(0.29, 0.2)  # down, rounded
    assert next_weights(CostWeights(0.5, 0.9), CostWeights(0.5, 0.4)) == CostWeights(0.5, 1.4)  # a jump, again
    assert next_weights(CostWeights(3.0, 0.2), CostWeights(2.99, 0.2)) is None  # past the slider's end
    assert next_weights(CostWeights(0.0, 0.2), CostWeights(0.01, 0.2)) is None


def test_a_request_not_started_is_dropped_for_a_newer_one() -> None:
    started, release, ran = threading.Event(), threading.Event(), []
    busy = prefetch(lambda: started.set() or release.wait(TIMEOUT_S))  # the thread, busy with a step
    assert started.wait(TIMEOUT_S)  # (after what an earlier test's page left it to do)
    older = prefetch(lambda: ran.append("older"))
    newer = prefetch(lambda: ran.append("newer"))
    release.set()
    busy.result(TIMEOUT_S), newer.result(TIMEOUT_S)
    assert older.cancelled() and ran == ["newer"]


def test_an_error_in_a_step_computed_ahead_is_logged_not_lost(caplog) -> None:
    def failing() -> None:
        raise ValueError("a bug")

    prefetch(failing).result(TIMEOUT_S)
    assert "a bug" in caplog.text


def test_the_pages_first_run_lets_the_browser_draw_before_the_next_step_is_computed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    delays: list[float] = []
    after_runs: list[threading.Thread | None] = []
    monkeypatch.setattr(pareto_view, "prefetch", lambda *parts, after_s=0.0, after_run=None:
                        delays.append(after_s) or after_runs.append(after_run))
    monkeypatch.setattr(pareto_view, "views_ready", lambda *names: True)
    request = CachedRequest(EvaluationSettings("a-host", weights=CostWeights(0.1, 0.2)))
    for previous in (None, CostWeights(0.09, 0.2)):  # the page's first run, then a step
        pareto_view.prefetch_next_step(None, 0, request, False, "policy", {}, previous, decide=False,
                                       budget_for=lambda weights: None, conditioned=())
    assert delays == [pareto_view.FIRST_DRAW_S, 0.0] and pareto_view.FIRST_DRAW_S > 0
    assert after_runs == [threading.current_thread()] * 2  # each after the run asking (here this thread) ends


def test_a_deferred_step_runs_unless_a_newer_request_comes_while_it_waits() -> None:
    ran = []
    prefetch(lambda: ran.append("deferred"), after_s=0.01).result(TIMEOUT_S)
    waiting = prefetch(lambda: ran.append("given way"), after_s=TIMEOUT_S)
    while not waiting.running():  # on the thread, in its wait, blocking the thread...
        time.sleep(0.01)
    prefetch(lambda: ran.append("newer")).result(TIMEOUT_S)  # ...until a newer request comes
    assert ran == ["deferred", "newer"]


def test_a_page_run_drops_the_step_waiting_to_be_computed() -> None:
    ran = []
    waiting = prefetch(lambda: ran.append("left behind"), after_s=TIMEOUT_S)
    while not waiting.running():  # on the thread, in its wait
        time.sleep(0.01)
    give_way()  # a page's run starts
    waiting.result(TIMEOUT_S)  # done at once, not after its wait
    prefetch(lambda: ran.append("asked again")).result(TIMEOUT_S)
    assert ran == ["asked again"]


def test_a_step_computing_stops_before_its_next_part_once_a_page_runs() -> None:
    ran, computing, page_ran = [], threading.Event(), threading.Event()

    def first_part() -> None:
        computing.set()
        page_ran.wait(TIMEOUT_S)
        ran.append("frames")

    task = prefetch(first_part, lambda: ran.append("decision"))
    computing.wait(TIMEOUT_S)
    give_way()  # while the first part computes
    page_ran.set()
    task.result(TIMEOUT_S)
    assert ran == ["frames"]


def test_a_step_starts_once_the_run_that_asked_for_it_has_ended(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's last messages go out before the step competes with them for the interpreter."""
    monkeypatch.setattr(step_prefetch, "RUN_END_WAIT_S", 2 * TIMEOUT_S)  # however slow the machine: the run's end
    release, alive_when_computed = threading.Event(), []
    run = threading.Thread(target=release.wait, args=(TIMEOUT_S,))
    run.start()
    step = prefetch(lambda: alive_when_computed.append(run.is_alive()), after_run=run)
    threading.Timer(0.05, release.set).start()  # the run ends a moment later
    step.result(TIMEOUT_S)
    assert alive_when_computed == [False]


def test_a_newer_step_does_not_wait_for_the_run_an_older_one_waits_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(step_prefetch, "RUN_END_WAIT_S", 2 * TIMEOUT_S)
    release, ran = threading.Event(), []
    run = threading.Thread(target=release.wait, args=(3 * TIMEOUT_S,))  # a run that goes on (a rerun queued)
    run.start()
    older = prefetch(lambda: ran.append("older"), after_run=run)
    while not (older.running() or older.done()):  # on the thread, waiting for the run to end...
        time.sleep(0.01)
    try:
        prefetch(lambda: ran.append("newer")).result(TIMEOUT_S)  # ...until a newer request comes
    finally:
        release.set()
    assert ran == ["newer"]
