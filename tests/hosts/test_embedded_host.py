"""The embedded llama.cpp host on real models: token accounting and `forge ask` end to end."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from forge_core import config
from forge_core.arms import parse_arm
from forge_core.evidence.prompts import build_request
from forge_core.hosts.base import GenerationRequest, HostConfig, HostError
from forge_core.hosts.embedded import EmbeddedServer, running_server
from forge_core.hosts.models import is_pulled
from forge_core.hosts.openai_compat import OpenAICompatibleHost
from forge_core.hosts.registry import BUILTIN_HOSTS
from forge_core.store import Store

from support.resources import require_tiny_model


def generate(config_: HostConfig, request: GenerationRequest, received: list[dict] | None = None):
    """One call through our client; with `received`, every response body the client got from the
    server is appended to it (recorded on the wire, before our parser reads it)."""
    async def go():
        async with OpenAICompatibleHost(config_) as client:
            if received is not None:
                connections = next(iter(client._http._connections.values()))
                send = connections.post

                async def record(url: str, body: dict, headers: dict):
                    reply = await send(url, body, headers)
                    received.append(json.loads(reply.body))
                    return reply
                connections.post = record
            return await client.generate(request)
    return asyncio.run(go())


def test_token_counts_equal_the_servers_usage(tiny_server: HostConfig) -> None:
    request = build_request("Who wrote Dune?", "[1] Dune\nDune is a novel by Frank Herbert.", parse_arm("raw:no_think"),
                            False)
    received: list[dict] = []
    ours = generate(tiny_server, request, received)
    assert len(received) == 1  # one request, no retry: the usage below is that call's
    usage = received[0]["usage"]
    assert ours.text == received[0]["choices"][0]["message"]["content"]
    assert (ours.tokens_in, ours.tokens_out) == (usage["prompt_tokens"], usage["completion_tokens"])
    assert 0 < ours.tokens_out <= 64


def test_greedy_answers_are_deterministic_from_the_same_cache_state(tiny_server: HostConfig) -> None:
    # llama.cpp reuses the longest prompt prefix it still holds from the previous request, and
    # greedy output can depend on how much was reused (see docs/results.md, Reproducibility).
    # So each answer is preceded by the same unrelated request: both start from the same cache.
    other = build_request("Name a prime number.", "", parse_arm("direct:no_think"), False)
    request = build_request("What is the capital of France?", "", parse_arm("direct:no_think"), False)
    answers = []
    for _ in range(2):
        generate(tiny_server, other)
        answers.append(generate(tiny_server, request))
    assert answers[0].text == answers[1].text
    assert (answers[0].tokens_in, answers[0].tokens_out) == (answers[1].tokens_in, answers[1].tokens_out)


def test_forge_ask_json_on_the_tiny_model(imported_store: Store) -> None:
    require_tiny_model()
    env = {**os.environ, "FORGE_STORE": str(imported_store.path)}
    command = [sys.executable, "-m", "forge_core.cli", "ask", "Which magazine was started first, Arthur's Magazine "
               "or First for Women?", "--benchmark", "hotpotqa", "--arm", "raw:no_think", "--host", "embedded-tiny",
               "--json"]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert set(answer) >= {"answer", "arm", "tokens_in", "tokens_out", "latency_ms", "support_text"}
    assert answer["arm"] == "raw:no_think" and answer["tokens_in"] > 100 and answer["tokens_out"] > 0
    assert answer["support_text"].startswith("[1] ") and "\n\n[3] " in answer["support_text"]
    assert running_server("smollm2-135m") is None  # the server it started was stopped on exit


def test_unpulled_model_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("FORGE_MODELS_DIR", str(tmp_path))
    with pytest.raises(HostError, match="forge host pull smollm2-135m"):
        EmbeddedServer("smollm2-135m")


def test_thinking_arm_on_non_thinking_host_is_refused(imported_store: Store) -> None:
    env = {**os.environ, "FORGE_STORE": str(imported_store.path)}
    result = subprocess.run([sys.executable, "-m", "forge_core.cli", "ask", "Q?", "--arm", "raw:think_low",
                             "--host", "embedded-tiny"], capture_output=True, text=True, env=env)
    assert result.returncode == 2 and "needs a thinking host" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.qwen
@pytest.mark.parametrize("host", ["embedded", "embedded-small"])
def test_qwen_answers_with_exact_usage(host: str) -> None:
    model = BUILTIN_HOSTS[host].model
    if not is_pulled(model, config.models_dir()):
        pytest.skip(f"{model} not pulled: run `forge host pull {model}`")
    with EmbeddedServer(model) as server:
        served = HostConfig(name=host, kind="embedded", model=model, base_url=server.info.base_url)
        request = build_request("What is the capital of France?", "", parse_arm("direct:no_think"), False)
        generation = generate(served, request)
    assert "Paris" in generation.text and generation.tokens_in > 20


def test_the_server_computes_with_the_threads_forge_host_threads_names(monkeypatch: pytest.MonkeyPatch) -> None:
    from forge_core.errors import InvalidInput

    require_tiny_model()
    model = BUILTIN_HOSTS["embedded-tiny"].model
    monkeypatch.delenv("FORGE_HOST_THREADS", raising=False)
    assert EmbeddedServer(model).threads == os.cpu_count()
    monkeypatch.setenv("FORGE_HOST_THREADS", "1")
    assert EmbeddedServer(model).threads == 1
    assert EmbeddedServer(model, threads=3).threads == 3  # an explicit count wins
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("FORGE_HOST_THREADS", bad)
        with pytest.raises(InvalidInput, match=f"FORGE_HOST_THREADS is a number of threads .*'{bad}'"):
            EmbeddedServer(model)
