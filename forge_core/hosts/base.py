"""The host interface every frozen LLM answers: one chat request in, one generation out."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Protocol, Self

from forge_core.errors import ForgeError, InvalidInput
from forge_core.hosts.depth_maps import CUSTOM, DepthMap, parse_depth_map, preset_map


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
    top_logprobs: int | None = None  # per output token, this many most likely tokens' logprobs; None = none


REASONING_FROM_USAGE = "usage"  # the provider's usage reported the reasoning tokens
REASONING_FROM_TOKENIZER = "tokenizer"  # the returned reasoning text counted by the host's tokenize endpoint
REASONING_ESTIMATED = "estimated"  # counted from the returned reasoning text (word pieces)
REASONING_NONE = "none"  # no reasoning reported and none returned
_WORD_PIECE = re.compile(r"\w+|[^\w\s]")


def estimate_tokens(text: str) -> int:
    """Tokens of a text by its word pieces (runs of word characters, single punctuation marks):
    close to a BPE count for English reasoning text, used only where a provider reports none."""
    return len(_WORD_PIECE.findall(text))


def reasoning_count(reported: int | None, reasoning_text: str, tokens_out: int) -> tuple[int, str]:
    """(reasoning tokens, how they were obtained): the provider's count when it reports one, else
    an estimate from the reasoning text (never above the output tokens), else 0. An OpenAI-compatible
    host then counts an estimated text with its own tokenizer where it can
    (`forge_core.hosts.reasoning_tokens`)."""
    if reported is not None:
        return reported, REASONING_FROM_USAGE
    if reasoning_text:
        return min(estimate_tokens(reasoning_text), tokens_out), REASONING_ESTIMATED
    return 0, REASONING_NONE


@dataclass(frozen=True)
class Generation:
    """What a host returned for one request, with exact token accounting from the provider."""

    text: str  # the visible answer text (reasoning excluded)
    tokens_in: int  # prompt tokens as the provider counted them
    tokens_out: int  # every output token: the visible answer's and the reasoning's
    tokens_reasoning: int = 0  # the reasoning part of tokens_out
    latency_ms: float = 0.0  # wall time of the successful call
    raw_usage: dict = field(default_factory=dict)  # the provider's usage object, untouched
    attempts: int = 1  # requests sent to get it, retries included
    reasoning_method: str = REASONING_NONE  # how tokens_reasoning was obtained (REASONING_* above)
    top_logprobs: tuple[tuple[float, ...], ...] = ()  # per output token, its top logprobs, most likely first


_parsed_depth_map = functools.lru_cache(maxsize=32)(parse_depth_map)  # a custom map is read once, not per request


@dataclass(frozen=True)
class HostConfig:
    """A named, stored host configuration. Never holds a secret: only the env variable's name."""

    name: str  # unique name, e.g. "embedded"
    kind: str  # "openai" (any OpenAI-compatible server), "anthropic" or "embedded"
    model: str  # model name sent to the provider (or GGUF key for embedded hosts)
    base_url: str = ""  # e.g. "http://127.0.0.1:8080/v1"; empty for embedded hosts until served
    replica_urls: tuple[str, ...] = ()  # further base URLs serving the same model (replicas)
    thinking: str = "none"  # thinking control: a depth-map preset (`depth_maps.PRESETS`) or "custom"
    api_key_env: str = ""  # name of the environment variable holding the API key, if any
    max_concurrency: int = 4  # requests in flight at once, per endpoint
    timeout_s: float = 120.0  # per-request timeout
    max_retries: int = 4  # retries on timeouts, 429 and 5xx
    custom_depth_map: str = ""  # with thinking "custom": the depth map's canonical JSON
    budget_forcing: bool = False  # stop reasoning at the budget, close it, continue for the answer (vLLM, llama.cpp)

    @property
    def protocol(self) -> str:
        """The wire protocol: "anthropic" for Anthropic hosts, else "openai" (chat completions)."""
        return "anthropic" if self.kind == "anthropic" else "openai"

    @property
    def depth_map(self) -> DepthMap:
        """What the host is sent per thinking depth: the preset named by `thinking`, or the custom map."""
        if self.thinking == CUSTOM:
            depth_map = _parsed_depth_map(self.custom_depth_map or "null")
            if depth_map.protocol != self.protocol:
                raise InvalidInput(f"host '{self.name}': its depth map is for {depth_map.protocol} hosts")
            return depth_map
        return preset_map(self.thinking, self.protocol)

    @property
    def base_urls(self) -> tuple[str, ...]:
        """Every endpoint's base URL: `base_url` first, then the replicas (empty when unset)."""
        return tuple(url for url in (self.base_url, *self.replica_urls) if url)

    @property
    def supports_thinking(self) -> bool:
        """True when the host's depth map has Think-Low and Think-High (12 arms)."""
        return self.depth_map.has_budget

    @property
    def alphabet_size(self) -> int:
        """The arms of the host's full alphabet: 12 when it has thinking depths, else 6 (derived from the
        depth map, so never part of the configuration hash)."""
        return 12 if self.supports_thinking else 6


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
