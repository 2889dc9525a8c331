"""What a Stage-0 plan costs before it runs, and the dollar limit while it runs."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from pathlib import Path

import pytest

from forge_core.data.importing import import_benchmarks
from forge_core.enumeration.batch_files import ingest_results, openai_batch_line, parse_result_line
from forge_core.enumeration.calls import planned_calls
from forge_core.enumeration.estimate import BATCH_DISCOUNT, estimate_plan
from forge_core.enumeration.planning import EnumerationPlan
from forge_core.enumeration.runner import enumerate_arms
from forge_core.errors import MissingStep
from forge_core.hosts.base import HostConfig
from forge_core.hosts.openai_compat import OpenAICompatibleHost
from forge_core.hosts.registry import config_hash, get_host_config, save_host_config, save_host_prices
from forge_core.records import HostPrices
from forge_core.store import Store

from support.resources import require_tiny_model

CAPS = {"direct:no_think": 64, "summary:no_think": 64, "raw:no_think": 64, "direct:cot": 256, "summary:cot": 256,
        "raw:cot": 256, "sample1": 24, "sample2": 24, "sample3": 24}


@pytest.fixture
def store(benchmarks_root: Path) -> Store:
    store = Store(os.environ["FORGE_STORE"])
    import_benchmarks(store, benchmarks_root, ["2wikimultihopqa"])
    save_host_config(store, HostConfig(name="remote", kind="openai", model="m", base_url="http://127.0.0.1:9/v1"))
    return store


def _plan(**changes) -> EnumerationPlan:
    values = {"host": "remote", "split": "train", "benchmarks": ("2wikimultihopqa",), "per_benchmark": 3,
              "probes": True}
    return EnumerationPlan(**{**values, **changes})


def test_without_stored_calls_output_is_the_caps_and_input_is_counted_unscaled(store: Store) -> None:
    require_tiny_model()
    estimate = estimate_plan(store, _plan())
    assert estimate.calls == 3 * (6 + 3)
    assert {group.name: group.calls for group in estimate.groups} == dict.fromkeys(CAPS, 3)
    assert estimate.tokens_out == 3 * sum(CAPS.values())
    assert "unscaled" in estimate.input_method
    assert estimate.tokens_in > 0 and estimate.usd is None and estimate.batch_usd is None
    save_host_prices(store, HostPrices("remote", 2.0, 8.0))
    priced = estimate_plan(store, _plan())
    assert priced.usd == pytest.approx((priced.tokens_in * 2.0 + priced.tokens_out * 8.0) / 1e6)
    assert priced.batch_usd == pytest.approx(priced.usd * BATCH_DISCOUNT)
    assert priced.as_dict()["calls_by_kind"]["raw:cot"]["output_source"] == "cap"


def test_an_estimate_needs_no_api_key(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    require_tiny_model()
    monkeypatch.delenv("FORGE_TEST_UNSET_KEY", raising=False)
    save_host_config(store, HostConfig(name="keyed", kind="openai", model="m", base_url="http://127.0.0.1:9/v1",
                                       api_key_env="FORGE_TEST_UNSET_KEY"))
    estimate = estimate_plan(store, _plan(host="keyed"))
    assert estimate.calls == 3 * 9 and "unscaled" in estimate.input_method


def test_stored_calls_give_the_output_means_and_the_input_ratio(store: Store) -> None:
    require_tiny_model()
    first = _plan(per_benchmark=1)
    config = get_host_config(store, "remote")
    lines = [openai_batch_line(config, call) for call in planned_calls(store, first)]
    usage = {"prompt_tokens": 500, "completion_tokens": 7}
    results = [{"custom_id": line["custom_id"], "response": {"status_code": 200, "body": {
        "choices": [{"message": {"content": "x"}}], "usage": usage}}} for line in lines]
    ingest_results(store, (parse_result_line(result) for result in results))
    estimate = estimate_plan(store, _plan())
    assert estimate.calls == 2 * (6 + 3)
    assert estimate.tokens_out == 2 * 9 * 7  # every arm and sample's stored mean
    assert "x " in estimate.input_method and "on 6 stored calls" in estimate.input_method


def test_a_budget_needs_prices_and_the_host_configuration_hash_ignores_them(store: Store) -> None:
    config = get_host_config(store, "remote")
    with pytest.raises(MissingStep, match="--price-in"):
        _plan(budget_usd=1.0).check(store)
    save_host_prices(store, HostPrices("remote", 1.0, 1.0))
    _plan(budget_usd=1.0).check(store)
    assert config_hash(get_host_config(store, "remote")) == config_hash(config)


def test_the_run_stops_before_its_measured_spend_passes_the_budget(store: Store, tiny_server: HostConfig) -> None:
    """On the tiny host input counts are exact, so the spend never passes the budget."""
    save_host_prices(store, HostPrices("embedded-tiny", 1e6, 1e6))  # one dollar a token: easy sums
    plan = _plan(host="embedded-tiny", per_benchmark=1, n_arms=3, probes=False)
    budget = estimate_plan(store, plan).usd * 0.6  # at the caps: more than the calls will cost
    plan = dataclasses.replace(plan, budget_usd=budget)

    async def run():
        async with OpenAICompatibleHost(tiny_server) as client:
            return await enumerate_arms(store, plan, client)

    report = asyncio.run(run())
    stored = store.arm_outcomes("embedded-tiny")
    assert report.status.startswith("stopped: budget") and 1 <= report.calls < 3
    assert len(stored) == report.calls
    assert report.spent_usd == pytest.approx(float((stored["tokens_in"] + stored["tokens_out"]).sum()))
    assert report.spent_usd <= budget
