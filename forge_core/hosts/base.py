"""The host interface every frozen LLM answers: one chat request in, one generation out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Self

from forge_core.errors import ForgeError


class HostError(ForgeError):
    """A host call that failed for good (after retries), with a one-line reason and the number
    of requests sent before giving up."""

    def __init__(self, reason: str, attempts: int = 1) -> None:
        super().__init__(reason)
        self.attempts = attempts


@dataclass(frozen=True)
class GenerationRequest:
    """One chat completion request, independent of the provider's wire format."""

    messages: tuple[dict[str, str], ...]  # chat messages: {"role": ..., "content": ...}
    max_tokens: int  # cap on visible answer tokens
    temperature: float = 0.0  # 0 = greedy
    top_p: float = 1.0  # nucleus sampling mass
    thinking_budget: int | None = None  # host reasoning budget in tokens; None = thinking off
    seed: int | None = None  # sampling seed where the provider honours one
    stop: tuple[str, ...] | None = None  # stop sequences; None = none (left out of bodies and keys)


@dataclass(frozen=True)
class Generation:
    """What a host returned for one request, with exact token accounting from the provider."""

    text: str  # the visible answer text (reasoning excluded)
    tokens_in: int  # prompt tokens as the provider counted them
    tokens_out: int  # completion tokens, reasoning included when the provider counts it there
    tokens_reasoning: int = 0  # reasoning tokens when reported separately, else 0
    latency_ms: float = 0.0  # wall time of the successful call
    raw_usage: dict = field(default_factory=dict)  # the provider's usage object, untouched
    attempts: int = 1  # requests sent to get it, retries included


@dataclass(frozen=True)
class HostConfig:
    """A named, stored host configuration. Never holds a secret: only the env variable's name."""

    name: str  # unique name, e.g. "embedded"
    kind: str  # "openai" (any OpenAI-compatible server), "anthropic" or "embedded"
    model: str  # model name sent to the provider (or GGUF key for embedded hosts)
    base_url: str = ""  # e.g. "http://127.0.0.1:8080/v1"; empty for embedded hosts until served
    replica_urls: tuple[str, ...] = ()  # further base URLs serving the same model (replicas)
    thinking: str = "none"  # thinking control: none, vllm-qwen3, openai-effort, deepseek, anthropic
    api_key_env: str = ""  # name of the environment variable holding the API key, if any
    max_concurrency: int = 4  # requests in flight at once, per endpoint
    timeout_s: float = 120.0  # per-request timeout
    max_retries: int = 4  # retries on timeouts, 429 and 5xx

    @property
    def base_urls(self) -> tuple[str, ...]:
        """Every endpoint's base URL: `base_url` first, then the replicas (empty when unset)."""
        return tuple(url for url in (self.base_url, *self.replica_urls) if url)

    @property
    def supports_thinking(self) -> bool:
        """True when the host exposes a reasoning budget (Think-Low / Think-High arms)."""
        return self.thinking != "none"


class Host(Protocol):
    """Anything that turns a `GenerationRequest` into a `Generation`. A class that subclasses
    `Host` is also an async context manager: `async with host:` closes it on leaving."""

    config: HostConfig

    async def generate(self, request: GenerationRequest) -> Generation:
        """Run one request; raise `HostError` when it fails for good."""
        ...

    async def aclose(self) -> None:
        """Release connections and other resources."""
        ...

    async def __aenter__(self) -> Self:
        """The host itself."""
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """Close the host, whether the block finished or raised."""
        await self.aclose()
