"""The depth check against local doubles of each engine's wire format: right verdicts, stored
with the configuration, and the 12-arm enumeration refusal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forge_core.errors import InvalidInput, MissingStep
from forge_core.evidence.depth_check import (
    DepthResult,
    HostCheckRequest,
    classify,
    refuse_unchecked_depths,
    run_host_check,
)
from forge_core.hosts.base import HostConfig
from forge_core.hosts.depth_maps import PRESETS, canonical_json, parse_depth_map
from forge_core.hosts.registry import config_hash, save_host_config
from forge_core.store import Store

from support.thinking_server import Engine, ThinkingServer

TWELVE = ("no_think", "cot", "think_low", "think_high")


def _report(tmp_path: Path, engine: Engine, thinking: str, kind: str = "openai", custom: str = "",
            questions: int = 2) -> dict:
    store = Store(tmp_path / "store.duckdb")
    with ThinkingServer(engine) as server:
        save_host_config(store, HostConfig(name="t", kind=kind, model="m", base_url=server.base_url,
                                           thinking=thinking, custom_depth_map=custom, max_retries=0))
        return run_host_check(store, HostCheckRequest("t", questions))


def _verdicts(tmp_path: Path, *args, **kwargs) -> dict[str, str]:
    return {row["depth"]: row["verdict"] for row in _report(tmp_path, *args, **kwargs)["depths"]}


def _forced(tmp_path: Path, *args, **kwargs) -> dict[str, str | None]:
    return {row["depth"]: row["with_budget_forcing"] for row in _report(tmp_path, *args, **kwargs)["depths"]}


def _result(depth: str, budget: int | None, tokens: tuple[int, ...]) -> DepthResult:
    return DepthResult(depth, budget, tokens, (1.0,) * len(tokens), ("usage",) * len(tokens))


def test_classify_exact_rules() -> None:
    results = classify([
        _result("no_think", None, (0, 0, 0)),
        _result("cot", None, (0, 12, 0)),
        _result("think_low", 1024, (900, 1126, 300)),  # 1,126 = 1,024 x 1.1 rounded down: still within
        _result("think_high", 4096, (3000, 4600, 300)),  # 4,600 > 4,505.6
    ])
    assert [(r.verdict, r.note) for r in results] == [
        ("honoured", ""), ("cannot turn off", "reasoned on 1 of 3 questions"), ("honoured", ""),
        ("over budget", "4600 reasoning tokens against a budget of 4096")]


def test_classify_calls_equal_low_and_high_beyond_a_budget_ignored_but_equal_within_budgets_honoured() -> None:
    ignored = classify([_result("think_low", 1024, (2000, 2100)), _result("think_high", 4096, (2050, 2100))])
    assert [r.verdict for r in ignored] == ["ignored", "ignored"]
    not_binding = classify([_result("think_low", 1024, (300, 310)), _result("think_high", 4096, (300, 310))])
    assert [r.verdict for r in not_binding] == ["honoured", "honoured"]
    silent = classify([_result("think_low", 1024, (0, 0)), _result("think_high", 4096, (0, 0))])
    assert [r.verdict for r in silent] == ["ignored", "ignored"]


@pytest.mark.parametrize(("engine", "thinking", "kind"), [
    ("vllm", "vllm", "openai"), ("sglang", "sglang", "openai"), ("llamacpp", "llamacpp", "openai"),
    ("openai", "openai", "openai"), ("anthropic", "anthropic-budget", "anthropic"),
])
def test_each_engine_honouring_its_preset_is_honoured_at_every_depth(
        tmp_path: Path, engine: str, thinking: str, kind: str) -> None:
    verdicts = _verdicts(tmp_path, Engine(engine), thinking, kind)
    assert verdicts == dict.fromkeys(TWELVE, "honoured")


def test_an_engine_that_ignores_budgets_is_caught(tmp_path: Path) -> None:
    verdicts = _verdicts(tmp_path, Engine("vllm", honours_budget=False), "vllm")
    assert verdicts == {"no_think": "honoured", "cot": "honoured", "think_low": "ignored", "think_high": "ignored"}


def test_a_soft_budget_is_over_budget(tmp_path: Path) -> None:
    verdicts = _verdicts(tmp_path, Engine("sglang", overshoot=1.5), "sglang")
    assert verdicts["think_low"] == "over budget" and verdicts["think_high"] == "honoured"


def test_budget_forcing_brings_an_ignored_budget_to_honoured_where_the_engine_continues(tmp_path: Path) -> None:
    forced = _forced(tmp_path, Engine("vllm", honours_budget=False), "vllm")
    assert forced == {"no_think": None, "cot": None, "think_low": "honoured", "think_high": "honoured"}


def test_budget_forcing_on_llama_cpp_brings_an_over_budget_depth_to_honoured(tmp_path: Path) -> None:
    report = _report(tmp_path, Engine("llamacpp", overshoot=1.5, natural_reasoning=3000), "llamacpp")
    rows = {row["depth"]: row for row in report["depths"]}
    assert rows["think_low"]["verdict"] == "over budget" and rows["think_high"]["verdict"] == "honoured"
    assert rows["think_low"]["with_budget_forcing"] == "honoured" and rows["think_high"]["with_budget_forcing"] is None


def test_budget_forcing_does_not_help_an_engine_that_cannot_continue_a_message(tmp_path: Path) -> None:
    forced = _forced(tmp_path, Engine("sglang", overshoot=1.5), "sglang")
    assert forced["think_low"] in ("over budget", "ignored") and forced["think_high"] is None


def test_a_map_without_the_off_field_cannot_turn_a_qwen3_style_engine_off(tmp_path: Path) -> None:
    custom = PRESETS["vllm"].as_json()
    custom["depths"]["no_think"]["fields"] = {"max_tokens": "$cap"}  # enable_thinking left out
    text = canonical_json(parse_depth_map(json.dumps(custom)))
    verdicts = _verdicts(tmp_path, Engine("vllm"), "custom", custom=text)
    assert verdicts["no_think"] == "cannot turn off" and verdicts["cot"] == "cannot turn off"


def test_a_model_that_refuses_budgets_is_refused_at_the_thinking_depths_and_named(tmp_path: Path) -> None:
    report = _report(tmp_path, Engine("anthropic", refuses_budget_tokens=True), "anthropic-budget", "anthropic")
    rows = {row["depth"]: row for row in report["depths"]}
    assert [rows[d]["verdict"] for d in TWELVE] == ["honoured", "honoured", "refused", "refused"]
    assert "HTTP 400" in rows["think_low"]["note"] and "not supported" in rows["think_low"]["note"]
    assert rows["think_low"]["reasoning_median"] is None and rows["think_low"]["with_budget_forcing"] is None


def test_an_engine_that_ignores_the_off_field_cannot_turn_off(tmp_path: Path) -> None:
    verdicts = _verdicts(tmp_path, Engine("anthropic", thinks_when_off=True), "anthropic-adaptive", "anthropic")
    assert verdicts["no_think"] == "cannot turn off" and verdicts["think_low"] == "honoured"


def test_the_report_counts_reasoning_from_usage_or_text_and_is_stored_by_configuration(tmp_path: Path) -> None:
    store = Store(tmp_path / "store.duckdb")
    with ThinkingServer(Engine("vllm", natural_reasoning=700)) as server:
        config = HostConfig(name="t", kind="openai", model="m", base_url=server.base_url, thinking="vllm")
        save_host_config(store, config)
        report = run_host_check(store, HostCheckRequest("t", 1))
        bodies = list(server.received)
    low = next(row for row in report["depths"] if row["depth"] == "think_low")
    assert (low["reasoning_tokens"], low["reasoning_methods"], low["budget"]) == ([700], ["estimated"], 1024)
    assert bodies[0]["chat_template_kwargs"] == {"enable_thinking": False}  # no_think, the first depth sent
    checked_at, stored = store.host_check("t", config_hash(config))
    assert stored == report


def test_twelve_arms_need_a_check_that_found_every_depth_honoured(tmp_path: Path) -> None:
    store = Store(tmp_path / "store.duckdb")
    with ThinkingServer(Engine("vllm", honours_budget=False)) as server:
        config = HostConfig(name="t", kind="openai", model="m", base_url=server.base_url, thinking="vllm")
        save_host_config(store, config)
        with pytest.raises(MissingStep, match="no depth check for this configuration: run `forge host check t`"):
            refuse_unchecked_depths(store, config, TWELVE)
        run_host_check(store, HostCheckRequest("t", 1))
    with pytest.raises(InvalidInput, match=r"found think_low ignored, think_high ignored; .*--allow-unchecked-depths"):
        refuse_unchecked_depths(store, config, TWELVE)
    refuse_unchecked_depths(store, config, ("no_think", "cot"))  # the 6-arm depths passed


def test_question_count_out_of_range_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="--questions is between 1 and 6"):
        HostCheckRequest("embedded", 0).check(Store(tmp_path / "store.duckdb"))
