"""Stage 1: distil the router to the Boltzmann target of the utility (CleanRL style, one file).

Loss per batch: `KL(pi* || pi) = sum_a pi*(a) (log pi*(a) - log pi(a))`, averaged over queries,
where `pi* = softmax(U / tau)` (soft) or the one-hot oracle arm (hard; KL to a one-hot target is
exactly the cross-entropy `-log pi(argmax U)`).

- `warm_start_arms=3` (the paper's warm start and the default, `settings.PAPER_STAGE1`): only the support
  head is trained, on the 3 NoThink columns of U; the thinking head is reset to uniform and receives no
  gradient, so pi(t|s) stays uniform and no Stage-1 router ever picks a thinking arm.
- `warm_start_arms=6`: the full K-arm policy against the K-arm target, so the thinking head learns where
  thinking pays (any value other than 3 trains the router's whole alphabet, whatever its size). Measured
  on the demo store it is the worse recipe (`forge recipes`, docs/results.md): the default follows the
  measurement, and `forge train` takes the recommended recipe's warm start.

With `epoch_rows`, each epoch after the first trains on fresh rows it returns (a cost-conditioned
router sees every query at newly drawn cost weights each epoch; see
`forge_core.routing.conditioning`); the dev rows stay fixed.

AdamW, shuffled minibatches, early stopping on the dev loss (same loss as training), and the
best dev state restored at the end. Deterministic for a given seed: dropout draws from a forked
global RNG seeded with `seed`, shuffling from its own `torch.Generator`.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from numpy.typing import ArrayLike
from torch import Tensor
from torch.nn import functional as F

from forge_core.routing.routers import N_SUPPORTS, Router
from forge_core.routing.utility import boltzmann_target, oracle_actions
from forge_core.training.settings import PAPER_WARM_START_ARMS, Stage1Config, check_warm_start

logger = logging.getLogger(__name__)


def trained_arms(config: Stage1Config, n_arms: int) -> int:
    """How many arms Stage 1 trains a router of `n_arms` on: 3 for the paper's warm start, else all."""
    return N_SUPPORTS if config.warm_start_arms == PAPER_WARM_START_ARMS else n_arms


@dataclass(frozen=True)
class Stage1Epoch:
    """One epoch's log line."""

    epoch: int  # 1-based
    train_loss: float  # mean training loss over the epoch's queries (dropout on)
    dev_loss: float  # loss on the dev set (dropout off)
    # share of dev queries whose argmax over the trained arms (the 3 NoThink arms by default) is the
    # target's top arm: a training diagnostic, not the checkpoint's dev oracle agreement (every arm)
    dev_target_agreement: float


@dataclass
class Stage1Result:
    """The best-dev router state (also loaded into the router) and the epoch log."""

    state: dict[str, Tensor]
    epochs: list[Stage1Epoch]
    best_epoch: int
    best_dev_loss: float


def kl_loss(target: Tensor, log_probs: Tensor) -> Tensor:
    """Mean over rows of `KL(target || pi) = sum target * (log target - log pi)`; 0 log 0 = 0."""
    return (torch.special.xlogy(target, target) - target * log_probs).sum(dim=-1).mean()


def nothink_columns(n_arms: int) -> list[int]:
    """Action indices of the NoThink arms (direct, summary, raw) in a K-arm alphabet."""
    n_thinking = n_arms // N_SUPPORTS
    return [support * n_thinking for support in range(N_SUPPORTS)]


def stage1_targets(utility: np.ndarray, config: Stage1Config) -> Tensor:
    """The training target over the config's arms: Boltzmann (soft) or one-hot oracle (hard)."""
    if config.target == "hard":
        labels = torch.as_tensor(oracle_actions(utility))
        return F.one_hot(labels, utility.shape[-1]).float()
    return torch.as_tensor(boltzmann_target(utility, config.tau), dtype=torch.float32)


def _policy_log_probs(router: Router, x: Tensor, arms: int) -> Tensor:
    return router.support_log_probs(x) if arms == N_SUPPORTS else router.log_probs(x)


def _prepare(
    router: Router, x: ArrayLike, u: ArrayLike, config: Stage1Config
) -> tuple[Tensor, Tensor]:
    """Features as float32 and the target over the trained columns, checked against the router."""
    features = torch.as_tensor(np.asarray(x), dtype=torch.float32)
    utility = np.asarray(u, dtype=np.float64)
    if features.ndim != 2 or features.shape[1] != router.input_dim:
        raise ValueError(f"features must be [N, {router.input_dim}], got {tuple(features.shape)}")
    if utility.shape != (features.shape[0], router.n_arms):
        expected = f"[N, {router.n_arms}] in action order"
        raise ValueError(f"utility must be {expected}, got {utility.shape}")
    if trained_arms(config, router.n_arms) == N_SUPPORTS:
        utility = utility[:, nothink_columns(router.n_arms)]
    return features, stage1_targets(utility, config)


@torch.no_grad()
def _evaluate(router: Router, x: Tensor, target: Tensor, arms: int) -> tuple[float, float]:
    router.eval()
    log_probs = _policy_log_probs(router, x, arms)
    agreement = (log_probs.argmax(dim=-1) == target.argmax(dim=-1)).float().mean()
    return float(kl_loss(target, log_probs)), float(agreement)


# Over 60 lines: one training loop with early stopping, read best in one piece.
def train_stage1(
    router: Router,
    x_train: ArrayLike,
    u_train: ArrayLike,
    x_dev: ArrayLike,
    u_dev: ArrayLike,
    config: Stage1Config = Stage1Config(),
    on_epoch: Callable[[Stage1Epoch], None] | None = None,
    epoch_rows: Callable[[int], tuple[np.ndarray, np.ndarray]] | None = None,
) -> Stage1Result:
    """Train `router` in place on features x [N, d] and utilities u [N, K] (action order).

    Returns the best dev state (already loaded into `router`) and one `Stage1Epoch` per epoch;
    `on_epoch` is called after each epoch (progress bars). `epoch_rows(epoch)`, if given, returns
    the (x, u) of epochs 2, 3, ... in place of (x_train, u_train).
    """
    check_warm_start(config, router.n_arms)
    arms = trained_arms(config, router.n_arms)
    x, target = _prepare(router, x_train, u_train, config)
    x_dev_t, target_dev = _prepare(router, x_dev, u_dev, config)
    if arms == N_SUPPORTS:
        router.reset_thinking_head_uniform()

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        shuffler = torch.Generator().manual_seed(config.seed)
        optimizer = torch.optim.AdamW(
            router.parameters(), lr=config.lr, weight_decay=config.weight_decay
        )
        epochs: list[Stage1Epoch] = []
        best_loss, best_epoch = float("inf"), 0
        best_state = copy.deepcopy(router.state_dict())

        for epoch in range(1, config.max_epochs + 1):
            if epoch_rows is not None and epoch > 1:
                x, target = _prepare(router, *epoch_rows(epoch), config)
            router.train()
            total = 0.0
            for batch in torch.randperm(len(x), generator=shuffler).split(config.batch_size):
                log_pi = _policy_log_probs(router, x[batch], arms)
                loss = kl_loss(target[batch], log_pi)  # KL(pi* || pi), mean over the batch
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total += loss.item() * len(batch)

            dev_loss, agreement = _evaluate(router, x_dev_t, target_dev, arms)
            record = Stage1Epoch(epoch, total / len(x), dev_loss, agreement)
            epochs.append(record)
            logger.debug("stage1 %s", record)
            if on_epoch is not None:
                on_epoch(record)
            if dev_loss < best_loss:
                best_loss, best_epoch = dev_loss, epoch
                best_state = copy.deepcopy(router.state_dict())
            elif epoch - best_epoch >= config.patience:
                logger.info("stage1 early stop at epoch %d (best %d)", epoch, best_epoch)
                break

    router.load_state_dict(best_state)
    router.eval()
    return Stage1Result(best_state, epochs, best_epoch, best_loss)
