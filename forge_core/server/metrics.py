"""The server's counters, exposed in the Prometheus text format at GET /metrics.

Realized cost is every host call made for the answers (a Full router's probes and the answer).
The shadow sample (`forge serve --shadow-raw`) is counted apart: its raw:no_think calls and
tokens, and per model the saving against Always-Raw of each shadowed request (Always-Raw's tokens
minus the request's realized tokens), summarized by its mean and a normal-approximation 95%
interval (mean +- 1.96 s / sqrt(n), s the sample standard deviation; NaN below two requests).
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable, Sequence

from forge_core.server.budget import BudgetState
from forge_core.statistics import Z_95

LATENCY_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class SavingSample:
    """Running mean and variance (Welford) of the per-request savings, with a normal 95% interval."""

    def __init__(self) -> None:
        self.n = 0
        self.mean = 0.0
        self._m2 = 0.0  # sum of squared deviations from the mean

    def add(self, saving: float) -> None:
        """One shadowed request's saving in tokens."""
        self.n += 1
        delta = saving - self.mean
        self.mean += delta / self.n
        self._m2 += delta * (saving - self.mean)

    def interval(self) -> tuple[float, float]:
        """The 95% interval of the mean saving; (NaN, NaN) below two requests."""
        if self.n < 2:
            return math.nan, math.nan
        half = Z_95 * math.sqrt(self._m2 / (self.n - 1) / self.n)
        return self.mean - half, self.mean + half


class ServerMetrics:
    """Requests by status, arms chosen, realized host calls and tokens, the shadow sample's calls,
    tokens and saving estimate, and a latency histogram of answered requests; safe to update from
    concurrent requests."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: Counter[int] = Counter()  # HTTP status -> requests
        self.arms: Counter[str] = Counter()  # arm -> answered requests
        self.mix_arms: Counter[str] = Counter()  # arm -> answered requests whose arm a `--mix` drew
        self.host_calls = 0  # host calls made for the answered requests (probes and answers)
        self.realized_tokens = 0  # their tokens, in + out
        self.shadow_calls = 0  # raw:no_think calls sent after responses
        self.shadow_tokens = 0  # their tokens, in + out
        self.shadow_failures = 0  # shadow calls the host failed
        self.savings: dict[str, SavingSample] = {}  # model -> savings of its shadowed requests
        self.bucket_counts = [0] * len(LATENCY_BUCKETS_S)
        self.latency_sum_s = 0.0
        self.answered = 0

    def record_error(self, status: int) -> None:
        """A request refused or failed with `status`."""
        with self._lock:
            self.requests[status] += 1

    def record_answer(self, arm: str, host_calls: int, tokens: int, latency_s: float, from_mix: bool = False) -> None:
        """An answered request (status 200): its arm (`from_mix`: drawn from `--mix`), host calls,
        their tokens and its latency."""
        with self._lock:
            self.requests[200] += 1
            self.arms[arm] += 1
            if from_mix:
                self.mix_arms[arm] += 1
            self.host_calls += host_calls
            self.realized_tokens += tokens
            self.answered += 1
            self.latency_sum_s += latency_s
            for index, bound in enumerate(LATENCY_BUCKETS_S):
                if latency_s <= bound:
                    self.bucket_counts[index] += 1

    def record_shadow(self, model: str, calls: int, tokens: int, saving: int) -> None:
        """A shadowed request of `model`: the shadow calls it took (0 when its answer was Raw's own),
        their tokens, and its saving (Always-Raw's tokens minus the realized ones)."""
        with self._lock:
            self.shadow_calls += calls
            self.shadow_tokens += tokens
            self.savings.setdefault(model, SavingSample()).add(saving)

    def record_shadow_failure(self) -> None:
        """A shadow call the host failed (the request stays out of the sample)."""
        with self._lock:
            self.shadow_failures += 1

    def render(self, budgets: Sequence[BudgetState] = ()) -> str:
        """The Prometheus text exposition of every counter, and of each token budget's state."""
        with self._lock:
            lines = _family("forge_requests_total", "counter", "Chat-completion requests by HTTP status.",
                            [(f'{{status="{status}"}}', count) for status, count in sorted(self.requests.items())])
            lines += _family("forge_arm_chosen_total", "counter",
                             "Answered requests by the arm they were answered with.",
                             [(f'{{arm="{arm}"}}', count) for arm, count in sorted(self.arms.items())])
            lines += _family("forge_mix_arm_drawn_total", "counter",
                             "Answered requests whose arm was drawn from the served mix of fixed arms (--mix).",
                             [(f'{{arm="{arm}"}}', count) for arm, count in sorted(self.mix_arms.items())])
            lines += _family("forge_host_calls_total", "counter",
                             "Host calls made for answered requests (probes and answers; no shadow call).",
                             [("", self.host_calls)])
            lines += _family("forge_realized_tokens_total", "counter",
                             "Tokens (in + out) of every host call made for answered requests.",
                             [("", self.realized_tokens)])
            lines += self._shadow_lines() + self._latency_lines()
        return "\n".join(lines + budget_lines(budgets)) + "\n"

    def _shadow_lines(self) -> list[str]:
        models = sorted(self.savings.items())
        intervals = [(f'{{model="{model}"}}', sample.interval()) for model, sample in models]
        return [
            *_family("forge_shadow_raw_calls_total", "counter",
                     "raw:no_think calls sent after responses (--shadow-raw), not made for any answer.",
                     [("", self.shadow_calls)]),
            *_family("forge_shadow_raw_tokens_total", "counter", "Tokens (in + out) of the shadow calls.",
                     [("", self.shadow_tokens)]),
            *_family("forge_shadow_raw_failures_total", "counter", "Shadow calls the host failed.",
                     [("", self.shadow_failures)]),
            *_family("forge_shadowed_requests_total", "counter",
                     "Requests in the shadow sample by model (a Raw answer is its own Always-Raw: no call).",
                     [(f'{{model="{model}"}}', sample.n) for model, sample in models]),
            *_family("forge_saving_tokens_per_request", "gauge",
                     "Mean over shadowed requests of Always-Raw's tokens minus the realized tokens, by model.",
                     [(f'{{model="{model}"}}', sample.mean) for model, sample in models]),
            *_family("forge_saving_tokens_per_request_ci95_lower", "gauge",
                     "Lower bound of its normal 95% interval (NaN below two shadowed requests).",
                     [(labels, low) for labels, (low, _) in intervals]),
            *_family("forge_saving_tokens_per_request_ci95_upper", "gauge",
                     "Upper bound of its normal 95% interval (NaN below two shadowed requests).",
                     [(labels, high) for labels, (_, high) in intervals]),
        ]

    def _latency_lines(self) -> list[str]:
        buckets = [(f'_bucket{{le="{bound}"}}', count) for bound, count in zip(LATENCY_BUCKETS_S, self.bucket_counts)]
        buckets += [('_bucket{le="+Inf"}', self.answered), ("_sum", round(self.latency_sum_s, 6)),
                    ("_count", self.answered)]
        return _family("forge_request_latency_seconds", "histogram", "End-to-end latency of answered requests.",
                       buckets)


BOUND_VALUE = {"lowest": -1.0, None: 0.0, "highest": 1.0}  # forge_budget_at_bound


def budget_lines(budgets: Sequence[BudgetState]) -> list[str]:
    """Per budget (`--budget-tokens`, `--budgets`): the target, the realized mean tokens a request
    over the controller's window with its normal 95% interval, and the weights in force."""
    def per_budget(value: Callable[[BudgetState], float]) -> list[tuple[str, float]]:
        return [(f'{{budget="{state.name}"}}', float(value(state))) for state in budgets]

    if not budgets:
        return []
    return [
        *_family("forge_budget_target_tokens", "gauge", "Target mean tokens a request of each budget.",
                 per_budget(lambda b: b.target)),
        *_family("forge_budget_realized_tokens", "gauge",
                 "Realized mean tokens a request over the controller's window (every host call made for answers).",
                 per_budget(lambda b: b.realized_mean)),
        *_family("forge_budget_realized_tokens_ci95_lower", "gauge", "Lower bound of its normal 95% interval.",
                 per_budget(lambda b: b.realized_ci[0])),
        *_family("forge_budget_realized_tokens_ci95_upper", "gauge", "Upper bound of its normal 95% interval.",
                 per_budget(lambda b: b.realized_ci[1])),
        *_family("forge_budget_window_requests", "gauge", "Requests in the controller's window.",
                 per_budget(lambda b: b.window_requests)),
        *_family("forge_budget_requests_total", "counter", "Answered requests counted against each budget.",
                 per_budget(lambda b: b.requests)),
        *_family("forge_budget_lambda_in", "gauge", "lambda_in in force for each budget.",
                 per_budget(lambda b: b.weights.lambda_in)),
        *_family("forge_budget_lambda_out", "gauge", "lambda_out in force for each budget.",
                 per_budget(lambda b: b.weights.lambda_out)),
        *_family("forge_budget_at_bound", "gauge",
                 "-1 at the lowest trained weights of the ray, 1 at the highest (the target out of the router's "
                 "reach), else 0.", per_budget(lambda b: BOUND_VALUE[b.at_bound])),
    ]


def _family(name: str, kind: str, description: str, samples: list[tuple[str, float]]) -> list[str]:
    """One metric family: HELP, TYPE, then a `name<after> value` line per (after, value) sample, where
    `after` is the labels (`{arm="..."}`), a histogram's suffix (`_bucket{le="..."}`), or empty."""
    lines = [f"# HELP {name} {description}", f"# TYPE {name} {kind}"]
    return lines + [f"{name}{labels} {_value(value)}" for labels, value in samples]


def _value(value: float) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return f"{value:.6f}" if isinstance(value, float) else str(value)
