"""Plotly figures of the dashboard."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from forge_core.reports import MACRO

TOKENS_LABEL = "mean tokens per query (in + out)"


def cost_quality(summary: pd.DataFrame, benchmark: str) -> go.Figure:
    """Mean F1 against mean token cost of each policy on one benchmark (or `macro`)."""
    rows = summary[summary["benchmark"] == benchmark]
    figure = px.scatter(
        rows, x="tokens", y="f1", color="kind", symbol="kind", text="policy",
        hover_data={"tokens_in": ":.1f", "tokens_out": ":.1f", "queries": True, "kind": False},
        labels={"tokens": TOKENS_LABEL, "f1": "mean F1"},
        color_discrete_map={"fixed": "#4c78a8", "oracle": "#e45756"},
    )
    figure.update_traces(marker_size=13, textposition="top center")
    figure.update_layout(height=420, margin={"t": 30}, legend_title_text="")
    return figure


def per_arm(summary: pd.DataFrame, value: str, label: str) -> go.Figure:
    """One grouped bar per arm and benchmark (macro excluded) for `value` (f1 or tokens)."""
    rows = summary[(summary["benchmark"] != MACRO) & (summary["kind"] == "fixed")]
    figure = px.bar(rows, x="policy", y=value, color="benchmark", barmode="group",
                    labels={"policy": "arm", value: label})
    figure.update_layout(height=360, margin={"t": 30})
    return figure


def arm_probabilities(probabilities: dict[str, float], chosen: str) -> go.Figure:
    """The router's probability per arm, the chosen arm highlighted."""
    arms = list(probabilities)
    figure = go.Figure(go.Bar(
        x=arms, y=[probabilities[a] for a in arms],
        marker_color=["#e45756" if a == chosen else "#4c78a8" for a in arms]))
    figure.update_layout(height=300, margin={"t": 30}, yaxis_title="probability", xaxis_title="arm")
    return figure
