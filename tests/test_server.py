"""`forge serve`: the official `openai` client against the server (a test-double host and the real
tiny host), raw HTTP for the errors, concurrency and the metrics."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from answering_server import AnsweringServer
from conftest import copy_store, require_module, require_tiny_model

from forge_core.arms import alphabet
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.server.app import ServeSettings, serving_in_thread
from forge_core.store import Store

openai = require_module("openai", "the openai client is a test extra: pip install -e '.[test]'")
BENCHMARK = "musique"
QUESTION = "Who founded the city of Rome?"
IN_FLIGHT = 24


@pytest.fixture(scope="module")
def double_store(tmp_path_factory: pytest.TempPathFactory, trained_store: tuple[Store, str]) -> Iterator[tuple[Store, str]]:
    """A copy of the trained store with the test-double host `double` and a dead host `dead`."""
    store = copy_store(trained_store[0], tmp_path_factory.mktemp("serve"))
    with AnsweringServer() as double:
        save_host_config(store, HostConfig(name="double", kind="openai", model="m", base_url=double.base_url,
                                           max_retries=0, timeout_s=10.0))
        save_host_config(store, HostConfig(name="dead", kind="openai", model="m", base_url="http://127.0.0.1:9/v1",
                                           max_retries=0, timeout_s=5.0))
        yield store, trained_store[1]


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
    assert {"evidence", "tokens_in", "tokens_out", "latency_ms", "routing_ms", "raw_cost_tokens"} <= set(forge)
    extra_raw = forge["always_raw"] if forge["arm"] != "raw:no_think" else {"tokens_in": 0, "tokens_out": 0}
    assert completion.usage.prompt_tokens == forge["tokens_in"] + extra_raw["tokens_in"]  # every host call
    assert completion.usage.completion_tokens == forge["tokens_out"] + extra_raw["tokens_out"]

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
    with serving_in_thread(store, ServeSettings(host="embedded-tiny", benchmark=BENCHMARK, router=checkpoint_id)) as url:
        unavailable = httpx.post(f"{url}/v1/chat/completions", json={"messages": [{"role": "user", "content": "Q?"}]})
        assert unavailable.status_code == 503 and "could not load" in unavailable.json()["error"]["message"]


def test_many_requests_in_flight_and_metrics(double_url: str) -> None:
    def counter(text: str, name: str) -> float:
        return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name))

    before = httpx.get(f"{double_url}/metrics").text

    async def ask_all() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=120) as client:
            return await asyncio.gather(*(client.post(f"{double_url}/v1/chat/completions", json={
                "model": "forge", "messages": [{"role": "user", "content": f"{QUESTION} ({i})"}]})
                for i in range(IN_FLIGHT)))

    responses = asyncio.run(ask_all())
    assert [r.status_code for r in responses] == [200] * IN_FLIGHT
    after = httpx.get(f"{double_url}/metrics").text
    assert counter(after, 'forge_requests_total{status="200"}') - counter(before, 'forge_requests_total{status="200"}') == IN_FLIGHT
    assert counter(after, "forge_arm_chosen_total") - counter(before, "forge_arm_chosen_total") == IN_FLIGHT
    spent = sum(r.json()["usage"]["total_tokens"] for r in responses)
    assert counter(after, "forge_tokens_spent_total") - counter(before, "forge_tokens_spent_total") == spent
    saved = sum(r.json()["forge"]["tokens_saved"] for r in responses)
    assert counter(after, "forge_tokens_saved_total") - counter(before, "forge_tokens_saved_total") == saved
    assert counter(after, "forge_request_latency_seconds_count") - counter(
        before, "forge_request_latency_seconds_count") == IN_FLIGHT


def test_forge_serve_refuses_bad_settings(double_store: tuple[Store, str]) -> None:
    env = {**os.environ, "FORGE_STORE": str(double_store[0].path)}
    for args, message in [(["--router", "ckpt-missing"], "no checkpoint 'ckpt-missing'"),
                          (["--host", "double"], "no lite router for host 'double'"),
                          (["--router", double_store[1], "--api-key-env", "FORGE_UNSET_KEY_VAR"], "is not set")]:
        result = subprocess.run([sys.executable, "-m", "forge_core.cli", "serve", *args], capture_output=True,
                                text=True, env=env, timeout=120, check=False)
        assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_openai_client_on_the_tiny_host(double_store: tuple[Store, str]) -> None:
    require_tiny_model()
    store, checkpoint_id = double_store
    with serving_in_thread(store, ServeSettings(host="embedded-tiny", benchmark=BENCHMARK, router=checkpoint_id)) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", timeout=300)
        completion = client.chat.completions.create(model="forge", messages=[{"role": "user", "content": QUESTION}])
        assert completion.usage.prompt_tokens >= completion.model_extra["forge"]["tokens_in"] > 0
        chunks = list(client.chat.completions.create(model="forge-arm-summary:no_think", stream=True,
                                                     messages=[{"role": "user", "content": QUESTION}]))
        assert chunks[-1].model_extra["forge"]["arm"] == "summary:no_think"
        assert "".join(c.choices[0].delta.content or "" for c in chunks).strip()
