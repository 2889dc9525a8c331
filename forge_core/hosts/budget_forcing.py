"""Budget forcing (the s1 recipe) for chat-completions engines that continue a partial assistant
message (vLLM's `continue_final_message`): a thinking request whose engine will not keep to its
budget is sent in two calls.

1. The depth's request with the output cap set to the budget: reasoning stops there at the latest.
2. When the first call hit that cap, the same conversation plus an assistant message holding the
   reasoning in a closed `<think>` block (and any answer text already written), sent with
   `continue_final_message: true`, `add_generation_prompt: false` and the answer cap: the model
   continues after the block with its answer.

Both calls are charged: input tokens of both prompts (the second prompt holds the reasoning), output
tokens of both completions. The reasoning tokens are the first call's completion tokens when it was
cut inside its reasoning (the provider's own count), else what that call reported, plus any
reasoning of the second call (an engine that does not continue the message reasons again: the
depth check shows that forcing does not help there).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from forge_core.hosts.base import REASONING_ESTIMATED, REASONING_FROM_USAGE, Generation, GenerationRequest

THINK_BLOCK = "<think>\n{reasoning}\n</think>\n\n"


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
    if second.tokens_reasoning and second.reasoning_method == REASONING_ESTIMATED:
        method = REASONING_ESTIMATED
    return dataclasses.replace(
        second, text=first.text + second.text, tokens_in=first.tokens_in + second.tokens_in,
        tokens_out=first.tokens_out + second.tokens_out, tokens_reasoning=reasoning + second.tokens_reasoning,
        reasoning_method=method,
        latency_ms=first.latency_ms + second.latency_ms, attempts=first.attempts + second.attempts,
        raw_usage={"reasoning_call": first.raw_usage, "answer_call": second.raw_usage})
