"""`forge serve`: the official `openai` client against the server (a test-double host that keeps
every request it receives, and the real tiny host), raw HTTP for the errors, concurrency and the
metrics; the host calls per request by router kind, shadow Always-Raw, and the drop-in proxy
(conversation and settings passed on, what cannot be honoured refused)."""

from __future__ import annotations

import asyncio
import math
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from forge_core.arms import alphabet
from forge_core.evidence.prompts import QA_INSTRUCTION, SYSTEM_PROMPT
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.routing import live
from forge_core.server.app import ServeSettings, serving_in_thread
from forge_core.store import Store
from forge_core.training.request import TrainRequest
from forge_core.training.settings import Stage1Config
from forge_core.training.trainer import train_router

from support.answering_server import AnsweringServer
from support.resources import require_module, require_tiny_model
from support.stores import copy_store

openai = require_module("openai", "the openai client is a test extra: pip install -e '.[test]'")
BENCHMARK = "musique"
QUESTION = "Who founded the city of Rome?"
IN_FLIGHT = 24


@pytest.fixture(scope="module")
def double() -> Iterator[AnsweringServer]:
    """The test-double host; `double.received` holds every request it got."""
    with AnsweringServer() as server:
        yield server


@pytest.fixture(scope="module")
def double_store(tmp_path_factory: pytest.TempPathFactory, trained_store: tuple[Store, str],
                 double: AnsweringServer) -> tuple[Store, str]:
    """A copy of the trained store with the test-double host `double` and a dead host `dead`."""
    store = copy_store(trained_store[0], tmp_path_factory.mktemp("serve"))
    save_host_config(store, HostConfig(name="double", kind="openai", model="m", base_url=double.base_url,
                                       max_retries=0, timeout_s=10.0))
    save_host_config(store, HostConfig(name="dead", kind="openai", model="m", base_url="http://127.0.0.1:9/v1",
                                       max_retries=0, timeout_s=5.0))
    return store, trained_store[1]


@pytest.fixture(scope="module")
def double_url(double_store: tuple[Store, str]) -> Iterator[str]:
    store, checkpoint_id = double_store
    with serving_in_thread(store, ServeSettings(host="double", benchmark=BENCHMARK, router=checkpoint_id)) as url:
        yield url


def test_openai_client_routes_and_answers(double_url: str, double_store: tuple[Store, str]) -> None:
    client = openai.OpenAI(base_url=f"{double_url}/v1", api_key="unused")
    names = [model.id for model in client.models.list()]
    assert names == ["forge", *(f"forge-arm-{arm.name}" for arm in alphabet(6))]  # `double` has no checkpoint

    completion = client.chat.completions.create(model="forge", messages=[{"role": "user", "content": QUESTION}])
    forge = completion.model_extra["forge"]
    assert forge["router"] == double_store[1] and forge["arm"] == max(forge["probabilities"],
                                                                     key=forge["probabilities"].get)
    assert completion.choices[0].message.content.startswith("answer ")
    assert {"evidence", "tokens_in", "tokens_out", "latency_ms", "routing_ms", "host_calls"} <= set(forge)
    assert (forge["host_calls"], forge["raw_cost_tokens"], forge["always_raw"]) == (1, None, None)  # no Raw call
    assert completion.usage.prompt_tokens == forge["tokens_in"]  # the one host call
    assert completion.usage.completion_tokens == forge["tokens_out"]

    stream = client.chat.completions.create(model="forge-arm-direct:no_think", stream=True,
                                            messages=[{"role": "user", "content": QUESTION}])
    chunks = list(stream)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks)
    assert text.startswith("answer ") and chunks[-1].choices[0].finish_reason == "stop"
    last = chunks[-1].model_extra["forge"]
    assert (last["arm"], last["router"], last["answer_text"]) == ("direct:no_think", "override", text)


def test_errors_are_openai_json_with_the_right_status(double_url: str, double_store: tuple[Store, str],
                                                      monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    completions = f"{double_url}/v1/chat/completions"
    cases = [(b"not json", 400, "not JSON"), (b'{"messages": "x"}', 400, "messages"),
             (b'{"messages": [{"role": "user", "content": "  "}]}', 400, "the question is empty"),
             (b'{"model": "gpt-4", "messages": [{"role": "user", "content": "Q?"}]}', 404, "unknown model")]
    for body, status, message in cases:
        response = httpx.post(completions, content=body, headers={"content-type": "application/json"})
        assert response.status_code == status and message in response.json()["error"]["message"], body

    store, checkpoint_id = double_store
    monkeypatch.setenv("FORGE_TEST_SERVE_KEY", "s3cret")
    settings = ServeSettings(host="dead", benchmark=BENCHMARK, router=checkpoint_id, api_key_env="FORGE_TEST_SERVE_KEY")
    with serving_in_thread(store, settings) as url:
        body = {"model": "forge", "messages": [{"role": "user", "content": QUESTION}]}
        assert httpx.post(f"{url}/v1/chat/completions", json=body).status_code == 401
        wrong = httpx.post(f"{url}/v1/chat/completions", json=body, headers={"authorization": "Bearer nope"})
        assert wrong.status_code == 401 and wrong.json()["error"]["type"] == "authentication_error"
        failed = httpx.post(f"{url}/v1/chat/completions", json=body, headers={"authorization": "Bearer s3cret"},
                            timeout=60)
        assert failed.status_code == 502 and "the host failed" in failed.json()["error"]["message"]

    monkeypatch.setenv("FORGE_MODELS_DIR", str(tmp_path))  # the tiny model is absent: loading fails
    settings = ServeSettings(host="embedded-tiny", benchmark=BENCHMARK, router=checkpoint_id)
    with serving_in_thread(store, settings) as url:
        unavailable = httpx.post(f"{url}/v1/chat/completions", json={"messages": [{"role": "user", "content": "Q?"}]})
        assert unavailable.status_code == 503 and "could not load" in unavailable.json()["error"]["message"]


def counter(text: str, name: str) -> float:
    """The sum of a metric's samples whose line starts with `name` in a /metrics text."""
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name))


def test_lite_router_sends_one_host_call_per_request_and_metrics(double_url: str, double: AnsweringServer) -> None:
    before = httpx.get(f"{double_url}/metrics").text
    received = len(double.received)

    async def ask_all() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=120) as client:
            return await asyncio.gather(*(client.post(f"{double_url}/v1/chat/completions", json={
                "model": "forge", "messages": [{"role": "user", "content": f"{QUESTION} ({i})"}]})
                for i in range(IN_FLIGHT)))

    responses = asyncio.run(ask_all())
    assert [r.status_code for r in responses] == [200] * IN_FLIGHT
    after = httpx.get(f"{double_url}/metrics").text
    ok_requests = 'forge_requests_total{status="200"}'
    assert counter(after, ok_requests) - counter(before, ok_requests) == IN_FLIGHT
    assert counter(after, "forge_arm_chosen_total") - counter(before, "forge_arm_chosen_total") == IN_FLIGHT
    assert len(double.received) - received == IN_FLIGHT  # N requests in, N host calls out
    assert counter(after, "forge_host_calls_total") - counter(before, "forge_host_calls_total") == IN_FLIGHT
    spent = sum(r.json()["usage"]["total_tokens"] for r in responses)
    assert spent == sum(AnsweringServer.usage(body)["total_tokens"] for _, body in double.received[received:])
    assert counter(after, "forge_realized_tokens_total") - counter(before, "forge_realized_tokens_total") == spent
    assert counter(after, "forge_request_latency_seconds_count") - counter(
        before, "forge_request_latency_seconds_count") == IN_FLIGHT
    assert "forge_tokens_saved_total" not in after and counter(after, "forge_shadow_raw_calls_total") == 0
    time.sleep(0.5)  # nothing arrives after the responses either (no shadow share)
    assert len(double.received) - received == IN_FLIGHT


def test_forge_serve_refuses_bad_settings(double_store: tuple[Store, str]) -> None:
    env = {**os.environ, "FORGE_STORE": str(double_store[0].path)}
    for args, message in [(["--router", "ckpt-missing"], "no checkpoint 'ckpt-missing'"),
                          (["--host", "double"], "no lite router for host 'double'"),
                          (["--router", double_store[1], "--api-key-env", "FORGE_UNSET_KEY_VAR"], "is not set"),
                          (["--router", double_store[1], "--shadow-raw", "1.5"], "between 0 and 1")]:
        result = subprocess.run([sys.executable, "-m", "forge_core.cli", "serve", *args], capture_output=True,
                                text=True, env=env, timeout=120, check=False)
        assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_openai_client_on_the_tiny_host(double_store: tuple[Store, str]) -> None:
    require_tiny_model()
    store, checkpoint_id = double_store
    settings = ServeSettings(host="embedded-tiny", benchmark=BENCHMARK, router=checkpoint_id)
    with serving_in_thread(store, settings) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", timeout=300)
        completion = client.chat.completions.create(model="forge", messages=[{"role": "user", "content": QUESTION}])
        assert completion.usage.prompt_tokens >= completion.model_extra["forge"]["tokens_in"] > 0
        chunks = list(client.chat.completions.create(model="forge-arm-summary:no_think", stream=True,
                                                     messages=[{"role": "user", "content": QUESTION}]))
        assert chunks[-1].model_extra["forge"]["arm"] == "summary:no_think"
        assert "".join(c.choices[0].delta.content or "" for c in chunks).strip()


@pytest.fixture(scope="module")
def full_router(double_store: tuple[Store, str]) -> str:
    """A Full (probe-using) router trained on the synthetic host's stored outcomes and probes."""
    return train_router(double_store[0], TrainRequest(host="synthetic-host", variant="full",
                                                      stage1=Stage1Config(max_epochs=3)))


def ask(client: Any, model: str, question: str, **settings: Any) -> Any:
    return client.chat.completions.create(model=model, messages=[{"role": "user", "content": question}], **settings)


def test_full_router_sends_probes_and_answer_reusing_the_greedy_probe(
        double_store: tuple[Store, str], double: AnsweringServer, full_router: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    settings = ServeSettings(host="double", benchmark=BENCHMARK, router=full_router)
    with serving_in_thread(double_store[0], settings) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
        for number in range(4):
            received = len(double.received)
            completion = ask(client, "forge", f"{QUESTION} ({number})")
            forge = completion.model_extra["forge"]
            calls = 4 if forge["arm"] == "direct:no_think" else 5
            assert (forge["probe_calls"], forge["host_calls"], len(double.received) - received) == (4, calls, calls)
            bodies = [body for _, body in double.received[received:]]
            assert completion.usage.total_tokens == sum(AnsweringServer.usage(b)["total_tokens"] for b in bodies)

        direct_only = {arm.name: float(arm.name == "direct:no_think") for arm in alphabet(6)}
        monkeypatch.setattr(live, "router_probabilities", lambda *_: direct_only)
        received = len(double.received)
        completion = ask(client, "forge", QUESTION)
        greedy = [body for _, body in double.received[received:] if body["temperature"] == 0.0]
        assert len(double.received) - received == 4 and len(greedy) == 1  # the greedy probe is the answer
        assert completion.model_extra["forge"]["answer_is_probe"] is True
        assert completion.usage.total_tokens == sum(AnsweringServer.usage(b)["total_tokens"]
                                                    for _, b in double.received[received:])
        received = len(double.received)
        sampled = ask(client, "forge", QUESTION, temperature=0.5)  # no longer the probe's request: its own call
        assert len(double.received) - received == 5 and sampled.model_extra["forge"]["host_calls"] == 5


def test_shadow_raw_runs_after_the_response_and_estimates_the_saving(double_store: tuple[Store, str],
                                                                      double_url: str) -> None:
    evidence = lambda body: body["messages"][-1]["content"].startswith("Evidence:")  # noqa: E731
    shadows_may_answer = threading.Event()

    def held_shadows(body: dict[str, Any]) -> float:
        """No wait for an answer call; a shadow (Evidence:) call is answered only once the test says so."""
        if evidence(body):
            shadows_may_answer.wait()
        return 0.0

    with AnsweringServer(delay_s=held_shadows) as slow:
        try:
            store = double_store[0]
            save_host_config(store, HostConfig(name="slow-raw", kind="openai", model="m", base_url=slow.base_url,
                                               max_retries=0, timeout_s=600.0, max_concurrency=8))
            settings = ServeSettings(host="slow-raw", benchmark=BENCHMARK, router=double_store[1], shadow_raw=1.0)
            with serving_in_thread(store, settings) as url:
                client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
                routed = []
                for number in range(3):  # direct:no_think: one answer call, then one shadow raw:no_think call
                    # answered while the shadow calls are held: the response never waits for the shadow (a
                    # response that did would hang until pytest's --timeout)
                    routed.append(ask(client, "forge-arm-direct:no_think", f"{QUESTION} [{number}]").usage.total_tokens)
                assert counter(httpx.get(f"{url}/metrics").text, "forge_shadow_raw_calls_total") == 0  # all held
                shadows_may_answer.set()
                while counter(text := httpx.get(f"{url}/metrics").text, "forge_shadow_raw_calls_total") < 3:
                    time.sleep(0.1)  # until the three shadows are counted (a hang ends at pytest's --timeout)
        finally:
            shadows_may_answer.set()
        raw = [AnsweringServer.usage(body)["total_tokens"] for _, body in slow.received if evidence(body)]
    assert len(slow.received) == 6 and len(raw) == 3
    savings = [r - t for r, t in zip(raw, routed)]
    half = 1.959964 * statistics.stdev(savings) / math.sqrt(3)
    model = '{model="forge-arm-direct:no_think"}'
    assert counter(text, "forge_shadow_raw_tokens_total") == sum(raw)
    assert counter(text, f"forge_shadowed_requests_total{model}") == 3
    assert counter(text, f"forge_saving_tokens_per_request{model}") == pytest.approx(statistics.mean(savings))
    assert counter(text, f"forge_saving_tokens_per_request_ci95_lower{model}") == pytest.approx(
        statistics.mean(savings) - half, abs=1e-5)
    assert counter(text, f"forge_saving_tokens_per_request_ci95_upper{model}") == pytest.approx(
        statistics.mean(savings) + half, abs=1e-5)
    assert counter(httpx.get(f"{double_url}/metrics").text, "forge_shadow_raw_calls_total") == 0  # rate 0


def test_the_conversation_and_settings_reach_the_host(double_url: str, double: AnsweringServer) -> None:
    client = openai.OpenAI(base_url=f"{double_url}/v1", api_key="unused")
    history = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi, ask away."}]
    messages = [{"role": "system", "content": "Answer like a pirate."}, {"role": "developer", "content": "Be brief."},
                *history, {"role": "user", "content": [{"type": "text", "text": QUESTION}]}]
    received = len(double.received)
    client.chat.completions.create(model="forge-arm-summary:no_think", messages=messages, max_tokens=20,
                                   temperature=0.3, top_p=0.8, seed=7, stop=["\n\n"], user="u1", n=1)
    (_, body), = double.received[received:]
    assert body["messages"][0] == {"role": "system",
                                   "content": f"{SYSTEM_PROMPT}\n\nAnswer like a pirate.\n\nBe brief."}
    assert body["messages"][1:3] == history
    question = body["messages"][3]
    assert question["role"] == "user" and len(body["messages"]) == 4
    assert question["content"].startswith("Evidence:\n") and f"Question: {QUESTION}\n\n{QA_INSTRUCTION}" in question[
        "content"]
    assert (body["max_tokens"], body["temperature"], body["top_p"], body["seed"], body["stop"]) == (
        20, 0.3, 0.8, 7, ["\n\n"])

    client.chat.completions.create(model="forge-arm-direct:cot", max_completion_tokens=1000,
                                   messages=[{"role": "user", "content": QUESTION}])
    client.chat.completions.create(model="forge-arm-direct:no_think", messages=[{"role": "user", "content": QUESTION}])
    (_, cot), (_, plain) = double.received[received + 1:]
    assert cot["max_tokens"] == 256 and plain["max_tokens"] == 64  # the arm's cap bounds the client's
    assert "stop" not in plain and "seed" not in plain and plain["temperature"] == 0.0  # the arm's own request
    assert [m["role"] for m in plain["messages"]] == ["system", "user"] and plain["messages"][0]["content"] == (
        SYSTEM_PROMPT)


def test_what_cannot_be_honoured_is_refused_naming_the_field(double_url: str, double: AnsweringServer) -> None:
    client = openai.OpenAI(base_url=f"{double_url}/v1", api_key="unused", max_retries=0)
    user = {"role": "user", "content": QUESTION}
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    cases: list[tuple[dict[str, Any], str]] = [
        ({"tools": [tool]}, "tools"), ({"tool_choice": "none"}, "tool_choice"), ({"n": 2}, "n"),
        ({"functions": [tool["function"]]}, "functions"), ({"logprobs": True}, "logprobs"),
        ({"top_logprobs": 2}, "top_logprobs"), ({"response_format": {"type": "json_object"}}, "response_format"),
        ({"presence_penalty": 0.5}, "presence_penalty"), ({"extra_body": {"best_of": 2}}, "best_of"),
        ({"temperature": 3}, "temperature"), ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
        ({"messages": [{"role": "user", "content": [{"type": "text", "text": QUESTION}, image]}]},
         "messages[0].content"),
        ({"messages": [{**user, "name": "ann"}]}, "messages[0].name"),
        ({"messages": [user, {"role": "tool", "content": "42", "tool_call_id": "c1"}]}, "messages[1].tool_call_id"),
        ({"messages": [user, {"role": "assistant", "content": "Romulus"}]}, "messages[1].role"),
    ]
    received = len(double.received)
    for settings, param in cases:
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(model="forge", **{"messages": [user], **settings})
        assert refused.value.param == param and param.split(".")[-1] in refused.value.message, settings
    assert len(double.received) == received  # nothing reached the host
