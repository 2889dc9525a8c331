"""Host for Anthropic's Messages API (`POST {base_url}/messages`).

Provider rules this client follows:

- System messages go to the top-level `system` field (joined by blank lines), not `messages`.
- Thinking: the fields of the host's depth map (`forge_core.hosts.depth_maps`), e.g.
  `thinking: {"type": "enabled", "budget_tokens": N}` (Anthropic-budget: counted inside
  `max_tokens`, which must exceed the budget; minimum budget 1,024) or `thinking: {"type":
  "adaptive"}` with `output_config.effort` (Anthropic-adaptive). Thinking depths send no sampling
  (the map sets temperature 1, which thinking requires).
- Without thinking, `top_p` is sent only when it differs from 1, because recent models refuse
  requests that set both `temperature` and `top_p`; such a model answers a request with
  top_p < 1 with HTTP 400 (a `HostError` at once).
- No seed parameter exists; `request.seed` is not sent. Stop sequences go in `stop_sequences`.
- Usage: tokens_in = `input_tokens` plus any prompt-cache tokens (`cache_creation_input_tokens`,
  `cache_read_input_tokens`), tokens_out = `output_tokens`. Anthropic does not report thinking
  tokens separately (they are inside `output_tokens`), so `tokens_reasoning` is estimated from
  the thinking blocks' text.
"""

from __future__ import annotations

from typing import Any

from forge_core.hosts.base import Generation, GenerationRequest, HostConfig, reasoning_count
from forge_core.hosts.http_retry import HttpHost, MalformedResponse, UnusableResponse, token_count

DEFAULT_BASE_URL = "https://api.anthropic.com/v1"
ANTHROPIC_VERSION = "2023-06-01"
PROMPT_CACHE_USAGE_FIELDS = ("cache_creation_input_tokens", "cache_read_input_tokens")


def anthropic_auth_headers(api_key: str | None) -> dict[str, str]:
    """The API version header, plus `x-api-key` when a key is configured (messages and batches)."""
    headers = {"anthropic-version": ANTHROPIC_VERSION}
    if api_key:
        headers["x-api-key"] = api_key
    return headers


def _split_system(
    messages: tuple[dict[str, str], ...],
) -> tuple[str, list[dict[str, str]]]:
    """(system text, the other messages) as the Messages API wants them."""
    system_parts = [m["content"] for m in messages if m["role"] == "system"]
    conversation = [dict(m) for m in messages if m["role"] != "system"]
    return "\n\n".join(system_parts), conversation


def messages_body(config: HostConfig, request: GenerationRequest) -> dict[str, Any]:
    """The JSON body of POST /messages for this host and request."""
    system, conversation = _split_system(request.messages)
    body: dict[str, Any] = {"model": config.model, "messages": conversation}
    if system:
        body["system"] = system
    if request.stop is not None:
        body["stop_sequences"] = list(request.stop)
    fields, sampling = config.depth_map.request_fields(request.max_tokens, request.thinking_budget)
    if sampling:
        body["temperature"] = request.temperature
        if request.top_p != 1.0:
            body["top_p"] = request.top_p
    body.update(fields)
    return body


def _prompt_tokens(usage: dict[str, Any]) -> int:
    cached = sum(usage.get(field) or 0 for field in PROMPT_CACHE_USAGE_FIELDS)
    return token_count(usage, "input_tokens") + cached


def parse_message(payload: Any) -> Generation:
    """A `Generation` (latency not yet set) from a Messages API response body.

    Visible text is the concatenation of the `text` content blocks; thinking blocks are reasoning.
    """
    if not isinstance(payload, dict) or not isinstance(payload.get("content"), list):
        raise MalformedResponse("no content list in the response")
    text = "".join(
        block.get("text") or ""
        for block in payload["content"]
        if isinstance(block, dict) and block.get("type") == "text"
    )
    thinking = "\n".join(
        block.get("thinking") or ""
        for block in payload["content"]
        if isinstance(block, dict) and block.get("type") == "thinking"
    )
    usage = payload.get("usage")
    if not isinstance(usage, dict):
        raise UnusableResponse("response has no usage object; token counts are never guessed")
    tokens_out = token_count(usage, "output_tokens")
    reasoning, method = reasoning_count(None, thinking.strip(), tokens_out)
    return Generation(
        text=text,
        tokens_in=_prompt_tokens(usage),
        tokens_out=tokens_out,
        tokens_reasoning=reasoning,
        raw_usage=usage,
        reasoning_method=method,
    )


class AnthropicHost(HttpHost):
    """A Claude model behind the Messages API (default base_url: Anthropic's own).

    The API key, when `config.api_key_env` names one, is read from the environment on every
    request and sent as `x-api-key`; it is never stored, logged or put in errors.
    """

    endpoint = "/messages"
    default_base_url = DEFAULT_BASE_URL
    protocol = "anthropic"

    def request_body(self, request: GenerationRequest) -> dict[str, Any]:
        """The Messages API body for one request."""
        return messages_body(self.config, request)

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        """The API version header, plus `x-api-key` when a key is configured."""
        return anthropic_auth_headers(api_key)

    def parse_response(self, payload: Any) -> Generation:
        """A `Generation` without latency from a Messages API body."""
        return parse_message(payload)
