"""What the dashboard's charts share: the colours of arms, runs and policies (grouped by kind), the cost
axis's label, and the F1 axis that keeps a far-off oracle from squeezing the deployable points.

Every chart is a Vega-Lite spec drawn by `st.vega_lite_chart` (the `*_chart(s)` modules beside this one),
built as a plain dict. The dashboard drew with plotly before: its 4.6 MB script made the browser load and
compile it before a chart page was drawn (Vega-Lite's is 0.8 MB), and a Pareto slider step redrew the plotly
chart in 0.27 s against 0.03 s (`bench/page_renders.py`, issue #51)."""

from __future__ import annotations

import pandas as pd

# One colour family per support form (direct blue, summary green, raw red), darker for less thinking.
ARM_COLORS = {
    "direct:no_think": "#1f4e9c", "direct:cot": "#4c78a8",
    "direct:think_low": "#7fa6d6", "direct:think_high": "#b3cde8",
    "summary:no_think": "#2a7d3b", "summary:cot": "#54a24b", "summary:think_low": "#88c77f",
    "summary:think_high": "#bfe3b4",
    "raw:no_think": "#b8322f", "raw:cot": "#e45756", "raw:think_low": "#f28e8b", "raw:think_high": "#f8c3c1",
}
RUN_COLORS = ["#4c78a8", "#e45756", "#54a24b", "#f58518", "#b279a2"]  # distinct lines (runs, series)
COST_LABEL = "cost: mean tokens per query (thousands)"


# One colour per policy, grouped by kind: FORGE routers strong, baselines muted, fixed arms grey,
# the oracle a black reference. Colours are dealt in order within each kind.
KIND_PALETTES = {
    "router": ["#d62728", "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
               "#7f0000", "#00429d", "#b35806"],
    "baseline": ["#9ecae1", "#a1d99b", "#fdae6b", "#bcbddc", "#fdd0a2", "#c7e9c0", "#dadaeb", "#c6dbef", "#fcbba1",
                 "#d9f0a3"],
    "fixed arm": ["#525252", "#737373", "#969696", "#bdbdbd", "#404040", "#a3a3a3"],
    "oracle": ["#000000"],
}
KIND_ORDER = ("router", "baseline", "fixed arm", "oracle")
KIND_MARKER_SIZES = {"router": 15, "baseline": 12, "fixed arm": 12, "oracle": 18}


def policy_colors(points: pd.DataFrame) -> dict[str, str]:
    """A colour per point name (`name` column), from its kind's palette (`kind` column)."""
    colors: dict[str, str] = {}
    for kind in KIND_ORDER:
        names = list(dict.fromkeys(points.loc[points["kind"] == kind, "name"]))
        palette = KIND_PALETTES[kind]
        colors |= {name: palette[index % len(palette)] for index, name in enumerate(names)}
    return colors


def deployable_axis(frame: pd.DataFrame) -> tuple[float, float] | None:
    """The F1 axis (low, top) fitted to the deployable policies' points (their intervals, where the frame
    has them) when the oracle lies above it, so an oracle far above them does not squeeze them into one
    band; None when the oracle is within reach (or either is missing)."""
    deployable, oracle = frame[frame["kind"] != "oracle"], frame[frame["kind"] == "oracle"]
    if deployable.empty or oracle.empty:
        return None
    low_column, high_column = ("f1_low", "f1_high") if "f1_low" in frame.columns else ("macro_f1", "macro_f1")
    low, high = float(deployable[low_column].min()), float(deployable[high_column].max())
    pad = 0.08 * max(high - low, 1e-3)
    top = high + pad
    return None if float(oracle["macro_f1"].max()) <= top else (low - pad, top)
