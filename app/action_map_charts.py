"""The Action map's charts as Vega-Lite specs with the frame each draws (`st.vega_lite_chart(frame, spec)`):
the queries on the UMAP plane coloured by a policy's arm or by agreement, a click selecting a query, and
each cluster's mix of arms."""

from __future__ import annotations

import pandas as pd

from app.charts import ARM_COLORS

AGREEMENT_COLORS = {"agree": "#54a24b", "disagree": "#e45756"}
CLICKED = "query"  # the point selection a click makes: its query's map index (`clicked_index`)
MAP_HEIGHT, MIX_HEIGHT = 480, 300


def action_map(points: pd.DataFrame, policy: str, arms: tuple[str, ...],
               centroids: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """The queries on the UMAP plane coloured by one policy's arm (`policy`: a column of `points`, router,
    oracle or a crossfit policy's), cluster numbers at their centroids; a point's tooltip shows its question
    and every arm's outcome, a click selects it."""
    return _query_map(points, policy, arms, ARM_COLORS, centroids, "arm", arms)


def agreement_map(points: pd.DataFrame, arms: tuple[str, ...], centroids: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """The queries on the UMAP plane coloured by whether the router's arm is the oracle's."""
    return _query_map(points, "agreement", ("agree", "disagree"), AGREEMENT_COLORS, centroids, "router vs oracle",
                      arms)


def clicked_index(event) -> int | None:
    """The map index of the query a click on a map selected (`st.vega_lite_chart(..., on_select="rerun")`'s
    event), or None."""
    selected = event.selection.get(CLICKED) if event and event.selection else None
    return int(selected[0]["index"]) if selected and "index" in selected[0] else None


def _query_map(points: pd.DataFrame, column: str, order: tuple[str, ...], colors: dict[str, str],
               centroids: pd.DataFrame, legend_title: str, arms: tuple[str, ...]) -> tuple[pd.DataFrame, dict]:
    """A point per query coloured by `column` (values in `order`, then any other), its tooltip the query's
    question, benchmark, both chosen arms and every arm's outcome (`ActionMap.points`' column per arm of
    `arms`), cluster numbers at the centroids, a click selecting its query (`CLICKED`)."""
    present = list(dict.fromkeys(points[column]))
    domain = [value for value in order if value in present] + [value for value in present if value not in order]
    arm_columns = [arm for arm in arms if arm in points.columns]
    tooltip = [{"field": "question", "type": "nominal"}, {"field": "benchmark", "type": "nominal"},
               {"field": "router", "type": "nominal"}, {"field": "oracle", "type": "nominal"}]
    tooltip += [{"field": column, "type": "nominal"}] if column not in ("router", "oracle") else []
    tooltip += [{"field": arm, "type": "nominal"} for arm in arm_columns]
    axis = {"labels": False, "ticks": False, "grid": False}
    position = {"x": {"field": "x", "type": "quantitative", "title": "UMAP 1", "axis": axis, "scale": {"zero": False}},
                "y": {"field": "y", "type": "quantitative", "title": "UMAP 2", "axis": axis, "scale": {"zero": False}}}
    dots = {"params": [{"name": CLICKED, "select": {"type": "point", "fields": ["index"], "on": "click"}}],
            "mark": {"type": "circle", "size": 45, "opacity": 0.85},
            "encoding": {**position, "tooltip": tooltip, "color": {
                "field": column, "type": "nominal", "title": legend_title,
                "scale": {"domain": domain, "range": [colors.get(value, "#888") for value in domain]},
                "legend": {"orient": "bottom", "direction": "vertical"}}}}  # whole names in a third of the page
    labels = {"data": {"values": [{"x": float(row.x), "y": float(row.y), "cluster": str(row.cluster)}
                                  for row in centroids.itertuples()]},
              "mark": {"type": "text", "fontSize": 15, "fontWeight": "bold", "color": "#222"},
              "encoding": {"x": {"field": "x", "type": "quantitative"}, "y": {"field": "y", "type": "quantitative"},
                           "text": {"field": "cluster", "type": "nominal"}}}
    shown = ["x", "y", "index", "benchmark", "router", "oracle", "question", *arm_columns]
    return points[list(dict.fromkeys([*shown, column]))].reset_index(drop=True), {
        "height": MAP_HEIGHT, "layer": [dots, labels]}


def cluster_mix(mix: pd.DataFrame, arms: tuple[str, ...]) -> tuple[pd.DataFrame, dict]:
    """Per cluster, the share of queries each policy sends to each arm (stacked to 1), one panel per
    policy (router, oracle), arms in `arms`' order and colours."""
    policies = [policy for policy in ("router", "oracle") if policy in set(mix["policy"])]
    policies += [policy for policy in pd.unique(mix["policy"]) if policy not in policies]
    shown = [arm for arm in arms if arm in set(mix["arm"])] + [arm for arm in pd.unique(mix["arm"]) if arm not in arms]
    color = {"field": "arm", "type": "nominal", "legend": {"orient": "bottom", "columns": 4},
             "scale": {"domain": shown, "range": [ARM_COLORS.get(arm, "#888") for arm in shown]}}
    tooltip = [{"field": "policy", "type": "nominal"}, {"field": "cluster", "type": "ordinal"},
               {"field": "arm", "type": "nominal"}, {"field": "share", "type": "quantitative", "format": ".2f"},
               {"field": "queries", "type": "quantitative"},
               {"field": "agreement", "type": "quantitative", "format": ".2f"}]
    bars = {"width": 300, "height": MIX_HEIGHT, "mark": {"type": "bar"}, "encoding": {
        "x": {"field": "cluster", "type": "ordinal", "title": "cluster", "axis": {"labelAngle": 0}},
        "y": {"field": "share", "type": "quantitative", "title": "share of the cluster's queries", "stack": "zero"},
        "color": color, "order": {"field": "order", "type": "quantitative"}, "tooltip": tooltip}}
    return mix.assign(order=mix["arm"].map(shown.index)), {
        "facet": {"field": "policy", "type": "nominal", "sort": policies, "title": None},
        "columns": len(policies), "spec": bars}
