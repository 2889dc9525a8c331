"""Figures built from graph objects instead of plotly express (express took a fifth of the Action map's
first render to assemble one) are the figures express made: compared trace by trace and in layout."""

from __future__ import annotations

import json

import pandas as pd
import plotly.express as px
import pytest

from app import charts
from forge_core.arms import alphabet


def express_cluster_mix(mix: pd.DataFrame, arms: tuple[str, ...]):
    """The Action map's cluster mix as plotly express made it before (the reference)."""
    figure = px.bar(mix, x="cluster", y="share", color="arm", facet_col="policy", barmode="stack",
                    category_orders={"arm": list(arms), "policy": ["router", "oracle"]},
                    color_discrete_map=charts.ARM_COLORS, hover_data={"queries": True, "agreement": ":.2f"},
                    labels={"share": "share of the cluster's queries"})
    figure.for_each_annotation(lambda a: a.update(text=a.text.split("=", 1)[-1]))
    figure.update_xaxes(dtick=1)
    figure.update_layout(height=360, margin={"t": 40}, legend_title_text="arm")
    return figure


def mix_of(arms: tuple[str, ...], clusters: int) -> pd.DataFrame:
    """A cluster mix as `ActionMap.cluster_mix` lays it out, with distinct numbers per row."""
    rows = [{"cluster": cluster + 1, "policy": policy, "arm": arm, "share": (index + 1) / 97,
             "queries": 10 + cluster, "agreement": 0.25 + cluster / 8}
            for policy in ("router", "oracle") for cluster in range(clusters) for index, arm in enumerate(arms)]
    return pd.DataFrame(rows, columns=["cluster", "policy", "arm", "share", "queries", "agreement"])


def as_json(figure) -> dict:
    """The figure as the browser receives it, without empty settings (express writes an empty font on
    each facet label, which sets nothing; graph objects drop it)."""
    return _without_empty(json.loads(figure.to_json()))


def _without_empty(value):
    if isinstance(value, dict):
        return {key: _without_empty(item) for key, item in value.items() if item != {}}
    if isinstance(value, list):
        return [_without_empty(item) for item in value]
    return value


ALPHABETS = [tuple(arm.name for arm in alphabet(6)), tuple(arm.name for arm in alphabet(12))]


@pytest.mark.parametrize("arms", ALPHABETS)
def test_cluster_mix_is_the_figure_express_made(arms):
    mix = mix_of(arms, clusters=4)
    assert as_json(charts.cluster_mix(mix, arms)) == as_json(express_cluster_mix(mix, arms))


def express_cost_quality(summary: pd.DataFrame, benchmark: str):
    """The Overview's cost/quality scatter as plotly express made it before (the reference)."""
    rows = summary[summary["benchmark"] == benchmark]
    figure = px.scatter(
        rows, x="tokens", y="f1", color="kind", symbol="kind", text="policy",
        hover_data={"tokens_in": ":.1f", "tokens_out": ":.1f", "queries": True, "kind": False},
        labels={"tokens": charts.TOKENS_LABEL, "f1": "mean F1"},
        color_discrete_map={"fixed": "#4c78a8", "oracle": "#e45756"},
    )
    figure.update_traces(marker_size=13, textposition="top center")
    figure.update_layout(height=420, margin={"t": 30}, legend_title_text="")
    return figure


def express_per_arm(summary: pd.DataFrame, value: str, label: str):
    """The Overview's grouped bars per arm as plotly express made them before (the reference)."""
    rows = summary[(summary["benchmark"] != charts.MACRO) & (summary["kind"] == "fixed")]
    figure = px.bar(rows, x="policy", y=value, color="benchmark", barmode="group",
                    labels={"policy": "arm", value: label})
    figure.update_layout(height=360, margin={"t": 30})
    return figure


def policy_summary_of(arms: tuple[str, ...], benchmarks: tuple[str, ...]) -> pd.DataFrame:
    """A summary as `tables.policy_summary` lays it out (each arm, then the oracle, per benchmark and macro),
    with distinct numbers per row."""
    rows = [{"policy": policy, "kind": "oracle" if policy == "oracle" else "fixed", "benchmark": benchmark,
             "queries": 100 + index, "f1": (index + 1) / 53 + position / 7, "tokens_in": 60.5 + 3 * index,
             "tokens_out": 5.25 + index + position, "tokens": 65.75 + 4 * index + position}
            for position, benchmark in enumerate((*benchmarks, charts.MACRO))
            for index, policy in enumerate((*arms, "oracle"))]
    return pd.DataFrame(rows, columns=["policy", "kind", "benchmark", "queries", "f1", "tokens_in", "tokens_out",
                                       "tokens"])


BENCHMARKS = ("2wikimultihopqa", "fever", "hotpotqa", "musique", "popqa")


@pytest.mark.parametrize("arms", ALPHABETS)
@pytest.mark.parametrize("benchmark", [charts.MACRO, "hotpotqa"])
def test_cost_quality_is_the_figure_express_made(arms, benchmark):
    summary = policy_summary_of(arms, BENCHMARKS)
    assert as_json(charts.cost_quality(summary, benchmark)) == as_json(express_cost_quality(summary, benchmark))


@pytest.mark.parametrize("arms", ALPHABETS)
@pytest.mark.parametrize(("value", "label"), [("f1", "mean F1"), ("tokens", charts.TOKENS_LABEL)])
def test_per_arm_is_the_figure_express_made(arms, value, label):
    summary = policy_summary_of(arms, BENCHMARKS)
    assert as_json(charts.per_arm(summary, value, label)) == as_json(express_per_arm(summary, value, label))
