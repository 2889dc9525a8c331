"""Depth maps: for each thinking depth, the exact request fields a host is sent, and where its
reasoning comes back.

A depth map belongs to one wire protocol (`openai`: chat completions; `anthropic`: the Messages
API). For each depth it lists the JSON fields merged into the request body, in which two string
values are substituted when a request is built: `"$budget"` (the depth's reasoning budget in tokens) and `"$cap"` (the
output cap: the answer cap, plus the budget when the depth thinks, because every engine counts
reasoning against its output cap). `sampling` says whether the request's temperature and top_p
are sent at that depth (OpenAI reasoning models and Anthropic thinking refuse other values).

`cot` is the `no_think` request with the step-by-step prompt: it has no entry of its own. A map
without `think_low` and `think_high` is a host without a reasoning budget (6 arms, not 12); a
thinking request sent to it falls back to the `no_think` fields with the answer cap alone.

Presets cover the engines FORGE knows (see docs/hosts.md); the names of the
first five thinking controls (`none`, `vllm-qwen3`, `openai-effort`, `deepseek`, `anthropic`)
stay presets with exactly the fields they always sent, so stored configurations keep their
configuration hash and their outcomes stay valid. Anything else takes a custom map as JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from forge_core.arms import THINKING_BUDGETS
from forge_core.errors import InvalidInput

BUDGET = "$budget"  # substituted with the depth's reasoning budget in tokens
CAP = "$cap"  # substituted with the answer cap, plus the budget at a thinking depth
OFF_DEPTH = "no_think"
THINKING_DEPTHS: tuple[str, ...] = ("think_low", "think_high")
MAPPED_DEPTHS: tuple[str, ...] = (OFF_DEPTH, *THINKING_DEPTHS)
PROTOCOLS: tuple[str, ...] = ("openai", "anthropic")
CUSTOM = "custom"  # the thinking control of a host with its own JSON map
USAGE_REASONING_PATH = "completion_tokens_details.reasoning_tokens"  # OpenAI-style usage detail
CHAT_REASONING_FIELDS = ("reasoning", "reasoning_content")  # vLLM/OpenRouter, then older vLLM/llama.cpp/SGLang


@dataclass(frozen=True)
class DepthRequest:
    """What one depth adds to a request."""

    fields: Mapping[str, Any]  # JSON fields merged into the body ("$budget" and "$cap" substituted)
    sampling: bool = True  # send the request's temperature and top_p


@dataclass(frozen=True)
class DepthMap:
    """Per depth, the request fields sent; and where reasoning text and its token count come back."""

    protocol: str  # "openai" or "anthropic"
    depths: Mapping[str, DepthRequest]  # no_think always; think_low and think_high on thinking hosts
    reasoning_fields: tuple[str, ...] = CHAT_REASONING_FIELDS  # message fields holding reasoning text
    reasoning_tokens_path: str = USAGE_REASONING_PATH  # dotted path in `usage`; "" = never reported
    notes: str = field(default="", compare=False)  # what to know about this engine (shown, not sent)

    @property
    def has_budget(self) -> bool:
        """True when the map has both thinking depths (a 12-arm host)."""
        return all(depth in self.depths for depth in THINKING_DEPTHS)

    def depth_for(self, budget: int | None) -> str:
        """The depth a request's budget selects: none -> no_think; up to think_low's budget ->
        think_low; above -> think_high; no_think again on a map without thinking depths."""
        if budget is None or not self.has_budget:
            return OFF_DEPTH
        return "think_low" if budget <= THINKING_BUDGETS["think_low"] else "think_high"

    def request_fields(self, answer_cap: int, budget: int | None) -> tuple[dict[str, Any], bool]:
        """(the body fields, whether sampling is sent) for a request with this answer cap and budget."""
        depth = self.depth_for(budget)
        thinking_budget = budget if depth != OFF_DEPTH else 0
        values = {BUDGET: thinking_budget, CAP: answer_cap + (thinking_budget or 0)}
        entry = self.depths[depth]
        return _substitute(entry.fields, values), entry.sampling

    def as_json(self) -> dict[str, Any]:
        """The map as plain JSON (the format `--depth-map FILE.json` reads)."""
        return {
            "protocol": self.protocol,
            "depths": {name: {"fields": dict(entry.fields), "sampling": entry.sampling}
                       for name, entry in self.depths.items()},
            "reasoning_fields": list(self.reasoning_fields),
            "reasoning_tokens_path": self.reasoning_tokens_path,
        }


def _substitute(value: Any, values: dict[str, int]) -> Any:
    if isinstance(value, str) and value in values:
        return values[value]
    if isinstance(value, Mapping):
        return {key: _substitute(item, values) for key, item in value.items()}
    if isinstance(value, list):
        return [_substitute(item, values) for item in value]
    return value


def _chat(off: dict[str, Any], low: dict[str, Any] | None = None, high: dict[str, Any] | None = None, *,
          sampling: bool = True, notes: str = "") -> DepthMap:
    """An OpenAI-protocol map; `low`/`high` None leaves the thinking depths out."""
    depths = {OFF_DEPTH: DepthRequest(off, sampling)}
    if low is not None and high is not None:
        depths |= {"think_low": DepthRequest(low, sampling), "think_high": DepthRequest(high, sampling)}
    return DepthMap("openai", depths, notes=notes)


def _messages(off: dict[str, Any], low: dict[str, Any] | None = None, high: dict[str, Any] | None = None, *,
              notes: str = "") -> DepthMap:
    """An Anthropic-protocol map: sampling at the off depth only (thinking requires temperature 1)."""
    depths = {OFF_DEPTH: DepthRequest(off, True)}
    if low is not None and high is not None:
        depths |= {"think_low": DepthRequest(low, False), "think_high": DepthRequest(high, False)}
    return DepthMap("anthropic", depths, reasoning_fields=(), reasoning_tokens_path="", notes=notes)


def _template_kwargs(enabled: bool, **extra: Any) -> dict[str, Any]:
    return {"chat_template_kwargs": {"enable_thinking": enabled, **extra}}


_VLLM = _chat(
    {"max_tokens": CAP, **_template_kwargs(False)},
    {"max_tokens": CAP, **_template_kwargs(True), "thinking_token_budget": BUDGET},
    {"max_tokens": CAP, **_template_kwargs(True), "thinking_token_budget": BUDGET},
    notes="Qwen3-style templates think when enable_thinking is missing; thinking_token_budget needs a "
          "reasoning parser configured on the server.")
_OPENAI_EFFORT = _chat(
    {"max_completion_tokens": CAP},
    {"max_completion_tokens": CAP, "reasoning_effort": "low"},
    {"max_completion_tokens": CAP, "reasoning_effort": "high"}, sampling=False,
    notes="no_think leaves reasoning_effort out (the model's default effort applies).")
_ANTHROPIC_BUDGET_THINKING = {"max_tokens": CAP, "thinking": {"type": "enabled", "budget_tokens": BUDGET},
                              "temperature": 1.0}

PRESETS: dict[str, DepthMap] = {
    "none": _chat({"max_tokens": CAP}, notes="No reasoning budget: 6 arms."),
    "vllm": _VLLM,
    "sglang": _chat(
        {"max_tokens": CAP, **_template_kwargs(False)},
        {"max_tokens": CAP, **_template_kwargs(True, thinking_budget=BUDGET)},
        {"max_tokens": CAP, **_template_kwargs(True, thinking_budget=BUDGET)},
        notes="thinking_budget is a template hint; a hard budget needs --enable-strict-thinking on the server."),
    "llamacpp": _chat(
        {"max_tokens": CAP, **_template_kwargs(False)},
        {"max_tokens": CAP, **_template_kwargs(True), "reasoning_budget_tokens": BUDGET},
        {"max_tokens": CAP, **_template_kwargs(True), "reasoning_budget_tokens": BUDGET},
        notes="The server's --reasoning-budget applies when a build ignores the per-request field."),
    "openai": _chat(
        {"max_completion_tokens": CAP, "reasoning_effort": "none"},
        {"max_completion_tokens": CAP, "reasoning_effort": "low"},
        {"max_completion_tokens": CAP, "reasoning_effort": "high"}, sampling=False,
        notes="reasoning_effort 'none' exists on newer models only; use openai-effort for older ones."),
    "openrouter": _chat(
        {"max_tokens": CAP, "reasoning": {"enabled": False}},
        {"max_tokens": CAP, "reasoning": {"max_tokens": BUDGET}},
        {"max_tokens": CAP, "reasoning": {"max_tokens": BUDGET}},
        notes="Reasoning comes back in message.reasoning; some models do not return it."),
    "deepseek": _chat(
        {"max_tokens": CAP, "thinking": {"type": "disabled"}},
        {"max_tokens": CAP, "thinking": {"type": "enabled"}, "reasoning_effort": "low"},
        {"max_tokens": CAP, "thinking": {"type": "enabled"}, "reasoning_effort": "high"}),
    "anthropic-budget": _messages(
        {"max_tokens": CAP, "thinking": {"type": "disabled"}},
        _ANTHROPIC_BUDGET_THINKING, _ANTHROPIC_BUDGET_THINKING,
        notes="Budgets of at least 1,024 tokens, below max_tokens; older models only."),
    "anthropic-adaptive": _messages(
        {"max_tokens": CAP, "thinking": {"type": "disabled"}},
        {"max_tokens": CAP, "thinking": {"type": "adaptive"}, "output_config": {"effort": "low"}, "temperature": 1.0},
        {"max_tokens": CAP, "thinking": {"type": "adaptive"}, "output_config": {"effort": "high"}, "temperature": 1.0},
        notes="Effort, not a token budget; some models cannot turn thinking off."),
    # The controls of earlier FORGE versions, unchanged (stored configurations name them).
    "vllm-qwen3": _VLLM,
    "openai-effort": _OPENAI_EFFORT,
    "anthropic": _messages({"max_tokens": CAP}, _ANTHROPIC_BUDGET_THINKING, _ANTHROPIC_BUDGET_THINKING),
}
# The thinking controls each protocol accepts ("none" serves both).
PROTOCOL_PRESETS: dict[str, tuple[str, ...]] = {
    protocol: tuple(name for name, preset in PRESETS.items() if preset.protocol == protocol or name == "none")
    for protocol in PROTOCOLS
}
_ANTHROPIC_NONE = _messages({"max_tokens": CAP}, notes="No reasoning budget: 6 arms.")


def preset_map(thinking: str, protocol: str) -> DepthMap:
    """The preset `thinking` for a host of this protocol, with a clear error for anything else."""
    if thinking not in PROTOCOL_PRESETS[protocol]:
        known = ", ".join([*PROTOCOL_PRESETS[protocol], CUSTOM])
        raise InvalidInput(f"thinking control '{thinking}' is not one for {protocol} hosts (known: {known})")
    return _ANTHROPIC_NONE if protocol == "anthropic" and thinking == "none" else PRESETS[thinking]


def parse_depth_map(text: str) -> DepthMap:
    """A custom depth map from its JSON (the `as_json` format), with one-line errors."""
    try:
        raw = json.loads(text)
    except ValueError as error:
        raise InvalidInput(f"depth map is not valid JSON: {error}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("depths"), dict):
        raise InvalidInput('a depth map is a JSON object with "depths": {"no_think": {"fields": {...}}, ...}')
    protocol = raw.get("protocol", "openai")
    if protocol not in PROTOCOLS:
        raise InvalidInput(f"depth map protocol must be one of {', '.join(PROTOCOLS)}, not {protocol!r}")
    depths = {name: _parse_depth(name, entry) for name, entry in raw["depths"].items()}
    if OFF_DEPTH not in depths:
        raise InvalidInput(f'a depth map needs a "{OFF_DEPTH}" entry (the fields that turn thinking off)')
    if sum(depth in depths for depth in THINKING_DEPTHS) == 1:
        raise InvalidInput("a depth map has both think_low and think_high, or neither")
    fields = raw.get("reasoning_fields", list(CHAT_REASONING_FIELDS))
    path = raw.get("reasoning_tokens_path", USAGE_REASONING_PATH)
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields) or not isinstance(path, str):
        raise InvalidInput("reasoning_fields is a list of field names and reasoning_tokens_path a string")
    return DepthMap(protocol, depths, tuple(fields), path)


def _parse_depth(name: str, entry: Any) -> DepthRequest:
    if name not in MAPPED_DEPTHS:
        raise InvalidInput(f"depth map entry '{name}' is not one of {', '.join(MAPPED_DEPTHS)} "
                           "(cot sends the no_think fields)")
    if not isinstance(entry, dict) or not isinstance(entry.get("fields"), dict):
        raise InvalidInput(f'depth map entry "{name}" needs "fields": a JSON object of request fields')
    sampling = entry.get("sampling", True)
    if not isinstance(sampling, bool):
        raise InvalidInput(f'depth map entry "{name}": "sampling" is true or false')
    return DepthRequest(entry["fields"], sampling)


def canonical_json(depth_map: DepthMap) -> str:
    """The map's JSON with sorted keys: what a host configuration stores and hashes."""
    return json.dumps(depth_map.as_json(), sort_keys=True, separators=(",", ":"))
