"""The server tokenizer's failures after its probe reach the caller as one-line `HostError`s."""

from __future__ import annotations

import httpx
import pytest

from forge_core.hosts.base import HostConfig, HostError
from forge_core.hosts.tokenizers import ServerTokenizer

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def _tokenizer(handler) -> ServerTokenizer:
    tokenizer = ServerTokenizer(HostConfig(name="vllm", kind="openai", model="m", base_url="http://vllm.test/v1"))
    tokenizer.client = httpx.Client(transport=httpx.MockTransport(handler))
    return tokenizer


def test_a_count_is_read_from_the_reply() -> None:
    assert _tokenizer(lambda request: httpx.Response(200, json={"count": 7})).count(BODY) == 7


@pytest.mark.parametrize(("handler", "message"), [
    (lambda request: httpx.Response(503, json={}), "http://vllm.test/tokenize: HTTP 503"),
    (lambda request: httpx.Response(200, text="not json"), "the reply holds no token count"),
    (lambda request: httpx.Response(200, json={"tokens": []}), "the reply holds no token count"),
])
def test_a_failed_count_is_a_host_error(handler, message: str) -> None:
    with pytest.raises(HostError, match=message):
        _tokenizer(handler).count(BODY)


def test_a_timeout_is_a_host_error() -> None:
    def timeout(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    with pytest.raises(HostError, match="host 'vllm': http://vllm.test/tokenize: ReadTimeout"):
        _tokenizer(timeout).count(BODY)
