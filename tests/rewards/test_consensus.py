"""The consensus reward: exact agreements, and the store path on synthetic outcomes."""

from __future__ import annotations

import pytest

from forge_core.arms import DIRECT_NO_THINK, alphabet, parse_arm
from forge_core.evidence.answering import extract_answer
from forge_core.records import ArmOutcome
from forge_core.rewards.consensus import agreement, consensus_rewards, query_consensus
from forge_core.store import Store, utc_now


def test_agreement_is_the_mean_token_f1_against_the_others() -> None:
    # "paris france" vs "paris": P=1/2, R=1 -> F1 2/3; vs "london": 0
    assert agreement("paris france", ["paris", "london"], is_fever=False) == pytest.approx((2 / 3 + 0) / 2)
    assert agreement("paris", [], is_fever=False) == 0.0


def test_fever_agreement_counts_equal_non_empty_labels() -> None:
    assert agreement("SUPPORTS", ["SUPPORTS", "REFUTES", ""], is_fever=True) == pytest.approx(1 / 3)
    assert agreement("", ["", ""], is_fever=True) == 0.0


def test_query_consensus_excludes_the_arm_itself_and_counts_samples() -> None:
    rewards = query_consensus({"a": "paris", "b": "paris", "c": "rome"}, ["paris"], is_fever=False)
    assert rewards == {"a": pytest.approx(2 / 3), "b": pytest.approx(2 / 3), "c": 0.0}


def test_a_sample_is_scored_as_the_direct_arm_first_line_or_label() -> None:
    direct = parse_arm(DIRECT_NO_THINK)  # the consensus reward scores self-consistency samples so
    assert extract_answer("Paris\nbecause ...", direct, is_fever=False) == "Paris"
    assert extract_answer("The claim is supported.", direct, is_fever=True) == "SUPPORTS"


def test_consensus_rewards_cover_complete_queries_only(tmp_path) -> None:
    store = Store(tmp_path / "store.duckdb")
    now = utc_now()
    arms = [arm.name for arm in alphabet(6)]

    def outcome(example_id: str, arm: str, extracted: str) -> ArmOutcome:
        return ArmOutcome("h", "popqa", example_id, arm, extracted, extracted, 0.0, 0.0, 10, 2, 0, 1.0, None, 1,
                          "x", now, now)

    store.write_arm_outcome(*(outcome("q1", arm, "paris" if i < 5 else "rome") for i, arm in enumerate(arms)))
    store.write_arm_outcome(*(outcome("q2", arm, "x") for arm in arms[:3]))  # incomplete: left out
    rows = consensus_rewards(store, "h", arms)
    assert set(rows["example_id"]) == {"q1"}
    by_arm = dict(zip(rows["arm"], rows["reward"]))
    assert by_arm[arms[0]] == pytest.approx(4 / 5)  # agrees with 4 of the 5 others
    assert by_arm[arms[5]] == 0.0
