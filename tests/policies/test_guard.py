"""The guard's threshold (exact numbers): the lowest margin at which, and above which, the corrected
share of losing deviations (losses + 1) / (deviations + 1) stays within alpha; and why a query was
held at the fallback or deviated."""

from __future__ import annotations

import math

import numpy as np

from forge_core.policies.arm_mix import parse_mix
from forge_core.policies.guard import guard_for_question
from forge_core.routing.guard import Guard, risk_threshold


def test_the_threshold_stops_before_the_first_margin_that_breaks_the_risk() -> None:
    margin = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1])
    loses = np.array([0, 0, 0, 0, 0, 1, 0, 1, 1], dtype=bool)
    # (losses + 1) / (deviations + 1) from the top: 1/2, 1/3, 1/4, 1/5 (0.6), 1/6 (0.5), 2/7 (0.4), 2/8 (0.3),
    # 3/9, 4/10; at alpha 0.2 the first 3 cannot pass even without a loss (1/4 > 0.2) and are passed over
    assert risk_threshold(margin, loses, alpha=0.2) == 0.5  # 1/5 and 1/6 pass, then 2/7 > 0.2
    assert risk_threshold(margin, loses, alpha=0.3) == 0.3  # 2/7 and 2/8 pass, 3/9 fails
    assert risk_threshold(margin, loses, alpha=0.25) == 0.5  # 2/8 would pass, but 2/7 fails above it: step-down
    early = loses.copy()
    early[1] = True  # a loss among the highest margins counts once there are enough deviations: 2/5 > 0.2
    assert math.isinf(risk_threshold(margin, early, alpha=0.2))
    assert math.isinf(risk_threshold(margin[:3], loses[:3], alpha=0.2))  # 1/4 at best: too few deviations
    assert math.isinf(risk_threshold(np.array([]), np.array([], dtype=bool), alpha=0.2))


def test_tied_margins_deviate_together() -> None:
    margin = np.array([0.5, 0.5, 0.5, 0.5, 0.5, 0.2])
    assert risk_threshold(margin, np.array([0, 0, 0, 0, 1, 0], dtype=bool), alpha=0.4) == 0.2
    assert math.isinf(risk_threshold(margin, np.array([0, 0, 0, 1, 1, 0], dtype=bool), alpha=0.4))  # 3/6 at 0.5


def test_the_guard_says_why() -> None:
    guard = Guard("summary:no_think", 0.3, 0.2, 40, 5)
    assert guard.deviates(np.array([1, 2, 2]), np.array([0.9, 0.9, 0.1]), fallback=1).tolist() == [False, True, False]
    assert guard.why("raw:no_think", 0.1).startswith("held at the fallback summary:no_think: margin +0.100")
    assert guard.why("raw:no_think", 0.3).startswith("deviated to raw:no_think: margin +0.300")
    assert guard.why("summary:no_think", 0.0) == "the router chose the fallback summary:no_think itself"
    never = Guard("summary:no_think", math.inf, 0.2, 3, 2)
    assert "the guard never deviates" in never.why("raw:no_think", 5.0)


def test_a_mix_fallback_names_its_mix_once_in_words() -> None:
    mix = "summary:no_think=0.69317573,raw:no_think=0.30682427"
    guard = Guard(mix, 0.3, 0.2, 40, 5, mix=mix).drawn("summary:no_think")  # the arm the mix drew for a question
    assert guard.summary().startswith("risk 20%, fallback the mix summary:no_think 69%, raw:no_think 31%, threshold")
    assert guard.why("raw:no_think", 0.1).startswith("held at the fallback summary:no_think (drawn from the mix): "
                                                     "margin +0.100")
    line = f"Guard ({guard.summary()}): {guard.why('raw:no_think', 0.1)}."  # as Live query shows it
    assert mix not in line and line.count("69%") == 1
    assert guard.to_json("raw:no_think", 0.1)["mix"] == mix  # machine-read: the exact mix


def test_a_mix_guard_falls_back_to_the_arm_its_mix_draws_for_each_question() -> None:
    mix = "summary:no_think=0.5,raw:no_think=0.5"
    guard = Guard(mix, 0.3, 0.2, 40, 5, mix=mix)
    questions = [f"Who wrote book {n}?" for n in range(40)]
    drawn = [guard_for_question(guard, question, 6).fallback_arm for question in questions]
    assert drawn == [parse_mix(mix, 6).arm_for(question)[0].name for question in questions]  # as `forge serve` draws
    assert set(drawn) == {"summary:no_think", "raw:no_think"}
    plain = Guard("summary:no_think", 0.3, 0.2, 40, 5)
    assert guard_for_question(plain, questions[0], 6) is plain
