"""Pareto: every policy's quality against its token cost under chosen cost weights, and the frontier."""

import pandas as pd
import streamlit as st

from app import data, routers, ui, weights
from app.calibration_view import budget_for, calibration_panel
from app.crossfit_view import show_crossfit
from app.decision_view import show_decision_at_weights
from app.pareto_view import ParetoFrames, pareto_frames, prefetch_next_step
from app.views_progress import waiting_for_views
from forge_core.arms import ALPHABET_SIZES
from forge_core.evaluation.cached import CachedRequest
from forge_core.evaluation.settings import EvaluationSettings
from forge_core.evidence.retrievers import DEFAULT_RETRIEVER, retriever_option
from forge_core.precompute.view_cache import view_name
from forge_core.reports.checkpoint_views import checkpoint_names
from forge_core.reports.mix_view import BELOW_RANGE, HULL_NAME
from forge_core.routing.utility import CostWeights

MOVED_FROM = "pareto_weights_before"  # the weights of the page's previous run: where the sliders moved from

st.title("Pareto")
st.caption("Fixed arms, baselines (re-tuned on dev for these weights), the per-query utility oracle and the "
           "chosen router checkpoints, scored on the same complete queries: macro F1 against the tokens a "
           "deployment pays per query (every host call a decision needs: a Full router's and Self-Routing's four "
           "probes, a cascade's earlier calls, the answer). Move the weights: the utilities, the tuned baselines, "
           "the oracle, the cost-conditioned routers (they decide at the sliders' weights, no retraining) and the "
           "frontier follow; a per-weight checkpoint keeps the weights it was trained with. The oracle is a "
           "reference, never on the frontier.")
store = data.store()
hosts = ui.hosts_with_outcomes_or_stop(store)

host_column, retriever_column, protocol_column = st.columns([1.2, 1, 1.3])  # both protocols whole at 1,024 px
host = host_column.selectbox("Host", hosts)
retriever = ui.retriever_select(retriever_column, store, [host], "pareto")
protocol = protocol_column.segmented_control(
    "Protocol", ["test split", "crossfit"], default="test split",
    help="test split: the Cached protocol on the fixed test split, computed here; crossfit: stored out-of-fold "
         "results over every complete query (`forge eval crossfit`).") or "test split"
if protocol == "crossfit":
    session_weights = weights.current()
    decided = show_decision_at_weights(store, data.store_version(store), host, session_weights, "deploy", retriever,
                                       budget_for(session_weights))
    show_crossfit(store, host, retriever, decided["run_ids"] if decided else [])
    st.stop()

arms_column, split_column = st.columns(2)
default_size = data.alphabet_size(store, host)
n_arms = arms_column.selectbox("Alphabet", ALPHABET_SIZES, index=ALPHABET_SIZES.index(default_size),
                               format_func=lambda k: f"{k} arms")
split = split_column.selectbox("Split", ["test", "dev"], help="Baselines are tuned on train and dev.")
answer_only = st.toggle("Answer-only cost (the paper's Cached view: excludes probes and earlier calls)",
                        help="Off: the deployment's accounting, every host call a decision needs, each charged with "
                             "the utility formula. On: only the answering call, as the paper's Cached cost.")
accounting = "answer" if answer_only else "deploy"
if retriever == DEFAULT_RETRIEVER:
    calibration_panel(store, host, n_arms, accounting)
else:
    st.caption(f"Calibrate to a budget under retriever '{retriever}': `forge calibrate --host {host} "
               f"--retriever {retriever} --budget-tokens T`.")


def shown_policies() -> tuple[list[str], str, bool]:
    """The controls of what is drawn (outside the weights' fragment: a step redraws only what the weights
    move): the chosen router checkpoints, the colouring and whether one chart per benchmark."""
    chosen = st.multiselect("Router checkpoints", list(labels),
                            default=list(dict.fromkeys([*conditioned, *filter(None, [shared_choice])])),
                            format_func=labels.get,
                            help="Default: the cost-conditioned routers (`forge train --conditioned`), which decide at "
                                 "the sliders' weights, and the router chosen on the other pages (the host's default "
                                 "until you pick one).")
    color_column, facet_column = st.columns([1, 2], vertical_alignment="bottom")  # a row of their own: nothing cut
    color_by = color_column.segmented_control("Colour by", ["policy", "utility"], default="policy",
                                              help="utility: the policies' utility under these weights.") or "policy"
    by_benchmark = facet_column.toggle("One chart per benchmark", help="Each benchmark's own points and frontier.")
    if not labels:
        st.info(ui.no_checkpoints(host) + " Meanwhile the fixed arms, baselines and oracle are shown.",
                icon=":material/model_training:")
    return chosen, color_by, by_benchmark


@st.fragment
def at_weights(chosen: list[str], color_by: str, by_benchmark: bool) -> None:
    """The part of the page the weights move, rerun alone when a slider (or a section below them) changes:
    the decision, the points, the chart, the tables and the routers' margins."""
    cost_weights = weights.sliders("pareto")
    lambda_in, lambda_out = cost_weights.lambda_in, cost_weights.lambda_out
    if waiting_for_views(view_name("pareto", host)):
        return
    version = data.store_version(store)  # looked at each step: a store written meanwhile is scored anew
    with ui.user_errors(), st.spinner(f"Scoring every policy at λ_in {lambda_in:g} / λ_out {lambda_out:g}…"):
        request = CachedRequest(EvaluationSettings(host, split, n_arms, cost_weights, accounting=accounting,
                                                   retriever=retriever),
                                checkpoints=tuple(chosen))
        frames = pareto_frames(store, version, request, by_benchmark, color_by, labels)

    decided = show_decision_at_weights(store, version, host, cost_weights, accounting, retriever,
                                       budget_for(cost_weights))
    st.caption(f"The points below are the {split} split's, scored here without intervals: a picture of the "
               "trade-offs, not a second recommendation.")
    show_highlights(frames, cost_weights, chosen)
    st.vega_lite_chart(*frames.chart, key="pareto-chart")
    st.caption(f"Dashed: the {HULL_NAME}, the upper convex hull of the fixed arms on these axes"
               + (" of each benchmark" if by_benchmark else "") + ". A point on it is a mix that sends each query to "
               "one of two fixed arms at random in fixed shares, what anyone gets without learning: a policy is worth "
               "its routing only above it at its own tokens. Dotted: the frontier of the policies' own points. Each "
               "point's tooltip and the table below give its F1 above the mix at its own tokens with the paired 95% "
               "interval.")
    show_tables(frames)
    margins_open = show_margins(version, chosen, cost_weights)
    previous, st.session_state[MOVED_FROM] = st.session_state.get(MOVED_FROM), cost_weights
    prefetch_next_step(store, version, request, by_benchmark, color_by, labels, previous, decide=decided is not None,
                       budget_for=budget_for,
                       conditioned=tuple(c for c in chosen if c in conditioned) if margins_open else ())


def show_highlights(frames: ParetoFrames, cost_weights: CostWeights, chosen: list[str]) -> None:
    """The oracle's utility and cost, the highest utility, the frontier's size, and each chosen
    cost-conditioned router's tokens at these weights."""
    highlights = frames.highlights
    columns = st.columns([0.9, 1.5, 1.2, 1.0])  # every value whole at 1,024 px (the policy's name wraps)
    columns[0].metric("Oracle utility", f"{highlights['oracle_utility']:.4f}",
                      help="Macro mean utility of the per-query best arm (descriptive only: it sees the scores).")
    columns[1].metric("Oracle cost", f"{highlights['oracle_cost_k'] * 1000:,.0f} tokens",
                      help=f"Oracle F1 {highlights['oracle_f1']:.3f}.")
    best_policy = highlights["best_policy"] or "–"
    ui.name_metric(columns[2], f"Highest utility on {split}", labels.get(best_policy, best_policy),
                   help=f"Macro utility {highlights['best_utility']:.4f} on the {split} split, the oracle aside: a "
                        "point estimate without an interval, not the decision above.")
    columns[3].metric("On the frontier", len(highlights["frontier"]), help=", ".join(highlights["frontier"]))
    overall = frames.overall
    moving = overall[overall["policy"].isin([c for c in chosen if c in conditioned])]
    for column, row in zip(st.columns(max(len(moving), 1)), moving.itertuples()):
        ui.name_metric(column, f"{conditioned[row.policy]} at these weights",  # a card: the value wraps, never cut
                       f"{row.tokens_in:,.0f} in + {row.tokens_out:,.0f} out tokens",
                       help=f"Checkpoint {row.policy} decides at λ_in {cost_weights.lambda_in:g}, λ_out "
                            f"{cost_weights.lambda_out:g}: macro F1 {row.macro_f1:.3f}, utility "
                            f"{row.macro_utility:.4f}, {row.cost_k * 1000:,.0f} tokens a query in all (λ_in prices "
                            "those in, λ_out those out).")


def show_tables(frames: ParetoFrames) -> None:
    """Every point's row, and every policy against the mix at its own tokens, each only while its expander
    is open (a closed one costs a step nothing: a grid is the costliest element a step redraws)."""
    with (table := st.expander("Table", key="pareto-table", on_change="rerun")):
        if table.open:
            show_points_table(frames.shown)
    with (hull := st.expander(f"Against the {HULL_NAME}", key="pareto-hull", on_change="rerun")):
        if hull.open:
            show_hull_table(frames.against_hull)


def show_hull_table(against_hull: pd.DataFrame) -> None:
    """Every policy's F1 against the best mix at its own tokens, with what its columns mean."""
    st.dataframe(against_hull, hide_index=True, column_config={
        name: st.column_config.NumberColumn(format="%.4f")
        for name in ("cost_k", "macro_f1", "hull_f1", "hull_gap", "hull_gap_low", "hull_gap_high")})
    st.caption("hull_f1: the best mix's F1 at the policy's own tokens (`cost_k`); hull_gap: the policy's F1 minus "
               "it, with its paired 95% interval (hull_gap_low, hull_gap_high: the mix's outcome on each query is "
               f"its two arms' in its shares, so the pairing is exact); verdict: where it lies. \"{BELOW_RANGE}\": "
               "the policy spends fewer tokens than any mix. The fixed arms on the hull have gap 0.")


def show_points_table(points: pd.DataFrame) -> None:
    """Every point's row, with what its columns mean."""
    st.dataframe(points, hide_index=True, column_config={
        name: st.column_config.NumberColumn(format="%.4f")
        for name in ("cost_k", "macro_f1", "macro_utility", "gold_recall", "support_rate", "support_coverage")} | {
        name: st.column_config.NumberColumn(format="%.1f") for name in ("tokens_in", "tokens_out")})
    st.caption("cost_k: tokens a query in thousands, in and out together; tokens_in: input tokens a query "
               "(prompts: question, evidence, probes), priced by λ_in; tokens_out: output tokens a query (answers, "
               "reasoning, probe samples), priced by λ_out; macro over benchmarks, every call the decision needs "
               "unless Answer-only cost is on.")
    st.caption("gold_recall: share of the annotated gold evidence in the chosen arm's prompt, macro over the "
               "benchmarks that annotate it (none for PopQA).")
    evaluator = data.support_evaluator(store, host, retriever)
    st.caption("support_rate: share of the chosen arms' answers that the evidence in their prompt supports, over "
               "the queries with a verdict (support_coverage), by "
               + (evaluator or f"no evaluator yet: run `forge rewards support --host {host}"
                  f"{retriever_option(retriever)}`") + ".")


def show_margins(version: int, chosen: list[str], cost_weights: CostWeights) -> bool:
    """Each chosen router checkpoint's reliability table: its margins' deciles against what they realized,
    scored only while their expander is open (a closed one costs a step nothing); whether it is open."""
    with (margins := st.expander("How far the routers' margins can be trusted", key="pareto-margins",
                                 on_change="rerun")):
        if margins.open:
            show_reliability_tables(version, chosen, cost_weights)
    return bool(margins.open)


def show_reliability_tables(version: int, chosen: list[str], cost_weights: CostWeights) -> None:
    """The reliability tables of `show_margins`, with what their columns mean."""
    st.caption("Each chosen router checkpoint on its held-out test queries, at these weights when it is "
               "cost-conditioned (else at its own): its margin is tau · (log π(chosen) − log π(runner-up)), the "
               "utility it expects the chosen arm to win by (tau = 1, the temperature it was distilled at; a thinking "
               "twin carrying the chosen arm's probability exactly, an untrained thinking head, is not counted as the "
               "runner-up). Rows: margin deciles; realized_difference: the chosen arm's utility minus the runner-up's, "
               "on the same queries; share_right: how often the chosen arm did at least as well.")
    for checkpoint_id in chosen:
        held_out = data.reliability(store, version, checkpoint_id,
                                    cost_weights if checkpoint_id in conditioned else None)
        if isinstance(held_out, str):
            st.info(f"{labels.get(checkpoint_id, checkpoint_id)}: no reliability table ({held_out}).")
            continue
        st.markdown(f"**{labels.get(checkpoint_id, checkpoint_id)}** at λ_in {held_out.weights.lambda_in:g} / "
                    f"λ_out {held_out.weights.lambda_out:g}")
        st.dataframe(held_out.table, hide_index=True, column_config={
            name: st.column_config.NumberColumn(format="%.4f")
            for name in ("low", "high", "mean_margin", "realized_difference")} | {
            "share_right": st.column_config.ProgressColumn(format="percent", min_value=0, max_value=1)})


labels = checkpoint_names(data.host_checkpoints(store, host, retriever, n_arms=n_arms))
conditioned = data.conditioned_checkpoints(store, host, n_arms, retriever)
shared_choice = routers.chosen(store, host, list(labels))  # the router picked on the other pages
shown = shown_policies()
st.caption(weights.CAPTION)
at_weights(*shown)
