"""The training curves of the Train page (a run's, and two checkpoints' overlaid) as a Vega-Lite spec with
the frame it draws (`st.vega_lite_chart(frame, spec)`)."""

from __future__ import annotations

import pandas as pd

from app.charts import RUN_COLORS

PANEL_COLUMNS = 3
PANEL_WIDTH, PANEL_HEIGHT = 250, 200


def training_curves(curves: pd.DataFrame, overlay: bool = False) -> tuple[pd.DataFrame, dict]:
    """One panel per curve (loss, agreement, reward, KL, ...) against epoch or step, each with its own
    axes (epochs and steps differ in range); with `overlay`, the runs of a `run` column are drawn in one
    colour each, their series dashed apart."""
    panels = list(dict.fromkeys(curves["panel"]))
    x_label = ", ".join(sorted(set(curves["x_label"]))) or "epoch"
    lines = "run" if overlay else "series"
    encoding = {
        "x": {"field": "x", "type": "quantitative", "title": x_label},
        "y": {"field": "value", "type": "quantitative", "title": None, "scale": {"zero": False}},
        "color": {"field": lines, "type": "nominal", "title": "checkpoint" if overlay else None,
                  "scale": {"range": RUN_COLORS}, "legend": {"orient": "bottom", "labelLimit": 400}},
        "tooltip": [{"field": field, "type": "nominal"} for field in ("run",) if overlay]
        + [{"field": "series", "type": "nominal"}, {"field": "x", "type": "quantitative", "title": x_label},
           {"field": "value", "type": "quantitative", "format": ".4g"}]}
    if overlay:
        encoding["strokeDash"] = {"field": "series", "type": "nominal", "title": None,
                                  "legend": {"orient": "bottom", "symbolType": "stroke"}}
    return curves.reset_index(drop=True), {
        "columns": min(PANEL_COLUMNS, max(1, len(panels))),
        "facet": {"field": "panel", "type": "nominal", "sort": panels, "title": None},
        "spec": {"width": PANEL_WIDTH, "height": PANEL_HEIGHT, "mark": {"type": "line", "point": True},
                 "encoding": encoding},
        "resolve": {"scale": {"x": "independent", "y": "independent"}}}
