"""`hosted`: one client lifetime, with the embedded server it needs, closed even when the block raises."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from forge_core import config
from forge_core.hosts.base import GenerationRequest, Host, HostConfig
from forge_core.hosts.embedded import running_server
from forge_core.hosts.lifetime import hosted
from forge_core.hosts.models import is_pulled
from forge_core.hosts.openai_compat import OpenAICompatibleHost
from forge_core.hosts.registry import BUILTIN_HOSTS

from support.answering_server import AnsweringServer

TINY = BUILTIN_HOSTS["embedded-tiny"]
QUESTION = GenerationRequest(({"role": "user", "content": "What is the capital of France?"},), max_tokens=4)


class BlockFailed(Exception):
    """Raised inside a `hosted` block by the tests."""


@pytest.fixture
def closed(monkeypatch: pytest.MonkeyPatch) -> list[Host]:
    """The OpenAI-compatible clients closed during the test, in order."""
    closed_hosts: list[Host] = []
    close = OpenAICompatibleHost.aclose

    async def recording_close(host: OpenAICompatibleHost) -> None:
        closed_hosts.append(host)
        await close(host)

    monkeypatch.setattr(OpenAICompatibleHost, "aclose", recording_close)
    return closed_hosts


def answer_then_fail(host_config: HostConfig, inside: list) -> None:
    """One real call inside `hosted(host_config)`, then an exception; records the client and what
    the block saw (the client's base URL, the running embedded server) in `inside`."""

    async def run() -> None:
        async with hosted(host_config) as client:
            await client.generate(QUESTION)
            inside.extend([client, client.config.base_url, running_server(host_config.model)])
            raise BlockFailed

    with pytest.raises(BlockFailed):
        asyncio.run(run())


def test_a_remote_client_is_closed_when_the_block_raises(closed: list[Host]) -> None:
    inside: list = []
    with AnsweringServer() as server:
        remote = HostConfig(name="remote", kind="openai", model="m", base_url=server.base_url)
        answer_then_fail(remote, inside)
        assert len(server.received) == 1
    assert closed == [inside[0]] and inside[1] == server.base_url


def test_the_server_hosted_started_is_stopped_when_the_block_raises(closed: list[Host]) -> None:
    if not is_pulled(TINY.model, config.models_dir()):
        pytest.skip("tiny model not pulled: run `forge host pull smollm2-135m`")
    assert running_server(TINY.model) is None  # this test's own cache directory: none announced
    inside: list = []
    answer_then_fail(TINY, inside)
    client, base_url, server = inside
    assert server is not None and base_url == server.base_url  # started, and the client spoke to it
    assert closed == [client]
    assert running_server(TINY.model) is None
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{base_url}/models", timeout=2.0)


def test_a_served_configuration_is_used_as_it_is_and_its_server_kept(tiny_server: HostConfig,
                                                                     closed: list[Host]) -> None:
    inside: list = []
    answer_then_fail(tiny_server, inside)
    assert closed == [inside[0]] and inside[1] == tiny_server.base_url
    assert httpx.get(f"{tiny_server.base_url}/models", timeout=2.0).status_code == 200
