"""OpenTelemetry spans of `forge serve`, `forge ask` and `forge enumerate` (`forge_core.telemetry`):
read back from the SDK's in-memory exporter and, after ten requests, from a local OTLP/HTTP
receiver; and nothing of OpenTelemetry imported when tracing is off."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from forge_core import telemetry
from forge_core.arms import parse_arm
from forge_core.data.importing import import_benchmarks
from forge_core.enumeration.planning import EnumerationPlan
from forge_core.evidence.answering import load_retriever
from forge_core.hosts.base import HostConfig, estimate_tokens
from forge_core.hosts.registry import get_host_config, save_host_config
from forge_core.policies.arm_mix import parse_mix
from forge_core.routing.checkpoints import load_checkpoint
from forge_core.routing.live import ask_routed
from forge_core.server.app import ServeSettings, serving_in_thread
from forge_core.store import Store

from support.answering_server import AnsweringServer
from support.counting_host import CountingHost
from support.enumeration import host_config, run
from support.otlp_receiver import OtlpReceiver
from support.resources import require_module
from support.stores import copy_store

GATEWAYS = "OpenTelemetry's SDK and OTLP exporter are the gateways extra: pip install -e '.[gateways]'"
sdk_trace = require_module("opentelemetry.sdk.trace", GATEWAYS)
in_memory = require_module("opentelemetry.sdk.trace.export.in_memory_span_exporter", GATEWAYS)
export = require_module("opentelemetry.sdk.trace.export", GATEWAYS)
require_module("opentelemetry.exporter.otlp.proto.http.trace_exporter", GATEWAYS)
BENCHMARK = "musique"
QUESTION = "Who founded the city of Rome?"


@pytest.fixture(scope="module")
def host() -> Iterator[CountingHost]:
    """The counting test-double host."""
    with CountingHost() as server:
        yield server


@pytest.fixture(scope="module")
def traced_store(tmp_path_factory: pytest.TempPathFactory, trained_store: tuple[Store, str],
                 host: CountingHost) -> tuple[Store, str]:
    """A copy of the trained store with the counting double as host `counting`."""
    store = copy_store(trained_store[0], tmp_path_factory.mktemp("traced"))
    save_host_config(store, HostConfig(name="counting", kind="openai", model="m", base_url=host.base_url,
                                       max_retries=0, timeout_s=10.0))
    return store, trained_store[1]


@pytest.fixture(scope="module")
def url(traced_store: tuple[Store, str]) -> Iterator[str]:
    store, checkpoint_id = traced_store
    with serving_in_thread(store, ServeSettings(host="counting", benchmark=BENCHMARK, router=checkpoint_id,
                                                traffic_log=False)) as served:
        yield served


@pytest.fixture()
def spans() -> Iterator[object]:
    """FORGE's spans go to an in-memory exporter for the test."""
    exporter = in_memory.InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(export.SimpleSpanProcessor(exporter))
    telemetry.use_tracer_provider(provider)
    yield exporter
    telemetry.use_tracer_provider(None)


def children(finished: list, parent: object) -> dict[str, object]:
    """The spans whose parent is `parent`, by name."""
    return {span.name: span for span in finished if span.parent is not None
            and span.parent.span_id == parent.context.span_id}


def test_a_served_request_is_one_span_with_its_retrieval_and_host_call(url: str, host: CountingHost,
                                                                       spans: object) -> None:
    body = {"model": "forge", "messages": [{"role": "system", "content": "Be brief."},
                                           {"role": "user", "content": "Hello"},
                                           {"role": "assistant", "content": "Hi."},
                                           {"role": "user", "content": QUESTION}]}
    reply = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=60).json()
    sent = host.received[-1][1]
    finished = spans.get_finished_spans()
    (request,) = [span for span in finished if span.name == "chat forge"]
    attributes = dict(request.attributes)
    assert request.kind.name == "SERVER" and attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.request.model"] == "forge"
    assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (
        reply["usage"]["prompt_tokens"], reply["usage"]["completion_tokens"])
    assert attributes["gen_ai.usage.reasoning.output_tokens"] == 0
    forge = reply["forge"]
    assert attributes["forge.arm"] == forge["arm"] and attributes["forge.router"] == forge["router"]
    assert attributes["forge.margin"] == pytest.approx(forge["confidence"]["margin_utility"], abs=1e-6)
    assert (attributes["forge.lambda_in"], attributes["forge.lambda_out"]) == (0.1, 0.2)
    support = parse_arm(forge["arm"]).support
    evidence = sent["messages"][-1]["content"]
    assert (attributes["forge.evidence_tokens"] > 0) == (support != "direct") and "forge.budget" not in attributes
    if support != "direct":
        assert attributes["forge.evidence_tokens"] == estimate_tokens(
            evidence.split("Evidence:\n", 1)[1].split("\n\nQuestion:", 1)[0])

    below = children(finished, request)
    retrieval, call = below["retrieval"], below["chat m"]
    documents = json.loads(retrieval.attributes["gen_ai.retrieval.documents"])
    assert retrieval.attributes["gen_ai.data_source.id"] == "bm25"
    assert retrieval.attributes["gen_ai.retrieval.top_k"] == 5
    assert len(documents) == 5
    assert [d["id"] for d in documents] == list(retrieval.attributes["forge.retrieval.passage_ids"])
    assert [d["score"] for d in documents] == sorted((d["score"] for d in documents), reverse=True)
    usage = CountingHost.usage(sent)
    assert call.kind.name == "CLIENT" and call.attributes["gen_ai.request.model"] == "m"
    assert (call.attributes["gen_ai.usage.input_tokens"], call.attributes["gen_ai.usage.output_tokens"]) == (
        usage["prompt_tokens"], usage["completion_tokens"])

    calls = len(host.received)
    route = httpx.post(f"{url}/v1/route", json={"question": QUESTION}, timeout=60).json()
    assert len(host.received) == calls
    (dry,) = [span for span in spans.get_finished_spans() if span.name == "route forge"]
    assert dry.attributes["forge.arm"] == route["arm"] and dry.attributes["forge.host_calls"] == 0
    assert dry.attributes["forge.margin"] == pytest.approx(route["margin"], abs=1e-6)
    assert set(children(spans.get_finished_spans(), dry)) == {"retrieval"}  # no host call


def test_a_mixed_answer_names_its_mix_in_its_spans_and_before_its_stream(traced_store: tuple[Store, str],
                                                                          spans: object) -> None:
    """Under `--mix`, the request and route spans carry the mix and the draw, and a streamed answer's
    headers name the mix and the drawn arm before its first chunk."""
    option = "direct:no_think=0.5,summary:no_think=0.5"
    settings = ServeSettings(host="counting", benchmark=BENCHMARK, mix=option, traffic_log=False)
    with serving_in_thread(traced_store[0], settings) as served:
        body = {"model": "forge", "stream": True, "messages": [{"role": "user", "content": QUESTION}]}
        with httpx.stream("POST", f"{served}/v1/chat/completions", json=body, timeout=60) as streamed:
            headers = dict(streamed.headers)  # what arrives before the body
            streamed.read()
        httpx.post(f"{served}/v1/route", json={"question": QUESTION}, timeout=60)
    arm, draw = parse_mix(option, 6).arm_for(QUESTION)
    assert (headers["x-forge-mix"], headers["x-forge-arm"]) == (option, arm.name)
    for name in ("chat forge", "route forge"):
        (span,) = [span for span in spans.get_finished_spans() if span.name == name]
        assert (span.attributes["forge.mix"], span.attributes["forge.mix_draw"]) == (option, round(draw, 9))


def test_forge_ask_is_one_span_with_its_host_call(traced_store: tuple[Store, str], spans: object) -> None:
    store, checkpoint_id = traced_store
    result = ask_routed(store, get_host_config(store, "counting"), load_retriever(store, BENCHMARK), QUESTION,
                        BENCHMARK, checkpoint=load_checkpoint(store, checkpoint_id))
    finished = spans.get_finished_spans()
    (request,) = [span for span in finished if span.name == "chat forge"]
    assert request.attributes["forge.arm"] == result.arm and request.attributes["forge.host_calls"] == 1
    assert request.attributes["gen_ai.usage.input_tokens"] == result.host_tokens[0]
    assert set(children(finished, request)) == {"retrieval", "chat m"}


def test_ten_requests_reach_a_local_otlp_receiver(traced_store: tuple[Store, str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    store, checkpoint_id = traced_store
    with OtlpReceiver() as receiver:
        monkeypatch.setenv(telemetry.ENDPOINT_ENV, receiver.endpoint)
        monkeypatch.setenv(telemetry.SERVICE_ENV, "forge-test")
        monkeypatch.setattr(telemetry, "_from_environment", None)
        monkeypatch.setattr(telemetry, "_provider", None)
        settings = ServeSettings(host="counting", benchmark=BENCHMARK, router=checkpoint_id, traffic_log=False)
        with serving_in_thread(store, settings) as served:
            questions = [f"{QUESTION} ({i})" for i in range(10)]
            replies = [httpx.post(f"{served}/v1/chat/completions", timeout=60,
                                  json={"messages": [{"role": "user", "content": q}]}).json() for q in questions]
        assert telemetry.flush()
        received = receiver.spans()
        telemetry._provider.shutdown()
    requests = [span for span in received if span.name == "chat forge"]
    assert len(requests) == 10 and {span.service for span in requests} == {"forge-test"}
    assert sorted(span.attributes["forge.arm"] for span in requests) == sorted(r["forge"]["arm"] for r in replies)
    assert sum(span.attributes["gen_ai.usage.input_tokens"] for span in requests) == sum(
        r["usage"]["prompt_tokens"] for r in replies)
    for request in requests:
        below = {span.name: span for span in received if span.parent_span_id == request.span_id}
        assert sorted(below) == ["chat m", "retrieval"] and below["retrieval"].trace_id == request.trace_id
        assert len(below["retrieval"].attributes["forge.retrieval.passage_ids"]) == 5


def test_tracing_off_imports_nothing_of_opentelemetry(traced_store: tuple[Store, str]) -> None:
    store, _ = traced_store
    code = ("import sys\nfrom forge_core.store import Store\nfrom forge_core.evidence.answering import load_retriever, "
            "retrieve_evidence\nimport forge_core.server.app, forge_core.cli, forge_core.enumeration.runner\n"
            f"retrieve_evidence(load_retriever(Store({str(store.path)!r}), {BENCHMARK!r}), 'Who founded Rome?')\n"
            "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))")
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_forge_enumerate_is_a_span_per_host_call(benchmarks_root: Path, spans: object) -> None:
    store = Store(os.environ["FORGE_STORE"])
    import_benchmarks(store, benchmarks_root, ["musique"])
    plan = EnumerationPlan(host="test-host", split="test", benchmarks=("musique",), per_benchmark=2, probes=True)
    with AnsweringServer() as server:
        report = run(store, plan, host_config(server.base_url))
        received = [body for _, body in server.received]
    finished = spans.get_finished_spans()
    calls = [span for span in finished if span.name == "chat m"]
    assert len(calls) == report.calls == 2 * 9 and {span.kind.name for span in calls} == {"CLIENT"}
    assert {span.attributes["forge.call"] for span in calls} >= {"direct:no_think", "raw:cot"}
    assert {span.attributes["forge.benchmark"] for span in calls} == {"musique"}
    assert len({span.attributes["forge.example_id"] for span in calls}) == 2
    assert sum(span.attributes["gen_ai.usage.input_tokens"] + span.attributes["gen_ai.usage.output_tokens"]
               for span in calls) == report.tokens == sum(AnsweringServer.usage(body)["total_tokens"]
                                                          for body in received)
    assert len([span for span in finished if span.name == "retrieval"]) == 2  # one per question
