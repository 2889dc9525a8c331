"""Stage 2: exact advantages, losses, beta schedule, sampler coverage, tiny deterministic runs."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from forge_core.routing.routers import Router, build_router
from forge_core.training.settings import Stage2Config
from forge_core.training.stage2 import (
    clipped_policy_loss,
    dpo_loss,
    entropy,
    forced_draw_weights,
    group_advantages,
    kl_to_reference,
    rloo_advantages,
    sample_actions,
    table_reward_fn,
    train_stage2,
    update_beta,
)

N, D, K = 64, 16, 6


@pytest.fixture(autouse=True)
def one_thread() -> None:
    torch.set_num_threads(1)


def _states_equal(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[key], b[key]) for key in a)


# --- advantages ---------------------------------------------------------------------------


def test_group_advantages_hand_values_with_sample_std() -> None:
    rewards = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    std = math.sqrt((2.25 + 0.25 + 0.25 + 2.25) / 3)  # N - 1, as torch.std and TRL
    expected = torch.tensor([[-1.5, -0.5, 0.5, 1.5]]) / (std + 1e-4)
    torch.testing.assert_close(group_advantages(rewards), expected, rtol=0, atol=1e-7)
    assert torch.equal(group_advantages(rewards, scale=False), torch.tensor([[-1.5, -0.5, 0.5, 1.5]]))


def test_zero_variance_groups_get_exact_zeros() -> None:
    rewards = torch.tensor([[0.1, 0.1, 0.1, 0.1], [0.7] * 4, [0.0, 1.0, 0.0, 1.0]])
    unscaled = group_advantages(rewards, scale=False)
    for advantages in (group_advantages(rewards), unscaled, rloo_advantages(rewards)):
        assert torch.equal(advantages[:2], torch.zeros(2, 4))
        assert torch.count_nonzero(advantages[2]) == 4


def test_rloo_advantages_hand_values() -> None:
    rewards = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    # r_i - mean of the other three: 1 - 3, 2 - 8/3, 3 - 7/3, 4 - 2
    torch.testing.assert_close(rloo_advantages(rewards), torch.tensor([[-2.0, -2 / 3, 2 / 3, 2.0]]))


# --- losses -------------------------------------------------------------------------------


def test_clipped_policy_loss_hand_values() -> None:
    logp_new = torch.log(torch.tensor([1.5, 1.5, 0.5, 0.5]))
    logp_old = torch.zeros(4)
    advantages = torch.tensor([1.0, -1.0, 1.0, -1.0])
    # min(r A, clip(r) A): 1.2 (clipped), -1.5, 0.5, -0.8 (clipped) -> loss -(-0.6) / 4
    loss = clipped_policy_loss(logp_new, logp_old, advantages, epsilon=0.2)
    assert float(loss) == pytest.approx(0.15, abs=1e-7)
    inside = clipped_policy_loss(torch.log(torch.tensor([1.1])), torch.zeros(1), torch.tensor([2.0]), 0.2)
    assert float(inside) == pytest.approx(-2.2, abs=1e-6)


def test_weighted_policy_loss_and_forced_draw_weights() -> None:
    logp_new = torch.log(torch.tensor([1.5, 1.5, 0.5, 0.5]))
    advantages = torch.tensor([1.0, -1.0, 1.0, -1.0])
    weights = torch.tensor([0.5, 1.0, 2.0, 0.0])
    # terms 1.2, -1.5, 0.5, -0.8 weighted: 0.6 - 1.5 + 1.0 + 0 = 0.1 -> loss -0.1 / 4
    loss = clipped_policy_loss(logp_new, torch.zeros(4), advantages, 0.2, weights)
    assert float(loss) == pytest.approx(-0.025, abs=1e-7)
    # 6 arms support-major: supports direct 0.1, summary 0.3, raw 0.6
    log_probs = torch.log(torch.tensor([[0.05, 0.05, 0.1, 0.2, 0.3, 0.3]]))
    torch.testing.assert_close(forced_draw_weights(log_probs, 5), torch.tensor([[0.1, 0.3, 0.6, 1.0, 1.0]]))
    assert torch.equal(forced_draw_weights(log_probs, 2), torch.ones(1, 2))  # G < 3: nothing forced


def test_kl_and_entropy_hand_values() -> None:
    policy = torch.log(torch.tensor([[0.5, 0.5], [0.25, 0.75]]))
    reference = torch.log(torch.tensor([[0.25, 0.75], [0.25, 0.75]]))
    assert float(kl_to_reference(policy, reference)) == pytest.approx(0.5 * math.log(4 / 3) / 2, rel=1e-6)
    assert float(kl_to_reference(reference, reference)) == 0.0
    expected_entropy = (math.log(2.0) - 0.25 * math.log(0.25) - 0.75 * math.log(0.75)) / 2
    assert float(entropy(policy)) == pytest.approx(expected_entropy, rel=1e-6)


def test_dpo_loss_hand_value_uses_best_and_worst_and_skips_tied_groups() -> None:
    logp = torch.log(torch.tensor([[0.5, 0.3, 0.2], [0.2, 0.3, 0.5]]))
    ref = torch.log(torch.full((2, 3), 1 / 3))
    actions = torch.tensor([[0, 1, 2, 0], [1, 1, 1, 1]])
    rewards = torch.tensor([[1.0, 0.2, 0.0, 1.0], [0.4, 0.4, 0.4, 0.4]])  # row 2 is tied
    # chosen arm 0, rejected arm 2: margin = ln(0.5 / 0.2) = ln 2.5
    expected = math.log(1.0 + 2.5 ** -0.1)  # -log sigmoid(0.1 ln 2.5)
    assert float(dpo_loss(logp, ref, actions, rewards, dpo_beta=0.1)) == pytest.approx(expected, rel=1e-6)
    assert float(dpo_loss(logp[1:], ref[1:], actions[1:], rewards[1:], dpo_beta=0.1)) == 0.0


@pytest.mark.parametrize(
    ("kl", "expected"),
    [(0.06, 0.075), (0.001, 0.05 / 1.5), (0.01, 0.05), (0.05, 0.05), (0.005, 0.05)],
)
def test_update_beta_up_down_unchanged(kl: float, expected: float) -> None:
    assert update_beta(0.05, kl, Stage2Config()) == pytest.approx(expected, rel=1e-15)


# --- sampler ------------------------------------------------------------------------------


def _peaked_policies(batch: int, n_arms: int, seed: int) -> torch.Tensor:
    """Random policies, many with a near-zero support form (log-prob about -40)."""
    generator = torch.Generator().manual_seed(seed)
    logits = 3 * torch.randn(batch, n_arms, generator=generator)
    logits[::2, : n_arms // 3] -= 40.0
    return torch.log_softmax(logits, dim=-1)


@pytest.mark.parametrize("n_arms", [3, 6, 12])
@pytest.mark.parametrize("group_size", [3, 4, 8])
def test_every_support_appears_in_every_group(n_arms: int, group_size: int) -> None:
    log_probs = _peaked_policies(500, n_arms, seed=n_arms)
    generator = torch.Generator().manual_seed(0)
    n_thinking = n_arms // 3
    for _ in range(20):
        actions = sample_actions(log_probs, group_size, generator=generator)
        assert actions.shape == (500, group_size)
        assert int(actions.min()) >= 0 and int(actions.max()) < n_arms
        supports = actions // n_thinking
        for support in range(3):
            assert bool((supports == support).any(dim=1).all())
        assert torch.equal(supports[:, :3], torch.tensor([0, 1, 2]).expand(500, 3))


def test_sampler_is_deterministic_for_a_seeded_generator() -> None:
    log_probs = _peaked_policies(32, 6, seed=1)
    first = sample_actions(log_probs, 8, generator=torch.Generator().manual_seed(7))
    second = sample_actions(log_probs, 8, generator=torch.Generator().manual_seed(7))
    other = sample_actions(log_probs, 8, generator=torch.Generator().manual_seed(8))
    assert torch.equal(first, second)
    assert not torch.equal(first, other)


def test_forced_draws_follow_the_thinking_conditional_and_free_draws_the_policy() -> None:
    # support 0 always thinks with mode 1; support 1 mode 0; support 2 is 50/50 but never free-drawn
    probs = torch.tensor([[0.0, 0.6, 0.4, 0.0, 0.0, 0.0]])
    conditional_only = torch.log(torch.tensor([[0.0, 0.6, 0.4, 0.0, 1e-30, 1e-30]]))
    generator = torch.Generator().manual_seed(0)
    actions = sample_actions(conditional_only.expand(4000, -1), 8, generator=generator)
    assert bool((actions[:, 0] == 1).all()) and bool((actions[:, 1] == 2).all())
    assert set(actions[:, 2].tolist()) == {4, 5}
    free = actions[:, 3:]
    frequencies = torch.bincount(free.flatten(), minlength=6).float() / free.numel()
    torch.testing.assert_close(frequencies, probs[0], rtol=0, atol=0.02)


def test_fewer_generations_than_supports_draw_from_the_policy() -> None:
    log_probs = torch.log(torch.tensor([[1.0, 1e-30, 1e-30]]))
    actions = sample_actions(log_probs, 2, generator=torch.Generator().manual_seed(0))
    assert torch.equal(actions, torch.tensor([[0, 0]]))


def test_table_reward_fn_looks_up_the_enumeration_table() -> None:
    utility = np.arange(12, dtype=np.float64).reshape(2, 6) / 10
    rewards = table_reward_fn(utility)(np.array([1, 0]), np.array([[0, 5], [3, 3]]))
    np.testing.assert_array_equal(rewards, [[0.6, 1.1], [0.3, 0.3]])


# --- tiny training runs ---------------------------------------------------------------------


def _setup(kind: str = "factorized") -> tuple[Router, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(N, D)).astype(np.float32)
    utility = np.round(rng.uniform(size=(N, K)), 1)  # rounded: some groups tie
    torch.manual_seed(0)
    return build_router(kind, D, K, hidden=32), x, utility


@pytest.mark.parametrize("loss_type", ["grpo", "dr_grpo", "rloo", "dpo"])
def test_tiny_run_changes_parameters_keeps_reference_and_reproduces(loss_type: str) -> None:
    router, x, utility = _setup()
    reference = copy.deepcopy(router)
    initial = copy.deepcopy(router.state_dict())
    config = Stage2Config(
        steps=20, batch_queries=8, lr=1e-3, loss_type=loss_type, log_every=5, beta_update_every=10
    )
    rows: list[dict[str, float]] = []
    result = train_stage2(router, reference, x, table_reward_fn(utility), config, on_log=rows.append)

    assert rows == result.logs and [row["step"] for row in rows] == [5, 10, 15, 20]
    assert set(rows[0]) == {"step", "reward_mean", "loss", "kl", "entropy", "tied_groups", "beta"}
    for key in initial:
        assert not torch.equal(result.state[key], initial[key]), key
    assert _states_equal(reference.state_dict(), initial)
    assert _states_equal(result.state, router.state_dict())

    rerun_router, _, _ = _setup()
    rerun = train_stage2(rerun_router, reference, x, table_reward_fn(utility), config)
    assert _states_equal(rerun.state, result.state)
    assert rerun.logs == result.logs and rerun.beta == result.beta


def test_beta_schedule_runs_inside_the_loop() -> None:
    router, x, utility = _setup()
    config = Stage2Config(steps=20, batch_queries=8, lr=1e-6, log_every=10, beta_update_every=10)
    result = train_stage2(router, copy.deepcopy(router), x, table_reward_fn(utility), config)
    # KL stays far below 0.005 at this learning rate: beta is divided at steps 10 and 20
    assert [row["beta"] for row in result.logs] == [0.05, 0.05 / 1.5]
    assert result.beta == 0.05 / 1.5 / 1.5
    assert all(row["kl"] < 0.005 for row in result.logs)


@pytest.mark.parametrize("kind", ["factorized", "flat"])
def test_stage2_raises_the_reward_of_a_clear_best_arm(kind: str) -> None:
    router, x, _ = _setup(kind)
    utility = np.zeros((N, K))
    utility[:, 3] = 1.0  # summary:cot is best everywhere
    config = Stage2Config(steps=60, batch_queries=16, lr=3e-3, beta=0.0, log_every=20)
    result = train_stage2(router, copy.deepcopy(router), x, table_reward_fn(utility), config)
    with torch.no_grad():
        best_prob = router.log_probs(torch.from_numpy(x)).exp()[:, 3].mean()
    assert result.logs[-1]["reward_mean"] > result.logs[0]["reward_mean"]
    assert float(best_prob) > 0.5


def test_dev_selection_keeps_the_best_logged_state() -> None:
    router, x, _ = _setup()
    initial = copy.deepcopy(router.state_dict())
    utility = np.zeros((N, K))
    utility[:, 3] = 1.0  # training pushes every query toward summary:cot
    config = Stage2Config(steps=60, batch_queries=16, lr=3e-3, beta=0.0, log_every=20)

    def prefers_the_start(candidate) -> float:  # a dev set that likes the policy least moved
        with torch.no_grad():
            return -float(candidate.log_probs(torch.from_numpy(x)).exp()[:, 3].mean())

    result = train_stage2(router, copy.deepcopy(router), x, table_reward_fn(utility), config,
                          dev_utility=prefers_the_start)
    assert result.selected_step == 0 and _states_equal(router.state_dict(), initial)
    assert [row["step"] for row in result.logs] == [20, 40, 60]
    assert result.logs[-1]["dev_utility"] < result.logs[0]["dev_utility"]

    router, x, _ = _setup()
    rewarded = train_stage2(router, copy.deepcopy(router), x, table_reward_fn(utility), config,
                            dev_utility=lambda candidate: -prefers_the_start(candidate))
    best_row = max(rewarded.logs, key=lambda row: row["dev_utility"])
    assert rewarded.selected_step == best_row["step"] > 0
    assert _states_equal(rewarded.state, router.state_dict())


def test_bad_inputs_are_refused() -> None:
    router, x, utility = _setup()
    with pytest.raises(ValueError, match="loss_type"):
        Stage2Config(loss_type="ppo")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="architecture"):
        flat = build_router("flat", D, K, hidden=32)
        train_stage2(router, flat, x, table_reward_fn(utility), Stage2Config(steps=1))
    with pytest.raises(ValueError, match="rewards of shape"):
        train_stage2(router, router, x, lambda q, a: np.zeros(3), Stage2Config(steps=1))
