"""A dollar limit on a running enumeration: measured spend plus what the calls in flight may cost.

A call starts only while the measured spend of the finished calls (their `usage` at the host's
prices), plus the cost bound of every call in flight and of this one, stays within the budget.
A call's bound is its input tokens (counted as `forge_core.enumeration.estimate` counts them) and
its output cap (answer cap plus any reasoning budget), at the host's prices: with exact input
counts (embedded hosts, or a measured ratio) the spend cannot pass the budget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from forge_core.enumeration.estimate import input_counter, output_cap
from forge_core.enumeration.planning import EnumerationPlan, budget_prices
from forge_core.hosts.base import GenerationRequest, HostConfig
from forge_core.records import HostPrices
from forge_core.store import Store


@dataclass
class SpendBudget:
    """The dollars a run may spend, what it has spent and what its calls in flight may add."""

    budget_usd: float
    prices: HostPrices
    count_input: Callable[[GenerationRequest], int]
    spent_usd: float = 0.0  # measured: finished calls' usage at the host's prices
    reserved_usd: float = 0.0  # the cost bounds of the calls in flight

    @classmethod
    def for_plan(cls, store: Store, plan: EnumerationPlan, host_config: HostConfig) -> SpendBudget | None:
        """The plan's budget, or None when it sets none."""
        if plan.budget_usd is None:
            return None
        prices = budget_prices(store, plan.host)
        count_input, _ = input_counter(store, host_config)
        return cls(plan.budget_usd, prices, count_input)

    def reserve(self, request: GenerationRequest) -> float | None:
        """Claim a call: its cost bound, or None when it could take the spend past the budget."""
        bound = self.prices.usd(self.count_input(request), output_cap(request))
        if self.spent_usd + self.reserved_usd + bound > self.budget_usd:
            return None
        self.reserved_usd += bound
        return bound

    def record(self, tokens_in: int, tokens_out: int, bound: float) -> None:
        """A claimed call finished with this usage."""
        self.reserved_usd -= bound
        self.spent_usd += self.prices.usd(tokens_in, tokens_out)
