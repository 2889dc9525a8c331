"""What `forge serve` takes from an OpenAI chat-completions body, and what it refuses.

The last message must be the user's: its text is the question that is routed. Leading system
(or `developer`) messages become the client's system text, appended to FORGE's system message;
the other earlier messages (user, assistant, later system ones as system) are the history, passed
on unchanged. Content is a string or a list of text parts (joined by newlines). `max_tokens` /
`max_completion_tokens` (the smaller of the two), `temperature`, `top_p`, `seed` and `stop` are
the client's generation settings (`forge_core.evidence.prompts.ClientChat`). `user`, `metadata`
and `stream_options` are accepted and have no effect (usage always comes in the last chunk).
A field that is null counts as absent; `n`, `logprobs`, `presence_penalty`,
`frequency_penalty`, `logit_bias`, `response_format`, `modalities`, `tools`, `functions` and
`store` are accepted only at the value that changes nothing (`NO_OP_VALUES`). Anything else,
including tool calls, tool messages, a message `name`, and image, audio or file parts, is refused
with a `RefusedField` naming the field, rather than dropped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from forge_core.evidence.prompts import ClientChat

DEFAULT_MODEL = "forge"
SETTINGS = ("max_tokens", "max_completion_tokens", "temperature", "top_p", "seed", "stop")
IGNORED = ("user", "metadata", "stream_options")  # accepted, no effect
NO_OP_VALUES: dict[str, Any] = {"n": 1, "logprobs": False, "presence_penalty": 0, "frequency_penalty": 0,
                                "logit_bias": {}, "response_format": {"type": "text"}, "modalities": ["text"],
                                "tools": [], "functions": [], "store": False}
NO_TOOLS = "FORGE answers with text: tools and function calling are not supported"
WHY_REFUSED = {
    **dict.fromkeys(("tools", "tool_choice", "functions", "function_call", "parallel_tool_calls"), NO_TOOLS),
    "n": "FORGE makes one choice per request: `n` must be 1",
    "logprobs": "FORGE does not return log probabilities",
    "top_logprobs": "FORGE does not return log probabilities",
    "response_format": "FORGE answers with plain text: `response_format` must be {\"type\": \"text\"}",
    "modalities": "FORGE answers with text only",
    "audio": "FORGE answers with text only",
    "store": "FORGE does not store completions",
}
MESSAGE_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
MAX_STOP_SEQUENCES = 4  # as OpenAI


class RefusedField(ValueError):
    """A request FORGE cannot honour as sent; `param` names the field (OpenAI's error `param`)."""

    def __init__(self, message: str, param: str | None) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class ChatRequest:
    """A chat-completions request as FORGE answers it."""

    model: str
    question: str  # the last user message's text: what is routed
    chat: ClientChat  # the client's system text, history and generation settings
    stream: bool


def parse_chat_request(body: Any) -> ChatRequest:
    """The request in `body`; `RefusedField` for anything FORGE would otherwise drop or get wrong."""
    if not isinstance(body, dict):
        raise RefusedField("the body must be a JSON object", None)
    fields = {name: value for name, value in body.items() if value is not None}
    _refuse_unsupported(fields)
    model = fields.get("model", DEFAULT_MODEL)
    if not isinstance(model, str):
        raise RefusedField("`model` must be a string", "model")
    stream = fields.get("stream", False)
    if not isinstance(stream, bool):
        raise RefusedField("`stream` must be true or false", "stream")
    system, history, question = _conversation(fields.get("messages"))
    chat = ClientChat(system=system, history=history, **_settings(fields))
    return ChatRequest(model=model, question=question, chat=chat, stream=stream)


def _refuse_unsupported(fields: dict[str, Any]) -> None:
    known = {"model", "messages", "stream", *SETTINGS, *IGNORED}
    for name, value in fields.items():
        if name in known or (name in NO_OP_VALUES and value == NO_OP_VALUES[name]):
            continue
        reason = WHY_REFUSED.get(name, "an unknown or unsupported field is refused rather than ignored")
        raise RefusedField(f"`{name}` is not supported by forge serve: {reason}", name)


def _conversation(messages: Any) -> tuple[str, tuple[dict[str, str], ...], str]:
    """(the leading system text, the history, the question) of the `messages` list."""
    if not isinstance(messages, list) or not messages:
        raise RefusedField("the body needs a non-empty `messages` list", "messages")
    turns = [_message(message, index) for index, message in enumerate(messages)]
    if turns[-1]["role"] != "user":
        where = f"messages[{len(turns) - 1}].role"
        raise RefusedField(f"`{where}` is {turns[-1]['role']!r}: the last message must be the user's question", where)
    leading = 0
    while turns[leading]["role"] == "system":
        leading += 1
    system = "\n\n".join(turn["content"] for turn in turns[:leading])
    return system, tuple(turns[leading:-1]), turns[-1]["content"]


def _message(message: Any, index: int) -> dict[str, str]:
    """One message as {"role", "content"} text, or `RefusedField`."""
    where = f"messages[{index}]"
    if not isinstance(message, dict):
        raise RefusedField(f"{where} must be an object", where)
    extra = sorted(name for name, value in message.items() if value is not None and name not in ("role", "content"))
    if extra:
        raise RefusedField(f"`{where}.{extra[0]}` is not supported by forge serve: messages carry a role and "
                           "text content only (no tool calls, names or audio)", f"{where}.{extra[0]}")
    role = MESSAGE_ROLES.get(message.get("role"))
    if role is None:
        raise RefusedField(f"{where} has role {message.get('role')!r}: forge serve takes system, developer, user "
                           "and assistant messages (no tool messages)", f"{where}.role")
    return {"role": role, "content": _text(message.get("content"), role, where)}


def _text(content: Any, role: str, where: str) -> str:
    if content is None and role == "assistant":
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content:
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise RefusedField(f"{where}.content has a {kind!r} part: forge serve takes text only",
                                   f"{where}.content")
        return "\n".join(part["text"] for part in content)
    raise RefusedField(f"{where}.content must be text or a list of text parts", f"{where}.content")


def _settings(fields: dict[str, Any]) -> dict[str, Any]:
    """The client's generation settings, checked, as `ClientChat` fields."""
    caps = [_number(fields, name, int, 1, None) for name in ("max_tokens", "max_completion_tokens")]
    caps = [cap for cap in caps if cap is not None]
    return {"max_tokens": min(caps) if caps else None, "temperature": _number(fields, "temperature", float, 0, 2),
            "top_p": _number(fields, "top_p", float, 0, 1), "seed": _number(fields, "seed", int, None, None),
            "stop": _stop(fields.get("stop"))}


def _number(fields: dict[str, Any], name: str, kind: type, low: float | None, high: float | None) -> Any:
    """`fields[name]` as `kind` (int or float) within [low, high], or None when absent."""
    value = fields.get(name)
    if value is None:
        return None
    accepted = (int, float) if kind is float else int
    if isinstance(value, bool) or not isinstance(value, accepted) or not math.isfinite(value):
        raise RefusedField(f"`{name}` must be {'a number' if kind is float else 'an integer'}", name)
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"at least {low}" if high is None else f"between {low} and {high}"
        raise RefusedField(f"`{name}` must be {bounds}, not {value}", name)
    return kind(value)


def _stop(stop: Any) -> tuple[str, ...] | None:
    sequences = [stop] if isinstance(stop, str) else stop
    if sequences is None or sequences == []:
        return None
    if (not isinstance(sequences, list) or len(sequences) > MAX_STOP_SEQUENCES
            or not all(isinstance(s, str) and s for s in sequences)):
        raise RefusedField(f"`stop` must be a string or a list of at most {MAX_STOP_SEQUENCES} non-empty strings",
                           "stop")
    return tuple(sequences)
