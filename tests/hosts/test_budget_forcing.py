"""Budget forcing against the vLLM- and llama.cpp-format thinking doubles: reasoning capped at the
budget, the thinking block closed in a partial assistant message (vLLM) or appended to the prompt
rendered by llama-server's template and continued by its raw completion endpoint, the answer
continued, both calls charged."""

from __future__ import annotations

import asyncio

import pytest

from forge_core.errors import InvalidInput
from forge_core.hosts.base import Generation, GenerationRequest, HostConfig
from forge_core.hosts.budget_forcing import forced_generation
from forge_core.hosts.http_retry import UnusableResponse
from forge_core.hosts.openai_compat import OpenAICompatibleHost, parse_raw_completion
from forge_core.hosts.registry import config_hash, save_host_config
from forge_core.store import Store

from support.thinking_server import Engine, ThinkingServer

QUESTION = ({"role": "user", "content": "Capital of France?"},)


def _generate(server: ThinkingServer, budget: int | None, forcing: bool = True, thinking: str = "vllm") -> Generation:
    config = HostConfig(name="h", kind="openai", model="m", base_url=server.base_url, thinking=thinking,
                        budget_forcing=forcing, max_retries=0)

    async def go() -> Generation:
        async with OpenAICompatibleHost(config) as client:
            return await client.generate(GenerationRequest(QUESTION, max_tokens=64, thinking_budget=budget))

    return asyncio.run(go())


def test_an_engine_that_ignores_the_budget_is_stopped_at_it_and_continued_for_the_answer() -> None:
    with ThinkingServer(Engine("vllm", natural_reasoning=3000, honours_budget=False)) as server:
        generation = _generate(server, 1024)
        first, second = server.received
    assert first["max_tokens"] == 1024 and "continue_final_message" not in first
    assert second["continue_final_message"] is True and second["add_generation_prompt"] is False
    assert second["max_tokens"] == 64
    partial = second["messages"][-1]
    assert partial["role"] == "assistant" and partial["content"].startswith("<think>\nstep step")
    assert partial["content"].endswith("\n</think>\n\n")
    assert generation.text == "Paris"
    assert (generation.tokens_in, generation.tokens_out, generation.tokens_reasoning) == (40, 1025, 1024)
    assert generation.reasoning_method == "usage" and generation.attempts == 2


def test_reasoning_within_the_budget_needs_one_call() -> None:
    with ThinkingServer(Engine("vllm", natural_reasoning=300)) as server:
        generation = _generate(server, 1024)
        assert len(server.received) == 1
    assert (generation.text, generation.tokens_out, generation.tokens_reasoning) == ("Paris", 301, 300)


def test_off_depths_and_hosts_without_forcing_send_one_ordinary_call() -> None:
    with ThinkingServer(Engine("vllm", natural_reasoning=3000, honours_budget=False)) as server:
        _generate(server, None)
        unforced = _generate(server, 1024, forcing=False)
        assert len(server.received) == 2 and server.received[1]["max_tokens"] == 64 + 1024
    assert unforced.text == "" and unforced.tokens_reasoning == 1088  # cut at the cap: no answer


def test_llama_cpp_is_continued_through_its_own_template_and_raw_completion_endpoint() -> None:
    with ThinkingServer(Engine("llamacpp", natural_reasoning=3000, honours_budget=False)) as server:
        generation = _generate(server, 1024, thinking="llamacpp")
        paths, (first, template, raw) = server.received_paths, server.received
    assert paths == ["/v1/chat/completions", "/apply-template", "/completion"]
    assert first["max_tokens"] == 1024 and "continue_final_message" not in first
    assert template == {"messages": list(QUESTION), "chat_template_kwargs": {"enable_thinking": True}}
    reasoning = " ".join(["step"] * 1024)
    assert raw["prompt"] == ("<|im_start|>user\nCapital of France?<|im_end|>\n<|im_start|>assistant\n"
                             f"<think>\n{reasoning}\n</think>\n\n")
    assert raw["n_predict"] == 64 and raw["temperature"] == 0.0 and "max_tokens" not in raw
    assert generation.text == "Paris"
    tokens_in = 20 + len(raw["prompt"].split())  # both prompts: the double counts a raw prompt's words
    assert (generation.tokens_in, generation.tokens_out, generation.tokens_reasoning) == (tokens_in, 1025, 1024)
    assert generation.reasoning_method == "usage" and generation.attempts == 3


def test_a_template_that_opens_the_think_block_is_not_given_a_second_one() -> None:
    engine = Engine("llamacpp", natural_reasoning=3000, honours_budget=False, template_opens_think=True)
    with ThinkingServer(engine) as server:
        generation = _generate(server, 1024, thinking="llamacpp")
        prompt = server.received[-1]["prompt"]
    assert prompt.count("<think>") == 1 and prompt.endswith("<think>\n" + " ".join(["step"] * 1024) + "\n</think>\n\n")
    assert generation.text == "Paris"


def test_a_raw_completion_is_read_with_its_own_token_counts_and_never_guessed() -> None:
    generation, reasoning = parse_raw_completion({"content": "<think>\nstep step\n</think>\n\n Paris",
                                                  "tokens_evaluated": 50, "tokens_predicted": 7})
    assert (generation.text, generation.tokens_in, generation.tokens_out, reasoning) == ("Paris", 50, 7, "step step")
    assert (generation.tokens_reasoning, generation.reasoning_method) == (2, "estimated")
    with pytest.raises(UnusableResponse, match="tokens_predicted"):
        parse_raw_completion({"content": "Paris", "tokens_evaluated": 50})


def test_a_second_call_that_reasons_again_is_charged_as_reasoning() -> None:
    first = Generation("", 20, 1024, 0, 10.0, reasoning_method="estimated")
    second = Generation("Paris", 30, 501, 500, 5.0, reasoning_method="estimated")
    combined = forced_generation(first, second)
    assert (combined.tokens_in, combined.tokens_out, combined.tokens_reasoning) == (50, 1525, 1524)
    assert combined.reasoning_method == "estimated" and combined.latency_ms == 15.0


def test_forcing_is_part_of_the_configuration_hash_and_needs_a_thinking_chat_host(tmp_path) -> None:
    plain = HostConfig(name="h", kind="openai", model="m", base_url="http://127.0.0.1:1/v1", thinking="vllm")
    forced = HostConfig(**{**plain.__dict__, "budget_forcing": True})
    assert config_hash(plain) != config_hash(forced)
    with pytest.raises(InvalidInput, match="budget forcing needs an openai-kind host with thinking depths"):
        save_host_config(Store(tmp_path / "s.duckdb"), HostConfig(**{**forced.__dict__, "thinking": "none"}))
