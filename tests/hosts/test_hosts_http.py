"""HTTP hosts against real local servers that speak the OpenAI and Anthropic protocols.

Each test scripts a threaded HTTP server on 127.0.0.1 with the replies it should give, in order
(the last one repeats), then checks what the client sent and what it returned.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from forge_core.hosts.anthropic import AnthropicHost
from forge_core.hosts.base import Generation, GenerationRequest, HostConfig, HostError
from forge_core.hosts.http_retry import HttpHost, RetryingJsonClient, parse_retry_after
from forge_core.hosts.openai_compat import OpenAICompatibleHost

from support.replay import RecordingHost, ReplayHost, request_key

TINY_BACKOFF_S = 0.001
HANG_S = 3600.0  # a reply that never comes within a test (the server cuts it short when it stops)
QUESTION = GenerationRequest(
    messages=(
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "Capital of France?"},
    ),
    max_tokens=64,
)


# --- scripted server -----------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP response."""

    status: int = 200
    body: Any = None  # dict/list -> JSON; str/bytes -> sent as is
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # wait before answering (cut short when the server stops)


@dataclass(frozen=True)
class ReceivedRequest:
    """What the server saw."""

    path: str
    headers: dict[str, str]  # lower-case names
    body: Any


class ScriptedServer:
    """A threaded HTTP server answering POSTs with scripted replies; counts requests in flight."""

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = replies
        self.requests: list[ReceivedRequest] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._httpd.handle_error = lambda request, address: None  # clients that gave up
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _receive(self, request: ReceivedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            reply = self.replies[min(len(self.requests), len(self.replies)) - 1]
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        return reply

    def _finish(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = {name.lower(): value for name, value in self.headers.items()}
                reply = server._receive(ReceivedRequest(self.path, headers, json.loads(raw)))
                try:
                    server._stopping.wait(reply.delay_s)
                    self._send(reply)
                finally:
                    server._finish()

            def _send(self, reply: Reply) -> None:
                payload = reply.body
                if isinstance(payload, (dict, list)):
                    payload = json.dumps(payload)
                if isinstance(payload, str):
                    payload = payload.encode()
                payload = payload or b""
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        return Handler


@pytest.fixture
def serve() -> Iterator[Callable[..., ScriptedServer]]:
    """Start scripted servers: `serve(reply, reply, ...)`; all stop after the test."""
    servers: list[ScriptedServer] = []

    def start(*replies: Reply) -> ScriptedServer:
        server = ScriptedServer(list(replies))
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


# --- helpers -------------------------------------------------------------------------------


def chat_completion(
    text: str | None = "Paris",
    prompt_tokens: int = 11,
    completion_tokens: int = 3,
    **usage_extra: Any,
) -> dict[str, Any]:
    """An OpenAI chat-completions success body."""
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, **usage_extra}
    usage["total_tokens"] = prompt_tokens + completion_tokens
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": usage,
    }


def anthropic_message(
    text: str = "Paris", input_tokens: int = 20, output_tokens: int = 5
) -> dict[str, Any]:
    """An Anthropic Messages success body with a thinking block before the answer."""
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "The capital is Paris.", "signature": "sig"},
            {"type": "text", "text": text[:2]},
            {"type": "text", "text": text[2:]},
        ],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }


def host_config(
    server: ScriptedServer | None, kind: str = "openai", **overrides: Any
) -> HostConfig:
    """A test host config pointing at `server`'s /v1."""
    settings: dict[str, Any] = {
        "name": f"test-{kind}",
        "kind": kind,
        "model": "test-model",
        "base_url": f"{server.url}/v1" if server else "",
        "max_retries": 3,
        "timeout_s": 5.0,
    }
    settings.update(overrides)
    return HostConfig(**settings)


def openai_host(server: ScriptedServer, **overrides: Any) -> OpenAICompatibleHost:
    return OpenAICompatibleHost(host_config(server, **overrides), retry_base_delay_s=TINY_BACKOFF_S)


def anthropic_host(server: ScriptedServer, **overrides: Any) -> AnthropicHost:
    config = host_config(server, kind="anthropic", **overrides)
    return AnthropicHost(config, retry_base_delay_s=TINY_BACKOFF_S)


def generate(client: HttpHost, request: GenerationRequest = QUESTION) -> Generation:
    """One call on a fresh event loop, closing the client afterwards."""

    async def call() -> Generation:
        async with client:
            return await client.generate(request)

    return asyncio.run(call())


def generate_error(client: HttpHost, request: GenerationRequest = QUESTION) -> HostError:
    with pytest.raises(HostError) as caught:
        generate(client, request)
    return caught.value


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- OpenAI-compatible host ----------------------------------------------------------------


def test_openai_success_reports_exact_tokens_text_and_wire_body(serve) -> None:
    server = serve(Reply(body=chat_completion("Paris", prompt_tokens=11, completion_tokens=3)))
    generation = generate(openai_host(server))

    assert generation.text == "Paris"
    assert (generation.tokens_in, generation.tokens_out, generation.tokens_reasoning) == (11, 3, 0)
    assert generation.raw_usage == {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
    assert generation.latency_ms > 0
    [sent] = server.requests
    assert sent.path == "/v1/chat/completions"
    assert "authorization" not in sent.headers
    assert sent.body == {
        "model": "test-model",
        "messages": [dict(message) for message in QUESTION.messages],
        "temperature": 0.0,
        "top_p": 1.0,
        "max_tokens": 64,
    }


def test_openai_sends_seed_and_sampling_when_given(serve) -> None:
    server = serve(Reply(body=chat_completion()))
    request = GenerationRequest(
        QUESTION.messages, max_tokens=24, temperature=0.7, top_p=0.9, seed=7
    )
    generate(openai_host(server), request)

    body = server.requests[0].body
    sampling = (body["temperature"], body["top_p"], body["seed"], body["max_tokens"])
    assert sampling == (0.7, 0.9, 7, 24)


def test_openai_null_completion_tokens_details_gives_zero_reasoning(serve) -> None:
    server = serve(Reply(body=chat_completion(completion_tokens_details=None)))
    generation = generate(openai_host(server))

    assert (generation.tokens_out, generation.tokens_reasoning) == (3, 0)
    assert generation.raw_usage["completion_tokens_details"] is None


def test_openai_reports_reasoning_tokens_and_keeps_reasoning_out_of_text(serve) -> None:
    body = chat_completion("42", prompt_tokens=30, completion_tokens=250,
                           completion_tokens_details={"reasoning_tokens": 240})
    body["choices"][0]["message"]["reasoning_content"] = "Let me think about this at length."
    server = serve(Reply(body=body))
    generation = generate(openai_host(server, thinking="vllm-qwen3"))

    assert generation.text == "42"
    tokens = (generation.tokens_in, generation.tokens_out, generation.tokens_reasoning)
    assert tokens == (30, 250, 240)


def test_openai_null_content_is_empty_text(serve) -> None:
    server = serve(Reply(body=chat_completion(None, completion_tokens=64)))

    assert generate(openai_host(server)).text == ""


def test_openai_429_is_retried_after_retry_after(serve, monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []  # the waits between attempts, recorded instead of slept

    async def recorded_sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(RetryingJsonClient, "sleep", staticmethod(recorded_sleep))
    server = serve(
        Reply(429, {"error": {"message": "Rate limit reached"}}, headers={"Retry-After": "0.3"}),
        Reply(body=chat_completion()),
    )
    generation = generate(openai_host(server))

    assert waits == [0.3]  # the 1 ms backoff lengthened to the announced Retry-After
    assert generation.text == "Paris"
    assert len(server.requests) == 2


@pytest.mark.parametrize("status", [500, 502, 503])
def test_openai_server_errors_are_retried(serve, status: int) -> None:
    server = serve(Reply(status, {"error": {"message": "busy"}}), Reply(status, "oops"),
                   Reply(body=chat_completion()))

    assert generate(openai_host(server)).text == "Paris"
    assert len(server.requests) == 3


def test_openai_hang_past_timeout_is_retried(serve) -> None:
    # The first reply does not come while the test runs (the server cuts it short when it stops): only
    # the client's per-attempt timeout can end that attempt; without it the test hangs until pytest's --timeout.
    server = serve(Reply(body=chat_completion("late"), delay_s=HANG_S), Reply(body=chat_completion()))
    generation = generate(openai_host(server, timeout_s=2.0))

    assert generation.text == "Paris"  # the second attempt's answer: the first was given up, not waited for
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    "garbage",
    ["<html>502 Bad Gateway</html>", {"object": "chat.completion"}, {"choices": []},
     {"choices": [{"index": 0}]}, [1, 2, 3]],
    ids=["not-json", "no-choices", "empty-choices", "no-message", "json-list"],
)
def test_openai_garbage_is_retried_then_fails(serve, garbage: Any) -> None:
    server = serve(Reply(body=garbage))
    error = generate_error(openai_host(server, max_retries=2))

    assert len(server.requests) == 3
    assert "failed after 3 attempts" in str(error)
    assert "\n" not in str(error)


def test_openai_garbage_then_success_recovers(serve) -> None:
    server = serve(Reply(body="not json"), Reply(body=chat_completion()))

    assert generate(openai_host(server)).text == "Paris"


def test_openai_permanent_400_fails_at_once_with_provider_message(serve) -> None:
    message = "max_tokens is too large:\n 999999"
    error_body = {"error": {"message": message, "type": "invalid_request_error"}}
    server = serve(Reply(400, error_body))
    error = generate_error(openai_host(server))

    assert len(server.requests) == 1
    assert str(error) == "host 'test-openai': HTTP 400: max_tokens is too large: 999999"


def test_openai_llama_cpp_style_string_error_is_reported(serve) -> None:
    server = serve(Reply(404, {"error": "model not found"}))

    assert "HTTP 404: model not found" in str(generate_error(openai_host(server)))
    assert len(server.requests) == 1


def test_openai_missing_usage_fails_without_retry(serve) -> None:
    body = chat_completion()
    del body["usage"]
    server = serve(Reply(body=body))
    error = generate_error(openai_host(server))

    assert "no usage" in str(error)
    assert len(server.requests) == 1


def test_openai_usage_without_completion_tokens_fails(serve) -> None:
    body = chat_completion()
    del body["usage"]["completion_tokens"]
    server = serve(Reply(body=body))

    assert "usage.completion_tokens" in str(generate_error(openai_host(server)))


def test_api_key_from_env_is_sent_but_never_shown(serve, monkeypatch, caplog) -> None:
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("FORGE_TEST_KEY", secret)
    echo = {"error": {"message": f"Incorrect API key provided: {secret}"}}
    server = serve(Reply(500, echo), Reply(401, echo))
    client = openai_host(server, api_key_env="FORGE_TEST_KEY")
    with caplog.at_level(logging.DEBUG, logger="forge_core"):
        error = generate_error(client)

    assert [r.headers["authorization"] for r in server.requests] == [f"Bearer {secret}"] * 2
    assert "HTTP 401" in str(error)
    for shown in (str(error), repr(error), repr(client), caplog.text):
        assert secret not in shown
    assert "Incorrect API key provided: ***" in str(error)


def test_missing_api_key_env_gives_clear_error_before_any_request(serve, monkeypatch) -> None:
    monkeypatch.delenv("FORGE_TEST_MISSING_KEY", raising=False)
    server = serve(Reply(body=chat_completion()))
    error = generate_error(openai_host(server, api_key_env="FORGE_TEST_MISSING_KEY"))

    assert "environment variable FORGE_TEST_MISSING_KEY is not set" in str(error)
    assert server.requests == []


def test_connection_refused_is_retried_then_fails() -> None:
    config = host_config(None, base_url=f"http://127.0.0.1:{free_port()}/v1", max_retries=2)
    error = generate_error(OpenAICompatibleHost(config, retry_base_delay_s=TINY_BACKOFF_S))

    assert "failed after 3 attempts: connection error" in str(error)


def test_concurrency_is_bounded_by_max_concurrency(serve) -> None:
    server = serve(Reply(body=chat_completion(), delay_s=0.15))
    client = openai_host(server, max_concurrency=2)

    async def six_calls() -> list[Generation]:
        async with client:
            return await asyncio.gather(*(client.generate(QUESTION) for _ in range(6)))

    generations = asyncio.run(six_calls())

    assert len(generations) == 6
    assert len(server.requests) == 6
    assert server.max_in_flight == 2


CONTROL_FIELDS = (
    "chat_template_kwargs", "thinking_token_budget", "reasoning_effort", "thinking",
    "max_tokens", "max_completion_tokens",
)


@pytest.mark.parametrize(
    ("thinking", "budget", "expected"),
    [
        ("none", None, {"max_tokens": 64}),
        ("none", 1024, {"max_tokens": 64}),
        ("vllm-qwen3", None,
         {"max_tokens": 64, "chat_template_kwargs": {"enable_thinking": False}}),
        ("vllm-qwen3", 1024, {"max_tokens": 1088, "chat_template_kwargs": {"enable_thinking": True},
                              "thinking_token_budget": 1024}),
        ("openai-effort", None, {"max_completion_tokens": 64}),
        ("openai-effort", 1024, {"max_completion_tokens": 1088, "reasoning_effort": "low"}),
        ("openai-effort", 4096, {"max_completion_tokens": 4160, "reasoning_effort": "high"}),
        ("deepseek", None, {"max_tokens": 64, "thinking": {"type": "disabled"}}),
        ("deepseek", 1024,
         {"max_tokens": 1088, "thinking": {"type": "enabled"}, "reasoning_effort": "low"}),
        ("deepseek", 4096,
         {"max_tokens": 4160, "thinking": {"type": "enabled"}, "reasoning_effort": "high"}),
    ],
)
def test_openai_thinking_fields_in_body(
    serve, thinking: str, budget: int | None, expected: dict
) -> None:
    server = serve(Reply(body=chat_completion()))
    request = GenerationRequest(QUESTION.messages, max_tokens=64, thinking_budget=budget)
    generate(openai_host(server, thinking=thinking), request)

    body = server.requests[0].body
    controls = {key: body[key] for key in CONTROL_FIELDS if key in body}
    assert controls == expected
    sampling_sent = "temperature" in body and "top_p" in body
    assert sampling_sent == (thinking != "openai-effort")


def test_unknown_thinking_control_is_rejected(serve) -> None:
    server = serve(Reply(body=chat_completion()))

    with pytest.raises(HostError, match="thinking control 'anthropic'"):
        openai_host(server, thinking="anthropic")


def test_parse_retry_after_accepts_seconds_and_http_dates() -> None:
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after("0.5") == 0.5
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


# --- Anthropic host ------------------------------------------------------------------------


def test_anthropic_success_moves_system_and_concatenates_text(serve, monkeypatch) -> None:
    monkeypatch.setenv("FORGE_TEST_ANTHROPIC_KEY", "ak-secret")
    server = serve(Reply(body=anthropic_message("Paris", input_tokens=20, output_tokens=5)))
    generation = generate(anthropic_host(server, api_key_env="FORGE_TEST_ANTHROPIC_KEY"))

    assert generation.text == "Paris"
    # the thinking block "The capital is Paris." is 5 word pieces, inside output_tokens
    assert (generation.tokens_in, generation.tokens_out, generation.tokens_reasoning) == (20, 5, 5)
    assert generation.reasoning_method == "estimated"
    [sent] = server.requests
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == "ak-secret"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.body == {
        "model": "test-model",
        "system": "Answer briefly.",
        "messages": [{"role": "user", "content": "Capital of France?"}],
        "max_tokens": 64,
        "temperature": 0.0,
    }


def test_anthropic_thinking_budget_sets_thinking_max_tokens_and_temperature(serve) -> None:
    server = serve(Reply(body=anthropic_message()))
    request = GenerationRequest(QUESTION.messages, max_tokens=64, top_p=0.9, thinking_budget=1024)
    generate(anthropic_host(server, thinking="anthropic"), request)

    body = server.requests[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert body["max_tokens"] == 1088
    assert body["temperature"] == 1.0
    assert "top_p" not in body


def test_anthropic_without_thinking_control_ignores_budget(serve) -> None:
    server = serve(Reply(body=anthropic_message()))
    request = GenerationRequest(QUESTION.messages, max_tokens=64, top_p=0.9, thinking_budget=1024)
    generate(anthropic_host(server), request)

    body = server.requests[0].body
    assert "thinking" not in body
    assert (body["max_tokens"], body["temperature"], body["top_p"]) == (64, 0.0, 0.9)


def test_anthropic_counts_prompt_cache_tokens_as_input(serve) -> None:
    body = anthropic_message(input_tokens=20, output_tokens=5)
    body["usage"].update(cache_creation_input_tokens=100, cache_read_input_tokens=None)
    server = serve(Reply(body=body))

    assert generate(anthropic_host(server)).tokens_in == 120


@pytest.mark.parametrize("status", [429, 500, 529])
def test_anthropic_overload_and_server_errors_are_retried(serve, status: int) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server = serve(Reply(status, overloaded), Reply(body=anthropic_message()))

    assert generate(anthropic_host(server)).text == "Paris"
    assert len(server.requests) == 2


def test_anthropic_400_fails_at_once_with_provider_message(serve) -> None:
    detail = {"type": "invalid_request_error", "message": "budget_tokens: too small"}
    invalid = {"type": "error", "error": detail}
    server = serve(Reply(400, invalid))
    error = generate_error(anthropic_host(server))

    assert str(error) == "host 'test-anthropic': HTTP 400: budget_tokens: too small"
    assert len(server.requests) == 1


def test_anthropic_missing_usage_fails(serve) -> None:
    body = anthropic_message()
    del body["usage"]
    server = serve(Reply(body=body))

    assert "no usage" in str(generate_error(anthropic_host(server)))
    assert len(server.requests) == 1


def test_anthropic_garbage_is_retried_then_fails(serve) -> None:
    server = serve(Reply(body={"type": "message"}))
    error = generate_error(anthropic_host(server, max_retries=1))

    assert "failed after 2 attempts: malformed response" in str(error)
    assert len(server.requests) == 2


def test_anthropic_default_base_url() -> None:
    client = AnthropicHost(host_config(None, kind="anthropic"))

    assert "https://api.anthropic.com/v1/messages" in repr(client)
    asyncio.run(client.aclose())


# --- recording and replay ------------------------------------------------------------------


def test_record_then_replay_gives_identical_generations(serve, tmp_path: Path) -> None:
    answer = chat_completion("Paris", completion_tokens_details={"reasoning_tokens": 0})
    server = serve(Reply(body=answer))
    path = tmp_path / "recordings" / "host.jsonl"
    other = GenerationRequest(({"role": "user", "content": "Capital of Italy?"},), max_tokens=64)
    recorder = RecordingHost(openai_host(server), path)

    async def record() -> list[Generation]:
        async with recorder:
            return [await recorder.generate(QUESTION), await recorder.generate(other)]

    recorded = asyncio.run(record())
    replay = ReplayHost(path, host_config(None, kind="replay"))
    replayed = [asyncio.run(replay.generate(QUESTION)), asyncio.run(replay.generate(other))]

    assert replayed == recorded
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["key"] for line in lines] == [request_key(QUESTION), request_key(other)]
    assert len(server.requests) == 2


def test_replay_of_unrecorded_request_fails(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    replay = ReplayHost(path, host_config(None, kind="replay"))

    with pytest.raises(HostError, match="no recording for request"):
        asyncio.run(replay.generate(QUESTION))


def test_replay_returns_repeated_samples_in_recorded_order(serve, tmp_path: Path) -> None:
    server = serve(Reply(body=chat_completion("A")), Reply(body=chat_completion("B")))
    path = tmp_path / "samples.jsonl"
    sample = GenerationRequest(QUESTION.messages, max_tokens=24, temperature=0.7, top_p=0.9)
    recorder = RecordingHost(openai_host(server), path)

    async def record_two() -> None:
        async with recorder.inner:
            await recorder.generate(sample)
            await recorder.generate(sample)

    asyncio.run(record_two())
    replay = ReplayHost(path, host_config(None, kind="replay"))

    assert [asyncio.run(replay.generate(sample)).text for _ in range(3)] == ["A", "B", "A"]


def test_concurrent_recording_writes_one_whole_line_per_call(serve, tmp_path: Path) -> None:
    server = serve(Reply(body=chat_completion("x" * 5000)))
    path = tmp_path / "concurrent.jsonl"
    recorder = RecordingHost(openai_host(server, max_concurrency=8), path)
    requests = [
        GenerationRequest(({"role": "user", "content": f"q{i}"},), max_tokens=8) for i in range(16)
    ]

    async def record_all() -> None:
        async with recorder.inner:
            await asyncio.gather(*(recorder.generate(request) for request in requests))

    asyncio.run(record_all())
    keys = [json.loads(line)["key"] for line in path.read_text().splitlines()]

    assert sorted(keys) == sorted(request_key(request) for request in requests)


def test_request_key_is_stable_and_discriminating() -> None:
    same = GenerationRequest(QUESTION.messages, max_tokens=64, temperature=0, top_p=1)
    hotter = GenerationRequest(QUESTION.messages, max_tokens=64, temperature=0.7)

    assert request_key(same) == request_key(QUESTION)
    assert request_key(hotter) != request_key(QUESTION)
    assert len(request_key(QUESTION)) == 64


def test_stop_reaches_both_wire_bodies_and_an_unset_stop_changes_no_key(serve) -> None:
    stopped = GenerationRequest(QUESTION.messages, max_tokens=64, stop=("\n", "END"))
    openai_server = serve(Reply(body=chat_completion()))
    generate(openai_host(openai_server), stopped)
    anthropic_server = serve(Reply(body=anthropic_message("Paris")))
    generate(anthropic_host(anthropic_server), stopped)

    assert openai_server.requests[0].body["stop"] == ["\n", "END"]
    assert anthropic_server.requests[0].body["stop_sequences"] == ["\n", "END"]
    # the key QUESTION had before `stop` existed: stored recordings stay valid
    assert request_key(QUESTION) == "546fc12fc51c51d797367fbff4a7928c3a993adbb0d821dd68fdebf8c8aa455a"
    assert request_key(stopped) != request_key(QUESTION)


def test_replay_host_requires_the_recording_file(tmp_path: Path) -> None:
    with pytest.raises(HostError, match="no recording file"):
        ReplayHost(tmp_path / "missing.jsonl", host_config(None, kind="replay"))
