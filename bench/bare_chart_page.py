"""The second bare page `bench/page_renders.py` measures the dashboard against: the elements a Pareto
slider step redraws, without FORGE. A slider (0 to 3 by 0.01, as the Pareto page's lambda_in), a plotly
scatter chart built from graph objects as the Pareto chart is (one single-point trace per policy, a frontier
line and a dashed hull line, 560 px high, legend below) whose points move with the slider, a dataframe of
as many rows and number columns as the Pareto table, and a metric card showing the slider's value (the
step is timed the way a Pareto step is: the card shows a new value and the script is done).

Nothing of FORGE is imported: the points are made up here, so what a page costs over this one is FORGE's
own work (its script, its other elements), not Streamlit's and plotly's drawing of a chart and a grid.
"""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
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
traces = [{"type": "scatter", "x": [x], "y": [y], "mode": "markers", "name": name, "marker": {"size": 14},
           "hovertemplate": f"<b>{name}</b><br>cost %{{x:.3f}}k tokens<br>F1 %{{y:.3f}}<extra></extra>"}
          for name, x, y in zip(names, cost, f1)]
best = np.maximum.accumulate(f1)
traces.append({"type": "scatter", "x": cost, "y": best, "mode": "lines", "name": "frontier",
               "line": {"dash": "dot", "shape": "hv"}, "hoverinfo": "skip"})
traces.append({"type": "scatter", "x": cost[::4], "y": best[::4], "mode": "lines", "name": "mix of fixed arms",
               "line": {"dash": "dash"}, "hoverinfo": "skip"})
st.plotly_chart(go.Figure(data=traces, layout={"height": 560, "margin": {"t": 40},
                                               "legend": {"orientation": "h", "y": -0.2}}), key="chart")

frame = pd.DataFrame(rng.uniform(0, 1, (POLICIES, len(COLUMNS))) + value, columns=list(COLUMNS))
frame.insert(0, "policy", names)
frame.insert(1, "kind", "policy")
frame.insert(2, "benchmark", "all")
frame["on_hull"], frame["on_frontier"] = f1 >= best, f1 >= best  # the table's two flags
st.dataframe(frame, hide_index=True,
             column_config={name: st.column_config.NumberColumn(format="%.4f") for name in COLUMNS})
