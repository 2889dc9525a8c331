"""The Overview's charts as Vega-Lite specs, each with the frame it draws (`st.vega_lite_chart(frame, spec)`)."""

from __future__ import annotations

import pandas as pd

from forge_core.reports.tables import MACRO

TOKENS_LABEL = "mean tokens per query (in + out)"
KIND_COLORS = {"fixed": "#4c78a8", "oracle": "#e45756"}
ANSWER_PARTS = ("visible answer", "reasoning")


def cost_quality(summary: pd.DataFrame, benchmark: str) -> tuple[pd.DataFrame, dict]:
    """Mean F1 against mean token cost of each policy on one benchmark (or `macro`), coloured and shaped
    by kind (fixed, oracle), each point named; its tokens in and out and queries in the tooltip."""
    rows = summary.loc[summary["benchmark"] == benchmark,
                       ["policy", "kind", "tokens", "f1", "tokens_in", "tokens_out", "queries"]]
    kinds = list(pd.unique(rows["kind"]))
    position = {"x": {"field": "tokens", "type": "quantitative", "title": TOKENS_LABEL, "scale": {"zero": False}},
                "y": {"field": "f1", "type": "quantitative", "title": "mean F1", "scale": {"zero": False}}}
    kind = {"field": "kind", "type": "nominal", "title": None,
            "scale": {"domain": kinds, "range": [KIND_COLORS.get(k, "#54a24b") for k in kinds]}}
    tooltip = [{"field": "policy", "type": "nominal"}, {"field": "tokens", "type": "quantitative", "format": ".1f"},
               {"field": "f1", "type": "quantitative", "format": ".3f", "title": "mean F1"},
               {"field": "tokens_in", "type": "quantitative", "format": ".1f"},
               {"field": "tokens_out", "type": "quantitative", "format": ".1f"},
               {"field": "queries", "type": "quantitative"}]
    return rows.reset_index(drop=True), {"height": 420, "layer": [
        {"mark": {"type": "point", "filled": True, "size": 170},
         "encoding": {**position, "color": kind, "shape": {**kind, "scale": {"domain": kinds}}, "tooltip": tooltip}},
        {"mark": {"type": "text", "dy": -13, "fontSize": 11},
         "encoding": {**position, "text": {"field": "policy", "type": "nominal"}}}]}


def per_arm(summary: pd.DataFrame, value: str, label: str) -> tuple[pd.DataFrame, dict]:
    """One grouped bar per arm and benchmark (macro and the oracle excluded) for `value` (f1 or tokens)."""
    rows = summary.loc[(summary["benchmark"] != MACRO) & (summary["kind"] == "fixed"), ["policy", "benchmark", value]]
    arms = list(pd.unique(rows["policy"]))
    return rows.reset_index(drop=True), {"height": 360, "mark": {"type": "bar"}, "encoding": {
        "x": {"field": "policy", "type": "nominal", "title": "arm", "sort": arms, "axis": {"labelAngle": -40}},
        "xOffset": {"field": "benchmark", "type": "nominal"},
        "y": {"field": value, "type": "quantitative", "title": label},
        "color": {"field": "benchmark", "type": "nominal", "legend": {"orient": "bottom", "columns": 3}},
        "tooltip": [{"field": "benchmark", "type": "nominal"}, {"field": "policy", "type": "nominal", "title": "arm"},
                    {"field": value, "type": "quantitative", "format": ".3f", "title": label}]}}


def reasoning_per_arm(reasoning: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Mean output tokens per arm, stacked as visible answer and reasoning (the reasoning part only where
    some arm returned reasoning tokens: no empty legend entry on a host without it)."""
    reasoning_tokens = reasoning["tokens_reasoning"].fillna(0)
    parts = {"visible answer": reasoning["tokens_out"] - reasoning_tokens}
    if reasoning_tokens.any():
        parts["reasoning"] = reasoning_tokens
    frame = pd.concat([pd.DataFrame({"arm": reasoning["arm"], "part": part, "tokens": tokens,
                                     "order": ANSWER_PARTS.index(part)}) for part, tokens in parts.items()],
                      ignore_index=True)
    return frame, {"height": 320, "mark": {"type": "bar"}, "encoding": {
        "x": {"field": "arm", "type": "nominal", "sort": list(reasoning["arm"]), "axis": {"labelAngle": -40}},
        "y": {"field": "tokens", "type": "quantitative", "title": "mean output tokens", "stack": "zero"},
        "color": {"field": "part", "type": "nominal", "title": None, "scale": {"domain": list(parts)},
                  "legend": {"orient": "bottom"}},
        "order": {"field": "order", "type": "quantitative"},
        "tooltip": [{"field": "arm", "type": "nominal"}, {"field": "part", "type": "nominal"},
                    {"field": "tokens", "type": "quantitative", "format": ".1f"}]}}
