"""Token budgets of `forge serve`: an online controller per budget moves a cost-conditioned router's
weights along one ray to hold the realized mean tokens a request at its target, never refusing.

The weights are `(lambda_in, ratio * lambda_in)`; the controller keeps `log lambda_in` and, after
every answered request that spent `c` tokens (every host call made for it, as the deployment's
accounting counts them), takes a dual step

    log lambda_in <- clip(log lambda_in + gain * (c - T) / T, log low, log high)

(the primal-dual pacer: the weight is the price of a token; a request above the target raises it,
one below lowers it). With the clip inactive the sum of (c - T) over any run of n requests is
T * (change in log lambda_in) / gain, so the realized mean over a window drifts from T only by
how far the weights moved across it. [low, high] is the part of the ray inside the router's
trained range. Budgets are per client key (`--budgets FILE`) with a default (`--budget-tokens`),
each with its own controller and counters; the realized mean over the last `window` requests
comes with a normal 95% interval (mean +- 1.96 s / sqrt(n)).
"""

from __future__ import annotations

import json
import math
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from forge_core.errors import InvalidInput
from forge_core.routing.conditioning import CostConditioning
from forge_core.routing.utility import CostWeights
from forge_core.statistics import mean_interval

DEFAULT_GAIN = 0.1  # step of log lambda_in per request at a relative error of 1
DEFAULT_WINDOW = 200  # requests the realized mean (and its interval) is taken over
DEFAULT_BUDGET = "default"  # the budget of clients not named in --budgets


def ray_bounds(conditioning: CostConditioning, ratio: float) -> tuple[float, float]:
    """The lambda_in range whose pair (lambda_in, ratio * lambda_in) lies in the trained range."""
    return max(conditioning.low, conditioning.low / ratio), min(conditioning.high, conditioning.high / ratio)


@dataclass(frozen=True)
class BudgetState:
    """A budget's target, realized mean over its window with the 95% interval, and weights in force."""

    name: str
    target: float
    requests: int  # answered requests counted since the server started
    window_requests: int
    realized_mean: float  # over the window (NaN before the first request)
    realized_ci: tuple[float, float]  # normal 95% interval (NaN below two requests)
    weights: CostWeights  # in force now
    at_bound: str | None = None  # "lowest"/"highest": the weights sit at that end of the ray's trained part


class BudgetController:
    """The pacer of one budget (see the module docstring); thread-safe."""

    def __init__(self, name: str, target: float, start: CostWeights, ratio: float, bounds: tuple[float, float],
                 gain: float = DEFAULT_GAIN, window: int = DEFAULT_WINDOW) -> None:
        """`start`: the weights to start from (their lambda_in is taken onto the ray)."""
        check_budget(target, name)
        if not (math.isfinite(ratio) and ratio > 0):
            raise InvalidInput(f"the ray's ratio lambda_out / lambda_in must be positive, not {ratio}")
        self.name = name
        self.target = float(target)
        self.ratio = float(ratio)
        self.gain = gain
        self._log_bounds = (math.log(bounds[0]), math.log(bounds[1]))
        self._log_lambda = self._clip(math.log(start.lambda_in))
        self._window: deque[int] = deque(maxlen=window)
        self._requests = 0
        self._lock = threading.Lock()

    def weights(self) -> tuple[float, float]:
        """(lambda_in, lambda_out) in force now."""
        with self._lock:
            lambda_in = math.exp(self._log_lambda)
        return lambda_in, self.ratio * lambda_in

    def record(self, tokens: int) -> None:
        """One answered request's tokens: count it and take the dual step."""
        with self._lock:
            self._requests += 1
            self._window.append(tokens)
            step = self.gain * (tokens - self.target) / self.target
            self._log_lambda = self._clip(self._log_lambda + step)

    def state(self) -> BudgetState:
        """The budget now, for /metrics and the traffic log."""
        with self._lock:
            window = list(self._window)
            requests = self._requests
        mean, interval = mean_interval(window)
        return BudgetState(self.name, self.target, requests, len(window), mean, interval, CostWeights(*self.weights()),
                           self.at_bound())

    def at_bound(self) -> str | None:
        """"lowest" or "highest" when the weights sit at that end of the ray's trained part (a
        target the router cannot reach there: it spends less even at its cheapest price, or more
        at its dearest), else None."""
        with self._lock:
            log_lambda = self._log_lambda
        if math.isclose(log_lambda, self._log_bounds[0], abs_tol=1e-9):
            return "lowest"
        if math.isclose(log_lambda, self._log_bounds[1], abs_tol=1e-9):
            return "highest"
        return None

    def _clip(self, log_lambda: float) -> float:
        return min(max(log_lambda, self._log_bounds[0]), self._log_bounds[1])


def check_budget(target: float, name: str = DEFAULT_BUDGET) -> float:
    """A positive finite token target, or a one-line error."""
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not (math.isfinite(target) and target > 0):
        raise InvalidInput(f"budget '{name}': the token target must be a positive number, not {target!r}")
    return float(target)


def load_budgets_file(path: Path) -> dict[str, float]:
    """`--budgets FILE`: a JSON object client -> mean tokens a request, the client being the name a
    request sends as `X-Forge-Client`, or `key-<12 hex>` (the hash of its bearer key that `forge
    traffic` shows); a one-line error for anything else."""
    try:
        document = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise InvalidInput(f"--budgets: no file {path}") from None
    except (OSError, ValueError) as error:
        raise InvalidInput(f"--budgets: {path} is not a JSON object of client -> tokens ({error})") from None
    if not isinstance(document, dict) or not document:
        raise InvalidInput(f"--budgets: {path} must be a non-empty JSON object of client -> tokens")
    return {str(client): check_budget(target, str(client)) for client, target in document.items()}
