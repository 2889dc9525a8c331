"""The Router section of the Live query page: a trained router's arm probabilities for a question.

It calls `forge_core.routing.route_question(store, checkpoint_id, question, benchmark)`, which
returns an object with `.probabilities` (arm name -> probability) and `.chosen_arm`; until that
module and a checkpoint exist, the section says how to train one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from app import charts, data, ui
from forge_core.store import Store

NO_ROUTER = "No trained router yet: run `forge train --stage 1` or use the Train page."


def _route_question() -> Callable[..., Any] | None:
    try:
        from forge_core.routing import route_question
    except ModuleNotFoundError as error:
        if error.name != "forge_core.routing":
            raise
        return None
    return route_question


def router_section(store: Store, question: str, benchmark: str) -> None:
    """Pick a checkpoint and see where it would route the question."""
    st.header("Router")
    route_question = _route_question()
    checkpoints = data.checkpoints(store) if route_question else None
    if checkpoints is None or checkpoints.empty:
        st.info(NO_ROUTER, icon=":material/route:")
        return
    labels = {row.checkpoint_id: f"{row.checkpoint_id} (stage {row.stage}, {row.host}, {row.variant}, "
                                 f"{row.n_arms} arms, {row.created_at:%Y-%m-%d %H:%M})"
              for row in checkpoints.itertuples()}
    checkpoint_id = st.selectbox("Checkpoint", list(labels), format_func=labels.get)
    if st.button("Route this question", icon=":material/alt_route:", disabled=not question.strip()):
        with ui.user_errors(stop=False), st.spinner("Routing…"):
            route = route_question(store, checkpoint_id, question, benchmark)
            st.metric("Chosen arm", route.chosen_arm)
            st.plotly_chart(charts.arm_probabilities(route.probabilities, route.chosen_arm))
