"""Host for OpenAI-compatible chat-completions servers: vLLM, SGLang, llama.cpp, Ollama, OpenAI,
OpenRouter, DeepSeek.

The thinking fields come from the host's depth map (`forge_core.hosts.depth_maps`): per depth,
the exact fields merged into the body, and whether temperature and top_p are sent. Reasoning
text comes back in the message fields the map names (`reasoning`, `reasoning_content`), or
inline as a leading `<think>...</think>` block of the content when the server has no reasoning
parser; it is never part of the visible answer. Reasoning tokens come from the usage detail the
map names, else the server's own tokenize endpoint counts the reasoning text
(`forge_core.hosts.reasoning_tokens`), else they are estimated from it (`Generation.reasoning_method`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from forge_core.hosts.base import Generation, GenerationRequest, HostConfig, reasoning_count
from forge_core.hosts.budget_forcing import (
    RAW_COMPLETION_PRESETS,
    apply_template_body,
    continuation_body,
    forced_generation,
    hit_the_cap,
    raw_continuation_body,
    reasoning_call_body,
    rendered_prompt,
)
from forge_core.hosts.depth_maps import PRESETS, DepthMap
from forge_core.hosts.http_retry import (
    HttpHost,
    JsonPost,
    MalformedResponse,
    RetryingJsonClient,
    RetryPolicy,
    UnusableResponse,
    read_api_key,
    token_count,
)
from forge_core.hosts.reasoning_tokens import ReasoningTokenizer, counted_by_tokenizer

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


def chat_completion_body(config: HostConfig, request: GenerationRequest) -> dict[str, Any]:
    """The JSON body of POST /chat/completions for this host and request."""
    body: dict[str, Any] = {
        "model": config.model,
        "messages": [dict(message) for message in request.messages],
    }
    fields, sampling = config.depth_map.request_fields(request.max_tokens, request.thinking_budget)
    if sampling:
        body["temperature"] = request.temperature
        body["top_p"] = request.top_p
    if request.seed is not None:
        body["seed"] = request.seed
    if request.stop is not None:
        body["stop"] = list(request.stop)
    if request.top_logprobs is not None:
        body["logprobs"] = True
        body["top_logprobs"] = request.top_logprobs
    body.update(fields)
    return body


def openai_auth_headers(api_key: str | None) -> dict[str, str]:
    """Bearer authorization when a key is configured (chat completions, batches, `/tokenize`)."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def _first_message(payload: Any) -> dict[str, Any]:
    if not isinstance(payload, dict):
        raise MalformedResponse("body is not a JSON object")
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise MalformedResponse("no choices in the response")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise MalformedResponse("choices[0] has no message")
    return message


def split_inline_reasoning(content: str) -> tuple[str, str]:
    """(reasoning, visible answer) of a content that opens with a `<think>` block (a server with no
    reasoning parser), else ("", content). An unclosed block is reasoning only."""
    stripped = content.lstrip()
    if not stripped.startswith(THINK_OPEN):
        return "", content
    inside, closed, after = stripped[len(THINK_OPEN):].partition(THINK_CLOSE)
    return inside.strip(), after.strip() if closed else ""


def _reasoning_field(message: dict[str, Any], depth_map: DepthMap) -> str:
    for name in depth_map.reasoning_fields:
        value = message.get(name)
        if isinstance(value, str) and value:
            return value
    return ""


def _usage_detail(usage: dict[str, Any], path: str) -> int | None:
    value: Any = usage
    for part in path.split(".") if path else ():
        value = value.get(part) if isinstance(value, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and path else None


def parse_chat_completion(payload: Any, depth_map: DepthMap | None = None) -> Generation:
    """A `Generation` (latency not yet set) from a chat-completions response body.

    Visible text is `message.content` (None means "") without any leading `<think>` block;
    reasoning is taken from the fields the depth map names (default: the `none` preset's).
    """
    return _generation(payload, depth_map or PRESETS["none"])[0]


def parse_reasoning_call(payload: Any, depth_map: DepthMap) -> tuple[Generation, str, bool]:
    """(generation, its reasoning text, whether it hit its output cap) of a budget-forcing call."""
    generation, reasoning_text = _generation(payload, depth_map)
    return generation, reasoning_text, hit_the_cap(payload)


def parse_raw_completion(payload: Any) -> tuple[Generation, str]:
    """(generation without latency, its reasoning text) of a llama-server `POST /completion` reply:
    the content (less any `<think>` block it opened again), `tokens_evaluated` prompt tokens and
    `tokens_predicted` output tokens."""
    content = payload.get("content") if isinstance(payload, dict) else None
    if not isinstance(content, str):
        raise MalformedResponse("the /completion reply holds no content")
    reasoning_text, text = split_inline_reasoning(content)
    tokens_out = token_count(payload, "tokens_predicted")
    reasoning, method = reasoning_count(None, reasoning_text, tokens_out)
    usage = {name: payload.get(name) for name in ("tokens_evaluated", "tokens_predicted", "stop_type")}
    generation = Generation(text=text.strip(), tokens_in=token_count(payload, "tokens_evaluated"),
                            tokens_out=tokens_out, tokens_reasoning=reasoning, raw_usage=usage, reasoning_method=method)
    return generation, reasoning_text


def token_top_logprobs(payload: Any) -> tuple[tuple[float, ...], ...]:
    """Per output token, the logprobs of its `top_logprobs` alternatives, most likely first, from
    `choices[0].logprobs.content` (empty when the response carries none)."""
    logprobs = payload["choices"][0].get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list):
        return ()
    try:
        return tuple(tuple(sorted((float(top["logprob"]) for top in token.get("top_logprobs") or ()), reverse=True))
                     for token in content)
    except (TypeError, KeyError, AttributeError, ValueError):
        raise MalformedResponse("choices[0].logprobs.content holds a malformed token") from None


def _generation(payload: Any, depth_map: DepthMap) -> tuple[Generation, str]:
    message = _first_message(payload)
    content = message.get("content")
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise MalformedResponse("choices[0].message.content is not a string")
    inline_reasoning, text = split_inline_reasoning(content)
    usage = payload.get("usage")
    if not isinstance(usage, dict):
        raise UnusableResponse("response has no usage object; token counts are never guessed")
    tokens_out = token_count(usage, "completion_tokens")
    reported = _usage_detail(usage, depth_map.reasoning_tokens_path)
    reasoning_text = _reasoning_field(message, depth_map) or inline_reasoning
    reasoning, method = reasoning_count(reported, reasoning_text, tokens_out)
    generation = Generation(
        text=text,
        tokens_in=token_count(usage, "prompt_tokens"),
        tokens_out=tokens_out,
        tokens_reasoning=reasoning,
        raw_usage=usage,
        reasoning_method=method,
        top_logprobs=token_top_logprobs(payload),
    )
    return generation, reasoning_text


class OpenAICompatibleHost(HttpHost):
    """A host behind an OpenAI-compatible `POST {base_url}/chat/completions` endpoint.

    The API key, when `config.api_key_env` names one, is read from the environment on every
    request and sent as `Authorization: Bearer`; it is never stored, logged or put in errors.
    Paths outside the OpenAI API (`/tokenize`, llama-server's `/apply-template` and `/completion`)
    are posted under the server root: the base URL less its `/v1`.
    """

    endpoint = "/chat/completions"
    protocol = "openai"

    def __init__(self, config: HostConfig, *, retry_base_delay_s: float = 0.5,
                 retry_max_delay_s: float = 30.0) -> None:
        super().__init__(config, retry_base_delay_s=retry_base_delay_s, retry_max_delay_s=retry_max_delay_s)
        roots = tuple(endpoint.base_url.removesuffix("/v1") for endpoint in self._http.endpoints.endpoints)
        self._server_root = RetryingJsonClient(config, self._http.policy, roots)
        once = RetryingJsonClient(config, RetryPolicy(0), roots)  # a tokenizer that fails is not asked twice
        self._reasoning_tokenizer = ReasoningTokenizer(once, config.model, self._auth)

    def request_body(self, request: GenerationRequest) -> dict[str, Any]:
        """The chat-completions body for one request."""
        return chat_completion_body(self.config, request)

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        """Bearer authorization when a key is configured."""
        return openai_auth_headers(api_key)

    def parse_response(self, payload: Any) -> Generation:
        """A `Generation` without latency from a chat-completions body."""
        return parse_chat_completion(payload, self.config.depth_map)

    async def generate(self, request: GenerationRequest) -> Generation:
        """Run one request (in two calls under budget forcing); raise `HostError` when it fails for good."""
        if self.config.budget_forcing and request.thinking_budget is not None and self.config.supports_thinking:
            return await self._generate_forced(request)
        (generation, reasoning_text), latency_ms, attempts = await self._post(self.request_body(request),
                                                                              self._parse_with_reasoning)
        generation = await counted_by_tokenizer(generation, reasoning_text, self._reasoning_tokenizer)
        return replace(generation, latency_ms=latency_ms, attempts=attempts)

    def _parse_with_reasoning(self, payload: Any) -> tuple[Generation, str]:
        return _generation(payload, self.config.depth_map)

    def _auth(self) -> tuple[dict[str, str], str | None]:
        api_key = read_api_key(self.config)
        return self.auth_headers(api_key), api_key

    async def _post_at_root(self, path: str, body: dict[str, Any],
                            parse: Callable[[Any], Any]) -> tuple[Any, float, int]:
        """POST a body to `path` under the server root, with the host's retries and auth headers."""
        headers, api_key = self._auth()
        return await self._server_root.post(JsonPost(path, body, headers, parse, api_key))

    async def _generate_forced(self, request: GenerationRequest) -> Generation:
        """Budget forcing (`forge_core.hosts.budget_forcing`): reasoning capped at the budget, then
        continued for the answer when the cap was hit."""
        body, depth_map = self.request_body(request), self.config.depth_map
        first_body = reasoning_call_body(body, request.thinking_budget)
        (first, reasoning_text, capped), latency_ms, attempts = await self._post(
            first_body, lambda payload: parse_reasoning_call(payload, depth_map))
        first = replace(first, latency_ms=latency_ms, attempts=attempts)
        if not capped or first.text.strip():  # a call cut inside its reasoning is counted by its usage
            first = await counted_by_tokenizer(first, reasoning_text, self._reasoning_tokenizer)
        if not capped:
            return first
        if self.config.thinking in RAW_COMPLETION_PRESETS:
            second = await self._continue_raw(body, request, reasoning_text, first.text)
        else:
            second = await self._continue_chat(body, request, reasoning_text, first.text)
        return forced_generation(first, second)

    async def _continue_chat(self, body: dict[str, Any], request: GenerationRequest, reasoning: str,
                             partial_answer: str) -> Generation:
        """The answer after the closed reasoning, by `continue_final_message` (vLLM)."""
        (generation, reasoning_text), latency_ms, attempts = await self._post(
            continuation_body(body, request, reasoning, partial_answer), self._parse_with_reasoning)
        generation = await counted_by_tokenizer(generation, reasoning_text, self._reasoning_tokenizer)
        return replace(generation, latency_ms=latency_ms, attempts=attempts)

    async def _continue_raw(self, body: dict[str, Any], request: GenerationRequest, reasoning: str,
                            partial_answer: str) -> Generation:
        """The answer after the closed reasoning, by llama-server's own chat template and its raw
        completion endpoint; both requests' time and attempts are the call's."""
        prompt, template_ms, template_attempts = await self._post_at_root(
            "/apply-template", apply_template_body(body), rendered_prompt)
        (generation, reasoning_text), latency_ms, attempts = await self._post_at_root(
            "/completion", raw_continuation_body(body, request, prompt, reasoning, partial_answer),
            parse_raw_completion)
        generation = await counted_by_tokenizer(generation, reasoning_text, self._reasoning_tokenizer)
        return replace(generation, latency_ms=template_ms + latency_ms, attempts=template_attempts + attempts)

    async def aclose(self) -> None:
        """Release connections."""
        await super().aclose()
        await self._server_root.aclose()
        await self._reasoning_tokenizer.client.aclose()
