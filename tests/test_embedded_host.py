"""The embedded llama.cpp host on real models: token accounting and `forge ask` end to end."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import httpx
import pytest

from forge_core import config
from forge_core.hosts.base import GenerationRequest, HostConfig, HostError
from forge_core.hosts.embedded import EmbeddedServer, running_server
from forge_core.hosts.openai_compat import OpenAICompatibleHost
from forge_core.models import is_pulled
from forge_core.arms import parse_arm
from forge_core.prompts import build_request
from forge_core.store import Store


def generate(config_: HostConfig, request: GenerationRequest):
    async def go():
        host = OpenAICompatibleHost(config_)
        try:
            return await host.generate(request)
        finally:
            await host.aclose()
    return asyncio.run(go())


def test_token_counts_equal_the_servers_usage(tiny_server: HostConfig) -> None:
    request = build_request("Who wrote Dune?", "[1] Dune\nDune is a novel by Frank Herbert.", parse_arm("raw:no_think"), False)
    ours = generate(tiny_server, request)
    body = {"model": tiny_server.model, "messages": list(request.messages), "max_tokens": request.max_tokens,
            "temperature": 0.0, "top_p": 1.0}
    usage = httpx.post(f"{tiny_server.base_url}/chat/completions", json=body, timeout=300).json()["usage"]
    assert ours.text
    assert (ours.tokens_in, ours.tokens_out) == (usage["prompt_tokens"], usage["completion_tokens"])
    assert 0 < ours.tokens_out <= 64


def test_greedy_answers_are_deterministic(tiny_server: HostConfig) -> None:
    request = build_request("What is the capital of France?", "", parse_arm("direct:no_think"), False)
    assert generate(tiny_server, request).text == generate(tiny_server, request).text


def test_forge_ask_json_on_the_tiny_model(imported_store: Store) -> None:
    if not is_pulled("smollm2-135m", config.models_dir()):
        pytest.skip("tiny model not pulled: run `forge host pull smollm2-135m`")
    env = {**os.environ, "FORGE_STORE": str(imported_store.path)}
    command = [sys.executable, "-m", "forge_core.cli", "ask", "Which magazine was started first, Arthur's Magazine "
               "or First for Women?", "--benchmark", "hotpotqa", "--arm", "raw:no_think", "--host", "embedded-tiny", "--json"]
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
def test_qwen_answers_with_exact_usage() -> None:
    if not is_pulled("qwen2.5-coder-1.5b", config.models_dir()):
        pytest.skip("Qwen model not pulled: run `forge host pull qwen2.5-coder-1.5b`")
    with EmbeddedServer("qwen2.5-coder-1.5b") as server:
        served = HostConfig(name="embedded", kind="embedded", model="qwen2.5-coder-1.5b", base_url=server.info.base_url)
        request = build_request("What is the capital of France?", "", parse_arm("direct:no_think"), False)
        generation = generate(served, request)
    assert "Paris" in generation.text and generation.tokens_in > 20
