"""The cost-weight sliders the Pareto, Live query and Action map pages share: 0 to 3, their values kept in the
session across pages and protocols (Streamlit forgets a widget's value when a page without it
runs, so the values live under keys of their own and are copied back into the sliders)."""

from __future__ import annotations

import streamlit as st

from forge_core.routing.utility import DEFAULT_LAMBDA_IN, DEFAULT_LAMBDA_OUT, CostWeights

WEIGHT_MAX = 3.0
WEIGHT_STEP = 0.01
KEPT = {"lambda_in": "weights_lambda_in", "lambda_out": "weights_lambda_out"}  # the session's values
DEFAULTS = {"lambda_in": DEFAULT_LAMBDA_IN, "lambda_out": DEFAULT_LAMBDA_OUT}
HELP = {"lambda_in": "Weight of the normalized input-token cost in U = F1 − λ_in c_in − λ_out c_out.",
        "lambda_out": "Weight of the normalized output-token cost."}


def current() -> CostWeights:
    """The session's weights, the defaults until a slider moves."""
    return CostWeights(*(float(st.session_state.get(KEPT[name], DEFAULTS[name])) for name in KEPT))


def set_weights(weights: CostWeights) -> None:
    """Move the sliders (on the next run of the page), e.g. to calibrated weights."""
    for name, value in weights.to_dict().items():
        st.session_state[KEPT[name]] = round(min(max(value, 0.0), WEIGHT_MAX), 2)


def sliders(page: str) -> CostWeights:
    """Two sliders side by side on `page` (a key prefix), starting from the session's values and
    keeping what the user sets; returns their weights."""
    columns = st.columns(2)
    for column, (name, kept) in zip(columns, KEPT.items()):
        widget = f"{page}_{name}_slider"
        st.session_state[widget] = float(st.session_state.get(kept, DEFAULTS[name]))
        column.slider(name, 0.0, WEIGHT_MAX, step=WEIGHT_STEP, key=widget, help=HELP[name],
                      on_change=_keep, args=(widget, kept))
    return current()


def _keep(widget: str, kept: str) -> None:
    st.session_state[kept] = st.session_state[widget]
