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
HELP = {"lambda_in": "Prices input tokens (the prompts: question and evidence, and any probe's prompt): the weight "
                     "of c_in in U = F1 − λ_in c_in − λ_out c_out, costs normalized by the train maxima.",
        "lambda_out": "Prices output tokens (the answers, reasoning included, and any probe's samples): the weight "
                      "of c_out."}
CAPTION = ("λ_in prices input tokens (evidence: Raw's passages are the dearest prompt), λ_out output tokens (the "
           "answer: Direct answers run longer than Summary's). Raising λ_in moves routers from Raw to Summary or "
           "Direct; raising λ_out alone can move them towards evidence, whose answers are shorter.")


def current() -> CostWeights:
    """The session's weights, the defaults until a slider moves."""
    return CostWeights(*(float(st.session_state.get(KEPT[name], DEFAULTS[name])) for name in KEPT))


def set_weights(weights: CostWeights) -> None:
    """Move the sliders (on the next run of the page), e.g. to calibrated weights."""
    for name, value in weights.to_dict().items():
        st.session_state[KEPT[name]] = round(min(max(value, 0.0), WEIGHT_MAX), 2)


def sliders(page: str) -> CostWeights:
    """Two sliders side by side on `page` (a key prefix), each with a numeric entry beside it (type a
    weight instead of stepping to it), starting from the session's values and keeping what the user
    sets; returns their weights."""
    columns = st.columns(2)
    for column, (name, kept) in zip(columns, KEPT.items()):
        slider_column, entry_column = column.columns([3, 1], vertical_alignment="bottom")
        value = float(st.session_state.get(kept, DEFAULTS[name]))
        widget, entry = f"{page}_{name}_slider", f"{page}_{name}_entry"
        st.session_state[widget] = st.session_state[entry] = value
        slider_column.slider(name, 0.0, WEIGHT_MAX, step=WEIGHT_STEP, key=widget, help=HELP[name],
                             on_change=_keep, args=(widget, kept))
        entry_column.number_input(f"{name} value", 0.0, WEIGHT_MAX, step=WEIGHT_STEP, format="%.2f", key=entry,
                                  label_visibility="collapsed", on_change=_keep, args=(entry, kept))
    return current()


def _keep(widget: str, kept: str) -> None:
    st.session_state[kept] = round(float(st.session_state[widget]), 2)
