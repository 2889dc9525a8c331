"""The rows Stage 0 stores for a host call, made the same way online (`forge_core.enumeration.runner`)
and through a batch (`forge_core.enumeration.batch_files`).

An answered arm call is scored (F1 and EM against the example's gold answers, None without any);
a failed call is an error row (no answer, no score, no tokens), which the next run plans again.
The callers give what differs: the timestamps, the latency (None through a batch, which reports
none) and the attempts.
"""

from __future__ import annotations

from datetime import datetime

from forge_core.evidence.answering import ArmAnswer, score_arm_answer
from forge_core.evidence.retrievers import outcome_retriever_hash
from forge_core.hosts.base import Generation
from forge_core.records import GREEDY_PROBE, ArmOutcome, Example, ProbeOutcome


def answered_arm_row(host: str, example: Example, answer: ArmAnswer, host_hash: str, started_at: datetime,
                     finished_at: datetime, latency_ms: float | None, attempts: int,
                     retriever_hash: str = "") -> ArmOutcome:
    """The row of an answered (query, arm) call under a retriever configuration (its hash), scored."""
    f1, em = score_arm_answer(answer, example.answers, example.is_fever) if example.answers else (None, None)
    return ArmOutcome(host, example.benchmark, example.example_id, answer.arm, answer.answer, answer.extracted, f1, em,
                      answer.tokens_in, answer.tokens_out, answer.tokens_reasoning, latency_ms, None, attempts,
                      host_hash, started_at, finished_at, answer.reasoning_method,
                      outcome_retriever_hash(answer.arm, retriever_hash))


def failed_arm_row(host: str, example: Example, arm: str, error: str, host_hash: str, started_at: datetime,
                   finished_at: datetime, latency_ms: float | None, attempts: int,
                   retriever_hash: str = "") -> ArmOutcome:
    """The error row of a (query, arm) call under a retriever configuration (its hash) that failed."""
    return ArmOutcome(host, example.benchmark, example.example_id, arm, "", "", None, None, 0, 0, 0, latency_ms, error,
                      attempts, host_hash, started_at, finished_at,
                      retriever_hash=outcome_retriever_hash(arm, retriever_hash))


def greedy_probe_row(host: str, example: Example, answer: ArmAnswer, host_hash: str, finished_at: datetime,
                     latency_ms: float | None) -> ProbeOutcome:
    """The greedy probe of a query: its `direct:no_think` answer, stored as a probe too."""
    return ProbeOutcome(host, example.benchmark, example.example_id, GREEDY_PROBE, answer.answer, answer.tokens_in,
                        answer.tokens_out, latency_ms, None, host_hash, finished_at, answer.tokens_reasoning,
                        answer.reasoning_method)


def answered_probe_row(host: str, example: Example, probe: str, generation: Generation, host_hash: str,
                       finished_at: datetime, latency_ms: float | None) -> ProbeOutcome:
    """The row of an answered probe call (a self-consistency sample)."""
    return ProbeOutcome(host, example.benchmark, example.example_id, probe, generation.text, generation.tokens_in,
                        generation.tokens_out, latency_ms, None, host_hash, finished_at, generation.tokens_reasoning,
                        generation.reasoning_method)


def failed_probe_row(host: str, example: Example, probe: str, error: str, host_hash: str, finished_at: datetime,
                     latency_ms: float | None) -> ProbeOutcome:
    """The error row of a probe call that failed."""
    return ProbeOutcome(host, example.benchmark, example.example_id, probe, "", 0, 0, latency_ms, error, host_hash,
                        finished_at, 0)
