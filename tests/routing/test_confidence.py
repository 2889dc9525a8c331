"""A router's confidence in utility units: implied utilities, the margin over the runner-up, an
untrained thinking twin left out; the held-out reliability table of margins."""

from __future__ import annotations

import math

import numpy as np
import pytest

from forge_core.routing.confidence import confidence, margins, reliability_table, share_right

ARMS = ("direct:no_think", "direct:cot", "summary:no_think", "summary:cot", "raw:no_think", "raw:cot")


def boltzmann(utility: dict[str, float]) -> dict[str, float]:
    total = sum(math.exp(u) for u in utility.values())
    return {arm: math.exp(u) / total for arm, u in utility.items()}


def test_log_probability_differences_recover_utility_differences() -> None:
    utility = {"direct:no_think": 0.1, "direct:cot": 0.05, "summary:no_think": 0.42, "summary:cot": 0.3,
               "raw:no_think": 0.4, "raw:cot": 0.2}
    result = confidence(boltzmann(utility), "summary:no_think")
    for arm, value in utility.items():
        assert result.implied_utility[arm] == pytest.approx(value - 0.42)
    assert result.runner_up == "raw:no_think" and result.margin == pytest.approx(0.02)
    assert result.untrained_twins == () and result.to_json()["margin_utility"] == pytest.approx(0.02)


def test_an_untrained_thinking_twin_is_not_the_runner_up() -> None:
    # a uniform thinking head: each cot arm carries its no_think twin's probability exactly
    probabilities = {"direct:no_think": 0.1, "direct:cot": 0.1, "summary:no_think": 0.25, "summary:cot": 0.25,
                     "raw:no_think": 0.15, "raw:cot": 0.15}
    result = confidence(probabilities, "summary:no_think")
    assert result.untrained_twins == ("summary:cot",)
    assert result.runner_up in ("raw:no_think", "raw:cot")
    assert result.margin == pytest.approx(math.log(0.25 / 0.15)) and result.margin > 0  # not a +0.000 "tie"
    chosen, runner_up, margin = margins(np.array([list(probabilities.values())]), ARMS)
    assert (ARMS[chosen[0]], ARMS[runner_up[0]]) == ("summary:no_think", "raw:no_think")
    assert margin[0] == pytest.approx(result.margin)


def test_reliability_table_bins_margins_and_reads_the_share_right() -> None:
    rng = np.random.default_rng(0)
    margin = rng.uniform(0, 1, 200)
    realized = np.where(margin > 0.5, 0.1, -0.1)  # large margins were right, small ones wrong
    table = reliability_table(margin, realized)
    assert len(table) == 10 and table["queries"].sum() == 200
    assert list(table["share_right"][:4]) == [0.0] * 4 and list(table["share_right"][-4:]) == [1.0] * 4
    assert (table["low"].diff().dropna() > 0).all()
    assert share_right(table, 0.9) == 1.0 and share_right(table, 0.05) == 0.0
    assert share_right(table, 5.0) == 1.0  # beyond every bin: the nearest
    tied = reliability_table(np.zeros(30), np.zeros(30))  # every margin equal: one bin, ties are right
    assert len(tied) == 1 and tied["share_right"].iloc[0] == 1.0
    assert share_right(reliability_table(np.array([]), np.array([])), 0.1) is None
