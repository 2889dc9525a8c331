"""FORGE inside LiteLLM (`forge_core.server.litellm_hook`): a real `litellm.Router` with the hook in
front of the counting test host. The request reaching the host carries the routed evidence and
settings, the decision comes back in the response, a token budget moves the weights and every
request is in the traffic log; a request with tools passes unchanged (fail open)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.server.app import ServeSettings
from forge_core.server.deployment import WeightsRequest
from forge_core.store import Store
from forge_core.traffic_log import read_traffic

from support.counting_host import CountingHost
from support.resources import require_module
from support.stores import copy_store
from support.streaming_host import StreamingHost

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # LiteLLM would fetch its price list from the network
litellm = require_module("litellm", "litellm is the gateways extra: pip install -e '.[gateways]'")
hook_module = require_module("forge_core.server.litellm_hook", "litellm is the gateways extra")
BENCHMARK = "musique"
TARGET = 150.0  # mean tokens a request: between what the router spends at its lowest and highest weights
MESSAGES = [{"role": "system", "content": "Answer in English."}, {"role": "user", "content": "I read about Italy."},
            {"role": "assistant", "content": "Nice."}, {"role": "user", "content": "Who founded the city of Rome?"}]
QUESTIONS = ["Who founded the city of Rome?", "When was the Eiffel Tower built?", "Who wrote Hamlet?",
             "What is the capital of Australia?", "Which river flows through Vienna?", "Who painted Guernica?"]


@pytest.fixture(scope="module")
def host() -> Iterator[CountingHost]:
    """The counting test-double host."""
    with CountingHost() as server:
        yield server


@pytest.fixture(scope="module")
def hook_store(tmp_path_factory: pytest.TempPathFactory, conditioned_store: tuple[Store, str],
               host: CountingHost) -> tuple[Store, str]:
    store = copy_store(conditioned_store[0], tmp_path_factory.mktemp("litellm"))
    save_host_config(store, HostConfig(name="counting", kind="openai", model="m", base_url=host.base_url,
                                       max_retries=0, timeout_s=10.0))
    return store, conditioned_store[1]


def router(hook: object, host: CountingHost) -> object:
    """A LiteLLM `Router` with one deployment, the counting host, and FORGE as its callback."""
    litellm.callbacks = [hook]
    return litellm.Router(model_list=[{"model_name": "team-model", "litellm_params": {
        "model": "openai/m", "api_base": host.base_url, "api_key": "unused"}}])


def test_a_litellm_router_sends_the_routed_request_and_returns_the_decision(
        hook_store: tuple[Store, str], host: CountingHost, tmp_path: Path) -> None:
    store, checkpoint_id = hook_store
    hook = hook_module.ForgeHook(store, ServeSettings(host="counting", benchmark=BENCHMARK, router=checkpoint_id,
                                                      traffic_dir=tmp_path))
    try:
        chat = router(hook, host)
        expected = hook.gateway.route({"messages": MESSAGES, "max_tokens": 40}, {}, "test").routed
        response = asyncio.run(chat.acompletion(model="team-model", messages=MESSAGES, max_tokens=40,
                                                metadata={"forge_client": "team-a"}))
        sent = host.received[-1][1]
        assert sent["messages"] == expected.body["messages"] and sent["model"] == "m"
        assert sent["messages"][0]["content"].endswith("\n\nAnswer in English.") and sent["max_tokens"] == 40
        assert expected.evidence_text in sent["messages"][-1]["content"]
        forge = response.forge
        assert (forge["arm"], forge["margin"], forge["router"]) == (expected.arm, round(expected.decision.margin, 6),
                                                                   checkpoint_id)
        call = {"litellm_call_id": response._hidden_params["litellm_call_id"]}
        headers = asyncio.run(hook.async_post_call_response_headers_hook(call, None, response))
        assert headers["x-forge-arm"] == expected.arm and headers["x-forge-weights"] == "0.1,0.2"

        calls = len(host.received)
        tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
        asyncio.run(chat.acompletion(model="team-model", messages=MESSAGES[-1:], tools=tools))
        assert host.received[-1][1]["messages"] == MESSAGES[-1:] and len(host.received) == calls + 1  # unchanged
        assert hook.gateway.passed == {"unsupported": 1}
    finally:
        hook.close()
    records = read_traffic(tmp_path).requests
    assert [r["endpoint"] for r in records] == ["litellm", "litellm"]
    routed, passed = records
    assert routed["client"] == "team-a" and routed["arm"] == expected.arm and routed["host_calls"] == 1
    assert routed["tokens"] == response.usage.total_tokens and routed["tokens"] > 0
    assert passed["passed"].startswith("unsupported: `tools`")


def test_a_token_budget_moves_the_weights_through_the_hook(hook_store: tuple[Store, str], host: CountingHost,
                                                            tmp_path: Path) -> None:
    store, checkpoint_id = hook_store
    settings = ServeSettings(host="counting", benchmark=BENCHMARK, router=checkpoint_id, traffic_dir=tmp_path,
                             weights=WeightsRequest(budget_tokens=TARGET))
    hook = hook_module.ForgeHook(store, settings)
    try:
        chat = router(hook, host)
        start = hook.gateway.state.weights.states()[0].weights

        async def ask_all() -> list:
            return await asyncio.gather(*(chat.acompletion(model="team-model", messages=[
                {"role": "user", "content": question}]) for question in QUESTIONS))

        responses = asyncio.run(ask_all())
        (budget,) = hook.gateway.state.weights.states()
    finally:
        hook.close()
    spent = sum(response.usage.total_tokens for response in responses)
    assert budget.requests == len(QUESTIONS) and budget.weights.lambda_in != start.lambda_in
    assert (budget.weights.lambda_in > start.lambda_in) == (spent > TARGET * len(QUESTIONS))  # above it: dearer
    records = read_traffic(tmp_path).requests
    assert sum(r["tokens"] for r in records) == spent and {r["budget"] for r in records} == {"default"}


def test_a_streamed_answer_is_charged_once_from_its_usage(hook_store: tuple[Store, str], tmp_path: Path) -> None:
    store, checkpoint_id = hook_store
    with StreamingHost() as streaming:
        save_host_config(store, HostConfig(name="streaming", kind="openai", model="m", base_url=streaming.base_url,
                                           max_retries=0, timeout_s=10.0))
        hook = hook_module.ForgeHook(store, ServeSettings(host="streaming", benchmark=BENCHMARK, router=checkpoint_id,
                                                          traffic_dir=tmp_path))
        try:
            litellm.callbacks = [hook]
            chat = litellm.Router(model_list=[{"model_name": "team-model", "litellm_params": {
                "model": "openai/m", "api_base": streaming.base_url, "api_key": "unused"}}])

            async def stream() -> list:
                reply = await chat.acompletion(model="team-model", messages=MESSAGES[-1:], stream=True,
                                               stream_options={"include_usage": True})
                chunks = [chunk async for chunk in reply]
                for _ in range(200):  # LiteLLM logs a finished stream in a task of its own
                    if hook.gateway.state.metrics.answered:
                        break
                    await asyncio.sleep(0.05)
                return chunks

            chunks = asyncio.run(stream())
        finally:
            hook.close()
        sent = streaming.received[-1]
    assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices) == "answer"
    assert sent["stream"] is True and "Question: Who founded the city of Rome?" in sent["messages"][-1]["content"]
    (record,) = read_traffic(tmp_path).requests
    assert record["tokens"] == CountingHost.usage(sent)["total_tokens"] and record["host_calls"] == 1
    assert hook.gateway.state.metrics.answered == 1
