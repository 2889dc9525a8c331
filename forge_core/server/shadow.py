"""Work done after a response has been sent: shadow Always-Raw and a shadow candidate router.

Shadow Always-Raw (`forge serve --shadow-raw RATE`): a share of the answered requests also has
its Always-Raw cost measured, after its response has been sent, to estimate what routing saves.

Which requests: the n-th answered request (counted from 1 over the server's life) is shadowed when
floor(n * RATE) > floor((n - 1) * RATE): deterministic, evenly spread, and exactly floor(N * RATE)
of the first N (RATE 0.25 shadows every 4th, 1 every one, 0 none). A shadowed request sends the
`raw:no_think` request built from the same question, evidence and client conversation and
settings as its answer; a request answered with `raw:no_think` is its own Always-Raw and sends
nothing. Shadow calls share the host with live requests but never delay a response.

Shadow candidate (`--candidate CKPT --shadow-rate R [--shadow-max-tokens N]`): the same sampling
picks a share R of the `forge` model's answered requests; the candidate router routes each at the
weights in force (no host call: it must be a router without probes). Where it picks the served
arm the two agree and nothing is sent; where it picks another, its arm answers the same question,
evidence and conversation, one call at a time, until its calls have spent N tokens in all (the
call that reaches N is the last; with no N, no limit). Each outcome is a `shadow` record of the
traffic log: both arms, agreement, the candidate's tokens, or why no call was made. With an
evaluator host (`--evaluator-host`, the judge of `forge rewards`), both answers of a disagreement
are rated 0 to 1 (two more calls, not counted in the cap; an agreement is the same answer).
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
from fractions import Fraction
from typing import Any

from forge_core.arms import parse_arm
from forge_core.errors import ForgeError, InvalidInput
from forge_core.evidence.answering import ArmAnswer, answer_with_arm
from forge_core.evidence.prompts import ClientChat
from forge_core.evidence.retrieval import Retriever
from forge_core.hosts.base import Host, HostError
from forge_core.records import is_fever_benchmark
from forge_core.rewards.judge import judge_request, parse_rating
from forge_core.routing.checkpoints import LoadedCheckpoint
from forge_core.routing.live import EXTRA_CALL, RoutedAnswer, dry_route, raw_comparison
from forge_core.routing.utility import CostWeights
from forge_core.server.metrics import ServerMetrics

log = logging.getLogger(__name__)


def check_shadow_rate(rate: float, flag: str = "--shadow-raw") -> float:
    """`rate` when it is a share in [0, 1]; a one-line `ValueError` otherwise."""
    if not 0.0 <= rate <= 1.0:  # NaN fails too
        raise InvalidInput(f"{flag} must be a share between 0 and 1, not {rate}")
    return rate


class ShadowSampler:
    """Decides which answered requests are shadowed (see the module docstring); thread-safe."""

    def __init__(self, rate: float, flag: str = "--shadow-raw") -> None:
        self.rate = Fraction(str(check_shadow_rate(rate, flag)))  # the decimal as written: 0.29 is 29/100
        self._answered = 0
        self._lock = threading.Lock()

    def take(self) -> bool:
        """Count one answered request; True when it is to be shadowed."""
        with self._lock:
            self._answered += 1
            n = self._answered
        return math.floor(n * self.rate) > math.floor((n - 1) * self.rate)


async def shadow_raw(client: Host, metrics: ServerMetrics, model: str, result: RoutedAnswer,
                     chat: ClientChat) -> dict[str, Any] | None:
    """Measure Always-Raw's cost for an answered request and record it with the saving; returns the
    traffic log's fields of it. A host failure is logged and counted, and leaves the request out of
    the sample (None)."""
    is_fever = is_fever_benchmark(result.benchmark)
    try:
        cost, _ = await raw_comparison(client, result.evidence, result.answer, is_fever, chat)
    except HostError as error:
        metrics.record_shadow_failure()
        log.warning("shadow raw:no_think call failed: %s", error)
        return None
    calls = 1 if cost.source == EXTRA_CALL else 0
    metrics.record_shadow(model, calls, cost.tokens * calls, cost.tokens - result.tokens)
    return {"raw_tokens": cost.tokens, "calls": calls, "tokens_spent": cost.tokens * calls,
            "saving": cost.tokens - result.tokens}


def shadow_record(request_id: str, what: str, fields: dict[str, Any]) -> dict[str, Any]:
    """A traffic-log `shadow` record of the request `request_id` (`what`: raw or candidate)."""
    from forge_core.traffic_log import now

    return {"kind": "shadow", "id": request_id, "time": now(), "shadow": what, **fields}


class CandidateShadow:
    """The shadow candidate router (module docstring): which requests, the token cap, the calls."""

    def __init__(self, checkpoint_id: str | None, rate: float, max_tokens: int | None) -> None:
        if checkpoint_id is None and rate > 0:
            raise InvalidInput("--shadow-rate needs a --candidate router")
        if max_tokens is not None and max_tokens < 1:
            raise InvalidInput(f"--shadow-max-tokens must be a positive number of tokens, not {max_tokens}")
        self.id = checkpoint_id
        self.max_tokens = max_tokens
        self.sampler = ShadowSampler(rate if checkpoint_id else 0.0, "--shadow-rate")
        self.spent = 0  # tokens of the candidate's shadow answers so far
        self.calls = 0
        self._one_call = asyncio.Lock()

    def take(self) -> bool:
        """Count one answered request of the `forge` model; True when the candidate shadows it."""
        return self.id is not None and self.sampler.take()

    @property
    def capped(self) -> bool:
        """True once the shadow answers have spent the cap."""
        return self.max_tokens is not None and self.spent >= self.max_tokens

    async def run(self, client: Host, retriever: Retriever, candidate: LoadedCheckpoint, result: RoutedAnswer,
                  chat: ClientChat, weights: tuple[float, float], evaluator: Host | None = None) -> dict[str, Any]:
        """Route the request with the candidate; answer with its arm when it differs and the cap
        allows (both answers rated by `evaluator`, when given); the traffic log's fields of the outcome."""
        fields: dict[str, Any] = {"candidate": candidate.checkpoint_id, "served_arm": result.arm,
                                  "served_tokens": result.tokens}
        try:
            decision = dry_route(retriever, result.question, candidate, CostWeights(*weights))
        except ForgeError as error:
            return fields | {"status": "not routed", "error": str(error)}
        fields |= {"candidate_arm": decision.arm, "agree": decision.arm == result.arm,
                   "candidate_margin": round(decision.margin, 6)}
        if decision.arm == result.arm:
            return fields | {"status": "agree", "calls": 0, "tokens_spent": 0, "candidate_tokens": result.tokens}
        async with self._one_call:
            if self.capped:
                return fields | {"status": "capped", "calls": 0, "tokens_spent": 0}
            try:
                answer = await answer_with_arm(client, result.evidence, parse_arm(decision.arm),
                                               is_fever_benchmark(result.benchmark), chat)
            except HostError as error:
                log.warning("shadow candidate call failed: %s", error)
                return fields | {"status": "failed", "calls": 1, "tokens_spent": 0, "error": str(error)}
            tokens = answer.tokens_in + answer.tokens_out
            self.spent += tokens
            self.calls += 1
        fields |= {"status": "answered", "calls": 1, "tokens_spent": tokens, "candidate_tokens": tokens,
                   "candidate_answer": answer.extracted[:300], "served_answer": result.answer.extracted[:300]}
        if evaluator is not None:
            fields |= await rate_both(evaluator, result, answer)
        return fields


async def rate_both(evaluator: Host, result: RoutedAnswer, candidate: ArmAnswer) -> dict[str, Any]:
    """The evaluator host's ratings (0 to 1, the judge of `forge rewards`) of the served and the
    candidate's answers, each given the evidence its arm saw; None for a rating it did not give."""
    is_fever = is_fever_benchmark(result.benchmark)
    ratings = {}
    for name, answer in (("served_rating", result.answer), ("candidate_rating", candidate)):
        support = parse_arm(answer.arm).support
        request = judge_request(result.question, answer.extracted, result.evidence.support_text(support), is_fever)
        try:
            ratings[name] = parse_rating((await evaluator.generate(request)).text)
        except HostError as error:
            log.warning("shadow rating failed: %s", error)
            ratings[name] = None
    return ratings
