"""The thinking axis is learned where the data says it pays: on planted data where `cot` pays only
on a feature-defined subset, the default Stage 1 picks it there (>= 80%) and almost nowhere else
(<= 10%); the paper's warm start (support head only, thinking head uniform) never can."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from forge_core.routing.routers import build_router
from forge_core.training.settings import PAPER_STAGE1, Stage1Config
from forge_core.training.stage1 import train_stage1

ARMS = ("direct:no_think", "direct:cot", "summary:no_think", "summary:cot", "raw:no_think", "raw:cot")
DIM = 8


def planted(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features, [n, 6] utilities and the subset (about 30%, where feature 0 is high) where thinking
    pays: Summary is best everywhere; summary:cot beats it by 0.5 on the subset and loses 0.5 elsewhere."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, DIM)).astype(np.float32)
    subset = rng.random(n) < 0.3
    x[:, 0] = np.where(subset, 1.5, -1.5) + 0.3 * x[:, 0]
    utility = np.tile([0.1, -0.3, 0.6, 0.1, 0.3, -0.2], (n, 1))
    utility[subset, 3] = 1.1
    return x, utility, subset


def cot_shares(config: Stage1Config) -> tuple[float, float]:
    """Share of held-out queries the trained router sends to a cot arm, on the subset and elsewhere."""
    import torch

    x, u, _ = planted(400, seed=0)
    x_dev, u_dev, _ = planted(100, seed=1)
    x_test, _, subset = planted(300, seed=2)
    torch.manual_seed(0)
    router = build_router("factorized", DIM, 6)
    train_stage1(router, x, u, x_dev, u_dev, config)
    with torch.no_grad():
        chosen = router.log_probs(torch.as_tensor(x_test)).argmax(dim=1).numpy()
    thinking = np.array([ARMS[a].endswith(":cot") for a in chosen])
    return float(thinking[subset].mean()), float(thinking[~subset].mean())


def test_the_whole_alphabet_stage1_learns_where_thinking_pays() -> None:
    on_subset, elsewhere = cot_shares(Stage1Config(max_epochs=30, seed=0, warm_start_arms=6))
    assert on_subset >= 0.8 and elsewhere <= 0.1, (on_subset, elsewhere)


def test_the_papers_warm_start_cannot_pick_thinking() -> None:
    on_subset, elsewhere = cot_shares(dataclasses.replace(PAPER_STAGE1, max_epochs=30))
    assert on_subset == elsewhere == 0.0  # the thinking head stays uniform: ties go to no_think
    assert PAPER_STAGE1 == Stage1Config(warm_start_arms=3) == Stage1Config()  # the paper's is the library's default


@pytest.mark.parametrize("warm_start_arms", [3, 6])
def test_a_three_arm_router_trains_with_either_setting(warm_start_arms: int) -> None:
    x, u, _ = planted(64, seed=3)
    router = build_router("factorized", DIM, 3)
    result = train_stage1(router, x, u[:, [0, 2, 4]], x, u[:, [0, 2, 4]],
                          Stage1Config(max_epochs=2, warm_start_arms=warm_start_arms))
    assert result.best_epoch >= 1
