"""`forge extproc` (`forge_core.server.extproc`) against a gRPC client playing Envoy's side of
`envoy.service.ext_proc.v3.ExternalProcessor`, stream for stream (request headers, the buffered
body, then the host's response headers and body), with the counting test host behind it: the body
is replaced by the routed host request with a corrected content length and x-forge-* headers, the
answer's usage is logged and charged; what FORGE cannot route, or its own error, passes unchanged
with x-forge-passed and a counter. (No Envoy binary is installable here: Debian has no envoy
package and the PyPI name `envoy` is an unrelated library.)"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from forge_core import telemetry
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.policies.arm_mix import parse_mix
from forge_core.reports.checkpoint_guard import checkpoint_guard
from forge_core.routing.utility import CostWeights
from forge_core.server.app import ServeSettings
from forge_core.server.deployment import WeightsRequest
from forge_core.store import Store
from forge_core.traffic_log import read_traffic

from support.counting_host import CountingHost, replay_questions
from support.resources import require_module
from support.stores import copy_store

GATEWAYS = "grpcio and xds-protos are the gateways extra: pip install -e '.[gateways]'"
grpc = require_module("grpc", GATEWAYS)
ext_proc = require_module("envoy.service.ext_proc.v3.external_processor_pb2", GATEWAYS)
ext_proc_grpc = require_module("envoy.service.ext_proc.v3.external_processor_pb2_grpc", GATEWAYS)
base = require_module("envoy.config.core.v3.base_pb2", GATEWAYS)
extproc = require_module("forge_core.server.extproc", GATEWAYS)
BENCHMARK = "musique"
CHAT = {"model": "forge", "messages": [{"role": "system", "content": "Answer in English."},
                                       {"role": "user", "content": "Who founded the city of Rome?"}]}


class EnvoySide:
    """One `Process` stream, driven as Envoy drives it: each phase sent once the last one is answered."""

    def __init__(self, stub: object) -> None:
        self.outgoing: queue.Queue = queue.Queue()
        self.responses = stub.Process(iter(self.outgoing.get, None))

    def send(self, **phase: object) -> object:
        self.outgoing.put(ext_proc.ProcessingRequest(**phase))
        return next(self.responses)

    def close(self) -> None:
        self.outgoing.put(None)


def header_map(headers: dict[str, str]) -> object:
    return ext_proc.HttpHeaders(headers=base.HeaderMap(headers=[
        base.HeaderValue(key=name, raw_value=value.encode()) for name, value in headers.items()]))


def set_headers(common: object) -> dict[str, str]:
    return {option.header.key: option.header.raw_value.decode() for option in common.header_mutation.set_headers}


@pytest.fixture(scope="module")
def host() -> Iterator[CountingHost]:
    """The counting test-double host, the upstream Envoy forwards to."""
    with CountingHost() as server:
        yield server


@contextmanager
def serving_extproc(store: Store, settings: ServeSettings) -> Iterator[tuple[object, object]]:
    """(an ExternalProcessor stub, its GatewayRouter) for `settings`, on a free port, until the block ends."""
    server, gateway, port = extproc.start_extproc(store, settings, 0)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield ext_proc_grpc.ExternalProcessorStub(channel), gateway
    finally:
        channel.close()
        server.stop(grace=1).wait()
        gateway.close()


def counting_copy(store: Store, directory: Path, host: CountingHost) -> Store:
    """A copy of `store` in `directory` with the counting double as host `counting`."""
    copied = copy_store(store, directory)
    save_host_config(copied, HostConfig(name="counting", kind="openai", model="m", base_url=host.base_url,
                                        max_retries=0, timeout_s=10.0))
    return copied


@pytest.fixture(scope="module")
def processor(tmp_path_factory: pytest.TempPathFactory, trained_store: tuple[Store, str],
              host: CountingHost) -> Iterator[tuple[object, object, Path]]:
    """(an ExternalProcessor stub, the processor's GatewayRouter, its traffic directory)."""
    store = counting_copy(trained_store[0], tmp_path_factory.mktemp("extproc"), host)
    traffic = tmp_path_factory.mktemp("extproc-traffic")
    settings = ServeSettings(host="counting", benchmark=BENCHMARK, router=trained_store[1], traffic_dir=traffic)
    with serving_extproc(store, settings) as (stub, gateway):
        yield stub, gateway, traffic


def forwarded(stub: object, question: str, host: CountingHost) -> dict[str, str]:
    """One question's whole stream as Envoy sends it, the host answering the routed body in between:
    the headers the processor set on the request body."""
    envoy = EnvoySide(stub)
    envoy.send(request_headers=header_map({":method": "POST"}))
    chat = {"model": "forge", "messages": [{"role": "user", "content": question}]}
    mutated = envoy.send(request_body=ext_proc.HttpBody(body=json.dumps(chat).encode(), end_of_stream=True))
    answer = httpx.post(f"{host.base_url}/chat/completions", content=mutated.request_body.response.body_mutation.body,
                        timeout=30)
    envoy.send(response_headers=header_map({":status": "200"}))
    envoy.send(response_body=ext_proc.HttpBody(body=answer.content, end_of_stream=True))
    envoy.close()
    return set_headers(mutated.request_body.response)


def test_envoys_stream_gets_the_routed_body_and_the_answer_is_charged(processor: tuple, host: CountingHost) -> None:
    stub, gateway, traffic = processor
    body = json.dumps(CHAT).encode()
    envoy = EnvoySide(stub)
    headers = {":method": "POST", ":path": "/v1/chat/completions", "content-type": "application/json",
               "content-length": str(len(body)), "x-forge-client": "team-a"}
    first = envoy.send(request_headers=header_map(headers))
    assert first.WhichOneof("response") == "request_headers" and not first.request_headers.response.HasField(
        "body_mutation")
    expected = gateway.route(CHAT, {}, "test").routed
    mutated = envoy.send(request_body=ext_proc.HttpBody(body=body, end_of_stream=True)).request_body.response
    new_body = mutated.body_mutation.body
    sent = set_headers(mutated)
    assert json.loads(new_body) == expected.body and sent["content-length"] == str(len(new_body))
    assert sent["x-forge-arm"] == expected.arm and sent["x-forge-weights"] == "0.1,0.2"
    assert json.loads(new_body)["messages"][0]["content"].endswith("\n\nAnswer in English.")

    calls = len(host.received)
    answer = httpx.post(f"{host.base_url}/chat/completions", content=new_body, timeout=30)  # Envoy forwards it
    assert len(host.received) == calls + 1 and host.received[-1][1] == expected.body
    back = envoy.send(response_headers=header_map({":status": "200", "content-type": "application/json"}))
    assert set_headers(back.response_headers.response)["x-forge-arm"] == expected.arm
    half = len(answer.content) // 2  # streamed to the processor in two chunks: charged once, at the end
    for chunk, last in ((answer.content[:half], False), (answer.content[half:], True)):
        done = envoy.send(response_body=ext_proc.HttpBody(body=chunk, end_of_stream=last))
        assert not done.response_body.response.HasField("body_mutation")  # the answer passes unchanged
    envoy.close()
    (record,) = [r for r in read_traffic(traffic).requests if r["endpoint"] == "extproc" and r.get("arm")]
    assert record["client"] == "team-a" and record["tokens"] == answer.json()["usage"]["total_tokens"]
    assert record["arm"] == expected.arm and record["host_calls"] == 1


def test_what_forge_cannot_route_passes_unchanged_and_is_counted(processor: tuple,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    stub, gateway, _ = processor
    tools = json.dumps(CHAT | {"tools": [{"type": "function", "function": {"name": "f"}}]}).encode()
    before = dict(gateway.passed)
    for body, reason in ((b"{not json", "unsupported"), (tools, "unsupported")):
        envoy = EnvoySide(stub)
        envoy.send(request_headers=header_map({":method": "POST"}))
        passed = envoy.send(request_body=ext_proc.HttpBody(body=body, end_of_stream=True)).request_body.response
        envoy.close()
        assert not passed.HasField("body_mutation") and set_headers(passed) == {"x-forge-passed": reason}

    def broken(*_: object) -> None:
        raise RuntimeError("a bug of FORGE's")

    monkeypatch.setattr(gateway.state, "route_chat", broken)
    envoy = EnvoySide(stub)
    envoy.send(request_headers=header_map({":method": "POST"}))
    failed = envoy.send(request_body=ext_proc.HttpBody(body=json.dumps(CHAT).encode(), end_of_stream=True))
    envoy.close()
    assert set_headers(failed.request_body.response) == {"x-forge-passed": "forge_error"}
    assert not failed.request_body.response.HasField("body_mutation")
    assert gateway.passed["unsupported"] - before.get("unsupported", 0) == 2
    assert gateway.passed["forge_error"] - before.get("forge_error", 0) == 1


@contextmanager
def recorded_spans() -> Iterator[object]:
    """An in-memory span exporter FORGE's spans go to until the block ends."""
    sdk_trace = require_module("opentelemetry.sdk.trace", GATEWAYS)
    in_memory = require_module("opentelemetry.sdk.trace.export.in_memory_span_exporter", GATEWAYS)
    export = require_module("opentelemetry.sdk.trace.export", GATEWAYS)
    exporter = in_memory.InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(export.SimpleSpanProcessor(exporter))
    telemetry.use_tracer_provider(provider)
    try:
        yield exporter
    finally:
        telemetry.use_tracer_provider(None)


def test_a_routed_stream_is_one_span_from_routing_to_the_answer(processor: tuple, host: CountingHost) -> None:
    stub, _, _ = processor
    with recorded_spans() as exporter:
        envoy = EnvoySide(stub)
        envoy.send(request_headers=header_map({":method": "POST"}))
        mutated = envoy.send(request_body=ext_proc.HttpBody(body=json.dumps(CHAT).encode(), end_of_stream=True))
        assert all(s.name != "chat forge" for s in exporter.get_finished_spans())  # open until the answer
        routed_body = mutated.request_body.response.body_mutation.body
        answer = httpx.post(f"{host.base_url}/chat/completions", content=routed_body, timeout=30)
        envoy.send(response_headers=header_map({":status": "200"}))
        envoy.send(response_body=ext_proc.HttpBody(body=answer.content, end_of_stream=True))
        envoy.close()
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "chat forge"]
    usage = answer.json()["usage"]
    assert span.attributes["forge.arm"] == set_headers(mutated.request_body.response)["x-forge-arm"]
    assert (span.attributes["gen_ai.usage.input_tokens"], span.attributes["gen_ai.usage.output_tokens"]) == (
        usage["prompt_tokens"], usage["completion_tokens"])
    assert [s.name for s in exporter.get_finished_spans() if s.parent and s.parent.span_id == span.context.span_id] == [
        "retrieval"]


def test_forge_extproc_refuses_what_a_gateway_cannot_serve_in_one_line(
        tmp_path: Path, trained_store: tuple[Store, str], host: CountingHost, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from forge_core import cli
    from forge_core.cli.extproc import extproc_command
    from forge_core.errors import InvalidInput

    result = CliRunner().invoke(cli.app, ["extproc", "--router", "full"])
    assert isinstance(result.exception, InvalidInput) and "four host probes" in str(result.exception)
    negative = CliRunner().invoke(cli.app, ["extproc", "--lambda-in", "-1"])
    assert isinstance(negative.exception, InvalidInput)
    store = counting_copy(trained_store[0], tmp_path, host)
    env = {**os.environ, "FORGE_STORE": str(store.path)}
    mix = "direct:no_think=0.4,raw:no_think=0.6"
    for options, message in [(["--mix", mix, "--router", "lite"], "--router needs routing"),
                             (["--arm", "raw:no_think", "--guard", "0.2"], "--guard needs a router (drop --arm)")]:
        refused = subprocess.run([sys.executable, "-m", "forge_core.cli", "extproc", "--host", "counting",
                                  "--port", "0", *options], capture_output=True, text=True, env=env, timeout=120,
                                 check=False)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr, (options, refused.stderr)
        assert message in refused.stderr.strip().splitlines()[-1], (options, refused.stderr)  # one line
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    for options, message in [
            ({"arm": "raw:no_think", "router": "lite"}, "--arm raw:no_think serves fixed arms: --router needs"),
            ({"mix": mix, "arm": "raw:no_think"}, "--arm raw:no_think serves one"),
            ({"arm": "raw:think_high"}, "not in the 6-arm alphabet"),
            ({"mix": mix, "lambda_in": 0.1}, "--lambda-in needs a router"),
            ({"mix": "direct:no_think=0.4,raw:no_think=0.5"}, "must sum to 1"),
            ({"router": trained_store[1], "guard": 1.5}, "a share in \\(0, 1\\)")]:
        with pytest.raises(InvalidInput, match=message):
            extproc_command(host="counting", port=0, **options)


def test_a_mix_forwards_each_question_under_the_arm_it_draws(
        tmp_path: Path, trained_store: tuple[Store, str], host: CountingHost) -> None:
    """`forge extproc --mix`: each question's host request is the arm `parse_mix(...).arm_for` draws,
    named in x-forge-arm and x-forge-mix (no weights), in its span and logged with the mix and the
    arm drawn; `--arm` forwards under its fixed arm (router override, no weights)."""
    store = counting_copy(trained_store[0], tmp_path / "store", host)
    option = "direct:no_think=0.4,raw:no_think=0.6"
    questions = replay_questions(store, 12)
    settings = ServeSettings(host="counting", benchmark=BENCHMARK, mix=option, traffic_dir=tmp_path / "traffic")
    with serving_extproc(store, settings) as (stub, _), recorded_spans() as exporter:
        sent = [forwarded(stub, question, host) for question in questions]
    expected = [parse_mix(option, 6).arm_for(question)[0].name for question in questions]
    spans = [span for span in exporter.get_finished_spans() if span.name == "chat forge"]
    assert [(s.attributes["forge.arm"], s.attributes["forge.mix"]) for s in spans] == [(a, option) for a in expected]
    assert len(set(expected)) == 2  # both arms drawn
    assert [(h["x-forge-arm"], h["x-forge-mix"], h["x-forge-router"]) for h in sent] == [
        (arm, option, "mix") for arm in expected]
    assert not any("x-forge-weights" in h or "x-forge-margin" in h for h in sent)
    records = [r for r in read_traffic(tmp_path / "traffic").requests if r["endpoint"] == "extproc"]
    assert [(r["arm"], r["mix_arm"], r["mix"]) for r in records] == [(arm, arm, option) for arm in expected]
    assert all(r["host_calls"] == 1 and r["tokens"] > 0 and r["lambda_in"] is None for r in records)
    fixed = dataclasses.replace(settings, mix=None, arm="summary:no_think")  # `--arm`: the deployed fixed arm
    with serving_extproc(store, fixed) as (stub, _):
        headers = [forwarded(stub, question, host) for question in questions[:4]]
    assert {(h["x-forge-arm"], h["x-forge-router"]) for h in headers} == {("summary:no_think", "override")}
    assert not any("x-forge-weights" in h or "x-forge-mix" in h for h in headers)


def test_a_guard_holds_low_margin_questions_at_its_fallback_through_the_processor(
        tmp_path: Path, conditioned_store: tuple[Store, str], host: CountingHost) -> None:
    """`forge extproc --guard`: the host request is the fallback arm's where the router's margin
    does not clear the guard's threshold, the router's arm elsewhere; x-forge-guard and the traffic
    log say which."""
    store = counting_copy(conditioned_store[0], tmp_path / "store", host)
    guard = checkpoint_guard(store, conditioned_store[1], CostWeights(0.1, 0.2), 0.2)
    questions = replay_questions(store, 24)
    settings = ServeSettings(host="counting", benchmark=BENCHMARK, router=conditioned_store[1], guard=0.2,
                             weights=WeightsRequest(lambda_in=0.1, lambda_out=0.2), traffic_dir=tmp_path / "traffic")
    with serving_extproc(store, settings) as (stub, gateway):
        sent = [forwarded(stub, question, host) for question in questions]
        decisions = [gateway.state.route_chat(user_chat(question), "test").decision for question in questions]
    verdicts = []
    for headers, decision in zip(sent, decisions):
        router_arm = max(decision.probabilities, key=decision.probabilities.get)
        holds = guard.holds(router_arm, decision.margin)
        assert headers["x-forge-arm"] == (guard.fallback_arm if holds else router_arm)
        assert headers["x-forge-guard"] == ("held" if holds else "deviated")
        verdicts.append(holds)
    assert any(verdicts) and not all(verdicts)  # some questions held at the fallback, some not
    records = [r for r in read_traffic(tmp_path / "traffic").requests if r["endpoint"] == "extproc"]
    assert [r["guard"]["held"] for r in records] == verdicts


def user_chat(question: str) -> object:
    """A `forge` chat request of one user message."""
    from forge_core.server.chat_request import parse_chat_request

    return parse_chat_request({"model": "forge", "messages": [{"role": "user", "content": question}]})


@pytest.mark.e2e
def test_the_forge_extproc_command_serves_envoys_stream_until_sigterm(
        tmp_path_factory: pytest.TempPathFactory, trained_store: tuple[Store, str], host: CountingHost) -> None:
    store = copy_store(trained_store[0], tmp_path_factory.mktemp("extproc-cli"))
    save_host_config(store, HostConfig(name="counting", kind="openai", model="m", base_url=host.base_url,
                                       max_retries=0, timeout_s=10.0))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "forge_core.cli", "extproc", "--router", trained_store[1], "--host", "counting",
               "--benchmark", BENCHMARK, "--port", str(port), "--traffic-dir", str(tmp_path_factory.mktemp("t"))]
    process = subprocess.Popen(command, env={**os.environ, "FORGE_STORE": str(store.path)}, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=300)
        envoy = EnvoySide(ext_proc_grpc.ExternalProcessorStub(channel))
        envoy.send(request_headers=header_map({":method": "POST"}))
        routed = envoy.send(request_body=ext_proc.HttpBody(body=json.dumps(CHAT).encode(), end_of_stream=True))
        envoy.close()
        body = routed.request_body.response.body_mutation.body
        assert json.loads(body)["model"] == "m" and "x-forge-arm" in set_headers(routed.request_body.response)
        channel.close()
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=600)  # a hang guard: beside two busy loops 120 s ran out
    assert process.returncode == 0, err
    assert f"on 127.0.0.1:{port}" in err and "passed unchanged: none" in err  # the command speaks on stderr
    assert out == ""
