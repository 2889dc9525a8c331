"""One host, several endpoints: least-loaded choice, resting a failing replica, stored configs."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from forge_core.hosts.base import GenerationRequest, HostConfig, HostError
from forge_core.hosts.endpoints import EndpointPool
from forge_core.hosts.openai_compat import OpenAICompatibleHost
from forge_core.hosts.registry import config_hash, get_host_config, save_host_config, with_base_urls
from forge_core.store import Store

from support.answering_server import AnsweringServer


def request(n: int) -> GenerationRequest:
    return GenerationRequest(messages=({"role": "user", "content": f"question {n}"},), max_tokens=8)


def replicas(urls: list[str], concurrency: int, retries: int = 3) -> HostConfig:
    config = HostConfig(name="replicated", kind="openai", model="m", max_concurrency=concurrency,
                        max_retries=retries, timeout_s=5.0)
    return with_base_urls(config, urls)


def answer_all(config: HostConfig, n: int) -> list:
    async def go():
        async with OpenAICompatibleHost(config, retry_base_delay_s=0.001) as client:
            return await asyncio.gather(*(client.generate(request(i)) for i in range(n)))
    return asyncio.run(go())


def served(server: AnsweringServer) -> int:
    return sum(server.attempts.values())


def test_requests_spread_over_replicas_up_to_each_limit() -> None:
    with AnsweringServer(delay_s=0.2) as first, AnsweringServer(delay_s=0.2) as second:
        answers = answer_all(replicas([first.base_url, second.base_url], concurrency=4), 8)
    assert len(answers) == 8 and all(a.text.startswith("answer") for a in answers)
    assert served(first) == served(second) == 4  # least-loaded: 4 in flight on each at once


def test_a_failing_replica_is_rested_while_the_other_answers() -> None:
    with AnsweringServer(fail=lambda body, attempt: 503) as broken, AnsweringServer() as healthy:
        answers = answer_all(replicas([broken.base_url, healthy.base_url], concurrency=2), 20)
        assert len(answers) == 20
        assert served(healthy) == 20
        assert served(broken) <= 3 + 1  # rested after 3 failures in a row (one more may be in flight)


def test_every_replica_failing_is_a_host_error() -> None:
    with AnsweringServer(fail=lambda body, attempt: 500) as one, AnsweringServer(fail=lambda body, attempt: 500) as two:
        with pytest.raises(HostError, match="failed after 2 attempts"):
            answer_all(replicas([one.base_url, two.base_url], concurrency=1, retries=1), 1)


def test_pool_waits_when_every_endpoint_is_full() -> None:
    async def go() -> list[str]:
        pool = EndpointPool(("http://a", "http://b"), capacity=1)
        first, second = await pool.acquire(), await pool.acquire()
        third = asyncio.create_task(pool.acquire())
        await asyncio.sleep(0.01)
        assert not third.done()
        await pool.release(second, True)
        return [first.base_url, second.base_url, (await third).base_url]
    assert asyncio.run(go()) == ["http://a", "http://b", "http://b"]


def test_replicas_do_not_change_the_config_hash_and_old_configs_load(tmp_path) -> None:
    one = replicas(["http://127.0.0.1:1/v1"], 4)
    many = replicas(["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"], 16)
    assert config_hash(one) == config_hash(many)
    store = Store(tmp_path / "store.duckdb")
    store.save_host_config("old", {"name": "old", "kind": "openai", "model": "m", "base_url": "http://h:1/v1",
                                   "thinking": "none", "api_key_env": "", "max_concurrency": 4,
                                   "timeout_s": 120.0, "max_retries": 4})  # the shape stored before replicas
    old = get_host_config(store, "old")
    assert old.base_urls == ("http://h:1/v1",) and old.replica_urls == ()
    save_host_config(store, many)
    assert get_host_config(store, "replicated") == many
    with pytest.raises(ValueError, match="twice"):
        save_host_config(store, replicas(["http://h/v1", "http://h/v1"], 4))


def test_cli_host_add_takes_several_base_urls() -> None:
    add = [sys.executable, "-m", "forge_core.cli", "host", "add", "vllm-dp", "--model", "qwen",
           "--base-url", "http://127.0.0.1:8001/v1", "--base-url", "http://127.0.0.1:8002/v1", "--concurrency", "16"]
    assert subprocess.run(add, capture_output=True, text=True).returncode == 0
    listed = subprocess.run([sys.executable, "-m", "forge_core.cli", "host", "list", "--json"],
                            capture_output=True, text=True)
    host = json.loads(listed.stdout)["hosts"]["vllm-dp"]
    assert host["base_url"] == "http://127.0.0.1:8001/v1"
    assert host["replica_urls"] == ["http://127.0.0.1:8002/v1"] and host["max_concurrency"] == 16
    bad = subprocess.run([*add[:8], "--base-url", "ftp://x"], capture_output=True, text=True)
    assert bad.returncode == 2 and "must start with http" in bad.stderr + bad.stdout
