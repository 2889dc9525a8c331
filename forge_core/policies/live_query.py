"""One new query answered live by one policy: its evidence, its live features and every host call
it makes, counted (the unit of the Fresh Online protocol, `forge_core.evaluation.fresh_online`).

Within one query a policy never makes the same call twice: the greedy probe is the Direct
answer's own request.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import numpy as np

from forge_core.arms import DIRECT_NO_THINK, parse_arm
from forge_core.evidence.answering import ArmAnswer, Evidence, answer_with_arm, arm_answer, retrieve_evidence
from forge_core.evidence.embedders import embedder_name
from forge_core.evidence.prompts import sample_probe_request
from forge_core.evidence.retrieval import Retriever
from forge_core.hosts.base import Generation, Host
from forge_core.policies.context import EvalContext
from forge_core.records import GREEDY_PROBE, SAMPLE_PROBES, Example, ProbeOutcome
from forge_core.routing.features import features_for_question, needs_probes
from forge_core.store import utc_now


@dataclass
class LiveContext(EvalContext):
    """A fitted context whose single row (index 0) is a new query's live features."""

    def features(self, variant: str, embedder: str | None = None) -> np.ndarray:
        key = (variant, embedder_name(embedder))
        if key not in self._features:
            raise ValueError(f"no live {variant} features under embedder {key[1]} for this query")
        return self._features[key]



class LiveQuery:
    """One query answered by one policy: its evidence, live features and every host call."""

    def __init__(self, example: Example, client: Host, retriever: Retriever, fitted: EvalContext) -> None:
        self.example = example
        self.client = client
        self.retriever = retriever
        self.fitted = fitted
        self.calls = 0
        self.tokens_in = 0
        self.tokens_out = 0
        self._answers: dict[str, ArmAnswer] = {}
        self._evidence: Evidence | None = None

    @property
    def benchmark(self) -> str:
        """The query's benchmark."""
        return self.example.benchmark

    @property
    def evidence(self) -> Evidence:
        """The BM25 passages of the question, retrieved once."""
        if self._evidence is None:
            self._evidence = retrieve_evidence(self.retriever, self.example.question)
        return self._evidence

    async def answer(self, arm: str) -> ArmAnswer:
        """The host's answer under an arm: one counted call, made at most once per query."""
        if arm not in self._answers:
            answer = await answer_with_arm(self.client, self.evidence, parse_arm(arm), self.example.is_fever)
            self._count(answer.tokens_in, answer.tokens_out)
            self._answers[arm] = answer
        return self._answers[arm]

    async def draft(self) -> Generation:
        """The training-free gates' draft: the direct:no_think request with token logprobs, one
        counted call that is also this query's direct:no_think answer (never asked again)."""
        from forge_core.enumeration.gate_probes import draft_request

        generation = await self.client.generate(draft_request(self.example.question, self.example.is_fever))
        self._count(generation.tokens_in, generation.tokens_out)
        self._answers[DIRECT_NO_THINK] = arm_answer(parse_arm(DIRECT_NO_THINK), generation, "", self.example.is_fever)
        return generation

    async def second_draft(self) -> Generation:
        """DART's second no-think draft: the first self-consistency sample's request, one counted call."""
        request = sample_probe_request(self.example.question, SAMPLE_PROBES[0], self.example.is_fever)
        generation = await self.client.generate(request)
        self._count(generation.tokens_in, generation.tokens_out)
        return generation

    async def probes(self) -> list[ProbeOutcome]:
        """The four probes, concurrently; the greedy probe is the Direct answer."""
        question, host_name = self.example.question, self.client.config.name
        requests = [sample_probe_request(question, probe, self.example.is_fever) for probe in SAMPLE_PROBES]
        direct, *samples = await asyncio.gather(self.answer(DIRECT_NO_THINK), *map(self.client.generate, requests))
        now = utc_now()
        outcomes = [ProbeOutcome(host_name, self.benchmark, self.example.example_id, GREEDY_PROBE, direct.answer,
                                 direct.tokens_in, direct.tokens_out, direct.latency_ms, None, "", now,
                                 direct.tokens_reasoning, direct.reasoning_method)]
        for probe, sample in zip(SAMPLE_PROBES, samples):
            self._count(sample.tokens_in, sample.tokens_out)
            outcomes.append(ProbeOutcome(host_name, self.benchmark, self.example.example_id, probe, sample.text,
                                         sample.tokens_in, sample.tokens_out, sample.latency_ms, None, "", now,
                                         sample.tokens_reasoning, sample.reasoning_method))
        return outcomes

    async def context(self, variant: str, embedder: str | None = None) -> LiveContext:
        """The fitted context with this query's live features of `variant` under `embedder`
        (default: FORGE_EMBEDDER's) as its only row."""
        probes = await self.probes() if needs_probes(variant) else None
        row = features_for_question(self.example.question, self.retriever, self.evidence, probes, variant, embedder)
        fitted = self.fitted
        return LiveContext(fitted.store, fitted.table, fitted.normalizer, fitted.weights,
                           fitted.accounting, {(variant, embedder_name(embedder)): row[None, :]})

    def _count(self, tokens_in: int, tokens_out: int) -> None:
        self.calls += 1
        self.tokens_in += tokens_in
        self.tokens_out += tokens_out

