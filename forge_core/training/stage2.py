"""Stage 2: group-relative policy optimization over the full alphabet (CleanRL style, one file).

Each step samples B queries, draws G actions per query from the current policy (stratified so
every support form appears when G >= 3), asks `reward_fn` for their rewards, and takes
`inner_steps` AdamW steps on

    loss = policy_loss + beta * KL(pi || pi_ref) - entropy_coef * H(pi)

where pi_ref is the frozen Stage-1 policy. `policy_loss` depends on `loss_type`:

- "grpo": PPO-clipped surrogate on group advantages `(r - mean) / (std + 1e-4)`. std is the
  sample std (Bessel's correction, N - 1), as `torch.std` in TRL's GRPOTrainer.
- "dr_grpo": the same surrogate on unscaled advantages `r - mean` (Dr. GRPO). Its other change,
  dropping the per-sequence length normalization, is moot here: each sample is one action.
- "rloo": the same surrogate on leave-one-out advantages `r_i - mean_{j != i} r_j`. The clip
  keeps the 4 inner steps on one rollout a proximal update.
- "dpo": pairwise preference loss on the best and the worst sampled action of each group with
  the Stage-1 policy as reference and `dpo_beta` = 0.1 (the DPO paper's and TRL's default).

Every group whose rewards are all equal gets advantages of exactly zero (and no DPO pair).
The KL and entropy are exact sums over the K actions (K <= 12), not sampled estimates.

Sampling note: the stratified draws are a coverage device, as in the paper. Left uncorrected,
the forced one-per-support draws apply a low-probability support's advantage as often as a
likely one's, so a support that keeps losing is pushed down without end (its forced draw never
stops), and the KL anchor cannot pull it back: KL(pi || pi_ref) hardly changes with mass that
pi has dropped. With `weight_forced_draws` (the default) each forced draw's term of the policy
loss is weighted by pi_old of its support, which makes the three forced draws together the exact
on-policy expectation over supports; the free draws keep weight 1. `weight_forced_draws=False`
is the literal, uncorrected variant.

Dev selection: given `dev_utility` (a function of the router), Stage 2 measures it at the start
and at every log row and ends with the best state seen, Stage 1's own included, as Stage 1's
early stopping selects on dev. The paper does not say how it picks its Stage-2 policy; without
selection GRPO on a few hundred training queries overfits them (5,000 steps of 32 revisit each
query hundreds of times).

Dropout is off throughout Stage 2 (the router stays in eval mode), so the rollout log-probs and
the first inner step's log-probs agree exactly and the first ratio is 1.
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
from forge_core.training.settings import Stage2Config

logger = logging.getLogger(__name__)

ADVANTAGE_EPS = 1e-4
LOG_KEYS = ("reward_mean", "loss", "kl", "entropy", "tied_groups")  # averaged per log row

RewardFn = Callable[[np.ndarray, np.ndarray], ArrayLike]
DevUtilityFn = Callable[[Router], float]


@dataclass
class Stage2Result:
    """The final router state (also left in the router), the log rows and the final beta."""

    state: dict[str, Tensor]
    logs: list[dict[str, float]]
    beta: float
    selected_step: int | None = None  # with dev selection: the step of the kept state (0: Stage 1's)


def sample_actions(
    log_probs: Tensor,
    num_generations: int,
    n_support: int = N_SUPPORTS,
    generator: torch.Generator | None = None,
) -> Tensor:
    """G actions per row of a policy given as log-probabilities [B, K] (support-major).

    With G >= n_support, columns 0..n_support-1 hold one action per support form (support s in
    column s) with its thinking mode drawn from pi(t | s); the other G - n_support columns are
    drawn from pi(a) with replacement. With G < n_support all G are drawn from pi(a).
    Conditionals come from log-probabilities, so a support of underflowing probability still
    yields a valid pi(t | s).
    """
    batch, n_arms = log_probs.shape
    if n_arms % n_support:
        raise ValueError(f"{n_arms} arms do not split into {n_support} support forms")
    n_thinking = n_arms // n_support
    joint = log_probs.detach().float().exp()
    n_free = num_generations
    columns: list[Tensor] = []
    if num_generations >= n_support:
        conditional = log_probs.detach().float().reshape(batch * n_support, n_thinking).softmax(-1)
        thinking = torch.multinomial(conditional, 1, generator=generator).view(batch, n_support)
        supports = torch.arange(n_support, device=log_probs.device)
        columns.append(supports * n_thinking + thinking)
        n_free -= n_support
    if n_free > 0:
        columns.append(torch.multinomial(joint, n_free, replacement=True, generator=generator))
    return torch.cat(columns, dim=1)


def _zero_variance(rewards: Tensor) -> Tensor:
    """[B, 1] mask of groups whose rewards are all exactly equal."""
    return (rewards == rewards[:, :1]).all(dim=1, keepdim=True)


def group_advantages(rewards: Tensor, scale: bool = True) -> Tensor:
    """GRPO advantages per group (row): `(r - mean) / (std + 1e-4)`, or `r - mean` unscaled.

    std is the sample std (N - 1), matching TRL. Zero-variance groups get exact zeros.
    """
    centered = rewards - rewards.mean(dim=1, keepdim=True)
    if scale:
        centered = centered / (rewards.std(dim=1, keepdim=True) + ADVANTAGE_EPS)
    return torch.where(_zero_variance(rewards), torch.zeros_like(centered), centered)


def rloo_advantages(rewards: Tensor) -> Tensor:
    """RLOO advantages: `r_i - mean_{j != i} r_j`; zero-variance groups get exact zeros."""
    group_size = rewards.shape[1]
    others_mean = (rewards.sum(dim=1, keepdim=True) - rewards) / (group_size - 1)
    centered = rewards - others_mean
    return torch.where(_zero_variance(rewards), torch.zeros_like(centered), centered)


def clipped_policy_loss(
    logp_new: Tensor, logp_old: Tensor, advantages: Tensor, epsilon: float, weights: Tensor | None = None
) -> Tensor:
    """PPO surrogate: `-mean(w * min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A))`, w = 1
    unless `weights` are given."""
    ratio = torch.exp(logp_new - logp_old)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon) * advantages
    terms = torch.minimum(unclipped, clipped)
    return -(terms if weights is None else weights * terms).mean()


def forced_draw_weights(log_probs: Tensor, num_generations: int, n_support: int = N_SUPPORTS) -> Tensor:
    """[B, G] weights for `sample_actions`' draws: pi(support s) for the forced column s, 1 for
    the free draws (all ones when G < n_support: nothing is forced)."""
    batch, n_arms = log_probs.shape
    weights = torch.ones(batch, num_generations)
    if num_generations >= n_support:
        support_probs = log_probs.detach().exp().reshape(batch, n_support, n_arms // n_support).sum(-1)
        weights[:, :n_support] = support_probs
    return weights


def kl_to_reference(logp_policy_all: Tensor, logp_ref_all: Tensor) -> Tensor:
    """Exact `KL(pi || pi_ref) = sum_a pi(a) (log pi(a) - log pi_ref(a))`, mean over rows."""
    return (logp_policy_all.exp() * (logp_policy_all - logp_ref_all)).sum(dim=-1).mean()


def entropy(logp_all: Tensor) -> Tensor:
    """Exact `H(pi) = -sum_a pi(a) log pi(a)`, mean over rows."""
    return -(logp_all.exp() * logp_all).sum(dim=-1).mean()


def dpo_loss(
    logp_all: Tensor, logp_ref_all: Tensor, actions: Tensor, rewards: Tensor, dpo_beta: float
) -> Tensor:
    """DPO on the (best, worst) sampled action of each group; tied groups are skipped.

    `-log sigmoid(dpo_beta * ((log pi(w) - log ref(w)) - (log pi(l) - log ref(l))))`, mean over
    groups with distinct rewards (0 when there are none). Ties for best or worst go to the
    earliest sample.
    """
    chosen = actions.gather(1, rewards.argmax(dim=1, keepdim=True))  # [B, 1]
    rejected = actions.gather(1, rewards.argmin(dim=1, keepdim=True))
    log_ratio = logp_all - logp_ref_all
    margin = (log_ratio.gather(1, chosen) - log_ratio.gather(1, rejected)).squeeze(1)
    has_pair = ~_zero_variance(rewards).squeeze(1)
    per_group = -F.logsigmoid(dpo_beta * margin) * has_pair
    return per_group.sum() / has_pair.sum().clamp(min=1)


def update_beta(beta: float, kl: float, config: Stage2Config) -> float:
    """Adaptive KL weight: up by beta_factor above kl_target_high, down below kl_target_low."""
    if kl > config.kl_target_high:
        return beta * config.beta_factor
    if kl < config.kl_target_low:
        return beta / config.beta_factor
    return beta


def table_reward_fn(utility: ArrayLike) -> RewardFn:
    """Replay rewards from an enumeration table: `reward[b, g] = U[query[b], action[b, g]]`."""
    table = np.asarray(utility, dtype=np.float64)

    def reward_fn(query_indices: np.ndarray, actions: np.ndarray) -> np.ndarray:
        return table[query_indices[:, None], actions]

    return reward_fn


def _advantages(rewards: Tensor, config: Stage2Config) -> Tensor:
    if config.loss_type == "rloo":
        return rloo_advantages(rewards)
    return group_advantages(rewards, scale=config.scale_rewards and config.loss_type == "grpo")


def _rewards(reward_fn: RewardFn, queries: Tensor, actions: Tensor) -> Tensor:
    returned = reward_fn(queries.numpy(), actions.numpy())
    rewards = torch.as_tensor(np.asarray(returned), dtype=torch.float32)
    if rewards.shape != actions.shape or not torch.isfinite(rewards).all():
        raise ValueError(f"reward_fn must return finite rewards of shape {tuple(actions.shape)}")
    return rewards


# Over 60 lines: one GRPO loop (rollout, inner updates, logging, beta), read best in one piece.
def train_stage2(
    router: Router,
    reference_router: Router,
    x_train: ArrayLike,
    reward_fn: RewardFn,
    config: Stage2Config = Stage2Config(),
    on_log: Callable[[dict[str, float]], None] | None = None,
    dev_utility: DevUtilityFn | None = None,
) -> Stage2Result:
    """Refine `router` in place from its Stage-1 state; `reference_router` is copied and frozen.

    `reward_fn(query_indices [B], actions [B, G]) -> rewards [B, G]` gets numpy row indices into
    `x_train` and action indices; use `table_reward_fn` for replay or wrap a live host.
    Every `log_every` steps (and at the last step) a row goes to the logs and to `on_log`: step,
    and means over the steps since the previous row of reward_mean, loss and kl and entropy (both
    at the last inner step), tied_groups (fraction of zero-variance groups), plus the beta in use
    and, with `dev_utility`, the router's dev utility (see the module note on dev selection).
    """
    x = torch.as_tensor(np.asarray(x_train), dtype=torch.float32)
    if x.ndim != 2 or x.shape[1] != router.input_dim:
        raise ValueError(f"features must be [N, {router.input_dim}], got {tuple(x.shape)}")
    if reference_router.spec() != router.spec():
        raise ValueError("the reference router must have the router's architecture")
    reference = copy.deepcopy(reference_router).eval().requires_grad_(False)
    router.eval()  # dropout off: rollout and update log-probs agree
    optimizer = torch.optim.AdamW(
        router.parameters(), lr=config.lr, weight_decay=config.weight_decay
    )
    generator = torch.Generator().manual_seed(config.seed)
    batch_size = min(config.batch_queries, len(x))
    beta = config.beta
    logs: list[dict[str, float]] = []
    window: dict[str, list[float]] = {key: [] for key in LOG_KEYS}
    beta_window_kl: list[float] = []
    best = _DevBest(dev_utility, router)

    for step in range(1, config.steps + 1):
        # rollout: B queries, G actions each, rewards and advantages
        queries = torch.randperm(len(x), generator=generator)[:batch_size]
        xb = x[queries]
        with torch.no_grad():
            logp_old_all = router.log_probs(xb)
            logp_ref_all = reference.log_probs(xb)
        actions = sample_actions(logp_old_all, config.num_generations, generator=generator)
        weights = forced_draw_weights(logp_old_all, config.num_generations) if config.weight_forced_draws else None
        rewards = _rewards(reward_fn, queries, actions)
        advantages = _advantages(rewards, config)
        logp_old = logp_old_all.gather(1, actions)

        # inner AdamW steps on the same rollout
        for _ in range(config.inner_steps):
            logp_all = router.log_probs(xb)
            if config.loss_type == "dpo":
                policy_loss = dpo_loss(logp_all, logp_ref_all, actions, rewards, config.dpo_beta)
            else:
                logp_new = logp_all.gather(1, actions)
                policy_loss = clipped_policy_loss(logp_new, logp_old, advantages, config.epsilon, weights)
            kl = kl_to_reference(logp_all, logp_ref_all)
            ent = entropy(logp_all)
            loss = policy_loss + beta * kl - config.entropy_coef * ent
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

        step_values = {
            "reward_mean": float(rewards.mean()),
            "loss": loss.item(),
            "kl": kl.item(),
            "entropy": ent.item(),
            "tied_groups": float(_zero_variance(rewards).float().mean()),
        }
        for key in LOG_KEYS:
            window[key].append(step_values[key])
        beta_window_kl.append(step_values["kl"])

        if step % config.log_every == 0 or step == config.steps:
            means = {key: float(np.mean(values)) for key, values in window.items()}
            row = {"step": step, **means, "beta": beta}
            if dev_utility is not None:
                row["dev_utility"] = best.check(router, step)
            logs.append(row)
            logger.info("stage2 %s", row)
            if on_log is not None:
                on_log(row)
            window = {key: [] for key in window}
        if step % config.beta_update_every == 0:
            beta = update_beta(beta, float(np.mean(beta_window_kl)), config)
            beta_window_kl = []

    if dev_utility is not None:
        router.load_state_dict(best.state)
    state = copy.deepcopy(router.state_dict())
    return Stage2Result(state, logs, beta, best.step if dev_utility is not None else None)


class _DevBest:
    """The router state of the best dev utility seen so far (the starting state first)."""

    def __init__(self, dev_utility: DevUtilityFn | None, router: Router) -> None:
        self.dev_utility = dev_utility
        self.step, self.value, self.state = 0, -np.inf, {}
        if dev_utility is not None:
            self.check(router, 0)

    def check(self, router: Router, step: int) -> float:
        """Measure the router on dev, keep its state if it is the best so far; the value."""
        value = float(self.dev_utility(router))
        if value > self.value:
            self.step, self.value, self.state = step, value, copy.deepcopy(router.state_dict())
        return value
