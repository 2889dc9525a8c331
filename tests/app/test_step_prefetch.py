"""The Pareto page's prefetch of the next slider step (`app.step_prefetch`): which weights it guesses,
and that only the newest request waits for its thread."""

from __future__ import annotations

import threading

from app.step_prefetch import next_weights, prefetch
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
