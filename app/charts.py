"""Plotly figures of the dashboard."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from forge_core.reports.mix_view import HULL_NAME, hull_gap_text, hull_lines

# ---------------------------------------------------------------- training, Pareto, action map

# One colour family per support form (direct blue, summary green, raw red), darker for less thinking.
ARM_COLORS = {
    "direct:no_think": "#1f4e9c", "direct:cot": "#4c78a8",
    "direct:think_low": "#7fa6d6", "direct:think_high": "#b3cde8",
    "summary:no_think": "#2a7d3b", "summary:cot": "#54a24b", "summary:think_low": "#88c77f",
    "summary:think_high": "#bfe3b4",
    "raw:no_think": "#b8322f", "raw:cot": "#e45756", "raw:think_low": "#f28e8b", "raw:think_high": "#f8c3c1",
}
KIND_SYMBOLS = {"fixed arm": "square", "baseline": "diamond", "oracle": "star", "router": "circle"}
RUN_COLORS = ["#4c78a8", "#e45756", "#54a24b", "#f58518", "#b279a2"]  # distinct lines (runs, series)
COST_LABEL = "cost: mean tokens per query (thousands)"
TOKEN_LABELS = {"tokens_in": "tokens in (λ_in prices them)", "tokens_out": "tokens out (λ_out prices them)"}


# One colour per policy, grouped by kind: FORGE routers strong, baselines muted, fixed arms grey,
# the oracle a black reference star. Colours are dealt in order within each kind.
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


def _by_kind(points: pd.DataFrame) -> pd.DataFrame:
    """The points with their kinds in `KIND_ORDER` (a stable sort: each kind keeps its rows' order)."""
    return points.assign(_order=points["kind"].map(KIND_ORDER.index)).sort_values("_order", kind="stable")


def _legend_below(figure: go.Figure, entries: int) -> None:
    """A horizontal legend under the plot, tall enough for its entries (it never covers the points)."""
    rows = (entries + 3) // 4
    figure.update_layout(legend={"orientation": "h", "yanchor": "top", "y": -0.14, "x": 0, "font": {"size": 11},
                                 "title_text": ""},
                         height=figure.layout.height + 22 * rows, margin={"t": 40, "b": 40 + 22 * rows})


def _policy_points(points: pd.DataFrame, x_label: str, y_label: str, facet: dict, error: dict,
                   hover: dict) -> go.Figure:
    """Scatter of named points: colour per policy (grouped by kind), symbol per kind, kinds in order."""
    ordered = _by_kind(points)
    figure = px.scatter(
        ordered, x="cost_k", y="macro_f1", color="name", symbol="kind", symbol_map=KIND_SYMBOLS,
        color_discrete_map=policy_colors(ordered), hover_name="name",
        hover_data={"policy": True, "name": False, "kind": True, "cost_k": ":.3f", "macro_f1": ":.3f",
                    "macro_utility": ":.3f", "on_frontier": True, **hover},
        labels={"cost_k": x_label, "macro_f1": y_label, "macro_utility": "utility", "on_frontier": "on frontier",
                "policy": "id", "gain": "utility gain over best fixed arm", **TOKEN_LABELS},
        **facet, **error)
    for trace in figure.data:
        kind = next((k for k in KIND_ORDER if trace.name.endswith(", " + k)), "router")
        trace.update(marker_size=KIND_MARKER_SIZES[kind])
        if kind == "oracle":
            trace.update(marker_line={"width": 1, "color": "#fff"}, name=trace.name.replace(", oracle", " (reference)"))
        else:
            trace.update(name=trace.name.rsplit(", ", 1)[0])
    return figure


HULL_LINE = {"color": "#4c78a8", "dash": "dash", "width": 1.5}  # the mix of fixed arms, beside the dotted frontier
# the frontier is a staircase of pure points: a point's F1 holds until a costlier point beats it
FRONTIER_LINE = {"color": "#888", "dash": "dot", "shape": "hv"}


def _with_mix_text(points: pd.DataFrame) -> pd.DataFrame:
    """The points with `vs_mix`, each one's gap to the hull at its own tokens as hover text (when
    the points carry the hull's fields)."""
    if "hull_gap" not in points.columns:
        return points
    return points.assign(vs_mix=[hull_gap_text(gap, low, high) for gap, low, high in
                                 zip(points["hull_gap"], points["hull_gap_low"], points["hull_gap_high"])])


def _frontier_trace(points: pd.DataFrame, name: str) -> dict:
    """The frontier through the points `on_frontier`, in order of cost, drawn as its staircase."""
    frontier = points[points["on_frontier"]].sort_values("cost_k")
    return {"type": "scatter", "x": frontier["cost_k"], "y": frontier["macro_f1"], "mode": "lines", "name": name,
            "line": FRONTIER_LINE, "hoverinfo": "skip"}


def _hull_trace(points: pd.DataFrame) -> dict:
    """The hull of the fixed arms (the mixes) through the points `on_hull`, in order of cost (`hull_lines`)."""
    hull = hull_lines(points)
    return {"type": "scatter", "x": hull["cost_k"], "y": hull["macro_f1"], "mode": "lines", "name": HULL_NAME,
            "line": HULL_LINE, "hoverinfo": "skip"}


def crossfit_pareto(frame: pd.DataFrame) -> go.Figure:
    """Crossfit: macro F1 against cost per named point (`name`) with its 95% interval, one colour
    per policy grouped by kind, the frontier over the deployable policies (a dotted staircase) and the oracle
    as a reference point off the frontier; where the frame carries the hull's fields (`on_hull`,
    `hull_gap`, as `pareto` takes them), the hull of the fixed arms (dashed) and each point's gap
    to it in its hover."""
    frame = _with_mix_text(frame)
    mix = {"vs_mix": True} if "vs_mix" in frame.columns else {}
    error = {"error_y": frame["f1_high"] - frame["macro_f1"], "error_y_minus": frame["macro_f1"] - frame["f1_low"]}
    figure = _policy_points(frame.assign(**{"error+": error["error_y"], "error-": error["error_y_minus"]}),
                            COST_LABEL, "F1 (macro, out of fold; 95% interval)", {},
                            {"error_y": "error+", "error_y_minus": "error-"},
                            {"gain": ":+.4f", "gain_low": ":+.4f", "gain_high": ":+.4f", "decidable": True,
                             "error+": False, "error-": False, **mix})
    figure.add_trace(_frontier_trace(frame, "frontier (deployable)"))
    if "on_hull" in frame.columns:
        figure.add_trace(_hull_trace(frame))
    figure.update_layout(height=560, margin={"t": 40}, legend_title_text="")
    _oracle_off_the_axis(figure, frame)
    _legend_below(figure, len(figure.data))
    return figure


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


def _oracle_off_the_axis(figure: go.Figure, frame: pd.DataFrame) -> None:
    """The F1 axis of `deployable_axis`, where the oracle is above it: the oracle then pinned at the top
    edge with its F1 written."""
    axis = deployable_axis(frame)
    if axis is None:
        return
    figure.update_yaxes(range=list(axis))
    for row in frame[frame["kind"] == "oracle"].itertuples():
        figure.add_annotation(x=row.cost_k, y=axis[1], yref="y", text=f"oracle F1 {row.macro_f1:.3f} ↑ (reference, "
                              "above the axis)", showarrow=True, arrowhead=2, ax=0, ay=25, font={"size": 11})


def routing_gain(frame: pd.DataFrame) -> go.Figure:
    """Utility gain against the cost weights, one panel per reference (the best fixed arm, the
    ridge floor), one line per policy with its 95% interval as a band; zero (no gain) dashed."""
    references = list(dict.fromkeys(frame["reference"]))
    figure = make_subplots(rows=1, cols=len(references), shared_yaxes=True, horizontal_spacing=0.06,
                           subplot_titles=[f"over the {reference}" for reference in references])
    policies = dict.fromkeys(frame["policy"])
    colors = {policy: RUN_COLORS[index % len(RUN_COLORS)] for index, policy in enumerate(policies)}
    for column, reference in enumerate(references, start=1):
        for policy, rows in frame[frame["reference"] == reference].groupby("policy", sort=False):
            color = colors[policy]
            figure.add_trace(go.Scatter(
                x=list(rows["weights"]) + list(rows["weights"])[::-1],
                y=list(rows["gain_high"]) + list(rows["gain_low"])[::-1], fill="toself", fillcolor=color,
                opacity=0.18, line={"width": 0}, hoverinfo="skip", showlegend=False, legendgroup=policy),
                row=1, col=column)
            figure.add_trace(go.Scatter(
                x=rows["weights"], y=rows["gain"], mode="lines+markers", name=policy, line={"color": color},
                legendgroup=policy, showlegend=column == 1,
                customdata=rows[["gain_low", "gain_high", "against"]],
                hovertemplate="%{x}: %{y:+.4f} [%{customdata[0]:+.4f}, %{customdata[1]:+.4f}] over "
                              "%{customdata[2]}<extra>" + policy + "</extra>"), row=1, col=column)
        figure.add_hline(y=0, line={"color": "#888", "dash": "dash"}, row=1, col=column)
    figure.update_xaxes(title="cost weights λ_in / λ_out", type="category")
    figure.update_yaxes(title="utility gain (95% interval)", col=1)
    figure.update_layout(height=420, margin={"t": 40}, legend_title_text="")
    return figure


def calibration_gain(frame: pd.DataFrame) -> go.Figure:
    """Utility gain over the target's own Lite router against the calibration size K (0: zero-shot),
    one line per transferred router with its paired 95% interval as error bars; zero (the target's
    own router) dashed."""
    figure = go.Figure()
    for index, (router, rows) in enumerate(frame.groupby("router", sort=False)):
        figure.add_trace(go.Scatter(
            x=rows["k"], y=rows["gain"], mode="lines+markers", name=router,
            line={"color": RUN_COLORS[index % len(RUN_COLORS)]},
            error_y={"type": "data", "symmetric": False, "array": rows["gain_high"] - rows["gain"],
                     "arrayminus": rows["gain"] - rows["gain_low"]},
            customdata=rows[["gain_low", "gain_high"]],
            hovertemplate="K %{x}: %{y:+.4f} [%{customdata[0]:+.4f}, %{customdata[1]:+.4f}]<extra>" + router
                          + "</extra>"))
    figure.add_hline(y=0, line={"color": "#888", "dash": "dash"}, annotation_text="the target's own Lite router",
                     annotation_position="bottom right")
    figure.update_xaxes(title="target queries calibrated on (K; 0 = zero-shot)", type="category")
    figure.update_yaxes(title="utility gain (95% interval)")
    figure.update_layout(height=380, margin={"t": 30}, legend_title_text="")
    return figure
