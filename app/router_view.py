"""The Router section of the Live query page: a trained router's arm probabilities for a question.

It calls `forge_core.routing.live.route_live`, whose decision has `.probabilities` (arm name ->
probability) and `.chosen_arm`; until a checkpoint exists, the section says how to train one.
"""

from __future__ import annotations

import streamlit as st

from app import charts, data, ui
from forge_core.hosts.base import HostConfig
from forge_core.routing.live import route_live
from forge_core.store import Store

NO_ROUTER = "No trained router yet: run `forge train --stage 1` or use the Train page."
DECISION_KEY = "route_decision"
ARM_KEY = "live_arm"  # the Live query page's arm selectbox


def router_section(store: Store, question: str, benchmark: str, host_config: HostConfig, arms: list[str]) -> None:
    """Pick a checkpoint, see where it would route the question, and optionally take its arm."""
    st.header("Router")
    checkpoints = data.checkpoints(store)
    if checkpoints.empty:
        st.info(NO_ROUTER, icon=":material/route:")
        return
    labels = {row.checkpoint_id: f"{row.checkpoint_id} (stage {row.stage}, {row.host}, {row.variant}, "
                                 f"{row.n_arms} arms, {row.created_at:%Y-%m-%d %H:%M})"
              for row in checkpoints.itertuples()}
    checkpoint_id = st.selectbox("Checkpoint", list(labels), format_func=labels.get)
    variant = checkpoints.set_index("checkpoint_id").loc[checkpoint_id, "variant"]
    if st.button("Route this question", icon=":material/alt_route:",
                 help="A Full router first runs its four probes on the host chosen above."):
        if not question.strip():
            st.warning("Type a question first.")
            return
        with ui.user_errors(stop=False), st.spinner("Routing…"):
            served = data.served_host(host_config) if variant == "full" else None
            st.session_state[DECISION_KEY] = route_live(store, checkpoint_id, question, benchmark, served)
    decision = st.session_state.get(DECISION_KEY)
    if decision is None:
        return
    columns = st.columns(3)
    columns[0].metric("Chosen arm", decision.chosen_arm)
    columns[1].metric("Routing time", f"{decision.routing_ms:,.0f} ms")
    columns[2].metric("Probe tokens", f"{decision.probe_tokens:,}")
    st.plotly_chart(charts.arm_probabilities(decision.probabilities, decision.chosen_arm))
    if decision.chosen_arm in arms:
        st.button("Answer with this arm", on_click=st.session_state.__setitem__, args=(ARM_KEY, decision.chosen_arm),
                  help="Selects the router's arm above; then press Ask.")
