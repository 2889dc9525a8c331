"""The evaluator's word on a question answered live: an evaluator host says whether the evidence the
answer's prompt held supports it, as `forge rewards support` asks of stored answers (the live trace,
`forge_core.routing.traces`, keeps the verdict beside the answer), and rates whether the answer is
correct, as the judge reward of `forge rewards judge` does (shown beside the lexical F1 verdict)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from forge_core.arms import parse_arm
from forge_core.hosts.base import Host, HostConfig
from forge_core.hosts.lifetime import hosted
from forge_core.hosts.registry import config_hash
from forge_core.records import is_fever_benchmark
from forge_core.rewards.judge import judge_request, parse_rating
from forge_core.rewards.support_verdict import NOT_ENOUGH_INFO, evaluator_name, parse_support_label, support_request
from forge_core.routing.live import RoutedAnswer


@dataclass(frozen=True)
class LiveSupport:
    """An evaluator host's support verdict on one live answer, and its rating of the answer."""

    verdict: str  # SUPPORTED, CONTRADICTED or NOT ENOUGH INFO (a reply without a label, or an empty answer)
    evaluator: str  # "judge:HOST@CONFIG_HASH", as the stored verdicts name it
    reply: str  # the evaluator's text ("" without a call)
    rating: float | None = None  # the judge's correctness rating / 10 (0 for an empty answer); None: no number


async def judge_live_support(result: RoutedAnswer, evaluator: Host) -> LiveSupport:
    """Ask `evaluator` whether the evidence the answer's prompt held supports it (a Direct answer
    against the retrieved passages, as Raw holds them), then to rate whether the answer is correct
    (the judge reward's prompt: the evidence the answering host saw, none for Direct); an empty answer
    is NOT ENOUGH INFO and rated 0, without a call. A failed call raises `HostError`."""
    name = evaluator_name(evaluator.config.name, config_hash(evaluator.config))
    answer = result.answer.extracted
    if not answer.strip():
        return LiveSupport(NOT_ENOUGH_INFO, name, "", rating=0.0)
    support = parse_arm(result.arm).support
    is_fever = is_fever_benchmark(result.benchmark)
    evidence = result.evidence.support_text("raw" if support == "direct" else support)
    reply = (await evaluator.generate(support_request(result.question, answer, evidence, is_fever))).text
    rated = await evaluator.generate(judge_request(result.question, answer, result.answer.support_text, is_fever))
    return LiveSupport(parse_support_label(reply) or NOT_ENOUGH_INFO, name, reply, parse_rating(rated.text))


def judge_live_support_on(result: RoutedAnswer, config: HostConfig) -> LiveSupport:
    """`judge_live_support` from synchronous code, on the evaluator host `config` (served first
    when it needs an embedded server)."""

    async def run() -> LiveSupport:
        async with hosted(config) as evaluator:
            return await judge_live_support(result, evaluator)

    return asyncio.run(run())
