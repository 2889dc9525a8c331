"""Questions asked live, kept: a `RoutedAnswer` as the `LiveTrace` the store keeps (`live_traces`),
so the Queries page can list them beside the evaluated queries, with an evaluator host's support
verdict on the answer when one is configured (`judge_live_support`)."""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass

from forge_core.arms import parse_arm
from forge_core.hosts.base import Host, HostConfig
from forge_core.hosts.lifetime import hosted
from forge_core.hosts.registry import config_hash
from forge_core.records import LiveTrace, is_fever_benchmark
from forge_core.rewards.support_verdict import NOT_ENOUGH_INFO, evaluator_name, parse_support_label, support_request
from forge_core.routing.live import RoutedAnswer
from forge_core.store import utc_now


@dataclass(frozen=True)
class LiveSupport:
    """An evaluator host's support verdict on one live answer."""

    verdict: str  # SUPPORTED, CONTRADICTED or NOT ENOUGH INFO (a reply without a label, or an empty answer)
    evaluator: str  # "judge:HOST@CONFIG_HASH", as the stored verdicts name it
    reply: str  # the evaluator's text ("" without a call)


async def judge_live_support(result: RoutedAnswer, evaluator: Host) -> LiveSupport:
    """Ask `evaluator` whether the evidence the answer's prompt held supports it, as `forge rewards
    support` asks of stored answers (a Direct answer against the retrieved passages, as Raw holds
    them); an empty answer is NOT ENOUGH INFO without a call. A failed call raises `HostError`."""
    name = evaluator_name(evaluator.config.name, config_hash(evaluator.config))
    answer = result.answer.extracted
    if not answer.strip():
        return LiveSupport(NOT_ENOUGH_INFO, name, "")
    support = parse_arm(result.arm).support
    evidence = result.evidence.support_text("raw" if support == "direct" else support)
    request = support_request(result.question, answer, evidence, is_fever_benchmark(result.benchmark))
    reply = (await evaluator.generate(request)).text
    return LiveSupport(parse_support_label(reply) or NOT_ENOUGH_INFO, name, reply)


def judge_live_support_on(result: RoutedAnswer, config: HostConfig) -> LiveSupport:
    """`judge_live_support` from synchronous code, on the evaluator host `config` (served first
    when it needs an embedded server)."""

    async def run() -> LiveSupport:
        async with hosted(config) as evaluator:
            return await judge_live_support(result, evaluator)

    return asyncio.run(run())


def live_trace(result: RoutedAnswer, example_id: str | None = None, support: LiveSupport | None = None) -> LiveTrace:
    """The trace of one routed answer, asked now (`example_id`: the stored example of a benchmark
    question; `support` only when an evaluator host judged the answer)."""
    asked_at = utc_now()
    lambda_in, lambda_out = result.weights if result.weights is not None else (None, None)
    digest = hashlib.sha256(f"{asked_at.isoformat()}|{result.host}|{result.checkpoint_id}|{result.question}".encode())
    tokens_in, tokens_out = result.host_tokens
    return LiveTrace(
        trace_id=f"trace-{digest.hexdigest()[:16]}", asked_at=asked_at, question=result.question,
        benchmark=result.benchmark, example_id=example_id, host=result.host, router=result.checkpoint_id,
        lambda_in=lambda_in, lambda_out=lambda_out, arm=result.arm, margin=result.margin,
        answer=result.answer.extracted, tokens_in=tokens_in, tokens_out=tokens_out,
        latency_ms=result.answer.latency_ms, routing_ms=result.routing_ms, f1=result.f1,
        support_verdict=support.verdict if support else None, evaluator=support.evaluator if support else None)
