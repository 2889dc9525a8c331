"""The Action map page's query panel: a query clicked on a map, opened with its evidence in each
support form, every arm's stored answer, F1, tokens and utility, and the router's probabilities."""

from __future__ import annotations

import streamlit as st

from app import data, live_view, ui
from forge_core.evidence.answering import retrieve_evidence
from forge_core.reports.action_map import ActionMap
from forge_core.store import Store

SELECTED_KEY = "action_map_query"  # session state: the map index of the query opened last


def remember_click(index: int | None) -> None:
    """Keep the query a click on a map selected (its map index; None: no click)."""
    if index is not None:
        st.session_state[SELECTED_KEY] = index


def clicked_query() -> int | None:
    """The map index of the query clicked last on the Action map, or None."""
    return st.session_state.get(SELECTED_KEY)


def show_query(store: Store, action_map: ActionMap, index: int | None,
               how_to_open: str = "Click a point on a map to open its query here.") -> None:
    """The query at `index` in the map opened (None: how to open one)."""
    st.subheader("Query")
    if index is None or index >= len(action_map.keys):
        st.caption(how_to_open)
        return
    benchmark, example_id = action_map.keys[index]
    example = data.example(store, benchmark, example_id)
    st.markdown(f"**{action_map.questions[index]}**")
    st.caption(f"{benchmark} / {example_id} · gold: {' | '.join(example.answers) if example else '–'} · router: "
               f"{action_map.arms[action_map.router_actions[index]]} · oracle: "
               f"{action_map.arms[action_map.oracle_actions[index]]}")
    held_out = data.reliability(store, data.store_version(store), action_map.checkpoint_id,
                                action_map.weights)
    decided = action_map.confidence(index)
    st.caption(f"The router's margin: {live_view.confidence_text(decided, held_out)}. "
               + live_view.untrained_text(decided))
    outcomes = action_map.query_outcomes(index)
    answers = data.stored_answers(store, action_map.host, benchmark, example_id, action_map.arms,
                                  action_map.retriever_hash)
    outcomes.insert(1, "answer", [answers.get(arm, "–") for arm in outcomes["arm"]])
    if not st.toggle("Show the router's probabilities", key="action_map_show_probabilities",
                     help=f"The router's raw output: τ ({action_map.tau:g}) times the gap of two arms' log "
                          "probabilities is the utility column beside it."):
        outcomes = outcomes.drop(columns="router probability")
    st.dataframe(outcomes, hide_index=True, column_config={
        "F1": st.column_config.NumberColumn(format="%.2f"), "utility": st.column_config.NumberColumn(format="%.4f"),
        "router probability": st.column_config.ProgressColumn(format="%.3f", min_value=0.0, max_value=1.0),
        "router's implied utility vs its pick": st.column_config.NumberColumn(format="%+.4f")})
    st.caption(f"Utility = F1 − λ_in × tokens in − λ_out × tokens out (each normalized by its train maximum) at "
               f"λ_in {action_map.weights.lambda_in:g} / λ_out {action_map.weights.lambda_out:g}: λ_in prices the "
               "prompt (question and evidence), λ_out the answer and any reasoning.")
    with ui.user_errors(), st.spinner("Retrieving the evidence…"):  # the retriever the outcomes were made with
        evidence = retrieve_evidence(data.configured_retriever(store, benchmark, action_map.retriever_hash),
                                     action_map.questions[index])
    for form, tab in zip(("direct", "summary", "raw"), st.tabs(["Direct", "Summary", "Raw"])):
        with tab:
            st.text(evidence.support_text(form) or "(none: the Direct arm gets the question only)")
