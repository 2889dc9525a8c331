"""Depth maps: preset fields per depth, custom maps from JSON, and configuration hashes that stay put."""

from __future__ import annotations

import json

import pytest

from forge_core.errors import InvalidInput
from forge_core.hosts.anthropic import messages_body
from forge_core.hosts.base import GenerationRequest, HostConfig
from forge_core.hosts.depth_maps import PRESETS, canonical_json, parse_depth_map
from forge_core.hosts.openai_compat import chat_completion_body, parse_chat_completion, split_inline_reasoning
from forge_core.hosts.registry import BUILTIN_HOSTS, config_hash, host_config_from_dict, save_host_config
from forge_core.store import Store

MESSAGES = ({"role": "user", "content": "Capital of France?"},)


def _body(thinking: str, budget: int | None, kind: str = "openai", custom: str = "") -> dict:
    config = HostConfig(name="h", kind=kind, model="m", base_url="http://127.0.0.1:1/v1", thinking=thinking,
                        custom_depth_map=custom)
    request = GenerationRequest(MESSAGES, max_tokens=64, thinking_budget=budget)
    build = messages_body if kind == "anthropic" else chat_completion_body
    return build(config, request)


# The configuration hashes of the five thinking controls FORGE had before depth maps, and of the
# built-in hosts: stored outcomes are keyed by them, so they must never move.
PINNED_HASHES = {
    ("openai", "none"): "1b005c20c4a0",
    ("openai", "vllm-qwen3"): "25c2f1036df4",
    ("openai", "openai-effort"): "246b1d56bec7",
    ("openai", "deepseek"): "67a34b9f0597",
}


@pytest.mark.parametrize(("kind_thinking", "expected"), PINNED_HASHES.items())
def test_configurations_stored_before_depth_maps_keep_their_hash(kind_thinking: tuple[str, str], expected: str) -> None:
    kind, thinking = kind_thinking
    stored = {"name": "h", "kind": kind, "model": "m", "base_url": "http://x/v1", "thinking": thinking,
              "api_key_env": "", "max_concurrency": 4, "timeout_s": 120.0, "max_retries": 4}  # an old row
    assert config_hash(host_config_from_dict(stored)) == expected


def test_builtin_and_anthropic_hashes_are_pinned() -> None:
    assert config_hash(BUILTIN_HOSTS["embedded"]) == "4c2f743c8914"
    assert config_hash(BUILTIN_HOSTS["embedded-tiny"]) == "6c5ba619d708"
    assert config_hash(HostConfig(name="h", kind="anthropic", model="claude", thinking="anthropic")) == "57916a1a0dba"


def test_vllm_preset_turns_thinking_off_explicitly_and_sends_the_budget() -> None:
    assert _body("vllm", None)["chat_template_kwargs"] == {"enable_thinking": False}
    low = _body("vllm", 1024)
    assert (low["chat_template_kwargs"], low["thinking_token_budget"], low["max_tokens"]) == (
        {"enable_thinking": True}, 1024, 64 + 1024)
    assert _body("vllm", 4096)["thinking_token_budget"] == 4096


@pytest.mark.parametrize(("thinking", "off", "high"), [
    ("sglang", {"chat_template_kwargs": {"enable_thinking": False}},
     {"chat_template_kwargs": {"enable_thinking": True, "thinking_budget": 4096}}),
    ("llamacpp", {"chat_template_kwargs": {"enable_thinking": False}},
     {"chat_template_kwargs": {"enable_thinking": True}, "reasoning_budget_tokens": 4096}),
    ("openai", {"reasoning_effort": "none"}, {"reasoning_effort": "high"}),
    ("openrouter", {"reasoning": {"enabled": False}}, {"reasoning": {"max_tokens": 4096}}),
    ("deepseek", {"thinking": {"type": "disabled"}}, {"thinking": {"type": "enabled"}, "reasoning_effort": "high"}),
])
def test_chat_presets_send_their_off_and_budget_fields(thinking: str, off: dict, high: dict) -> None:
    assert off.items() <= _body(thinking, None).items()
    assert high.items() <= _body(thinking, 4096).items()


def test_anthropic_adaptive_sends_effort_and_no_sampling_when_thinking() -> None:
    body = _body("anthropic-adaptive", 1024, kind="anthropic")
    assert body["thinking"] == {"type": "adaptive"} and body["output_config"] == {"effort": "low"}
    assert body["temperature"] == 1.0 and body["max_tokens"] == 64 + 1024
    assert _body("anthropic-adaptive", None, kind="anthropic")["thinking"] == {"type": "disabled"}


def test_budget_on_a_host_without_thinking_depths_sends_the_off_fields_and_the_answer_cap() -> None:
    assert _body("none", 4096) == _body("none", None)
    assert _body("none", 4096)["max_tokens"] == 64


def test_custom_map_round_trips_and_changes_the_hash() -> None:
    custom = PRESETS["vllm"].as_json()
    custom["depths"]["no_think"]["fields"]["chat_template_kwargs"] = {"thinking": False}
    text = canonical_json(parse_depth_map(json.dumps(custom)))
    assert _body("custom", None, custom=text)["chat_template_kwargs"] == {"thinking": False}
    config = HostConfig(name="h", kind="openai", model="m", thinking="custom", custom_depth_map=text)
    assert config.supports_thinking
    assert config_hash(config) != config_hash(HostConfig(name="h", kind="openai", model="m", thinking="custom"))


@pytest.mark.parametrize(("text", "message"), [
    ("{", "not valid JSON"),
    ('{"depths": {"think_low": {"fields": {}}, "think_high": {"fields": {}}}}', 'needs a "no_think" entry'),
    ('{"depths": {"no_think": {"fields": {}}, "think_low": {"fields": {}}}}', "both think_low and think_high"),
    ('{"depths": {"no_think": {"fields": {}}, "cot": {"fields": {}}}}', "cot sends the no_think fields"),
    ('{"protocol": "grpc", "depths": {"no_think": {"fields": {}}}}', "protocol must be one of"),
])
def test_bad_custom_maps_are_refused_in_one_line(text: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        parse_depth_map(text)


def test_saving_refuses_a_control_of_the_other_protocol(tmp_path) -> None:
    store = Store(tmp_path / "store.duckdb")
    with pytest.raises(InvalidInput, match="not one for anthropic hosts"):
        save_host_config(store, HostConfig(name="h", kind="anthropic", model="m", thinking="vllm"))


def test_reasoning_comes_from_usage_else_from_the_reasoning_field_else_an_inline_think_block() -> None:
    message = {"content": "Paris", "reasoning": "France's capital is Paris ."}
    reported = {"prompt_tokens": 9, "completion_tokens": 40, "completion_tokens_details": {"reasoning_tokens": 38}}
    generation = parse_chat_completion({"choices": [{"message": message}], "usage": reported})
    assert (generation.tokens_reasoning, generation.reasoning_method) == (38, "usage")
    counted = parse_chat_completion({"choices": [{"message": message}],
                                     "usage": {"prompt_tokens": 9, "completion_tokens": 40}})
    assert (counted.tokens_reasoning, counted.reasoning_method) == (7, "estimated")  # France ' s capital is Paris .
    inline = parse_chat_completion({"choices": [{"message": {"content": "<think>hmm yes</think>\nParis"}}],
                                    "usage": {"prompt_tokens": 9, "completion_tokens": 6}})
    assert (inline.text, inline.tokens_reasoning, inline.reasoning_method) == ("Paris", 2, "estimated")
    plain = parse_chat_completion({"choices": [{"message": {"content": "Paris"}}],
                                   "usage": {"prompt_tokens": 9, "completion_tokens": 1}})
    assert (plain.tokens_reasoning, plain.reasoning_method) == (0, "none")


def test_an_unclosed_think_block_is_reasoning_only() -> None:
    assert split_inline_reasoning("<think>still going") == ("still going", "")
    assert split_inline_reasoning("Paris <think>") == ("", "Paris <think>")
