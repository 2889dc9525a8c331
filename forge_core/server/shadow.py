"""Shadow Always-Raw (`forge serve --shadow-raw RATE`): a share of the answered requests also has
its Always-Raw cost measured, after its response has been sent, to estimate what routing saves.

Which requests: the n-th answered request (counted from 1 over the server's life) is shadowed when
floor(n * RATE) > floor((n - 1) * RATE): deterministic, evenly spread, and exactly floor(N * RATE)
of the first N (RATE 0.25 shadows every 4th, 1 every one, 0 none). A shadowed request sends the
`raw:no_think` request built from the same question, evidence and client conversation and
settings as its answer; a request answered with `raw:no_think` is its own Always-Raw and sends
nothing. Shadow calls share the host with live requests but never delay a response.
"""

from __future__ import annotations

import logging
import math
import threading
from fractions import Fraction

from forge_core.errors import InvalidInput
from forge_core.evidence.prompts import ClientChat
from forge_core.hosts.base import Host, HostError
from forge_core.records import is_fever_benchmark
from forge_core.routing.live import EXTRA_CALL, RoutedAnswer, raw_comparison
from forge_core.server.metrics import ServerMetrics

log = logging.getLogger(__name__)


def check_shadow_rate(rate: float) -> float:
    """`rate` when it is a share in [0, 1]; a one-line `ValueError` otherwise."""
    if not 0.0 <= rate <= 1.0:  # NaN fails too
        raise InvalidInput(f"--shadow-raw must be a share between 0 and 1, not {rate}")
    return rate


class ShadowSampler:
    """Decides which answered requests are shadowed (see the module docstring); thread-safe."""

    def __init__(self, rate: float) -> None:
        self.rate = Fraction(str(check_shadow_rate(rate)))  # the decimal as written: 0.29 is 29/100
        self._answered = 0
        self._lock = threading.Lock()

    def take(self) -> bool:
        """Count one answered request; True when it is to be shadowed."""
        with self._lock:
            self._answered += 1
            n = self._answered
        return math.floor(n * self.rate) > math.floor((n - 1) * self.rate)


async def shadow_raw(client: Host, metrics: ServerMetrics, model: str, result: RoutedAnswer,
                     chat: ClientChat) -> None:
    """Measure Always-Raw's cost for an answered request and record it with the saving; a host
    failure is logged and counted, and leaves the request out of the sample."""
    is_fever = is_fever_benchmark(result.benchmark)
    try:
        cost, _ = await raw_comparison(client, result.evidence, result.answer, is_fever, chat)
    except HostError as error:
        metrics.record_shadow_failure()
        log.warning("shadow raw:no_think call failed: %s", error)
        return
    calls = 1 if cost.source == EXTRA_CALL else 0
    metrics.record_shadow(model, calls, cost.tokens * calls, cost.tokens - result.tokens)
