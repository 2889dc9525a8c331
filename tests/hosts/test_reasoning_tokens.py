"""Reasoning tokens counted by the host's own tokenize endpoint where `usage` reports none: found
once per host, one call per generation with reasoning text, word pieces only as the fallback."""

from __future__ import annotations

import asyncio

from forge_core.hosts.base import Generation, GenerationRequest, HostConfig, HostError
from forge_core.hosts.http_retry import RetryingJsonClient, RetryPolicy
from forge_core.hosts.openai_compat import OpenAICompatibleHost
from forge_core.hosts.reasoning_tokens import TOKENIZE_FAILURES_TO_GIVE_UP, ReasoningTokenizer
from forge_core.hosts.tokenizers import PromptTokenizer

from support.thinking_server import Engine, ThinkingServer

QUESTION = ({"role": "user", "content": "Capital of France?"},)


def _generate(server: ThinkingServer, thinking: str, budgets: tuple[int | None, ...]) -> list[Generation]:
    config = HostConfig(name="h", kind="openai", model="m", base_url=server.base_url, thinking=thinking, max_retries=0)

    async def go() -> list[Generation]:
        async with OpenAICompatibleHost(config) as client:
            return [await client.generate(GenerationRequest(QUESTION, max_tokens=64, thinking_budget=budget))
                    for budget in budgets]

    return asyncio.run(go())


def test_vllm_reasoning_text_is_counted_by_its_tokenize_endpoint_not_by_word_pieces() -> None:
    engine = Engine("vllm", natural_reasoning=300, reasoning_word="step.", tokenizes=True)
    with ThinkingServer(engine) as server:
        first, second = _generate(server, "vllm", (1024, 4096))
        asked = list(server.tokenize_requests)
    assert (first.tokens_reasoning, first.reasoning_method, first.tokens_out) == (300, "tokenizer", 301)
    assert second.reasoning_method == "tokenizer"
    reasoning = "step. " * 299 + "step."
    # found once: llama-server's shape refused (HTTP 400), vLLM's answered the empty text; then one call each
    assert [request.get("prompt", request.get("content")) for request in asked] == ["", "", reasoning, reasoning]
    assert asked[2] == {"model": "m", "prompt": reasoning, "add_special_tokens": False}


def test_without_a_tokenize_endpoint_the_word_piece_estimate_stays_and_is_not_asked_again() -> None:
    engine = Engine("vllm", natural_reasoning=300, reasoning_word="step.")
    with ThinkingServer(engine) as server:
        first, second = _generate(server, "vllm", (1024, 1024))
        asked = len(server.tokenize_requests)
    assert (first.tokens_reasoning, first.reasoning_method) == (301, "estimated")  # 600 pieces, capped at the output
    assert second.reasoning_method == "estimated"
    assert asked == 3  # each known endpoint once, for the first generation only


def test_llama_server_tokenize_is_found_first_and_usage_counts_or_no_reasoning_ask_nothing() -> None:
    with ThinkingServer(Engine("llamacpp", natural_reasoning=200, tokenizes=True)) as server:
        off, thinking = _generate(server, "llamacpp", (None, 1024))
        asked = list(server.tokenize_requests)
    assert (off.tokens_reasoning, off.reasoning_method) == (0, "none")
    assert (thinking.tokens_reasoning, thinking.reasoning_method) == (200, "tokenizer")
    assert asked[0] == {"content": "", "add_special": False} and len(asked) == 2
    with ThinkingServer(Engine("openai", tokenizes=True)) as server:
        (reported,) = _generate(server, "openai", (1024,))
        assert server.tokenize_requests == []
    assert reported.reasoning_method == "usage"


def test_the_embedded_runtime_counts_as_its_gguf_vocabulary_does(tiny_server: HostConfig) -> None:
    text = "Okay, let me think. The capital of France is Paris, so the answer is Paris."
    roots = (tiny_server.base_url.removesuffix("/v1"),)

    async def count() -> tuple[int | None, str]:
        tokenizer = ReasoningTokenizer(RetryingJsonClient(tiny_server, RetryPolicy(0), roots), tiny_server.model,
                                       lambda: ({}, None))
        try:
            return await tokenizer.count(text), tokenizer.dialect.engine
        finally:
            await tokenizer.client.aclose()

    counted, engine = asyncio.run(count())
    assert engine == "llama-cpp-python"
    assert counted == PromptTokenizer(tiny_server.model).count_text(text) > 0


class FailingAfterProbe:
    """A tokenize client that answers the probe (the empty text) and fails every count after it."""

    def __init__(self) -> None:
        self.posts = 0

    async def post(self, post):
        self.posts += 1
        if post.body["content"] == "":
            return 0, 1.0, 1
        raise HostError("HTTP 503")


def test_a_failing_tokenize_endpoint_warns_once_and_is_left_after_five_failures(caplog) -> None:
    client = FailingAfterProbe()
    tokenizer = ReasoningTokenizer(client, "m", lambda: ({}, None))

    async def count_seven_times() -> list[int | None]:
        return [await tokenizer.count("some reasoning") for _ in range(7)]

    with caplog.at_level("WARNING", logger="forge_core.hosts.reasoning_tokens"):
        counts = asyncio.run(count_seven_times())
    assert counts == [None] * 7
    assert client.posts == 1 + TOKENIZE_FAILURES_TO_GIVE_UP  # the probe, then five failures; then not asked
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 2 and "until the tokenize endpoint answers" in warnings[0]
    assert "from now on" in warnings[1]
