"""Questions asked live, kept: a `RoutedAnswer` as the `LiveTrace` the store keeps (`live_traces`),
so the Queries page can list them beside the evaluated queries."""

from __future__ import annotations

import hashlib

from forge_core.evidence.retrievers import RetrieverConfig, retriever_hash
from forge_core.records import LiveTrace
from forge_core.routing.live import RoutedAnswer
from forge_core.store import utc_now


def live_trace(result: RoutedAnswer, retriever: RetrieverConfig, example_id: str | None = None,
               support_verdict: str | None = None, evaluator: str | None = None) -> LiveTrace:
    """The trace of one routed answer, asked now under `retriever`'s evidence (`example_id`: the
    stored example of a benchmark question; a support verdict only when an evaluator host judged
    the answer)."""
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
        support_verdict=support_verdict, evaluator=evaluator, retriever=retriever.name,
        retriever_hash=retriever_hash(retriever))
