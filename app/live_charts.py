"""The Live query's bar charts of a routed answer, as Vega-Lite specs with the frame each draws
(`st.vega_lite_chart(frame, spec)`)."""

from __future__ import annotations

import pandas as pd

IMPLIED_UTILITY_LABEL = "utility vs the chosen arm"  # whole on the chart; its caption says τ × log-probability gap
CHOSEN_COLOR, OTHER_COLOR = "#e45756", "#4c78a8"


def arm_implied_utilities(implied: dict[str, float], chosen: str) -> tuple[pd.DataFrame, dict]:
    """Each arm's utility relative to the chosen arm as the router implies it (tau times the
    log-probability gap, `forge_core.routing.confidence`): the chosen arm at 0, the others below by
    the utility the router expects them to lose, each bar labelled; the units of the margin caption."""
    frame = _bars(implied, chosen, "utility")
    frame["label"] = ["chosen" if arm == chosen else f"{value:+.3f}" for arm, value in implied.items()]
    bars = _bar_spec(frame, "utility", IMPLIED_UTILITY_LABEL, ".3f")
    labels = {"mark": {"type": "text", "dy": 10, "baseline": "top", "fontSize": 11},
              "encoding": {"x": bars["encoding"]["x"], "y": bars["encoding"]["y"],
                           "text": {"field": "label", "type": "nominal"}}}
    return frame, {"height": 300, "layer": [bars, labels]}


def arm_probabilities(probabilities: dict[str, float], chosen: str) -> tuple[pd.DataFrame, dict]:
    """The router's probability per arm, the chosen arm highlighted."""
    frame = _bars(probabilities, chosen, "probability")
    return frame, {"height": 300, **_bar_spec(frame, "probability", "probability", ".3f")}


def _bars(values: dict[str, float], chosen: str, column: str) -> pd.DataFrame:
    """One row per arm in the router's order: its value and whether it is the chosen arm."""
    return pd.DataFrame({"arm": list(values), column: list(values.values()),
                         "chosen": [arm == chosen for arm in values]})


def _bar_spec(frame: pd.DataFrame, column: str, title: str, value_format: str) -> dict:
    """A bar per arm (in the frame's order) of `column`, the chosen arm in its own colour."""
    return {"mark": {"type": "bar"}, "encoding": {
        "x": {"field": "arm", "type": "nominal", "sort": list(frame["arm"]), "axis": {"labelAngle": -40}},
        "y": {"field": column, "type": "quantitative", "title": title},
        "color": {"field": "chosen", "type": "nominal", "legend": None,
                  "scale": {"domain": [True, False], "range": [CHOSEN_COLOR, OTHER_COLOR]}},
        "tooltip": [{"field": "arm", "type": "nominal"},
                    {"field": column, "type": "quantitative", "format": value_format}]}}
