"""OpenTelemetry spans under the GenAI semantic conventions, on only when `OTEL_EXPORTER_OTLP_ENDPOINT`
is set.

Off (the variable unset, no provider installed): `tracer()` is None, every helper here returns at
once, and no OpenTelemetry module is imported. On: spans go through one `TracerProvider` of this
process (resource `service.name` from `OTEL_SERVICE_NAME`, default `forge`) with a batch processor
over the OTLP/HTTP exporter, which reads the endpoint, headers and timeout from the standard
`OTEL_EXPORTER_OTLP_*` variables; it is flushed when the process exits. The provider is FORGE's
own, not the global one, so an application embedding FORGE keeps its own tracing; spans still
nest under whatever span is current (OpenTelemetry's context is shared).

The spans (attribute names in `docs/serving.md`):
- a request span per routed request, `chat forge` (`forge serve`, the LiteLLM hook, `forge
  extproc`, `forge ask`): `gen_ai.operation.name` chat, `gen_ai.request.model`, the usage of every
  host call made for it (`gen_ai.usage.input_tokens`, `output_tokens`,
  `reasoning.output_tokens`), and FORGE's decision (`forge.arm`, `forge.margin` in utility units,
  `forge.lambda_in`, `forge.lambda_out`, `forge.budget`, `forge.evidence_tokens`, ...);
- a `retrieval` span per retrieval: `gen_ai.data_source.id` (the retriever kind),
  `gen_ai.retrieval.top_k`, `gen_ai.retrieval.documents` (passage ids and scores, no text);
- a `chat {model}` client span per host call (probes, answers, `forge enumerate`'s calls) with the
  request's settings and the host's usage.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from forge_core.hosts.base import Generation, GenerationRequest, Host

log = logging.getLogger(__name__)

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
SERVICE_ENV = "OTEL_SERVICE_NAME"
INSTRUMENTATION = "forge_core"
REQUEST_SPAN = "chat forge"  # the request span's name: `{gen_ai.operation.name} {gen_ai.request.model}`
MISSING_EXPORTER = ("OTEL_EXPORTER_OTLP_ENDPOINT is set but the OTLP exporter is not installed "
                    "(pip install 'forge-core[gateways]'): no spans are exported")

_lock = threading.Lock()
_installed: Any = None  # a tracer from `use_tracer_provider` (tests, embedding), before the environment's
_from_environment: Any = None  # the OTLP tracer, built on first use
_provider: Any = None  # its provider
_unavailable = False  # the endpoint is set but the exporter could not be imported (warned once)


def tracer() -> Any:
    """The tracer spans go to, or None when tracing is off (no endpoint, no installed provider)."""
    global _from_environment, _provider, _unavailable
    if _installed is not None:
        return _installed
    if _unavailable or not os.environ.get(ENDPOINT_ENV):
        return None
    with _lock:
        if _from_environment is None and not _unavailable:
            try:
                _provider = _otlp_provider()
                _from_environment = _provider.get_tracer(INSTRUMENTATION)
            except ImportError:
                _unavailable = True
                log.warning(MISSING_EXPORTER)
    return _from_environment


def use_tracer_provider(provider: Any) -> None:
    """Send FORGE's spans to `provider` (an SDK `TracerProvider`, e.g. with an in-memory exporter)
    whatever the environment says; None goes back to the environment's rule."""
    global _installed
    _installed = None if provider is None else provider.get_tracer(INSTRUMENTATION)


def flush(timeout_ms: int = 30_000) -> bool:
    """Export the OTLP spans ended so far now (True when every one went out, or there are none)."""
    return True if _provider is None else bool(_provider.force_flush(timeout_ms))


def _otlp_provider() -> Any:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": os.environ.get(SERVICE_ENV, "forge")}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    atexit.register(provider.shutdown)
    log.info("OpenTelemetry spans go to %s", os.environ.get(ENDPOINT_ENV))
    return provider


@contextlib.contextmanager
def span(name: str, attributes: Mapping[str, Any], kind: str = "INTERNAL") -> Iterator[Any]:
    """A span around the block (the current one inside it), or None when tracing is off. `kind`:
    an OpenTelemetry `SpanKind` name. An exception leaving the block marks the span as an error."""
    active = tracer()
    if active is None:
        yield None
        return
    from opentelemetry.trace import SpanKind

    with active.start_as_current_span(name, kind=SpanKind[kind], attributes=clean(attributes)) as opened:
        yield opened


def start_span(name: str, attributes: Mapping[str, Any], kind: str = "INTERNAL") -> Any:
    """A span started now and ended by `end_span` (one that outlives a block: a gateway's request,
    routed in one hook and answered in another), or None when tracing is off."""
    active = tracer()
    if active is None:
        return None
    from opentelemetry.trace import SpanKind

    return active.start_span(name, kind=SpanKind[kind], attributes=clean(attributes))


@contextlib.contextmanager
def within(opened: Any) -> Iterator[None]:
    """Make a span from `start_span` the current one inside the block (its children nest under
    it) without ending it; nothing when it is None."""
    if opened is None:
        yield
        return
    from opentelemetry.trace import use_span

    with use_span(opened, end_on_exit=False):
        yield


def end_span(opened: Any, attributes: Mapping[str, Any]) -> None:
    """End a span from `start_span` with these attributes (nothing when it is None)."""
    if opened is not None:
        opened.set_attributes(clean(attributes))
        opened.end()


def set_attributes(opened: Any, attributes: Mapping[str, Any]) -> None:
    """Add attributes to a span from `span` (nothing when it is None: tracing off); None values are left out."""
    if opened is not None:
        opened.set_attributes(clean(attributes))


def clean(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes OpenTelemetry accepts: None dropped, tuples as lists."""
    return {key: list(value) if isinstance(value, tuple) else value
            for key, value in attributes.items() if value is not None}


def request_attributes(model: str, operation: str = "chat") -> dict[str, Any]:
    """A routed request span's opening attributes."""
    return {"gen_ai.operation.name": operation, "gen_ai.request.model": model, "gen_ai.provider.name": "forge"}


def usage_attributes(tokens_in: int, tokens_out: int, tokens_reasoning: int) -> dict[str, int]:
    """GenAI usage attributes."""
    return {"gen_ai.usage.input_tokens": tokens_in, "gen_ai.usage.output_tokens": tokens_out,
            "gen_ai.usage.reasoning.output_tokens": tokens_reasoning}


def retrieval_attributes(data_source: str, top_k: int) -> dict[str, Any]:
    """A retrieval span's opening attributes."""
    return {"gen_ai.operation.name": "retrieval", "gen_ai.data_source.id": data_source,
            "gen_ai.retrieval.top_k": top_k}


def retrieved_attributes(ids: Sequence[str], scores: Sequence[float]) -> dict[str, Any]:
    """What a retrieval returned: passage ids and scores (never their text)."""
    rounded = [round(float(score), 6) for score in scores]
    return {"gen_ai.retrieval.documents": json.dumps([{"id": i, "score": s} for i, s in zip(ids, rounded)]),
            "forge.retrieval.passage_ids": list(ids), "forge.retrieval.scores": rounded}


async def traced_generate(client: Host, request: GenerationRequest,
                          extra: Mapping[str, Any] | None = None) -> Generation:
    """`client.generate(request)` inside a `chat {model}` client span with the request's settings,
    the host's usage and `extra` (FORGE's attributes of the call)."""
    if tracer() is None:
        return await client.generate(request)
    config = client.config
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": config.protocol,
                  "gen_ai.request.model": config.model, "gen_ai.request.max_tokens": request.max_tokens,
                  "gen_ai.request.temperature": request.temperature, "gen_ai.request.top_p": request.top_p,
                  "gen_ai.request.seed": request.seed, "forge.host": config.name,
                  "forge.thinking_budget": request.thinking_budget, **(extra or {})}
    with span(f"chat {config.model}", attributes, "CLIENT") as opened:
        generation = await client.generate(request)
        set_attributes(opened, usage_attributes(generation.tokens_in, generation.tokens_out,
                                                generation.tokens_reasoning))
    return generation
