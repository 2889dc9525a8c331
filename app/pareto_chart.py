"""The Pareto chart of the Pareto page (both protocols) and the Transfer page, as a Vega-Lite spec and the frame
it draws. A Pareto slider step redraws it: the spec is a plain dict, built without Altair's validation, which
took about a seventh of a step's script.
"""

from __future__ import annotations

import json

import pandas as pd

from app.charts import COST_LABEL, KIND_MARKER_SIZES, KIND_ORDER, deployable_axis, policy_colors
from forge_core.reports.mix_view import HULL_NAME, hull_gap_text

# a shape per kind (the oracle a cross: Vega-Lite has no star)
KIND_SHAPES = {"router": "circle", "baseline": "diamond", "fixed arm": "square", "oracle": "cross"}
MARKER_AREA = {kind: size * size for kind, size in KIND_MARKER_SIZES.items()}  # Vega-Lite sizes are areas
FRONTIER_NAME = "frontier"
LINE_DASHES = {FRONTIER_NAME: [2, 3], HULL_NAME: [6, 4]}  # a dotted staircase, dashed chords (as the caption says)
FRONTIER_COLOR, HULL_COLOR = "#888", "#4c78a8"
ORACLE_NOTE = "oracle F1 {f1:.3f} ↑ (reference, above the axis)"
INTERVAL_COLUMNS = ("f1_low", "f1_high", "gain", "gain_low", "gain_high", "decidable")  # a crossfit run's points
INTERVAL_TITLE = "F1 (macro, out of fold; 95% interval)"
FACET_COLUMNS = 3
CHART_HEIGHT, FACET_SIZE = 560, 230


def pareto_chart(points: pd.DataFrame, by_benchmark: bool, color_by: str = "policy") -> tuple[pd.DataFrame, dict]:
    """The frame and Vega-Lite spec of the Pareto chart (`st.vega_lite_chart(frame, spec)`): F1 against
    cost for every named point (`name`; shape by kind), the frontier as a dotted staircase and the hull of
    the fixed arms (the mixes, where the points carry `on_hull`) as dashed chords, one facet per benchmark
    when asked; each point's tooltip says its gap to the hull at its own tokens. `color_by` "policy": one
    colour per policy, grouped by kind; "utility": colour by utility under the chosen weights, points
    named on the chart. On one chart an oracle far above the deployable points is pinned at the axis's top
    with its F1 written, so it does not squeeze them into one band. Points carrying a 95% interval of their F1
    (`f1_low`, `f1_high`: a crossfit run's) draw it as a bar, their gain over the best fixed arm in the tooltip."""
    frame = chart_frame(points)
    axis = None if by_benchmark else deployable_axis(frame)
    if axis is not None:
        frame["f1_drawn"] = frame["f1_drawn"].clip(upper=axis[1])
        frame["note"] = [ORACLE_NOTE.format(f1=f1) if kind == "oracle" else ""
                         for kind, f1 in zip(frame["kind"], frame["macro_f1"])]
    y_title = "F1" if by_benchmark else INTERVAL_TITLE if "f1_low" in frame else "F1 (macro over benchmarks)"
    position = _position(axis, y_title)
    layers = [_point_layer(frame, color_by, by_benchmark, position),
              _line_layer("on_frontier", position, FRONTIER_NAME, FRONTIER_COLOR, "step-after")]
    if frame["on_hull"].any():
        layers.append(_line_layer("on_hull", position, HULL_NAME, HULL_COLOR, "linear"))
    if "f1_low" in frame:
        layers.insert(0, _interval_layer(position, oracle_pinned=axis is not None))
    if color_by == "utility":
        layers.append({"mark": {"type": "text", "dy": -14, "fontSize": 10},
                       "encoding": {**position, "text": {"field": "name", "type": "nominal"}}})
    if axis is not None:
        layers.append({"transform": [{"filter": {"field": "kind", "equal": "oracle"}}],
                       "mark": {"type": "text", "dy": 22, "fontSize": 11},
                       "encoding": {**position, "text": {"field": "note", "type": "nominal"}}})
    if by_benchmark:
        facets = sorted(frame["benchmark"].unique())
        return frame, {"columns": FACET_COLUMNS,
                       "facet": {"field": "benchmark", "type": "nominal", "sort": facets, "title": None},
                       "spec": {"width": FACET_SIZE, "height": FACET_SIZE, "layer": layers}}
    return frame, {"height": CHART_HEIGHT, "layer": layers}


def chart_frame(points: pd.DataFrame) -> pd.DataFrame:
    """The columns the chart draws and its tooltips show, points in kind order (routers first): `legend`
    (the oracle's name marked as a reference), `f1_drawn` (the F1 drawn: `pareto_chart` pins an oracle off
    the axis), `vs_mix` (the gap to the hull, where the points carry it), on_frontier and on_hull as booleans."""
    ordered = points.assign(_order=points["kind"].map(KIND_ORDER.index)).sort_values("_order", kind="stable")
    frame = pd.DataFrame({
        "name": ordered["name"], "policy": ordered["policy"], "kind": ordered["kind"],
        "legend": [f"{name} (reference)" if kind == "oracle" else name
                   for name, kind in zip(ordered["name"], ordered["kind"])],
        "benchmark": ordered["benchmark"] if "benchmark" in ordered else "all",
        "cost_k": ordered["cost_k"], "macro_f1": ordered["macro_f1"], "f1_drawn": ordered["macro_f1"],
        "macro_utility": ordered["macro_utility"],
        "on_frontier": ordered["on_frontier"].fillna(False).astype(bool),
        "on_hull": ordered["on_hull"].fillna(False).astype(bool) if "on_hull" in ordered else False})
    for column in ("tokens_in", "tokens_out"):
        if column in ordered:
            frame[column] = ordered[column].round(0)
    for column in INTERVAL_COLUMNS:
        if column in ordered:
            frame[column] = ordered[column]
    if "hull_gap" in ordered:
        frame["vs_mix"] = [hull_gap_text(gap, low, high) for gap, low, high in
                           zip(ordered["hull_gap"], ordered["hull_gap_low"], ordered["hull_gap_high"])]
    return frame.reset_index(drop=True)


def _position(axis: tuple[float, float] | None, y_title: str) -> dict:
    """x: the cost; y: the F1 drawn, titled `y_title`, on `axis` (low, top) when the oracle is off it."""
    y: dict = {"field": "f1_drawn", "type": "quantitative", "title": y_title, "scale": {"zero": False}}
    if axis is not None:
        y["scale"] = {"domain": list(axis), "nice": False}
    return {"x": {"field": "cost_k", "type": "quantitative", "title": COST_LABEL, "scale": {"zero": False}}, "y": y}


def _point_layer(frame: pd.DataFrame, color_by: str, by_benchmark: bool, position: dict) -> dict:
    """The points: colour per policy (grouped by kind) or by utility, shape and size per kind, a tooltip each."""
    kinds = [kind for kind in KIND_ORDER if kind in set(frame["kind"])]
    if color_by == "utility":
        color = {"field": "macro_utility", "type": "quantitative", "title": "utility", "scale": {"scheme": "viridis"}}
    else:
        colors = policy_colors(frame)
        legend = dict(zip(frame["legend"], frame["name"]))
        color = {"field": "legend", "type": "nominal", "title": None,
                 "scale": {"domain": list(legend), "range": [colors[name] for name in legend.values()]},
                 "legend": {"orient": "bottom", "columns": 4, "labelLimit": 260}}
    return {"mark": {"type": "point", "filled": True, "opacity": 1, "stroke": "#fff", "strokeWidth": 0.5},
            "encoding": {
                **position, "color": color,
                "shape": {"field": "kind", "type": "nominal", "title": None, "legend": None,
                          "scale": {"domain": kinds, "range": [KIND_SHAPES[kind] for kind in kinds]}},
                "size": {"field": "kind", "type": "nominal", "legend": None,
                         "scale": {"domain": kinds, "range": [MARKER_AREA[kind] for kind in kinds]}},
                "tooltip": _tooltip(frame, by_benchmark)}}


def _tooltip(frame: pd.DataFrame, by_benchmark: bool) -> list[dict]:
    """A point's name, id, cost (tokens in and out apart, as λ_in and λ_out price them), F1, utility, kind,
    whether it is on the frontier and its gap to the mix at its own tokens."""
    fields = [{"field": "name", "type": "nominal"}, {"field": "policy", "type": "nominal", "title": "id"},
              {"field": "cost_k", "type": "quantitative", "format": ".3f", "title": "cost (k tokens)"}]
    fields += [{"field": column, "type": "quantitative", "format": ",.0f", "title": title}
               for column, title in (("tokens_in", "tokens in (λ_in prices them)"),
                                     ("tokens_out", "tokens out (λ_out prices them)")) if column in frame]
    fields += [{"field": "macro_f1", "type": "quantitative", "format": ".3f", "title": "F1"},
               {"field": "macro_utility", "type": "quantitative", "format": ".3f", "title": "utility"},
               {"field": "kind", "type": "nominal"},
               {"field": "on_frontier", "type": "nominal", "title": "on frontier"}]
    fields += [{"field": "benchmark", "type": "nominal"}] if by_benchmark else []
    fields += [{"field": column, "type": "quantitative", "format": "+.4f" if column.startswith("gain") else ".3f"}
               for column in INTERVAL_COLUMNS[:-1] if column in frame]
    fields += [{"field": "decidable", "type": "nominal"}] if "decidable" in frame else []
    fields += [{"field": "vs_mix", "type": "nominal", "title": "vs the mix"}] if "vs_mix" in frame else []
    return fields


def _line_layer(flag: str, position: dict, name: str, color: str, interpolate: str) -> dict:
    """The line `name` through the points where `flag` holds, in order of cost (per facet when faceted),
    its dash in the legend."""
    dash = {"field": "line", "type": "nominal", "title": None, "legend": {"orient": "top"},
            "scale": {"domain": list(LINE_DASHES), "range": list(LINE_DASHES.values())}}
    return {"transform": [{"filter": {"field": flag, "equal": True}}, {"calculate": json.dumps(name), "as": "line"}],
            "mark": {"type": "line", "color": color, "strokeWidth": 1.5, "interpolate": interpolate},
            "encoding": {**position, "strokeDash": dash, "order": {"field": "cost_k", "type": "quantitative"}}}


def _interval_layer(position: dict, oracle_pinned: bool) -> dict:
    """Each deployable point's 95% interval of its F1 as a vertical bar (the oracle's left out when it is a
    reference pinned off the axis)."""
    return {"transform": [{"filter": "datum.kind != 'oracle'"}] if oracle_pinned else [],
            "mark": {"type": "rule", "color": "#999", "strokeWidth": 1.5},
            "encoding": {"x": position["x"], "y": {**position["y"], "field": "f1_low"},
                         "y2": {"field": "f1_high"}}}
