"""HTTP plumbing shared by the remote hosts: bounded concurrency, retries, backoff, API keys.

`HttpHost` is the base of `OpenAICompatibleHost` and `AnthropicHost`; each supplies only its wire
format. Requests go to the least-loaded healthy endpoint of the host (`forge_core.hosts.endpoints`:
one base URL, or several replicas of one model, each taking `max_concurrency` requests at once);
a retry may go to another endpoint. Retried: timeouts, connection errors, HTTP 429, HTTP 5xx
(including Anthropic's 529) and bodies the provider's parser rejects as malformed
(`MalformedResponse`), with exponential backoff and jitter, never shorter than the server's
Retry-After (up to the policy's longest wait). Any other 4xx, or a body rejected as
`UnusableResponse` (one no retry would fix), fails at once. Every failure reaches the caller as a
one-line `HostError` that never contains the API key.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import os
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from forge_core.errors import InvalidInput
from forge_core.hosts.base import Generation, GenerationRequest, Host, HostConfig, HostError
from forge_core.hosts.endpoints import Endpoint, EndpointPool
from forge_core.hosts.http_connections import EndpointConnections, HttpProtocolError, Reply

logger = logging.getLogger(__name__)


MAX_REASON_CHARS = 300


class MalformedResponse(Exception):
    """A 2xx body that is not what the protocol promises; retried like a transient failure."""


class UnusableResponse(Exception):
    """A 2xx body that parses but cannot be used (e.g. no token usage); not retried."""


class _RetryableFailure(Exception):
    """One failed attempt worth retrying, with the server's Retry-After when it sent one."""

    def __init__(self, reason: str, retry_after_s: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait between attempts."""

    max_retries: int  # retries after the first attempt
    base_delay_s: float = 0.5  # backoff before the first retry; doubles each retry
    max_delay_s: float = 30.0  # cap on any single wait, Retry-After included

    def backoff_s(self, retry_number: int) -> float:
        """Exponential backoff with equal jitter: half fixed, half random (retry_number from 0)."""
        ceiling = min(self.max_delay_s, self.base_delay_s * 2**retry_number)
        return ceiling / 2 + random.uniform(0, ceiling / 2)

    def wait_s(self, retry_number: int, retry_after_s: float | None) -> float:
        """The wait before a retry: the backoff, lengthened to the server's Retry-After."""
        wait = self.backoff_s(retry_number)
        if retry_after_s is not None:
            wait = max(wait, retry_after_s)
        return min(wait, self.max_delay_s)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP date), else None."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def read_api_key(config: HostConfig) -> str | None:
    """The API key from the environment variable the config names; None when none is named."""
    if not config.api_key_env:
        return None
    key = os.environ.get(config.api_key_env, "")
    if not key:
        raise HostError(
            f"host {config.name!r}: environment variable {config.api_key_env} is not set "
            "(it should hold the API key)"
        )
    return key


def provider_error_message(body: Any) -> str:
    """The provider's own error text from an error body (OpenAI, Anthropic, llama.cpp shapes)."""
    if not isinstance(body, dict):
        return ""
    error = body.get("error")
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or "")
    if isinstance(error, str):
        return error
    return str(body.get("message") or "")


def token_count(usage: dict[str, Any], field: str) -> int:
    """A token count from a provider's usage object; missing or non-integer is unusable."""
    value = usage.get(field)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UnusableResponse(f"usage.{field} is missing or not a token count: {value!r}")
    return value


def _one_line(text: str, secret: str | None) -> str:
    """Collapse whitespace, drop the secret, and cap the length of a failure reason."""
    if secret:
        text = text.replace(secret, "***")
    flat = " ".join(text.split())
    if len(flat) > MAX_REASON_CHARS:
        flat = flat[: MAX_REASON_CHARS - 3] + "..."
    return flat


def _http_failure_reason(reply: Reply) -> str:
    """`HTTP 400: <provider message>` for an error response."""
    try:
        message = provider_error_message(json.loads(reply.body))
    except ValueError:
        message = reply.body[:MAX_REASON_CHARS].decode(errors="replace")
    reason = f"HTTP {reply.status}"
    return f"{reason}: {message}" if message else reason


def _is_retryable_status(status: int) -> bool:
    return status == 429 or status >= 500


@dataclass(frozen=True)
class JsonPost:
    """One JSON POST to a host: which path (under whichever endpoint serves it), what, with which
    headers, how to read the reply, and the secret to scrub from any failure reason."""

    path: str  # appended to the endpoint's base URL, e.g. "/chat/completions"
    body: dict[str, Any]
    headers: dict[str, str]
    parse: Callable[[Any], Any]  # raises `MalformedResponse` (retried) or `UnusableResponse` (not)
    secret: str | None = None


class RetryingJsonClient:
    """POSTs JSON to one host's endpoints with bounded concurrency and retries; one per host object.

    At most `config.max_concurrency` calls are in flight per endpoint, backoff waits included, so
    an endpoint that answers 429 is not pressed harder. Each attempt is capped at
    `config.timeout_s` of wall time. Bound to the event loop it is first used in: create, use and
    close it within one loop.
    """

    sleep = staticmethod(asyncio.sleep)  # the wait between attempts (a test records it instead of waiting)

    def __init__(self, config: HostConfig, policy: RetryPolicy, base_urls: tuple[str, ...]) -> None:
        self.config = config
        self.policy = policy
        self.endpoints = EndpointPool(base_urls, config.max_concurrency)
        self._connections = {endpoint.base_url: EndpointConnections(config.max_concurrency)
                             for endpoint in self.endpoints.endpoints}

    async def post(self, request: JsonPost) -> tuple[Any, float, int]:
        """Send the POST, retrying as the policy allows, and parse the JSON reply; returns (parsed,
        latency_ms of the successful attempt, attempts made)."""
        last_reason = ""
        for retry_number in range(self.policy.max_retries + 1):
            endpoint = await self.endpoints.acquire()
            succeeded: bool | None = None
            try:
                parsed, latency_ms = await self._attempt(endpoint, request)
                succeeded = True
                return parsed, latency_ms, retry_number + 1
            except HostError as error:
                raise HostError(str(error), attempts=retry_number + 1) from None
            except _RetryableFailure as failure:
                succeeded = False
                last_reason = failure.reason
                if retry_number == self.policy.max_retries:
                    break
                wait = self.policy.wait_s(retry_number, failure.retry_after_s)
                logger.warning(
                    "host %s (%s): %s; retry %d/%d in %.2f s",
                    self.config.name, endpoint.base_url, failure.reason, retry_number + 1,
                    self.policy.max_retries, wait,
                )
                await self.sleep(wait)  # holding the slot: a struggling endpoint is not pressed
            finally:
                await self.endpoints.release(endpoint, succeeded)
        attempts = self.policy.max_retries + 1
        raise HostError(
            f"host {self.config.name!r}: failed after {attempts} attempts: {last_reason}", attempts
        )

    async def _attempt(self, endpoint: Endpoint, request: JsonPost) -> tuple[Any, float]:
        """One request to one endpoint; raises `_RetryableFailure` or `HostError` on failure."""
        secret = request.secret
        url = endpoint.base_url + request.path
        started = time.perf_counter()
        try:
            async with asyncio.timeout(self.config.timeout_s):
                response = await self._connections[endpoint.base_url].post(url, request.body, request.headers)
        except TimeoutError:
            raise _RetryableFailure(f"timed out after {self.config.timeout_s:g} s") from None
        except (OSError, HttpProtocolError) as exc:
            reason = _one_line(f"connection error: {type(exc).__name__}: {exc}", secret)
            raise _RetryableFailure(reason) from None
        except ValueError as exc:  # a header with a line break: no retry would send it
            raise HostError(f"host {self.config.name!r}: {_one_line(str(exc), secret)}") from None
        if response.status >= 400:
            reason = _one_line(_http_failure_reason(response), secret)
            if _is_retryable_status(response.status):
                retry_after = parse_retry_after(response.headers.get("retry-after"))
                raise _RetryableFailure(reason, retry_after)
            raise HostError(f"host {self.config.name!r}: {reason}")
        try:
            payload = json.loads(response.body)
        except ValueError:
            raise _RetryableFailure("response body is not JSON") from None
        try:
            parsed = request.parse(payload)
        except MalformedResponse as exc:
            raise _RetryableFailure(_one_line(f"malformed response: {exc}", secret)) from None
        except UnusableResponse as exc:
            reason = _one_line(str(exc), secret)
            raise HostError(f"host {self.config.name!r}: {reason}") from None
        return parsed, (time.perf_counter() - started) * 1000.0

    async def aclose(self) -> None:
        """Close every endpoint's connections."""
        for shards in self._connections.values():
            await shards.aclose()


class HttpHost(Host, ABC):
    """Base of the HTTP hosts: URL, API key and retries (`async with` comes from `Host`).

    A subclass names its endpoint and protocol and supplies the wire format:
    `request_body`, `auth_headers` and `parse_response`. `retry_base_delay_s` sets the first
    backoff (tests use a few milliseconds).
    """

    endpoint: str = ""  # path appended to each base URL, e.g. "/chat/completions"
    default_base_url: str = ""  # used when the config leaves base_url empty
    protocol: str = "openai"  # the wire protocol a host config's depth map must be for

    def __init__(
        self,
        config: HostConfig,
        *,
        retry_base_delay_s: float = 0.5,
        retry_max_delay_s: float = 30.0,
    ) -> None:
        if config.protocol != self.protocol:
            raise HostError(f"host {config.name!r} of kind {config.kind!r} is not a {self.protocol} host")
        try:
            config.depth_map  # noqa: B018 -- resolve it now: a bad thinking control fails here, once
        except InvalidInput as error:
            raise HostError(str(error)) from None
        base_urls = config.base_urls or ((self.default_base_url,) if self.default_base_url else ())
        if not base_urls:
            raise HostError(f"host {config.name!r} has no base_url")
        self.config = config
        policy = RetryPolicy(config.max_retries, retry_base_delay_s, retry_max_delay_s)
        self._http = RetryingJsonClient(config, policy, base_urls)

    @abstractmethod
    def request_body(self, request: GenerationRequest) -> dict[str, Any]:
        """The provider's JSON body for one request."""

    @abstractmethod
    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        """Headers that carry the API key and protocol version."""

    @abstractmethod
    def parse_response(self, payload: Any) -> Generation:
        """A `Generation` without latency from a 2xx body; raises `MalformedResponse` or
        `UnusableResponse` when the body will not do.
        """

    async def generate(self, request: GenerationRequest) -> Generation:
        """Run one request; raise `HostError` when it fails for good."""
        generation, latency_ms, attempts = await self._post(self.request_body(request), self.parse_response)
        return replace(generation, latency_ms=latency_ms, attempts=attempts)

    async def _post(self, body: dict[str, Any], parse: Callable[[Any], Any]) -> tuple[Any, float, int]:
        """POST a body to the host's endpoint with its auth headers (the key read now); returns
        (parsed reply, latency_ms of the successful attempt, attempts made)."""
        api_key = read_api_key(self.config)
        return await self._http.post(JsonPost(self.endpoint, body, self.auth_headers(api_key), parse, api_key))

    def __repr__(self) -> str:
        name, model = self.config.name, self.config.model
        urls = [e.base_url + self.endpoint for e in self._http.endpoints.endpoints]
        return f"{type(self).__name__}(name={name!r}, model={model!r}, urls={urls!r})"

    async def aclose(self) -> None:
        """Release connections."""
        await self._http.aclose()
