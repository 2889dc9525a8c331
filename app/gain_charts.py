"""Utility gains with their paired 95% intervals, as Vega-Lite specs with the frame each draws
(`st.vega_lite_chart(frame, spec)`): the crossfit view's routing gain along the cost weights and the Transfer
page's gain against the calibration size K."""

from __future__ import annotations

import pandas as pd

from app.charts import RUN_COLORS

GAIN_TITLE = "utility gain (95% interval)"
ZERO_LINE = {"mark": {"type": "rule", "color": "#888", "strokeDash": [4, 4]}, "encoding": {"y": {"datum": 0}}}


def routing_gain(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Utility gain against the cost weights (in the frame's order), one panel per reference (the best fixed
    arm, the ridge floor), one line per policy with its 95% interval as a band; zero (no gain) dashed."""
    shown = frame.assign(panel="over the " + frame["reference"])
    weights = list(dict.fromkeys(frame["weights"]))
    x = {"field": "weights", "type": "ordinal", "sort": weights, "title": "cost weights λ_in / λ_out",
         "axis": {"labelAngle": 0}}
    color = _policy_colors("policy", frame)
    tooltip = _gain_tooltip({"field": "policy", "type": "nominal"}, {"field": "weights", "type": "ordinal"},
                            {"field": "against", "type": "nominal"})
    band = {"mark": {"type": "area", "opacity": 0.18},
            "encoding": {"x": x, "y": {"field": "gain_low", "type": "quantitative", "title": GAIN_TITLE},
                         "y2": {"field": "gain_high"}, "color": color}}
    lines = {"mark": {"type": "line", "point": True},
             "encoding": {"x": x, "y": {"field": "gain", "type": "quantitative", "title": GAIN_TITLE}, "color": color,
                          "tooltip": tooltip}}
    panels = list(dict.fromkeys(shown["panel"]))
    return shown, {"facet": {"field": "panel", "type": "nominal", "sort": panels, "title": None},
                   "columns": len(panels), "spec": {"width": 360, "height": 320, "layer": [band, lines, ZERO_LINE]}}


def calibration_gain(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Utility gain over the target's own Lite router against the calibration size K (0: zero-shot), one
    line per transferred router with its paired 95% interval as bars; zero (the target's own router) dashed."""
    x = {"field": "k", "type": "ordinal", "title": "target queries calibrated on (K; 0 = zero-shot)",
         "axis": {"labelAngle": 0}}
    color = _policy_colors("router", frame)
    tooltip = _gain_tooltip({"field": "router", "type": "nominal"}, {"field": "k", "type": "ordinal", "title": "K"})
    bars = {"mark": {"type": "rule"}, "encoding": {
        "x": x, "y": {"field": "gain_low", "type": "quantitative", "title": GAIN_TITLE}, "y2": {"field": "gain_high"},
        "color": color}}
    lines = {"mark": {"type": "line", "point": True}, "encoding": {
        "x": x, "y": {"field": "gain", "type": "quantitative", "title": GAIN_TITLE}, "color": color,
        "tooltip": tooltip}}
    note = {"mark": {"type": "text", "align": "right", "dy": 10, "color": "#666"},
            "encoding": {"y": {"datum": 0}, "x": {"value": "width"}, "text": {"value": "the target's own Lite router"}}}
    return frame.reset_index(drop=True), {"height": 380, "layer": [bars, lines, ZERO_LINE, note]}


def _policy_colors(field: str, frame: pd.DataFrame) -> dict:
    """A colour per value of `field`, in the frame's order, the legend below."""
    values = list(dict.fromkeys(frame[field]))
    return {"field": field, "type": "nominal", "title": None, "legend": {"orient": "bottom"},
            "scale": {"domain": values, "range": [RUN_COLORS[index % len(RUN_COLORS)] for index in range(len(values))]}}


def _gain_tooltip(*fields: dict) -> list[dict]:
    """A point's `fields`, then its gain and interval."""
    return [*fields, *({"field": name, "type": "quantitative", "format": "+.4f"}
                       for name in ("gain", "gain_low", "gain_high"))]
