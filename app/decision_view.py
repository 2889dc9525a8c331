"""The Pareto page's decision and its named points: what to deploy at the chosen weights, stated
once by `forge decide`'s rule (`forge_core.evaluation.decide`), and every policy's point under a
human name, identical points merged so none hides under another."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
import streamlit as st

from app import data, ui
from app.views_progress import waiting_for_views
from forge_core.evaluation.decide import FLOOR_POLICY, floor_verdict, policy_name
from forge_core.evidence.retrievers import DEFAULT_RETRIEVER, retriever_option
from forge_core.precompute.view_cache import view_name
from forge_core.reports.tables import merge_identical_points
from forge_core.routing.utility import CostWeights
from forge_core.statistics import Interval
from forge_core.store import Store

# the serve command's line, as inline code: `st.code` draws through Streamlit's syntax highlighter, whose
# script took half a second of the Pareto page's first render in the browser (its only code block)
SERVE_LEAD = "Serve it: "


def named_points(frame: pd.DataFrame, checkpoint_names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The frame with identical points merged and a `name` column: checkpoints by their human
    name (the id stays in `policy`, shown in the tooltip), other policies by their own name."""
    names = checkpoint_names or {}
    merged = merge_identical_points(frame)
    merged["name"] = [" = ".join(names.get(p, p) for p in policies) for policies in merged["policies"]]
    return merged


def show_decision_at_weights(store: Store, version: int, host: str, weights: CostWeights, accounting: str,
                             retriever: str = DEFAULT_RETRIEVER, budget_tokens: float | None = None) -> dict | None:
    """`forge decide` at the sliders' weights (within `budget_tokens` when the weights came from
    calibrating to it): what to deploy, the recipe whose runs decided it, its gains over the best
    fixed arm with intervals, the floor, the policies excluded, the serve command, and a button that
    marks a decided router as the host's default. The page's only recommendation; returns the
    decision (None when there is none)."""
    lambdas = f"λ_in {weights.lambda_in:g} / λ_out {weights.lambda_out:g}"
    needed = [view_name("decision", host)] + ([] if weights == CostWeights() else [view_name("any_weights", host)])
    if waiting_for_views(*needed):
        return None
    with st.spinner(f"Deciding at {lambdas} out of fold (the first time trains each fold's routers once, "
                    "about a minute)…"):
        decided = data.decision_at(store, version, host, weights, accounting, retriever, budget_tokens)
    if isinstance(decided, str):
        st.info(f"No decision at {lambdas}: {decided}", icon=":material/help:")
        return None
    if decided["variant"] is not None:  # a router is deployed
        st.success(f"**{decided['sentence']}**", icon=":material/rocket_launch:")
    else:
        st.info(f"**{decided['sentence']}**", icon=":material/block:")
    if budget_tokens is not None:
        st.caption(f"These weights came from calibrating to {budget_tokens:g} tokens a query: the decision keeps to "
                   "that budget (a policy whose tokens are decidably above it does not compete).")
    recipe = decided["recipe"]
    chosen = ("the recommended recipe, measured best by this store's runs" if decided["recipe_measured"]
              else "the default recipe (no run compares recipes yet)")
    st.caption(f"Recipe `{recipe['recipe_id']}`: {recipe['label']}, {chosen} (`forge recipes`).")
    gains, against = decision_gains(decided)
    st.table(gains.set_index("measure").round(3))
    if against:
        st.caption(f"{against} is the strongest servable router; it does not beat {decided['best_fixed_arm']} "
                   "decidably.")
    _show_floor_and_excluded(decided)
    st.markdown(f"{SERVE_LEAD}`{decided['serve_command']}`")
    _default_router_button(store, host, decided)
    source = ("its crossfit run stored at these weights" if decided["evidence"] == "stored run"
              else "the folds of its cost-conditioned crossfit run, trained once and deciding at these weights")
    st.caption(f"`forge decide --host {host}{retriever_option(retriever)} --lambda-in {weights.lambda_in:g} "
               f"--lambda-out {weights.lambda_out:g}` gives the same (`--json`: the deployment manifest). Out of fold "
               f"over {decided['queries']} queries: {source}, `{'`, `'.join(decided['run_ids'])}`. Rule: only fixed "
               "arms and FORGE routers compete (they can be served); a router only where its gain over the best fixed "
               "arm is decidable (95% interval above 0); among the policies not decidably below the best, the one of "
               "fewest tokens.")
    return decided


def decision_gains(decided: dict) -> tuple[pd.DataFrame, str | None]:
    """The deployed policy against the best fixed arm (utility, macro F1, tokens a query), or, when
    the best fixed arm itself is deployed, the strongest servable router against it (named second)."""
    deploy = decided["deploy"]
    shown = deploy if deploy != decided["best_fixed_policy"] or not decided["challenger"] else decided["challenger"]
    gain = decided["policies"][shown]["gain_vs_best_fixed"]
    labels = {"utility": "utility", "f1": "macro F1", "tokens": "tokens a query"}
    versus = f"{policy_name(decided, shown)} − {policy_name(decided, decided['best_fixed_policy'])}"
    frame = pd.DataFrame([{"measure": label, versus: gain[key]["difference"],
                           "95% low": gain[key]["ci"][0], "95% high": gain[key]["ci"][1]}
                          for key, label in labels.items()])
    return frame, None if shown == deploy else policy_name(decided, shown)


def _show_floor_and_excluded(decided: dict) -> None:
    """The deployed policy against the linear floor, and the policies that could not compete though
    they beat the best fixed arm decidably, each with its reason."""
    floor = decided["policies"][decided["deploy"]].get("vs_floor")
    if floor is not None:
        st.caption(f"{floor_verdict(floor).capitalize()} the linear floor {FLOOR_POLICY}: "
                   f"{floor['difference']:+.3f} utility [{floor['ci'][0]:+.3f}, {floor['ci'][1]:+.3f}].")
    for name, reason in decided["excluded"].items():
        gain = decided["policies"][name]["gain_vs_best_fixed"]["utility"]
        if Interval.of(gain["ci"]).above:
            st.caption(f"Not deployable though decidably above {decided['best_fixed_arm']}: {name} "
                       f"{gain['difference']:+.3f} [{gain['ci'][0]:+.3f}, {gain['ci'][1]:+.3f}] ({reason}).")


def _default_router_button(store: Store, host: str, report: dict) -> None:
    """Mark the decided router as the host's default (a fixed arm has none to mark)."""
    checkpoint = report["checkpoint_id"]
    if checkpoint is None:
        missing = f"No checkpoint of this recipe is stored for the decided router: `{report['serve_command']}`."
        st.caption("A fixed arm needs no router: nothing to mark as the default router."
                   if report["variant"] is None else missing)
        return
    name = report["checkpoint_name"]
    marked = store.marked_default_router(host) == checkpoint
    if st.button("Mark as the default router", icon=":material/star:", disabled=marked, key="decision-default",
                 help=f"{name} (`{checkpoint}`) becomes the default router of '{host}' (as on the Train page)."):
        with ui.user_errors(stop=False):
            store.set_default_router(host, checkpoint)
            data.refresh()
            ui.flash(f"{name} is now the default router of '{host}'.")
            st.rerun()
    if marked:
        st.caption(f"{name} is the default router of '{host}'.")
