"""The Live query page's demo list: stored questions whose arm, under the cost-conditioned router,
changes as the weights rise; one click puts a question in the page."""

from __future__ import annotations

import streamlit as st

from app import data, ui, weights
from app.views_progress import waiting_for_views
from forge_core.precompute.view_cache import view_name
from forge_core.records import Example
from forge_core.reports.demo_questions import WEIGHT_LADDER, DemoQuestion
from forge_core.routing.utility import CostWeights
from forge_core.store import Store

PICKED_KEY = "live_demo_question"  # the DemoQuestion picked from the list, if any
QUESTION_MODE_KEY = "live_question_mode"  # the page's "Question" radio: type one or pick one
PICK_MODE = "Pick one from the benchmark"  # its option a picked demo question shows under


def picked() -> DemoQuestion | None:
    """The demo question the user picked (None: none, or cleared)."""
    return st.session_state.get(PICKED_KEY)


def clear_pick(mode: str) -> None:
    """Drop the picked demo question and put the "Question" radio on `mode` (a button's callback)."""
    st.session_state.pop(PICKED_KEY, None)
    st.session_state[QUESTION_MODE_KEY] = mode


def picked_example(store: Store) -> Example | None:
    """The stored example of the picked demo question; None when none is picked, or when its example
    is gone from the store (the pick is then cleared)."""
    demo = picked()
    if demo is None:
        return None
    example = data.example(store, demo.benchmark, demo.example_id)
    if example is None:
        st.session_state.pop(PICKED_KEY)
    return example


def demo_list(store: Store, host: str, checkpoint_id: str) -> None:
    """The list, each question with its arm at rising weights and a button that picks it (and sets
    the sliders to the lowest weights, where it starts)."""
    if waiting_for_views(view_name("demo", host)):
        return
    with ui.user_errors(stop=False):
        questions = data.demo_questions_of(store, data.store_version(store), host, checkpoint_id)
        ladder = " → ".join(f"{lo:g}/{hi:g}" for lo, hi in WEIGHT_LADDER)
        with st.expander("Demo questions: the router's arm changes as the weights rise", icon=":material/bolt:",
                         expanded=picked() is None):
            if not questions:
                st.caption("No stored question of this host changes arm along the weights.")
                return
            start = "/".join(f"{weight:g}" for weight in WEIGHT_LADDER[0])
            st.caption(f"Test questions of the store, with the arm this router picks at λ_in/λ_out {ladder} "
                       f"(from their stored features). Pick one: it goes into the page and the weights move to "
                       f"{start}, where its list starts (the weights are shared: every page follows). Answer it, "
                       "then raise the weights and answer again.")
            for index, question in enumerate(questions):
                text_column, arms_column, button_column = st.columns([5, 3, 1.3])  # "Pick" whole at 1,024 px
                text_column.markdown(f"**{question.benchmark}**: {question.question}")
                arms_column.caption(" → ".join(question.arms))
                if button_column.button("Pick", key=f"demo_pick_{index}",
                                        help=f"Puts the question in the page and sets the weights to {start}."):
                    st.session_state[PICKED_KEY] = question
                    st.session_state[QUESTION_MODE_KEY] = PICK_MODE  # the radio comes after the list
                    weights.set_weights(CostWeights(*WEIGHT_LADDER[0]))
                    st.rerun()
