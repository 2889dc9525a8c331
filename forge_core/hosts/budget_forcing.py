"""Budget forcing (the s1 recipe) for engines that continue a partial assistant message: a
thinking request whose engine will not keep to its budget is sent in two calls.

1. The depth's chat request with the output cap set to the budget: reasoning stops there at the latest.
2. When the first call hit that cap, the conversation continued after the reasoning, closed in a
   `<think>` block (with any answer text already written), for at most the answer cap:
   - vLLM (and any chat engine by default): the same chat request plus an assistant message holding
     the block, sent with `continue_final_message: true` and `add_generation_prompt: false`;
   - llama.cpp `llama-server` (the `llamacpp` preset, `RAW_COMPLETION_PRESETS`): the conversation
     rendered by the server's own chat template (`POST /apply-template`, with the depth's
     `chat_template_kwargs`), the block appended to that prompt (its opening tag left out when the
     template already opened one), and the raw completion endpoint (`POST /completion`,
     `n_predict` = the answer cap) continues it.

Both calls are charged: input tokens of both prompts (the second prompt holds the reasoning), output
tokens of both completions. The reasoning tokens are the first call's completion tokens when it was
cut inside its reasoning (the provider's own count), else what that call reported, plus any
reasoning of the second call (an engine that does not continue the message reasons again: the
depth check shows that forcing does not help there).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from forge_core.hosts.base import (
    REASONING_ESTIMATED,
    REASONING_FROM_TOKENIZER,
    REASONING_FROM_USAGE,
    REASONING_NONE,
    Generation,
    GenerationRequest,
)
from forge_core.hosts.http_retry import MalformedResponse

THINK_OPEN = "<think>"
THINK_BLOCK = THINK_OPEN + "\n{reasoning}\n</think>\n\n"
RAW_COMPLETION_PRESETS = ("llamacpp",)  # thinking controls forced through llama-server's /completion
RAW_SAMPLING_FIELDS = ("temperature", "top_p", "seed", "stop")  # chat fields /completion takes as they are
METHOD_STRENGTH = (REASONING_NONE, REASONING_FROM_USAGE, REASONING_FROM_TOKENIZER, REASONING_ESTIMATED)  # exact first


def cap_field(body: dict[str, Any]) -> str:
    """The body's output-cap field: `max_completion_tokens` (OpenAI) or `max_tokens`."""
    return "max_completion_tokens" if "max_completion_tokens" in body else "max_tokens"


def reasoning_call_body(body: dict[str, Any], budget: int) -> dict[str, Any]:
    """The first call: the depth's body with the output cap set to the budget."""
    return {**body, cap_field(body): budget}


def continuation_body(body: dict[str, Any], request: GenerationRequest, reasoning: str,
                      partial_answer: str) -> dict[str, Any]:
    """The second call: the conversation with the reasoning closed in a partial assistant message
    (followed by the answer text written so far), continued for at most the answer cap."""
    content = THINK_BLOCK.format(reasoning=reasoning.strip()) + partial_answer
    partial = {"role": "assistant", "content": content}
    return {**body, "messages": [*body["messages"], partial], cap_field(body): request.max_tokens,
            "continue_final_message": True, "add_generation_prompt": False}


def apply_template_body(body: dict[str, Any]) -> dict[str, Any]:
    """llama-server's `POST /apply-template` body: the chat body's messages and template options."""
    template = {"messages": body["messages"]}
    if "chat_template_kwargs" in body:
        template["chat_template_kwargs"] = body["chat_template_kwargs"]
    return template


def rendered_prompt(payload: Any) -> str:
    """The prompt of an `/apply-template` reply."""
    prompt = payload.get("prompt") if isinstance(payload, dict) else None
    if not isinstance(prompt, str):
        raise MalformedResponse("the /apply-template reply holds no prompt")
    return prompt


def raw_continuation_body(body: dict[str, Any], request: GenerationRequest, prompt: str, reasoning: str,
                          partial_answer: str) -> dict[str, Any]:
    """The second call on llama-server: `POST /completion` of the rendered conversation continued
    by the closed reasoning (and the answer text written so far), for at most the answer cap."""
    block = THINK_BLOCK.format(reasoning=reasoning.strip())
    if prompt.rstrip().endswith(THINK_OPEN):  # the template opened the block (DeepSeek-R1 style)
        block = block.removeprefix(THINK_OPEN + "\n")
        prompt = prompt.rstrip() + "\n"
    raw = {"prompt": prompt + block + partial_answer, "n_predict": request.max_tokens}
    return raw | {name: body[name] for name in RAW_SAMPLING_FIELDS if name in body}


def hit_the_cap(payload: Any) -> bool:
    """True when a call stopped at its output cap (`finish_reason` "length")."""
    choices = payload.get("choices") if isinstance(payload, dict) else None
    return isinstance(choices, list) and bool(choices) and choices[0].get("finish_reason") == "length"


def forced_generation(first: Generation, second: Generation) -> Generation:
    """The two calls as one generation: the first call's answer text (if any) continued by the
    second's, both calls' tokens and time. A first call cut before any answer spent all of its
    completion tokens on reasoning."""
    reasoning, method = first.tokens_reasoning, first.reasoning_method
    if not first.text.strip():
        reasoning, method = first.tokens_out, REASONING_FROM_USAGE
    if second.tokens_reasoning and METHOD_STRENGTH.index(second.reasoning_method) > METHOD_STRENGTH.index(method):
        method = second.reasoning_method  # the sum is only as exact as its least exact part
    return dataclasses.replace(
        second, text=first.text + second.text, tokens_in=first.tokens_in + second.tokens_in,
        tokens_out=first.tokens_out + second.tokens_out, tokens_reasoning=reasoning + second.tokens_reasoning,
        reasoning_method=method,
        latency_ms=first.latency_ms + second.latency_ms, attempts=first.attempts + second.attempts,
        raw_usage={"reasoning_call": first.raw_usage, "answer_call": second.raw_usage})
