"""The Overview's Vega-Lite charts (`app.overview_charts`): valid Vega-Lite, drawing the rows they must
(one benchmark's policies; the fixed arms per benchmark; visible answer and reasoning stacked per arm)."""

from __future__ import annotations

import pandas as pd
import pytest

from app import overview_charts
from forge_core.reports.tables import MACRO

from support.vega_charts import assert_valid

ARMS = ("direct:no_think", "summary:no_think", "raw:no_think")
BENCHMARKS = ("hotpotqa", "popqa")


def summary() -> pd.DataFrame:
    """A summary as `tables.policy_summary` lays it out (each arm, then the oracle, per benchmark and macro)."""
    rows = [{"policy": policy, "kind": "oracle" if policy == "oracle" else "fixed", "benchmark": benchmark,
             "queries": 100 + index, "f1": (index + 1) / 53 + position / 7, "tokens_in": 60.5 + 3 * index,
             "tokens_out": 5.25 + index + position, "tokens": 65.75 + 4 * index + position}
            for position, benchmark in enumerate((*BENCHMARKS, MACRO))
            for index, policy in enumerate((*ARMS, "oracle"))]
    return pd.DataFrame(rows)



@pytest.mark.parametrize("benchmark", [MACRO, "popqa"])
def test_cost_quality_draws_one_benchmarks_policies_named_and_coloured_by_kind(benchmark: str) -> None:
    frame, spec = overview_charts.cost_quality(summary(), benchmark)
    assert_valid(frame, spec)
    expected = summary()[summary()["benchmark"] == benchmark]
    assert list(frame["policy"]) == [*ARMS, "oracle"] and list(frame["f1"]) == list(expected["f1"])
    points, names = spec["layer"]
    assert points["encoding"]["color"]["scale"] == {"domain": ["fixed", "oracle"], "range": ["#4c78a8", "#e45756"]}
    assert names["encoding"]["text"]["field"] == "policy" and points["encoding"]["x"]["field"] == "tokens"


@pytest.mark.parametrize(("value", "label"), [("f1", "mean F1"), ("tokens", overview_charts.TOKENS_LABEL)])
def test_per_arm_groups_the_fixed_arms_by_benchmark_without_macro_or_oracle(value: str, label: str) -> None:
    frame, spec = overview_charts.per_arm(summary(), value, label)
    assert_valid(frame, spec)
    assert len(frame) == len(ARMS) * len(BENCHMARKS) and set(frame["benchmark"]) == set(BENCHMARKS)
    assert "oracle" not in set(frame["policy"]) and list(frame.columns) == ["policy", "benchmark", value]
    assert spec["encoding"]["xOffset"]["field"] == "benchmark" and spec["encoding"]["y"]["title"] == label
    assert spec["encoding"]["x"]["sort"] == list(ARMS)


def test_reasoning_is_stacked_on_the_visible_answer_only_where_some_arm_reasons() -> None:
    reasoning = pd.DataFrame({"arm": list(ARMS), "tokens_out": [10.0, 40.0, 20.0],
                              "tokens_reasoning": [0.0, 30.0, None]})
    frame, spec = overview_charts.reasoning_per_arm(reasoning)
    assert_valid(frame, spec)
    stacked = frame.pivot(index="arm", columns="part", values="tokens").loc[list(ARMS)]
    assert list(stacked["visible answer"]) == [10.0, 10.0, 20.0] and list(stacked["reasoning"]) == [0.0, 30.0, 0.0]
    assert spec["encoding"]["y"]["stack"] == "zero"
    frame, spec = overview_charts.reasoning_per_arm(reasoning.assign(tokens_reasoning=0.0))
    assert set(frame["part"]) == {"visible answer"}
    assert spec["encoding"]["color"]["scale"]["domain"] == ["visible answer"]
