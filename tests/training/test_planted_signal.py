"""Planted signal: on a synthetic outcome table whose best arm is a known function of a few
features (plus label noise on every utility), the routers must find the function.

The planted rule: the support of highest score among Direct (-feature 0), Summary (feature 1) and
Raw (feature 0 - feature 1 + 0.3), a known function of two of the four features (the other two are noise); CoT arms are
worse than their NoThink twin. The "oracle" is the planted rule itself (the best arm
in expectation); gains are measured on held-out rows, on their noisy utilities. A router or a
training loop that does not learn (broken gradients, wrong targets, wrong action order) fails.
Stage 2 runs once with the anchor off and a high learning rate (it can improve a poor Stage 1),
and with the default `Stage2Config` (KL anchor on, lr 1e-5), where it must keep a good parent's
utility, improve a poor one, and stay closer to the parent than the same run without the anchor.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from forge_core.routing.routers import Router
from forge_core.training.settings import Stage1Config, Stage2Config
from forge_core.training.stage2 import Stage2Result, table_reward_fn, train_stage2
from forge_core.training.trainer import FitRows, dev_utility_of, fit_stage1_router, fit_stage2_router

N_FEATURES, N_ARMS = 4, 6
SUPPORT_GAIN = 0.35  # utility of the planted support over the others
LABEL_NOISE = 0.1  # SD of the Gaussian noise on every (row, arm) utility


def planted_rule(x: np.ndarray) -> np.ndarray:
    """The planted best support per row: 0 (Direct), 1 (Summary) or 2 (Raw)."""
    scores = np.stack([-x[:, 0], x[:, 1], x[:, 0] - x[:, 1] + 0.3], axis=1)
    return scores.argmax(axis=1)


def planted_table(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Features [n, 4] and noisy utilities [n, 6] in action order (support-major, NoThink first)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, N_FEATURES)).astype(np.float32)
    support = np.repeat(np.arange(3), 2)  # action -> support
    cot = np.tile([0.0, 0.08], 3)  # CoT costs a little
    expected = 0.3 + SUPPORT_GAIN * (support[None, :] == planted_rule(x)[:, None]) - cot[None, :]
    return x, expected + rng.normal(0, LABEL_NOISE, size=expected.shape)


@pytest.fixture(scope="module")
def data() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    torch.set_num_threads(1)
    return {"train": planted_table(1000, 0), "dev": planted_table(200, 1), "test": planted_table(1000, 2)}


def _gains(router: torch.nn.Module, x: np.ndarray, u: np.ndarray) -> tuple[float, float]:
    """(router's, oracle's) utility gain over the best fixed arm on these rows."""
    best_fixed = u.mean(axis=0).max()
    oracle = u[np.arange(len(u)), 2 * planted_rule(x)].mean()  # the planted support's NoThink arm
    return dev_utility_of(router, x, u) - best_fixed, oracle - best_fixed


@pytest.fixture(scope="module")
def good_stage1(data) -> Router:
    """A Stage-1 router trained to convergence on the planted rule."""
    config = Stage1Config(lr=1e-3, max_epochs=40, warm_start_arms=6)  # the whole alphabet: every head trained
    return fit_stage1_router(FitRows(*data["train"], *data["dev"]), config)


def _default_stage2(parent: Router, data, **changes) -> tuple[Router, Stage2Result]:
    """Stage 2 from `parent` with the default config (KL anchor on, beta 0.05 adaptive, lr 1e-5)
    for 500 steps, but for `changes`, keeping the best dev state as `fit_stage2_router` does."""
    router = copy.deepcopy(parent)
    config = Stage2Config(steps=500, **changes)
    result = train_stage2(router, parent, data["train"][0], table_reward_fn(data["train"][1]), config,
                          dev_utility=lambda candidate: dev_utility_of(candidate, *data["dev"]))
    return router, result


def test_stage1_recovers_the_planted_rule(data, good_stage1) -> None:
    router_gain, oracle_gain = _gains(good_stage1, *data["test"])
    assert oracle_gain > 0.15  # the planted signal is worth routing for
    assert router_gain >= 0.9 * oracle_gain, (router_gain, oracle_gain)


def test_stage2_improves_a_poor_stage1(data) -> None:
    poor = fit_stage1_router(FitRows(*data["train"], *data["dev"]), Stage1Config(lr=1e-5, max_epochs=1))
    poor_gain, oracle_gain = _gains(poor, *data["test"])
    assert poor_gain < 0.5 * oracle_gain  # deliberately poor
    refined = fit_stage2_router(poor, FitRows(*data["train"], *data["dev"]),
                                Stage2Config(steps=300, lr=1e-3, log_every=25, beta=0.0, kl_target_low=0.0))
    refined_gain, _ = _gains(refined, *data["test"])
    assert refined_gain >= poor_gain + 0.5 * (oracle_gain - poor_gain), (poor_gain, refined_gain, oracle_gain)


def test_default_stage2_keeps_a_good_stage1(data, good_stage1) -> None:
    router, result = _default_stage2(good_stage1, data)
    parent_gain, _ = _gains(good_stage1, *data["test"])
    router_gain, _ = _gains(router, *data["test"])
    assert router_gain >= parent_gain - 0.01, (parent_gain, router_gain)
    # dev selection kept a trained state, and training moved every parameter (TRL's check)
    assert result.selected_step > 0
    before, after = good_stage1.state_dict(), router.state_dict()
    assert all(not torch.equal(before[k], after[k]) for k in before)


@pytest.mark.e2e  # end to end: three Stage 2 runs (about 15 s)
def test_default_stage2_improves_a_poor_stage1_and_its_anchor_holds_it_closer(data) -> None:
    poor = fit_stage1_router(FitRows(*data["train"], *data["dev"]), Stage1Config(lr=1e-5, max_epochs=1))
    poor_gain, oracle_gain = _gains(poor, *data["test"])
    anchored, result = _default_stage2(poor, data)
    _, unanchored = _default_stage2(poor, data, beta=0.0)
    refined_gain, _ = _gains(anchored, *data["test"])
    assert refined_gain >= poor_gain + 0.5 * (oracle_gain - poor_gain), (poor_gain, refined_gain, oracle_gain)
    # the KL passed kl_target_high, so beta rose, and the anchor kept the policy nearer its parent
    assert result.beta > Stage2Config().beta
    assert result.logs[-1]["kl"] < 0.9 * unanchored.logs[-1]["kl"], (result.logs[-1], unanchored.logs[-1])
