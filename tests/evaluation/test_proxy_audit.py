"""The proxy audit: a proxy equal to gold costs nothing, an inverted one is flagged."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from forge_core.errors import InvalidInput, MissingStep
from forge_core.evaluation.audit_request import RewardAuditRequest
from forge_core.evaluation.proxy_audit import run_reward_audit
from forge_core.records import RewardOutcome
from forge_core.rewards.judge import rating_key
from forge_core.store import Store, utc_now

from support.stores import copy_store


def write_judge_rewards(store: Store, host: str, judge_config_hash: str, transform) -> str:
    """Judge rows whose reward is `transform(gold F1)` for every stored outcome of the host, by a
    judge of configuration hash `judge_config_hash`; returns their reward key."""
    reward_key = rating_key("judge", judge_config_hash, "prompt")
    store.write_reward_outcome(*(RewardOutcome(
        host, row.benchmark, row.example_id, row.arm, reward_key, "judge", "double", judge_config_hash, "prompt",
        float(transform(row.f1)), "", 0, 0, 0.0, None, utc_now()) for row in store.arm_outcomes(host).itertuples()))
    return reward_key


@pytest.fixture()
def store(outcome_store, tmp_path) -> Store:
    return copy_store(outcome_store, tmp_path)


def test_a_proxy_equal_to_gold_has_rank_correlation_one_and_no_regret(store) -> None:
    # 15 epochs: the six-arm default Stage 1 after 3 stayed below the best fixed arm (0.15 vs 0.41)
    same = write_judge_rewards(store, "synthetic-host", "same", lambda f1: f1)
    report = run_reward_audit(store, RewardAuditRequest(host="synthetic-host", reward="judge", folds=2, max_epochs=15))
    assert report["judge_key"] == same and report["queries"] == 240
    assert all(row["spearman"] == pytest.approx(1.0) for row in report["arms"].values())
    assert report["best_arm_match"]["share"] == 1.0
    fixed_best = max(row["macro_gold_utility"] for row in report["arms"].values())
    assert fixed_best < report["routers"]["forge_lite"]["gold_trained"]["macro_utility"] < 1
    lite = report["routers"]["forge_lite"]
    assert lite["regret_vs_gold"] == 0.0 and lite["ci_regret_vs_gold"] == [0.0, 0.0]
    assert report["verdict"].startswith("good enough") and report["good_enough"] is True


def test_an_inverted_proxy_is_flagged(store) -> None:
    write_judge_rewards(store, "synthetic-host", "inverted", lambda f1: 1 - f1)
    report = run_reward_audit(store, RewardAuditRequest(host="synthetic-host", reward="judge", folds=2, max_epochs=15))
    assert all(row["spearman"] == pytest.approx(-1.0) for row in report["arms"].values())
    assert report["best_arm_match"]["share"] < 0.2
    lite = report["routers"]["forge_lite"]
    assert lite["ci_regret_vs_gold"][1] < 0 and report["verdict"].startswith("not good enough")
    assert report["good_enough"] is False
    assert np.isfinite(lite["proxy_trained"]["macro_f1"])


@pytest.mark.e2e  # end to end: a whole audit grid trained (about 30 s)
def test_the_grid_of_a_proxy_equal_to_gold_matches_gold_gold_and_an_inverted_one_falls_below(store) -> None:
    write_judge_rewards(store, "synthetic-host", "same", lambda f1: f1)
    request = RewardAuditRequest(host="synthetic-host", reward="judge", folds=2, max_epochs=3, grid=True,
                                 stage2_steps=20)
    grid = run_reward_audit(store, request)["grid"]["forge_lite"]
    assert list(grid) == ["gold/gold", "gold/judge", "judge/judge"]
    assert all(row["utility_vs_gold_gold"] == 0.0 and row["ci_f1_vs_gold_gold"] == [0.0, 0.0]
               for row in grid.values())
    inverted_key = write_judge_rewards(store, "synthetic-host", "inverted", lambda f1: 1 - f1)
    inverted = run_reward_audit(store, dataclasses.replace(request, judge_key=inverted_key))["grid"]["forge_lite"]
    assert inverted["gold/gold"]["macro_f1"] == pytest.approx(grid["gold/gold"]["macro_f1"])
    assert inverted["judge/judge"]["ci_f1_vs_gold_gold"][1] < 0
    # Stage 2 on the inverted proxy from the gold Stage-1 router: only its Stage-2 reward differs from
    # gold/gold, so it falls below gold/gold only if Stage 2 really trains on the proxy
    assert inverted["gold/judge"]["ci_f1_vs_gold_gold"][1] < 0
    assert inverted["gold/judge"]["ci_utility_vs_gold_gold"][1] < 0


def test_the_audit_refuses_what_it_cannot_do(store) -> None:
    with pytest.raises(InvalidInput):
        RewardAuditRequest(reward="gold")
    with pytest.raises(InvalidInput):
        RewardAuditRequest(routers=("nobody",))
    with pytest.raises(InvalidInput, match="no-crossfit"):
        RewardAuditRequest(routers=(), grid=True)
    with pytest.raises(MissingStep):
        RewardAuditRequest(host="synthetic-host", reward="judge").check(store)
