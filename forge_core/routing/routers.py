"""Router policies: a distribution over the action alphabet given query features.

Every router answers one interface (`Router`): `log_probs(x) -> [B, K]` in support-major action
order (see `forge_core.arms`), `support_log_probs(x) -> [B, 3]`, and
`reset_thinking_head_uniform()`. `build_router(kind, input_dim, n_arms)` builds one from the
registry `ROUTERS`; `router.spec()` gives the keyword arguments that rebuild it.

- `FactorizedRouter` (FORGE): shared MLP trunk `d -> 256 -> 256` (ReLU, dropout), a support
  head `Linear(256, 3)` and a thinking head `Linear(256 + 16, n_thinking)` on `[h; e(support)]`
  with a learned 16-d support embedding, so `log pi(a) = log pi(s) + log pi(t | s)`.
- `FlatRouter` (ablation): the same trunk with one flat K-way head.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from forge_core.arms import SUPPORTS, thinking_modes
from forge_core.errors import InvalidInput

N_SUPPORTS = len(SUPPORTS)
HIDDEN = 256
DROPOUT = 0.1
SUPPORT_EMBEDDING_DIM = 16


def mlp_trunk(input_dim: int, hidden: int, dropout: float) -> nn.Sequential:
    """The shared encoder `d -> hidden -> hidden`, ReLU and dropout after each layer."""
    return nn.Sequential(
        nn.Linear(input_dim, hidden),
        nn.ReLU(),
        nn.Dropout(dropout),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Dropout(dropout),
    )


def parameter_count(module: nn.Module) -> int:
    """The number of scalar parameters of `module`."""
    return sum(parameter.numel() for parameter in module.parameters())


class Router(nn.Module, ABC):
    """A policy over the K = 3 * n_thinking arms; `forward` is `log_probs`."""

    kind: str

    def __init__(self, input_dim: int, n_thinking: int, hidden: int, dropout: float) -> None:
        super().__init__()
        thinking_modes(N_SUPPORTS * n_thinking)  # validates the alphabet size
        self.input_dim = input_dim
        self.n_thinking = n_thinking
        self.n_arms = N_SUPPORTS * n_thinking
        self.hidden = hidden
        self.dropout = dropout
        self.trunk = mlp_trunk(input_dim, hidden, dropout)

    @abstractmethod
    def log_probs(self, x: Tensor) -> Tensor:
        """log pi(a | x) for every arm, shape [B, K], support-major action order."""

    @abstractmethod
    def support_log_probs(self, x: Tensor) -> Tensor:
        """log pi(s | x) for the 3 support forms, shape [B, 3]."""

    @abstractmethod
    def reset_thinking_head_uniform(self) -> None:
        """Make pi(t | s) uniform for every support form and every input."""

    def spec(self) -> dict[str, Any]:
        """Keyword arguments for `build_router` that rebuild this architecture."""
        return {
            "kind": self.kind,
            "input_dim": self.input_dim,
            "n_arms": self.n_arms,
            "hidden": self.hidden,
            "dropout": self.dropout,
        }

    def forward(self, x: Tensor) -> Tensor:
        """Same as `log_probs`."""
        return self.log_probs(x)

    def encode(self, x: Tensor) -> Tensor:
        """The shared trunk's representation h, shape [B, hidden]."""
        if x.ndim != 2 or x.shape[1] != self.input_dim:
            shape = tuple(x.shape)
            raise ValueError(f"expected features of shape [B, {self.input_dim}], got {shape}")
        return self.trunk(x)


class FactorizedRouter(Router):
    """Support head, then a thinking head conditioned on a learned support embedding."""

    kind = "factorized"

    def __init__(
        self,
        input_dim: int,
        n_thinking: int,
        hidden: int = HIDDEN,
        dropout: float = DROPOUT,
        support_embedding_dim: int = SUPPORT_EMBEDDING_DIM,
    ) -> None:
        super().__init__(input_dim, n_thinking, hidden, dropout)
        self.support_embedding_dim = support_embedding_dim
        self.support_head = nn.Linear(hidden, N_SUPPORTS)
        self.support_embedding = nn.Embedding(N_SUPPORTS, support_embedding_dim)
        self.thinking_head = nn.Linear(hidden + support_embedding_dim, n_thinking)

    def support_log_probs(self, x: Tensor) -> Tensor:
        """log pi(s | x), shape [B, 3]."""
        return F.log_softmax(self.support_head(self.encode(x)), dim=-1)

    def log_probs(self, x: Tensor) -> Tensor:
        """log pi(s, t | x) = log pi(s | x) + log pi(t | s, x), shape [B, 3 * n_thinking]."""
        h = self.encode(x)  # [B, H]
        batch = h.shape[0]
        log_pi_support = F.log_softmax(self.support_head(h), dim=-1)  # [B, 3]
        e = self.support_embedding.weight  # [3, E]
        h_per_support = h.unsqueeze(1).expand(batch, N_SUPPORTS, -1)  # [B, 3, H]
        e_per_query = e.unsqueeze(0).expand(batch, -1, -1)  # [B, 3, E]
        thinking_logits = self.thinking_head(torch.cat([h_per_support, e_per_query], dim=-1))
        log_pi_thinking = F.log_softmax(thinking_logits, dim=-1)  # [B, 3, T]
        return (log_pi_support.unsqueeze(-1) + log_pi_thinking).reshape(batch, self.n_arms)

    @torch.no_grad()
    def reset_thinking_head_uniform(self) -> None:
        """Zero the thinking head's weights and bias: every thinking logit is 0, pi(t|s) = 1/T."""
        self.thinking_head.weight.zero_()
        self.thinking_head.bias.zero_()

    def spec(self) -> dict[str, Any]:
        """Keyword arguments for `build_router`, including the support embedding size."""
        return {**super().spec(), "support_embedding_dim": self.support_embedding_dim}


class FlatRouter(Router):
    """The ablation: one K-way softmax head on the shared trunk."""

    kind = "flat"

    def __init__(
        self, input_dim: int, n_arms: int, hidden: int = HIDDEN, dropout: float = DROPOUT
    ) -> None:
        thinking_modes(n_arms)  # validates before dividing
        super().__init__(input_dim, n_arms // N_SUPPORTS, hidden, dropout)
        self.head = nn.Linear(hidden, self.n_arms)

    def log_probs(self, x: Tensor) -> Tensor:
        """log pi(a | x), shape [B, K]."""
        return F.log_softmax(self.head(self.encode(x)), dim=-1)

    def support_log_probs(self, x: Tensor) -> Tensor:
        """log pi(s | x) = logsumexp over the thinking modes of s, shape [B, 3]."""
        joint = self.log_probs(x).reshape(-1, N_SUPPORTS, self.n_thinking)
        return torch.logsumexp(joint, dim=-1)

    @torch.no_grad()
    def reset_thinking_head_uniform(self) -> None:
        """Copy each support's no_think row of the head to its other thinking rows.

        Equal logits within a support make pi(t|s) uniform; training the support marginal
        alone then gives the rows equal gradients, so they stay equal.
        """
        weight = self.head.weight.view(N_SUPPORTS, self.n_thinking, -1)
        bias = self.head.bias.view(N_SUPPORTS, self.n_thinking)
        weight.copy_(weight[:, :1].expand_as(weight).clone())
        bias.copy_(bias[:, :1].expand_as(bias).clone())


def _factorized(input_dim: int, n_arms: int, **options: Any) -> Router:
    thinking_modes(n_arms)  # validates before dividing
    return FactorizedRouter(input_dim, n_arms // N_SUPPORTS, **options)


ROUTERS: dict[str, Callable[..., Router]] = {
    FactorizedRouter.kind: _factorized,
    FlatRouter.kind: FlatRouter,
}


def build_router(kind: str, input_dim: int, n_arms: int, **options: Any) -> Router:
    """A router of a registered `kind` over an alphabet of `n_arms` (3, 6 or 12) arms."""
    if kind not in ROUTERS:
        raise InvalidInput(f"unknown router '{kind}' (known: {', '.join(sorted(ROUTERS))})")
    return ROUTERS[kind](input_dim, n_arms, **options)
