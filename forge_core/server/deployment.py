"""The weights `forge serve` routes at: fixed (`--lambda-in`, `--lambda-out`) or held to token
budgets (`--budget-tokens`, `--budgets`), and who a request counts against.

A cost-conditioned router serves at any weights; a router trained for one weight pair serves only
at its own (asking for others is refused in one line, as is a budget: it has no weights to move).
A request's client is the name it sends as `X-Forge-Client` (letters, digits, `.`, `_`, `-`; at
most 64), else `key-` and the first 12 hex digits of the sha256 of its bearer key (the key itself
is never kept), else `anonymous`. A client named in `--budgets` counts against its own budget;
every other against `--budget-tokens` when given, else it is served at the fixed weights.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from forge_core.errors import InvalidInput
from forge_core.routing.checkpoints import LoadedCheckpoint
from forge_core.routing.utility import DEFAULT_LAMBDA_IN, DEFAULT_LAMBDA_OUT, CostWeights
from forge_core.server.budget import DEFAULT_BUDGET, BudgetController, BudgetState, ray_bounds

log = logging.getLogger(__name__)

CLIENT_HEADER = "x-forge-client"
CLIENT_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
ANONYMOUS = "anonymous"


def client_identity(headers: Mapping[str, str]) -> str:
    """The request's client as the traffic log and the budgets know it (module docstring)."""
    named = headers.get(CLIENT_HEADER, "").strip()
    if named and CLIENT_NAME.match(named):
        return named
    bearer = headers.get("authorization", "").removeprefix("Bearer ").strip()
    if bearer:
        return "key-" + hashlib.sha256(bearer.encode()).hexdigest()[:12]
    return ANONYMOUS


@dataclass(frozen=True)
class WeightsRequest:
    """What the command line asked for: fixed weights, or budgets along a ray."""

    lambda_in: float | None = None  # fixed weights, or the budgets' starting point (None: calibrated)
    lambda_out: float | None = None
    budget_tokens: float | None = None  # the default budget (mean tokens a request)
    budgets: tuple[tuple[str, float], ...] = ()  # client -> mean tokens a request
    ratio: float | None = None  # the budgets' ray, lambda_out / lambda_in (None: from the weights, else 2)

    @property
    def budgeted(self) -> bool:
        """True when any budget is asked for."""
        return self.budget_tokens is not None or bool(self.budgets)

    def fixed_weights(self) -> tuple[float, float]:
        """The fixed weights (the paper's defaults where not given)."""
        lambda_in = DEFAULT_LAMBDA_IN if self.lambda_in is None else self.lambda_in
        lambda_out = DEFAULT_LAMBDA_OUT if self.lambda_out is None else self.lambda_out
        CostWeights(lambda_in, lambda_out)  # refuses negative or non-finite weights
        return lambda_in, lambda_out

    def ray_ratio(self) -> float:
        """lambda_out / lambda_in of the budgets' ray."""
        if self.ratio is not None:
            return self.ratio
        if self.lambda_in is not None and self.lambda_out is not None and self.lambda_in > 0:
            return self.lambda_out / self.lambda_in
        return DEFAULT_LAMBDA_OUT / DEFAULT_LAMBDA_IN


def check_router_weights(checkpoint_id: str, lineage: Mapping, request: WeightsRequest) -> None:
    """Refuse, in one line, weights or budgets a router of one weight pair (its `lineage` has no
    conditioning) cannot serve."""
    if lineage.get("conditioning") is not None:
        return
    own = (lineage.get("lambda_in"), lineage.get("lambda_out"))
    if request.budgeted:
        raise InvalidInput(f"router {checkpoint_id} was trained for one weight pair ({own[0]:g}, {own[1]:g}): "
                           "a token budget needs a cost-conditioned router (`forge train --conditioned`)")
    for asked, trained, flag in zip((request.lambda_in, request.lambda_out), own, ("--lambda-in", "--lambda-out")):
        if asked is not None and not math.isclose(asked, trained, rel_tol=1e-9, abs_tol=1e-12):
            raise InvalidInput(f"router {checkpoint_id} was trained at lambda_in {own[0]:g}, lambda_out {own[1]:g} "
                               f"and serves only those: {flag} {asked:g} needs a cost-conditioned router")


class ServingWeights:
    """The weights each request is routed at, and the budgets' controllers."""

    def __init__(self, fixed: tuple[float, float], controllers: dict[str, BudgetController]) -> None:
        self.fixed = fixed
        self.controllers = controllers

    @classmethod
    def build(cls, request: WeightsRequest, checkpoint: LoadedCheckpoint,
              start: Mapping[str, tuple[float, float]]) -> ServingWeights:
        """Fixed weights, and a controller per budget starting at `start[budget]` (its weights)."""
        check_router_weights(checkpoint.checkpoint_id, checkpoint.lineage, request)
        if checkpoint.conditioning is None:
            own = checkpoint.lineage
            return cls((own["lambda_in"], own["lambda_out"]), {})
        ratio = request.ray_ratio()
        bounds = ray_bounds(checkpoint.conditioning, ratio)
        targets = dict(request.budgets)
        if request.budget_tokens is not None:
            targets.setdefault(DEFAULT_BUDGET, request.budget_tokens)
        controllers = {name: BudgetController(name, target, start[name][0], ratio, bounds)
                       for name, target in targets.items()}
        return cls(request.fixed_weights(), controllers)

    def for_client(self, client: str) -> tuple[str | None, tuple[float, float]]:
        """(the budget the client counts against or None, the weights to route it at now)."""
        controller = self.controllers.get(client) or self.controllers.get(DEFAULT_BUDGET)
        if controller is None:
            return None, self.fixed
        return controller.name, controller.weights()

    def target(self, budget: str | None) -> float | None:
        """The budget's target mean tokens a request (None: no budget)."""
        return None if budget is None else self.controllers[budget].target

    def at_bound(self, budget: str | None) -> str | None:
        """Whether the budget's weights sit at an end of the ray's trained part (None: no budget)."""
        return None if budget is None else self.controllers[budget].at_bound()

    def record(self, budget: str | None, tokens: int) -> None:
        """An answered request's tokens, for its budget's controller."""
        if budget is not None:
            self.controllers[budget].record(tokens)

    def states(self) -> list[BudgetState]:
        """Every budget now."""
        return [controller.state() for controller in self.controllers.values()]
