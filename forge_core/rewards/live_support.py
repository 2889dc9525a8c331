"""The support verdict of a question answered live: an evaluator host says whether the evidence the
answer's prompt held supports it, as `forge rewards support` asks of stored answers, so the live
trace (`forge_core.routing.traces`) keeps the verdict beside the answer."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from forge_core.arms import parse_arm
from forge_core.hosts.base import Host, HostConfig
from forge_core.hosts.lifetime import hosted
from forge_core.hosts.registry import config_hash
from forge_core.records import is_fever_benchmark
from forge_core.rewards.support_verdict import NOT_ENOUGH_INFO, evaluator_name, parse_support_label, support_request
from forge_core.routing.live import RoutedAnswer


@dataclass(frozen=True)
class LiveSupport:
    """An evaluator host's support verdict on one live answer."""

    verdict: str  # SUPPORTED, CONTRADICTED or NOT ENOUGH INFO (a reply without a label, or an empty answer)
    evaluator: str  # "judge:HOST@CONFIG_HASH", as the stored verdicts name it
    reply: str  # the evaluator's text ("" without a call)


async def judge_live_support(result: RoutedAnswer, evaluator: Host) -> LiveSupport:
    """Ask `evaluator` whether the evidence the answer's prompt held supports it (a Direct answer
    against the retrieved passages, as Raw holds them); an empty answer is NOT ENOUGH INFO without a
    call. A failed call raises `HostError`."""
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
