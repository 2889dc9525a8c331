"""Stage 1: exact loss values, targets, and tiny deterministic training runs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from forge_core.routing.routers import Router, build_router
from forge_core.training.settings import Stage1Config
from forge_core.training.stage1 import kl_loss, nothink_columns, stage1_targets, train_stage1

N, D, K = 64, 16, 6


@pytest.fixture(autouse=True)
def one_thread() -> None:
    torch.set_num_threads(1)


def _data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(N, D)).astype(np.float32)
    weights = rng.normal(size=(D, K))
    return x, np.tanh(x @ weights / 4)  # utilities that depend on the features


def _router(seed: int = 0, kind: str = "factorized") -> Router:
    torch.manual_seed(seed)
    return build_router(kind, D, K, hidden=32)


def _states_equal(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[key], b[key]) for key in a)


def test_kl_loss_hand_value() -> None:
    target = torch.tensor([[0.5, 0.5], [1.0, 0.0]])
    log_probs = torch.log(torch.tensor([[0.25, 0.75], [0.5, 0.5]]))
    # row 1: 0.5 ln(0.5/0.25) + 0.5 ln(0.5/0.75) = 0.5 ln(4/3); row 2: ln 2 (0 log 0 = 0)
    expected = (0.5 * math.log(4 / 3) + math.log(2.0)) / 2
    assert float(kl_loss(target, log_probs)) == pytest.approx(expected, rel=1e-6)


def test_hard_label_loss_is_cross_entropy_on_the_oracle_arm() -> None:
    utility = np.array([[0.1, 0.5, 0.5], [0.9, 0.0, 0.2]])  # a tie goes to the lower index
    target = stage1_targets(utility, Stage1Config(target="hard"))
    torch.testing.assert_close(target, torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]))
    logits = torch.tensor([[0.3, -0.2, 1.0], [2.0, 0.5, -1.0]])
    log_probs = torch.log_softmax(logits, dim=-1)
    expected = F.cross_entropy(logits, torch.tensor([1, 0]))
    torch.testing.assert_close(kl_loss(target, log_probs), expected)
    assert float(expected) == pytest.approx(
        (-float(log_probs[0, 1]) - float(log_probs[1, 0])) / 2, rel=1e-6
    )


def test_soft_target_is_the_boltzmann_softmax() -> None:
    utility = np.array([[0.0, math.log(2.0), math.log(3.0)]])
    target = stage1_targets(utility, Stage1Config(tau=1.0))
    torch.testing.assert_close(target, torch.tensor([[1 / 6, 2 / 6, 3 / 6]]))
    assert target.dtype == torch.float32


@pytest.mark.parametrize(("n_arms", "columns"), [(3, [0, 1, 2]), (6, [0, 2, 4]), (12, [0, 4, 8])])
def test_nothink_columns(n_arms: int, columns: list[int]) -> None:
    assert nothink_columns(n_arms) == columns


def test_three_arm_warm_start_trains_support_head_keeps_thinking_uniform_and_reproduces() -> None:
    x, u = _data()
    config = Stage1Config(max_epochs=4, batch_size=16, lr=1e-3, seed=3, warm_start_arms=3)  # the paper's
    router = _router()
    initial = {key: value.clone() for key, value in router.state_dict().items()}
    seen: list[int] = []
    result = train_stage1(router, x, u, x, u, config, on_epoch=lambda record: seen.append(record.epoch))

    assert seen == [1, 2, 3, 4] and [record.epoch for record in result.epochs] == seen
    assert not torch.equal(router.trunk[0].weight, initial["trunk.0.weight"])
    assert not torch.equal(router.support_head.weight, initial["support_head.weight"])
    assert torch.count_nonzero(router.thinking_head.weight) == 0  # no gradient reached it
    assert torch.equal(router.support_embedding.weight, initial["support_embedding.weight"])
    assert result.epochs[-1].train_loss < result.epochs[0].train_loss
    assert _states_equal(result.state, router.state_dict())

    again = train_stage1(_router(), x, u, x, u, config)
    assert _states_equal(again.state, result.state)
    assert again.epochs == result.epochs


def test_different_seed_gives_a_different_run() -> None:
    x, u = _data()
    first = train_stage1(_router(), x, u, x, u, Stage1Config(max_epochs=2, seed=0))
    second = train_stage1(_router(), x, u, x, u, Stage1Config(max_epochs=2, seed=1))
    assert not _states_equal(first.state, second.state)


def test_early_stopping_restores_the_best_dev_state() -> None:
    x, u = _data()
    config = Stage1Config(max_epochs=50, patience=2, lr=5e-3, seed=0, warm_start_arms=3)  # the paper's
    router = _router()
    # dev prefers the opposite arms: training soon makes the dev loss worse
    result = train_stage1(router, x, u, x, -u, config)
    assert len(result.epochs) == result.best_epoch + config.patience < config.max_epochs
    assert result.best_dev_loss == min(record.dev_loss for record in result.epochs)
    assert _states_equal(result.state, router.state_dict())
    dev_target = stage1_targets(-u[:, [0, 2, 4]], config)
    with torch.no_grad():
        dev_log_probs = router.eval().support_log_probs(torch.from_numpy(x))
    dev_loss_now = float(kl_loss(dev_target, dev_log_probs))
    assert dev_loss_now == result.best_dev_loss


@pytest.mark.parametrize("kind", ["factorized", "flat"])
def test_six_arm_control_trains_the_full_policy(kind: str) -> None:
    x, u = _data()
    router = _router(kind=kind)
    before = router.log_probs(torch.from_numpy(x)).detach()
    config = Stage1Config(warm_start_arms=6, target="hard", max_epochs=3, lr=1e-3)
    result = train_stage1(router, x, u, x, u, config)
    after = router.log_probs(torch.from_numpy(x)).detach()
    assert result.best_epoch >= 1
    assert not torch.equal(before, after)
    if kind == "factorized":
        assert torch.count_nonzero(router.thinking_head.weight) > 0


def test_flat_three_arm_warm_start_keeps_thinking_uniform() -> None:
    x, u = _data()
    router = _router(kind="flat")
    train_stage1(router, x, u, x, u, Stage1Config(max_epochs=2, lr=1e-3, warm_start_arms=3))
    x_t = torch.from_numpy(x)
    conditional = router.log_probs(x_t).view(N, 3, 2) - router.support_log_probs(x_t).unsqueeze(-1)
    torch.testing.assert_close(conditional, torch.full_like(conditional, -math.log(2.0)), rtol=0, atol=1e-6)


def test_bad_inputs_are_refused() -> None:
    x, u = _data()
    with pytest.raises(ValueError, match="trains on 3 arms or on all 6"):
        train_stage1(_router(), x, u, x, u, Stage1Config(warm_start_arms=12))
    with pytest.raises(ValueError, match="action order"):
        train_stage1(_router(), x, u[:, :3], x, u, Stage1Config())
    with pytest.raises(ValueError, match="target"):
        Stage1Config(target="soft-ish")  # type: ignore[arg-type]
