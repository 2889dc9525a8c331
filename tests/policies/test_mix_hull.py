"""The cost-matched mix of fixed arms: its hull, the best mix at a token target, a policy's gap to it."""

from __future__ import annotations

import numpy as np
import pytest

from forge_core.policies.mix_hull import ArmOutcomes, best_mix, hull_gap, mix_hull, per_benchmark_hulls

# Three arms on four queries of one benchmark: cheap (100 tokens, F1 0.2), middle (200, 0.25: below the
# chord from cheap to dear, 0.35 there), dear (300, 0.5), and wasteful (400, 0.45: past the best F1).
ARMS = ArmOutcomes(
    names=("cheap", "middle", "dear", "wasteful"),
    f1=np.array([[0.0, 0.4, 0.2, 0.2], [0.25] * 4, [0.5, 0.5, 1.0, 0.0], [0.45] * 4]),
    tokens=np.array([[100.0] * 4, [200.0] * 4, [300.0] * 4, [400.0] * 4]),
    benchmarks=np.array(["b"] * 4),
)


def test_the_hull_leaves_out_an_arm_below_the_chord_and_one_past_the_best() -> None:
    assert mix_hull(ARMS) == [{"arm": "cheap", "tokens": 100.0, "f1": pytest.approx(0.2)},
                              {"arm": "dear", "tokens": 300.0, "f1": pytest.approx(0.5)}]


def test_the_best_mix_spends_the_target_in_the_hull_and_one_arm_outside_it() -> None:
    mix = best_mix(ARMS, 150.0)
    assert mix.arms == ("cheap", "dear") and mix.shares == pytest.approx((0.75, 0.25))
    assert (mix.tokens, mix.f1) == pytest.approx((150.0, 0.275))
    assert best_mix(ARMS, 100.0).arms == ("cheap",)  # at a vertex: that arm alone
    beyond = best_mix(ARMS, 500.0)  # past the best F1: that arm, spending less than the target
    assert (beyond.arms, beyond.tokens) == (("dear",), 300.0)
    assert best_mix(ARMS, 99.0) is None  # no mix spends less than the cheapest arm


def test_the_gap_pairs_each_query_with_the_mix() -> None:
    dear = hull_gap(ARMS, ARMS.f1[2], ARMS.tokens[2])
    assert dear["difference"] == 0.0 and dear["ci"] == [0.0, 0.0]  # a hull arm is its own reference, query by query
    assert dear["verdict"] == "not decidably different"
    middle = hull_gap(ARMS, ARMS.f1[1], ARMS.tokens[1])
    assert middle["mix"]["arms"] == ["cheap", "dear"] and middle["mix"]["shares"] == pytest.approx([0.5, 0.5])
    assert middle["difference"] == pytest.approx(-0.1)
    assert middle["ci"][0] <= -0.1 <= middle["ci"][1]
    assert hull_gap(ARMS, ARMS.f1[0], ARMS.tokens[0] - 1) is None  # cheaper than every arm: no reference


def test_each_benchmark_has_its_own_hull() -> None:
    on_b = ARMS.f1.copy()
    on_b[1] = 0.45  # above the chord from cheap to dear on b
    two = ArmOutcomes(ARMS.names, np.hstack([ARMS.f1, on_b]), np.hstack([ARMS.tokens] * 2),
                      np.array(["a"] * 4 + ["b"] * 4))
    hulls = per_benchmark_hulls(two)
    assert [v["arm"] for v in hulls["a"]] == ["cheap", "dear"]
    assert [v["arm"] for v in hulls["b"]] == ["cheap", "middle", "dear"]
