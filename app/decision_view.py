"""The Pareto page's stated decision and its named points: what to deploy at the chosen weights
(`forge decide`: `forge_core.evaluation.decide`; a stored run's: `forge_core.reports.decision`),
and every policy's point under a human name, identical points merged so none hides under another."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
import streamlit as st

from app import data, ui
from forge_core.evaluation.decide import decision_json
from forge_core.evidence.retrievers import DEFAULT_RETRIEVER, retriever_option
from forge_core.reports.decision import crossfit_decision
from forge_core.reports.tables import merge_identical_points
from forge_core.routing.utility import CostWeights
from forge_core.store import Store


def named_points(frame: pd.DataFrame, checkpoint_names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The frame with identical points merged and a `name` column: checkpoints by their human
    name (the id stays in `policy`, shown in the tooltip), other policies by their own name."""
    names = checkpoint_names or {}
    merged = merge_identical_points(frame)
    merged["name"] = [" = ".join(names.get(p, p) for p in policies) for policies in merged["policies"]]
    return merged


def show_decision(report: dict) -> None:
    """One line saying what to deploy at the run's weights and whether the intervals decide it."""
    decision = crossfit_decision(report)
    detail = (f"λ_in {report['lambda_in']:g} / λ_out {report['lambda_out']:g}, stage {report['stage']}, split seed "
              f"{report['split_seed']}, {report['queries']} queries out of fold. Decidable: the paired 95% interval "
              "of the utility gain over the best fixed arm lies above zero.")
    if decision.decidable:
        st.success(f"**{decision.sentence()}**", icon=":material/rocket_launch:")
    else:
        st.info(f"**{decision.sentence()}**", icon=":material/block:")
    st.caption(detail)


def show_decision_at_weights(store: Store, version: int, host: str, weights: CostWeights, accounting: str,
                             split: str, retriever: str = DEFAULT_RETRIEVER) -> None:
    """`forge decide` at the sliders' weights: what to deploy, its gains over the best fixed arm
    with intervals (tokens in and out apart), the floor, the serve command, and a button that marks
    a decided router as the host's default."""
    lambdas = f"λ_in {weights.lambda_in:g} / λ_out {weights.lambda_out:g}"
    with st.spinner(f"Deciding at {lambdas} out of fold (the first time trains each fold's routers once, "
                    "about a minute)…"):
        decided = data.decision_at(store, version, host, weights, accounting, retriever)
    if isinstance(decided, str):
        st.info(f"No decision at {lambdas}: {decided}", icon=":material/help:")
        return
    report = decision_json(decided)
    if report["router_candidates"]:
        st.success(f"**{report['sentence']}**", icon=":material/rocket_launch:")
    else:
        st.info(f"**{report['sentence']}**", icon=":material/block:")
    st.table(_gains(report).set_index("measure").round(3))
    floor = report["vs_floor"]
    if floor is not None:
        st.caption(f"{report['floor_verdict'].capitalize()} the linear floor {report['floor_policy']}: "
                   f"{floor['difference']:+.3f} utility [{floor['ci'][0]:+.3f}, {floor['ci'][1]:+.3f}].")
    st.code(report["serve_command"], language="bash")
    _default_router_button(store, host, report)
    st.caption(f"`forge decide --host {host}{retriever_option(retriever)} --lambda-in {weights.lambda_in:g} "
               f"--lambda-out {weights.lambda_out:g}` gives the same. "
               f"Out of fold over {report['queries']} queries: the {report['folds']} folds of crossfit run "
               f"`{report['run_id']}`, its cost-conditioned routers trained once per fold and deciding at these "
               "weights (they repeat the run's stored decisions at its own weights on "
               + ", ".join(f"{share:.0%} ({name})" for name, share in report["reproduced_share"].items())
               + f"), beside the fixed arms. Not the {split} split's points below: those have no intervals. Rule: a "
               "router only where its gain over the best fixed arm is decidable (95% interval above 0); among the "
               "policies not decidably below the best, the one of fewest tokens.")


def _gains(report: dict) -> pd.DataFrame:
    """The decided policy against the best fixed arm: utility, macro F1, tokens in and tokens out."""
    labels = {"utility": "utility", "f1": "macro F1", "tokens_in": "tokens in a query",
              "tokens_out": "tokens out a query"}
    return pd.DataFrame([{"measure": label, f"{report['deploy']} − {report['best_fixed_policy']}":
                          report["gain"][key]["difference"], "95% low": report["gain"][key]["ci"][0],
                          "95% high": report["gain"][key]["ci"][1]} for key, label in labels.items()])


def _default_router_button(store: Store, host: str, report: dict) -> None:
    """Mark the decided router as the host's default (a fixed arm has none to mark)."""
    checkpoint = report["checkpoint_id"]
    if checkpoint is None:
        missing = f"No stored checkpoint of the decided router: {report['serve_command']}"
        st.caption("A fixed arm needs no router: nothing to mark as the default router."
                   if report["variant"] is None else missing)
        return
    marked = store.marked_default_router(host) == checkpoint
    if st.button("Mark as the default router", icon=":material/star:", disabled=marked, key="decision-default",
                 help=f"Checkpoint {checkpoint} becomes the default router of '{host}' (as on the Train page)."):
        with ui.user_errors(stop=False):
            store.set_default_router(host, checkpoint)
            data.refresh()
            ui.flash(f"{checkpoint} is now the default router of '{host}'.")
            st.rerun()
    if marked:
        st.caption(f"{checkpoint} is the default router of '{host}'.")
