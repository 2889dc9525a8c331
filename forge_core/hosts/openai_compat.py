"""Host for OpenAI-compatible chat-completions servers: vLLM, llama.cpp, Ollama, OpenAI, DeepSeek.

Thinking controls (`HostConfig.thinking`), with `request.thinking_budget` set vs None:

- "none": no thinking fields; the budget is ignored and `max_tokens` is the answer cap.
- "vllm-qwen3": `chat_template_kwargs: {"enable_thinking": true|false}`; when on, vLLM's
  top-level `thinking_token_budget` (honoured by vLLM servers started with a reasoning config).
- "openai-effort": `reasoning_effort` "low" for budgets up to 1,024 tokens, else "high"; with no
  budget the field is left out and the model's default effort applies (reasoning models cannot
  all switch reasoning off). The cap goes in `max_completion_tokens`, and `temperature`/`top_p`
  are not sent: OpenAI reasoning models reject values other than their defaults.
- "deepseek": `thinking: {"type": "enabled"|"disabled"}`, plus `reasoning_effort` low/high as
  for "openai-effort" when enabled.

Whenever thinking is on, reasoning tokens count against the provider's output cap, so the cap
sent is the answer cap plus the thinking budget; otherwise it is the answer cap alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from forge_core.hosts.base import Generation, GenerationRequest, HostConfig
from forge_core.hosts.http_retry import HttpHost, MalformedResponse, UnusableResponse, token_count

LOW_EFFORT_MAX_BUDGET = 1024  # budgets up to this map to reasoning_effort "low", above to "high"


def _reasoning_effort(budget: int) -> str:
    return "low" if budget <= LOW_EFFORT_MAX_BUDGET else "high"


def _thinking_cap(request: GenerationRequest) -> int:
    """Output cap when thinking is on: the answer cap plus the reasoning budget."""
    return request.max_tokens + (request.thinking_budget or 0)


def _no_thinking_fields(request: GenerationRequest) -> dict[str, Any]:
    return {"max_tokens": request.max_tokens}


def _vllm_qwen3_fields(request: GenerationRequest) -> dict[str, Any]:
    budget = request.thinking_budget
    if budget is None:
        return {
            "max_tokens": request.max_tokens,
            "chat_template_kwargs": {"enable_thinking": False},
        }
    return {
        "max_tokens": _thinking_cap(request),
        "chat_template_kwargs": {"enable_thinking": True},
        "thinking_token_budget": budget,
    }


def _openai_effort_fields(request: GenerationRequest) -> dict[str, Any]:
    budget = request.thinking_budget
    if budget is None:
        return {"max_completion_tokens": request.max_tokens}
    return {
        "max_completion_tokens": _thinking_cap(request),
        "reasoning_effort": _reasoning_effort(budget),
    }


def _deepseek_fields(request: GenerationRequest) -> dict[str, Any]:
    budget = request.thinking_budget
    if budget is None:
        return {"max_tokens": request.max_tokens, "thinking": {"type": "disabled"}}
    return {
        "max_tokens": _thinking_cap(request),
        "thinking": {"type": "enabled"},
        "reasoning_effort": _reasoning_effort(budget),
    }


THINKING_FIELDS: dict[str, Callable[[GenerationRequest], dict[str, Any]]] = {
    "none": _no_thinking_fields,
    "vllm-qwen3": _vllm_qwen3_fields,
    "openai-effort": _openai_effort_fields,
    "deepseek": _deepseek_fields,
}


def chat_completion_body(config: HostConfig, request: GenerationRequest) -> dict[str, Any]:
    """The JSON body of POST /chat/completions for this host and request."""
    body: dict[str, Any] = {
        "model": config.model,
        "messages": [dict(message) for message in request.messages],
    }
    if config.thinking != "openai-effort":
        body["temperature"] = request.temperature
        body["top_p"] = request.top_p
    if request.seed is not None:
        body["seed"] = request.seed
    if request.stop is not None:
        body["stop"] = list(request.stop)
    body.update(THINKING_FIELDS[config.thinking](request))
    return body


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


def parse_chat_completion(payload: Any) -> Generation:
    """A `Generation` (latency not yet set) from a chat-completions response body.

    Visible text is `message.content` (None means ""); `reasoning_content` is left out.
    """
    message = _first_message(payload)
    text = message.get("content")
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise MalformedResponse("choices[0].message.content is not a string")
    usage = payload.get("usage")
    if not isinstance(usage, dict):
        raise UnusableResponse("response has no usage object; token counts are never guessed")
    details = usage.get("completion_tokens_details")
    reasoning = details.get("reasoning_tokens") if isinstance(details, dict) else None
    return Generation(
        text=text,
        tokens_in=token_count(usage, "prompt_tokens"),
        tokens_out=token_count(usage, "completion_tokens"),
        tokens_reasoning=reasoning if isinstance(reasoning, int) else 0,
        raw_usage=usage,
    )


class OpenAICompatibleHost(HttpHost):
    """A host behind an OpenAI-compatible `POST {base_url}/chat/completions` endpoint.

    The API key, when `config.api_key_env` names one, is read from the environment on every
    request and sent as `Authorization: Bearer`; it is never stored, logged or put in errors.
    """

    endpoint = "/chat/completions"
    thinking_controls = tuple(THINKING_FIELDS)

    def request_body(self, request: GenerationRequest) -> dict[str, Any]:
        """The chat-completions body for one request."""
        return chat_completion_body(self.config, request)

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        """Bearer authorization when a key is configured."""
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def parse_response(self, payload: Any) -> Generation:
        """A `Generation` without latency from a chat-completions body."""
        return parse_chat_completion(payload)
