"""Several endpoints of one host (replicas of one model): least-loaded choice and resting.

A host may list several base URLs, for example vLLM data-parallel replicas or the routes of a
Ray Serve LLM deployment. Each endpoint takes up to `capacity` requests at once. A request goes
to the healthy endpoint with the fewest requests in flight (ties to the first listed); when every
healthy endpoint is full it waits for a free slot. An endpoint whose last `FAILURES_TO_REST`
attempts all failed is rested for `REST_SECONDS` while the others carry the load; after its rest
it is tried again (one success makes it healthy). When every endpoint is resting, the one whose
rest ends first is used rather than failing the request.

Which endpoint answered never changes what is stored: outcomes are keyed by host name and the
host's configuration hash, which leaves URLs out.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from forge_core.errors import InvalidInput

log = logging.getLogger(__name__)

FAILURES_TO_REST = 3  # consecutive failed attempts that rest an endpoint
REST_SECONDS = 15.0  # how long a failing endpoint is left alone before it is tried again


@dataclass
class Endpoint:
    """One base URL and its live state."""

    base_url: str
    in_flight: int = 0
    failures_in_a_row: int = 0
    rested_until: float = 0.0

    def resting(self, now: float) -> bool:
        """True while the endpoint sits out its rest."""
        return now < self.rested_until


class EndpointPool:
    """Hands out endpoints to requests; create and use it inside one event loop."""

    def __init__(self, base_urls: tuple[str, ...], capacity: int, *, failures_to_rest: int = FAILURES_TO_REST,
                 rest_seconds: float = REST_SECONDS) -> None:
        if not base_urls:
            raise InvalidInput("an endpoint pool needs at least one base URL")
        self.endpoints = [Endpoint(url.rstrip("/")) for url in base_urls]
        self.capacity = max(1, capacity)
        self.failures_to_rest = failures_to_rest
        self.rest_seconds = rest_seconds
        self._freed = asyncio.Condition()

    async def acquire(self) -> Endpoint:
        """The least-loaded healthy endpoint with a free slot, waiting for one if all are full."""
        async with self._freed:
            while True:
                endpoint = self._choose(time.monotonic())
                if endpoint is not None:
                    endpoint.in_flight += 1
                    return endpoint
                await self._freed.wait()

    def _choose(self, now: float) -> Endpoint | None:
        healthy = [e for e in self.endpoints if not e.resting(now)]
        candidates = healthy or [min(self.endpoints, key=lambda e: e.rested_until)]
        free = [e for e in candidates if e.in_flight < self.capacity]
        return min(free, key=lambda e: e.in_flight) if free else None

    async def release(self, endpoint: Endpoint, succeeded: bool | None) -> None:
        """Give the slot back; `succeeded` None means the attempt said nothing about the endpoint."""
        if succeeded:
            endpoint.failures_in_a_row = 0
        elif succeeded is False:
            self._count_failure(endpoint)
        async with self._freed:
            endpoint.in_flight -= 1
            self._freed.notify()

    def _count_failure(self, endpoint: Endpoint) -> None:
        endpoint.failures_in_a_row += 1
        if len(self.endpoints) > 1 and endpoint.failures_in_a_row >= self.failures_to_rest:
            endpoint.rested_until = time.monotonic() + self.rest_seconds
            endpoint.failures_in_a_row = 0
            log.warning("endpoint %s failed %d times in a row; resting it for %.0f s",
                        endpoint.base_url, self.failures_to_rest, self.rest_seconds)
