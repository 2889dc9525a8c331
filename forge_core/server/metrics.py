"""The server's counters, exposed in the Prometheus text format at GET /metrics."""

from __future__ import annotations

import threading
from collections import Counter

LATENCY_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class ServerMetrics:
    """Requests by status, arms chosen, tokens spent and saved against Always-Raw, and a latency
    histogram of answered requests; safe to update from concurrent requests."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: Counter[int] = Counter()  # HTTP status -> requests
        self.arms: Counter[str] = Counter()  # arm -> answered requests
        self.tokens_spent = 0  # every host call made for the answered requests
        self.tokens_saved = 0  # Always-Raw's tokens minus the routed answers' (probes included)
        self.bucket_counts = [0] * len(LATENCY_BUCKETS_S)
        self.latency_sum_s = 0.0
        self.answered = 0

    def record_error(self, status: int) -> None:
        """A request refused or failed with `status`."""
        with self._lock:
            self.requests[status] += 1

    def record_answer(self, arm: str, tokens_spent: int, tokens_saved: int, latency_s: float) -> None:
        """An answered request (status 200)."""
        with self._lock:
            self.requests[200] += 1
            self.arms[arm] += 1
            self.tokens_spent += tokens_spent
            self.tokens_saved += tokens_saved
            self.answered += 1
            self.latency_sum_s += latency_s
            for index, bound in enumerate(LATENCY_BUCKETS_S):
                if latency_s <= bound:
                    self.bucket_counts[index] += 1

    def render(self) -> str:
        """The Prometheus text exposition of every counter."""
        with self._lock:
            lines = ["# HELP forge_requests_total Chat-completion requests by HTTP status.",
                     "# TYPE forge_requests_total counter"]
            lines += [f'forge_requests_total{{status="{status}"}} {count}' for status, count in sorted(self.requests.items())]
            lines += ["# HELP forge_arm_chosen_total Answered requests by the arm they were answered with.",
                      "# TYPE forge_arm_chosen_total counter"]
            lines += [f'forge_arm_chosen_total{{arm="{arm}"}} {count}' for arm, count in sorted(self.arms.items())]
            lines += ["# HELP forge_tokens_spent_total Tokens of every host call made for answered requests.",
                      "# TYPE forge_tokens_spent_total counter", f"forge_tokens_spent_total {self.tokens_spent}",
                      "# HELP forge_tokens_saved_total Always-Raw's tokens minus the routed answers' tokens.",
                      "# TYPE forge_tokens_saved_total counter", f"forge_tokens_saved_total {self.tokens_saved}",
                      "# HELP forge_request_latency_seconds End-to-end latency of answered requests.",
                      "# TYPE forge_request_latency_seconds histogram"]
            lines += [f'forge_request_latency_seconds_bucket{{le="{bound}"}} {count}'
                      for bound, count in zip(LATENCY_BUCKETS_S, self.bucket_counts)]
            lines += [f'forge_request_latency_seconds_bucket{{le="+Inf"}} {self.answered}',
                      f"forge_request_latency_seconds_sum {self.latency_sum_s:.6f}",
                      f"forge_request_latency_seconds_count {self.answered}"]
        return "\n".join(lines) + "\n"
