"""The second bare page `bench/page_renders.py` measures the dashboard against: the elements a Pareto
slider step redraws, without FORGE. A slider (0 to 3 by 0.01, as the Pareto page's lambda_in), a Vega-Lite
chart drawn as the Pareto chart is (`app/pareto_chart.py`: a filled point per policy coloured by name with a
legend below, a dotted staircase frontier and a dashed hull line, 560 px high) whose points move with the
slider, a dataframe of as many rows and number columns as the Pareto table, and a metric card showing the
slider's value (the step is timed the way a Pareto step is: the card shows a new value and the script is done).

Nothing of FORGE is imported: the points are made up here, so what a page costs over this one is FORGE's
own work (its script, its other elements), not Streamlit's and Vega-Lite's drawing of a chart and a grid.
"""

import numpy as np
import pandas as pd
import streamlit as st

POLICIES = 15  # the Pareto chart's points and table rows in the demo store's default view (two routers chosen)
COLUMNS = ("cost_k", "tokens_in", "tokens_out", "macro_f1", "macro_utility", "gold_recall", "support_rate",
           "support_coverage", "hull_f1", "hull_gap", "hull_gap_low", "hull_gap_high")  # the Pareto table's numbers

st.title("Bare chart page")
st.write("A line of text.")
value = st.slider("value", 0.0, 3.0, 0.1, step=0.01)
st.metric("Slider value", f"{value:.2f}")

rng = np.random.default_rng(0)
cost = np.sort(rng.uniform(0.2, 3.0, POLICIES))
f1 = np.clip(0.2 + 0.1 * np.log1p(cost) + rng.normal(0, 0.03, POLICIES) - 0.02 * value * cost, 0, 1)
names = [f"policy {index}" for index in range(POLICIES)]
best = np.maximum.accumulate(f1)
points = pd.DataFrame({"name": names, "cost_k": cost, "macro_f1": f1, "on_frontier": f1 >= best,
                       "on_hull": np.arange(POLICIES) % 4 == 0})
POSITION = {"x": {"field": "cost_k", "type": "quantitative"}, "y": {"field": "macro_f1", "type": "quantitative"}}


def line(flag: str, dash: list[int], interpolate: str) -> dict:
    """A dashed line through the points where `flag` holds."""
    return {"transform": [{"filter": {"field": flag, "equal": True}}], "encoding": POSITION,
            "mark": {"type": "line", "strokeDash": dash, "interpolate": interpolate}}


tooltip = [{"field": "name"}, {"field": "cost_k", "format": ".3f"}, {"field": "macro_f1", "format": ".3f"}]
color = {"field": "name", "type": "nominal", "legend": {"orient": "bottom", "columns": 4}}
dots = {"mark": {"type": "point", "filled": True, "size": 200},
        "encoding": {**POSITION, "color": color, "tooltip": tooltip}}
st.vega_lite_chart(points, {"height": 560, "layer": [
    dots, line("on_frontier", [2, 3], "step-after"), line("on_hull", [6, 4], "linear")]},
    key="chart")

frame = pd.DataFrame(rng.uniform(0, 1, (POLICIES, len(COLUMNS))) + value, columns=list(COLUMNS))
frame.insert(0, "policy", names)
frame.insert(1, "kind", "policy")
frame.insert(2, "benchmark", "all")
frame["on_hull"], frame["on_frontier"] = f1 >= best, f1 >= best  # the table's two flags
st.dataframe(frame, hide_index=True,
             column_config={name: st.column_config.NumberColumn(format="%.4f") for name in COLUMNS})
