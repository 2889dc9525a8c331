"""The training settings, torch-free: Stage 1's hyperparameters (`Stage1Config`, with the paper's
warm start as the named option `PAPER_STAGE1` and `check_warm_start`) and Stage 2's
(`Stage2Config`, its policy losses `LOSS_TYPES`), each with its validation.

They live apart from the training loops (`stage1`, `stage2`, which import torch) so that the
`forge` command line reads its option defaults from them without importing torch: every default is
written once, here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from forge_core.errors import InvalidInput

LOSS_TYPES = ("grpo", "dr_grpo", "rloo", "dpo")  # Stage 2's policy losses (`Stage2Config.loss_type`)

# stage-config fields renamed since: the lineage keeps their older names (checkpoint ids hash them)
STORED_CONFIG_KEYS = {"warm_start_arms": "arms"}


@dataclass(frozen=True)
class Stage1Config:
    """Stage 1 hyperparameters (paper defaults)."""

    lr: float = 2e-4  # AdamW learning rate
    weight_decay: float = 0.01  # AdamW decoupled weight decay
    batch_size: int = 64  # queries per minibatch
    max_epochs: int = 50  # upper bound on passes over the training set
    patience: int = 7  # stop after this many epochs without a better dev loss
    tau: float = 1.0  # Boltzmann temperature of the soft target softmax(U / tau)
    target: Literal["soft", "hard"] = "soft"  # Boltzmann target, or the one-hot oracle control
    warm_start_arms: int = 3  # 3: the paper's NoThink warm start; 6 (any but 3): the router's whole alphabet
    seed: int = 0  # seeds dropout and minibatch shuffling

    def __post_init__(self) -> None:
        if self.target not in ("soft", "hard"):
            raise InvalidInput(f"target is 'soft' or 'hard', not '{self.target}'")
        if min(self.batch_size, self.max_epochs, self.patience) < 1:
            raise InvalidInput("batch_size, max_epochs and patience must be at least 1")
        if self.lr <= 0 or self.weight_decay < 0 or self.tau <= 0:
            raise InvalidInput("lr and tau must be positive, weight_decay non-negative")


PAPER_WARM_START_ARMS = 3  # the paper's Stage 1: the support head on the NoThink arms only (the default)
PAPER_STAGE1 = Stage1Config(warm_start_arms=PAPER_WARM_START_ARMS)  # the paper's setting, by name


def check_warm_start(config: Stage1Config, n_arms: int) -> None:
    """Refuse a `warm_start_arms` other than 3 (the paper's, the default), 6 (the whole alphabet) or
    the router's own alphabet size."""
    if config.warm_start_arms not in (PAPER_WARM_START_ARMS, 6, n_arms):
        raise InvalidInput(f"Stage 1 trains on 3 arms or on all {n_arms}, not {config.warm_start_arms}")


@dataclass(frozen=True)
class Stage2Config:
    """Stage 2 hyperparameters (paper defaults; knob names follow TRL's GRPOConfig)."""

    steps: int = 5000  # rollouts (outer steps)
    batch_queries: int = 32  # B: queries per rollout
    num_generations: int = 8  # G: actions sampled per query
    epsilon: float = 0.2  # PPO clip range of the ratio pi_new / pi_old
    inner_steps: int = 4  # AdamW steps per rollout
    lr: float = 1e-5  # AdamW learning rate
    weight_decay: float = 0.01  # AdamW weight decay (as in Stage 1; the paper does not say)
    beta: float = 0.05  # initial weight of the KL anchor to the Stage-1 policy
    kl_target_high: float = 0.05  # beta *= beta_factor when the window's mean KL is above this
    kl_target_low: float = 0.005  # beta /= beta_factor when the window's mean KL is below this
    beta_factor: float = 1.5  # multiplicative beta step
    beta_update_every: int = 100  # steps per beta check (mean KL over those steps)
    entropy_coef: float = 0.01  # weight of the entropy bonus
    scale_rewards: bool = True  # divide grpo advantages by the group std (dr_grpo/rloo never do)
    weight_forced_draws: bool = True  # weight each forced draw by pi_old(its support) (module note)
    loss_type: Literal["grpo", "dr_grpo", "rloo", "dpo"] = "grpo"  # policy loss variant
    dpo_beta: float = 0.1  # DPO inverse temperature on the log-ratio margin
    seed: int = 0  # seeds query batches and action sampling
    log_every: int = 50  # steps per log row (window means); the last step always logs

    def __post_init__(self) -> None:
        if self.loss_type not in LOSS_TYPES:
            raise InvalidInput(f"loss_type is one of {LOSS_TYPES}, not '{self.loss_type}'")
        counts = (self.steps, self.batch_queries, self.inner_steps)
        if min(*counts, self.beta_update_every, self.log_every) < 1 or self.num_generations < 2:
            raise InvalidInput("step counts must be at least 1 and num_generations at least 2")
        if not 0 < self.epsilon < 1 or self.lr <= 0 or self.dpo_beta <= 0:
            raise InvalidInput("epsilon must be in (0, 1); lr and dpo_beta positive")
        if min(self.beta, self.entropy_coef, self.weight_decay) < 0:
            raise InvalidInput("beta, entropy_coef and weight_decay must be non-negative")
        if not 0 <= self.kl_target_low < self.kl_target_high or self.beta_factor <= 1:
            raise InvalidInput("need 0 <= kl_target_low < kl_target_high and beta_factor > 1")
