"""The Pareto page's crossfit protocol: stored out-of-fold results, never recomputed on page load."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pandas as pd
import streamlit as st

from app import data, gain_charts, ui, weights
from app.decision_view import named_points
from app.pareto_chart import pareto_chart
from app.views_progress import waiting_for_views
from forge_core.evidence.retrievers import DEFAULT_RETRIEVER, retriever_option, retriever_phrase
from forge_core.policies.baselines import FixedArm
from forge_core.precompute.view_cache import view_name
from forge_core.reports.decision import report_at_weights
from forge_core.reports.tables import (
    MACRO,
    ORACLE,
    crossfit_frame,
    crossfit_reliability_frame,
    guard_frame,
    routing_gain_frame,
    seed_spread_frame,
)
from forge_core.routing.utility import ACCOUNTINGS, DEFAULT_LAMBDA_IN, DEFAULT_LAMBDA_OUT
from forge_core.store import Store

ACCOUNTING_NAMES = {"deploy": "deployment accounting", "answer": "answer-only accounting"}
ACCOUNTING_SHORT = {"deploy": "deployment", "answer": "answer-only"}  # a picker's word for the accounting


def crossfit_run_label(report: dict) -> str:
    """The whole of a stored crossfit run, shown under its picker: weights, recipe (Stage 1's warm
    start, Stage 2, training seed), split seed, accounting, folds and queries, its policies, and its id."""
    from forge_core.evaluation.recipe import run_recipe
    from forge_core.policies.registry import ConditionedRouter, variants

    has_conditioned = any(name in variants(ConditionedRouter) for name in report["policies"])
    conditioned = " incl. cost-conditioned" if has_conditioned else ""
    recipe = run_recipe(report["settings"], "").short_label
    return (f"λ {report['lambda_in']:g} / {report['lambda_out']:g} · {recipe} · split seed {report['split_seed']} · "
            f"{ACCOUNTING_NAMES[report['accounting']]} · {report['folds']} folds, {report['queries']:,} queries, "
            f"{len(report['policies'])} policies{conditioned} · {report['run_id']}")


def crossfit_run_labels(reports: Sequence[dict]) -> dict[str, str]:
    """The host's stored crossfit runs as a picker offers them, by run id: each run's weights and
    whichever of its recipe, training seed, split seed, accounting, folds and routers tell it from
    the other runs (a part all share is left out), with its id only where these do not (a rerun of
    the same settings). Short enough to show whole at 1,024 px; `crossfit_run_label` says the whole."""
    parts = {report["run_id"]: _run_parts(report) for report in reports}
    varying = [index for index, values in enumerate(zip(*parts.values())) if len(set(values)) > 1]
    labels = {report["run_id"]: " · ".join([f"λ {report['lambda_in']:g} / {report['lambda_out']:g}",
                                            *(parts[report["run_id"]][index] for index in varying)])
              for report in reports}
    repeated = Counter(labels.values())
    return {run_id: label if repeated[label] == 1 else f"{label} · {run_id}" for run_id, label in labels.items()}


def _run_parts(report: dict) -> tuple[str, ...]:
    """What may tell a crossfit run from another of the host's, weights aside: its recipe's Stage 1
    (the paper's three NoThink arms, or k arms) and Stage 2, training seed, split seed, accounting,
    folds, and whether it measured cost-conditioned routers."""
    from forge_core.evaluation.recipe import run_recipe
    from forge_core.policies.registry import ConditionedRouter, variants
    from forge_core.training.settings import PAPER_WARM_START_ARMS

    recipe = run_recipe(report["settings"], "")
    warm = "paper's" if recipe.warm_start_arms == PAPER_WARM_START_ARMS else f"{recipe.warm_start_arms}-arm"
    stage2 = f" + Stage 2 ({json.loads(recipe.stage2)['steps']} steps)" if recipe.stage == 2 else ""
    conditioned = any(name in variants(ConditionedRouter) for name in report["policies"])
    return (f"{warm} Stage 1{stage2}", f"seed {recipe.seed}", f"split seed {report['split_seed']}",
            ACCOUNTING_SHORT[report["accounting"]], f"{report['folds']} folds",
            "with cost-conditioned routers" if conditioned else "per-weight routers only")


def crossfit_run_picker(container: Any, reports: list[dict], index: int = 0) -> dict:
    """A select of the host's stored crossfit runs (`crossfit_run_labels`) with the chosen run's
    whole description (`crossfit_run_label`, its id included) below it; returns the chosen report."""
    labels = crossfit_run_labels(reports)
    report = container.selectbox("Crossfit run", reports, index=index, format_func=lambda run: labels[run["run_id"]],
                                 help="Runs differ in what the label names; the line below says the whole run.")
    container.caption(crossfit_run_label(report))
    return report


def show_crossfit(store: Store, host: str, retriever: str = DEFAULT_RETRIEVER,
                  evidence: Sequence[str] = ()) -> None:
    """A stored crossfit run under the retriever: its points with their intervals and the frontier
    of the deployable policies; the routing gain over the best fixed arm along the stored runs'
    cost weights. No recommendation of its own: the page's decision (resting on the runs
    `evidence`) is the only one, and the view says whether the chosen run is among them."""
    if waiting_for_views(view_name("crossfit", host)):
        return
    reports = data.crossfit_reports(store, data.store_version(store), host, retriever)
    if not reports:
        under = retriever_phrase(retriever)
        st.info(f"No finished crossfit run for host '{host}'{under} yet: run "
                f"`forge eval crossfit --host {host}{retriever_option(retriever)} "
                f"--lambda-in {DEFAULT_LAMBDA_IN} --lambda-out {DEFAULT_LAMBDA_OUT}` (one per cost weight; results "
                "are stored and shown here).",
                icon=":material/query_stats:")
        return
    report = crossfit_run_picker(st, reports, _opening_run(reports, evidence))
    _say_when_not_at_session_weights(report, host, retriever)
    st.caption(f"Costs and utilities charge {ACCOUNTINGS[report['accounting']]}.")
    if report["run_id"] in evidence:
        st.caption("The decision above rests on this run.")
    else:
        st.caption("The decision above rests on " + (f"`{'`, `'.join(evidence)}`" if evidence else "no stored run")
                   + ": this run is shown for its points and intervals, not as a second recommendation.")
    frame = crossfit_frame(report)
    deployable = frame[frame["policy"] != ORACLE]
    best = deployable.loc[deployable["macro_utility"].idxmax()]
    columns = st.columns(4)
    ui.name_metric(columns[0], "Best fixed arm", report["best_fixed_arm"],
                   help=f"Macro utility {report['policies'][report['best_fixed_policy']]['macro_utility']:.4f}.")
    ui.name_metric(columns[1], "Highest utility in this run", best["policy"],
                   help=f"Utility {best['macro_utility']:.4f}, gain {best['gain']:+.4f} "
                        f"[{best['gain_low']:+.4f}, {best['gain_high']:+.4f}] over the best fixed arm.")
    columns[2].metric("Oracle utility", f"{report['policies'][ORACLE]['macro_utility']:.4f}",  # whole at 1,024 px
                      help="A reference, descriptive only: it sees every arm's score, so it is not on the frontier.")
    columns[3].metric("On the frontier", int(frame["on_frontier"].sum()),
                      help=", ".join(frame[frame["on_frontier"]].sort_values("cost_k")["policy"]))
    st.vega_lite_chart(*pareto_chart(named_points(against_the_hull(frame, report)), False), key="crossfit-pareto")
    with st.expander("Table"):
        st.dataframe(frame, hide_index=True, column_config={
            name: st.column_config.NumberColumn(format="%.4f") for name in frame.columns[2:10]})

    _show_reliability(report)
    _show_guards(report)
    _show_seed_spread(report, reports, retriever)
    _show_routing_gain(report, reports)


def against_the_hull(frame: pd.DataFrame, report: dict) -> pd.DataFrame:
    """The crossfit points with the fields the test split's chart draws the hull from: `on_hull`, the
    fixed arms (`FixedArm` policies) at the vertices of the run's hull (`mix_hull`, by arm), and each
    point's gap to the best mix at its own tokens with its paired 95% interval (`hull_gap`,
    `hull_gap_low`, `hull_gap_high`; None below the cheapest arm); one benchmark, `macro`, as every
    crossfit number is."""
    vertices = {FixedArm(vertex["arm"]).name for vertex in report["mix_hull"]["all"]}
    gaps = [report["policies"][policy]["hull_gap"] or {"difference": None, "ci": [None, None]}
            for policy in frame["policy"]]
    return frame.assign(benchmark=MACRO, on_hull=frame["policy"].isin(vertices),
                        hull_gap=[gap["difference"] for gap in gaps], hull_gap_low=[gap["ci"][0] for gap in gaps],
                        hull_gap_high=[gap["ci"][1] for gap in gaps])


def _show_reliability(report: dict) -> None:
    """Each router's out-of-fold margins in utility units, by decile, against what its choice then
    realized over the runner-up; or why the run has none."""
    st.subheader("Reliability of the routers' margins")
    frame = crossfit_reliability_frame(report)
    if frame.empty:
        st.caption("No reliability table: this run was stored before crossfit runs recorded each routed query's "
                   "margin (its stored decisions are reused as they are). Runs stored since have one.")
        return
    st.caption("Per router, its held-out queries in margin deciles (margin: the chosen arm's implied utility over "
               "the runner-up's, τ·Δlog π, in utility units) against the realized utility difference of the same "
               "two arms; share_right: how often the chosen arm did at least as well.")
    router = st.selectbox("Router", list(dict.fromkeys(frame["policy"])), key="crossfit-reliability-router")
    st.dataframe(frame[frame["policy"] == router].drop(columns="policy"), hide_index=True, column_config={
        **{name: st.column_config.NumberColumn(format="%.4f")
           for name in ("low", "high", "mean_margin", "realized_difference")},
        "share_right": st.column_config.ProgressColumn(format="percent", min_value=0, max_value=1)})


def _show_guards(report: dict) -> None:
    """Each guarded router out of fold: how often it left its fallback, how often that lost, its gain."""
    frame = guard_frame(report)
    if frame.empty:
        return
    st.subheader("Guarded routers")
    st.caption("Each router with a guard: it answers with the fallback unless its margin clears a threshold chosen "
               "on the fold's dev queries so that at most alpha of its deviations lose utility (conformal risk "
               "control's correction). The fallback of a `_guard` row is the best fixed arm on the fold's training "
               "queries; of a `_mix_guard` row, the cost-matched mix of fixed arms at the router's own tokens there, "
               "each query falling back to the arm the mix draws for it. Out of fold: coverage, the share of queries "
               "it deviated on; realized_risk, the share of those deviations that lost utility against the "
               "fallback, beside alpha; gain, its utility over the fallback with the paired 95% interval. A guard "
               "competes in `forge decide` like any router, and `forge serve --router CKPT --guard RISK "
               "--guard-fallback arm|mix` serves it.")
    st.dataframe(frame, hide_index=True, column_config={
        **{name: st.column_config.NumberColumn(format="%.4f") for name in ("gain", "gain_low", "gain_high")},
        **{name: st.column_config.NumberColumn(format="percent") for name in ("coverage", "realized_risk", "alpha")}})


def _show_seed_spread(report: dict, reports: list[dict], retriever: str) -> None:
    """The run's gains at every stored split seed of the same settings, and which are decidable."""
    from forge_core.evaluation.crossfit import seed_key, seed_spread  # the crossfit module imports torch

    siblings = [r for r in reports if seed_key(r) == seed_key(report)]
    st.subheader("Across split seeds")
    if len(siblings) < 2:
        st.caption(f"Only split seed {report['split_seed']} is stored for these settings: run "
                   f"`scripts/crossfit_demo.sh` (or `forge eval crossfit --split-seed 1"
                   f"{retriever_option(retriever)}`, 2) to see "
                   "whether the gains hold across fold draws.")
        return
    spread = seed_spread(siblings)
    st.caption("Utility gain over each seed's best fixed arm with its paired 95% interval. Decidable: the interval "
               "is above zero at every split seed (against the ridge floor likewise).")
    st.dataframe(seed_spread_frame(spread), hide_index=True,
                 column_config={"spread": st.column_config.NumberColumn(format="%.4f")})


def _show_routing_gain(report: dict, reports: list[dict]) -> None:
    """Each router's gain over the best fixed arm and over the ridge floor along the cost weights."""
    st.subheader("Routing gain vs cost weight")
    sweep = [r for r in reports if (_recipe_id(r), r["folds"], r["accounting"], r["split_seed"])
             == (_recipe_id(report), report["folds"], report["accounting"], report["split_seed"])]
    runs = sorted(_one_run_per_weight(report, sweep), key=lambda r: r["lambda_in"] + r["lambda_out"])
    gains = routing_gain_frame(runs)
    st.caption("Each router's and ridge_utility's out-of-fold utility gain over the best fixed arm of each cost "
               "weight (left), and each router's gain over ridge_utility, the strongest simple learner on the same "
               "features and folds (right), with paired bootstrap 95% intervals (a band above zero: the gain is "
               "real). One point per cost weight of the stored crossfit runs of this run's recipe, accounting and "
               "split seed: the chosen run at its own weights, the newest such run at the others.")
    st.vega_lite_chart(*gain_charts.routing_gain(gains), key="routing-gain")
    over_fixed = gains[gains["reference"] == "best fixed arm"]
    for weight_label, rows in over_fixed.groupby("weights", sort=False):
        shares = ", ".join(f"{row.policy} {row.oracle_share:.0%}" for row in rows.itertuples())
        st.markdown(f"**{weight_label}**: share of the oracle's gain over {rows['against'].iloc[0]} recovered: "
                    f"{shares}.")


def _recipe_id(report: dict) -> str:
    """The recipe a run's routers were trained with (`forge recipes`): runs of one recipe only are
    set side by side."""
    from forge_core.evaluation.recipe import run_recipe

    return run_recipe(report["settings"], embedder="").recipe_id


def _one_run_per_weight(report: dict, sweep: list[dict]) -> list[dict]:
    """One run per cost weight of `sweep` (newest first): `report` at its own weights, else the newest."""
    chosen = {(report["lambda_in"], report["lambda_out"]): report}
    for run in sweep:
        chosen.setdefault((run["lambda_in"], run["lambda_out"]), run)
    return list(chosen.values())


def _opening_run(reports: list[dict], evidence: Sequence[str]) -> int:
    """The run the page's decision rests on, else the newest run at the session's weights (the
    sliders of the other pages) under the deployment's accounting, else the newest run."""
    found = next((report for report in reports if report["run_id"] in evidence), None)
    found = found or report_at_weights(reports, weights.current(), accounting="deploy")
    return reports.index(found) if found is not None else 0


def _say_when_not_at_session_weights(report: dict, host: str, retriever: str) -> None:
    session = weights.current()
    lambda_in, lambda_out = session.lambda_in, session.lambda_out
    if report_at_weights([report], session, report["accounting"]) is None:
        st.caption(f"Crossfit runs are stored at fixed weights, so this view has no sliders. Your weights, "
                   f"λ_in {lambda_in:g} / λ_out {lambda_out:g}, are not this run's: `forge eval crossfit --host "
                   f"{host}{retriever_option(retriever)} --lambda-in {lambda_in:g} --lambda-out {lambda_out:g}` "
                   "stores a run at them.")
