"""Action map: where a router sends queries in question-embedding space, next to the oracle."""

import pandas as pd
import streamlit as st

from app import action_map_charts, data, routers, ui, weights
from app.action_map_view import clicked_query, remember_click, show_query
from app.crossfit_view import crossfit_run_picker
from app.views_progress import waiting_for_views
from forge_core.evaluation.crossfit import learned_policies
from forge_core.evidence.retrievers import retriever_option, retriever_phrase
from forge_core.precompute.view_cache import view_name
from forge_core.reports.action_map import N_CLUSTERS, SPLITS, TIE_RULE, UMAP_MIN_DIST, UMAP_NEIGHBORS, ActionMap
from forge_core.routing.checkpoints import conditioning_of
from forge_core.store import Store


def show_cluster_mix(action_map: ActionMap) -> None:
    """Per cluster: the router's and the oracle's commonest arm and the tokens of their arms."""
    st.vega_lite_chart(*action_map_charts.cluster_mix(action_map.cluster_mix(), action_map.arms), key="cluster-mix")
    st.caption("Per cluster: the router's and the oracle's commonest arm, and the mean tokens in and out of the arms "
               "each chose, apart because each weight prices one: λ_in the input tokens (question and evidence: "
               "Raw's passages cost most), λ_out the output tokens (the answer, and a cot arm's reasoning).")
    st.dataframe(action_map.cluster_summary(), hide_index=True, column_config={
        "agreement": st.column_config.ProgressColumn(format="percent", min_value=0, max_value=1),
        "regret": st.column_config.NumberColumn(format="%.4f"),
        **{name: st.column_config.NumberColumn(format="%.1f")
           for name in ("router tokens in", "router tokens out", "oracle tokens in", "oracle tokens out")}})


def show_crossfit_map(store: Store, host: str, retriever: str, action_map: ActionMap, points: pd.DataFrame) -> None:
    """The map's queries coloured by a learned policy's out-of-fold arm in a crossfit run of the host."""
    if waiting_for_views(view_name("crossfit", host)):
        return
    crossfit_runs = data.crossfit_reports(store, data.store_version(store), host, retriever)
    if not crossfit_runs:
        under = retriever_phrase(retriever)
        st.info(f"No finished crossfit run for host '{host}'{under}: `forge eval crossfit --host {host}"
                f"{retriever_option(retriever)}` stores every policy's out-of-fold decisions, and they can colour "
                "this map.", icon=":material/query_stats:")
        return
    run = crossfit_run_picker(st, crossfit_runs)
    policy = st.columns([1, 2])[0].selectbox("Policy", learned_policies(run))
    with ui.user_errors():
        decisions = data.crossfit_arms(store, data.store_version(store), run["run_id"], policy)
    crossfit_points = points.merge(decisions.rename(columns={"arm": "crossfit"}), on=["benchmark", "example_id"])
    st.caption(f"The map's queries coloured by {policy}'s out-of-fold arm in this run (each decided by a model "
               f"fitted on the other folds): {len(crossfit_points):,} of the map's {len(points):,} queries are in it.")
    st.vega_lite_chart(*action_map_charts.action_map(crossfit_points, "crossfit", action_map.arms,
                                                     action_map.centroids()), key="map-crossfit")


st.title("Action map")
st.caption(f"A 2-D UMAP of the question embeddings the router reads (n_neighbors {UMAP_NEIGHBORS}, min_dist "
           f"{UMAP_MIN_DIST}, cosine, fixed seed; computed once per set of queries and cached), coloured by the "
           "checkpoint's chosen arm, by the oracle's (the per-query best arm under the weights named below the "
           f"metrics) and by whether they agree. Clusters: KMeans (k = {N_CLUSTERS}) on the map, numbered left to "
           "right. Hover a point for its question and every arm's outcome; click it to open the query below. Question "
           "embeddings use no evidence, so a query sits at the same place under every retriever; the outcomes, "
           "routers and oracle are the chosen retriever's.")
store = data.store()
hosts = ui.hosts_with_outcomes_or_stop(store)

# two rows: five selects in one clip the checkpoint's name at 1,280 px and every value at 1,024 px
host_column, retriever_column, split_column = st.columns(3)
checkpoint_column, benchmark_column = st.columns([3, 2])
host = host_column.selectbox("Host", hosts)
retriever = ui.retriever_select(retriever_column, store, [host], "action_map")
checkpoints = data.host_checkpoints(store, host, retriever)
if checkpoints.empty:
    st.info(ui.no_checkpoints(host, retriever), icon=":material/model_training:")
    st.stop()
checkpoint_id = routers.picker(checkpoint_column, store, host, checkpoints, "action_map", "Checkpoint",
                               help="Opens on the host's default router; your pick is kept on every page.")
split = split_column.selectbox("Split", SPLITS)
benchmarks = benchmark_column.multiselect("Benchmarks", data.host_benchmarks(store, host),
                                          placeholder="every benchmark", help="Show these benchmarks' queries only.")

with ui.user_errors():
    conditioned = conditioning_of(data.checkpoint_record(store, checkpoint_id)["lineage"]) is not None
# a cost-conditioned router decides at the shared sliders' weights; a per-weight one at its own
chosen_weights = weights.sliders("action_map") if conditioned else None
with ui.user_errors(), st.spinner("Computing the action map (the UMAP is cached on disk after its first time)…"):
    action_map = data.action_map(store, data.store_version(store), host, checkpoint_id, split,
                                 tuple(benchmarks) or None, chosen_weights, retriever)
points = action_map.points()

agreements, regrets = action_map.agreements(), action_map.regrets()
counts = st.columns(3)  # two rows of three: six cards in one row cut their labels and values at 1,280 px
counts[0].metric("Queries", f"{len(points):,}")
router_in, router_out = action_map.mean_tokens(action_map.router_actions)
oracle_in, oracle_out = action_map.mean_tokens(action_map.oracle_actions)
counts[1].metric("Router tokens in / out", f"{router_in:,.0f} / {router_out:,.0f}",
                 help=f"Mean input and output tokens of the router's arms (the oracle's: {oracle_in:,.0f} / "
                      f"{oracle_out:,.0f}). λ_in prices the first (the evidence in the prompt), λ_out the second (the "
                      "answer and any reasoning).")
counts[2].metric("Arms router / oracle use", f"{points['router'].nunique()} / {points['oracle'].nunique()}")
regret_columns = st.columns(3)
ui.name_metric(regret_columns[0], "Router regret · oracle agreement",
               f"{regrets['router']:.3f} · {action_map.agreement:.1%}",
               help="Regret: mean utility the oracle gets and the router does not (0 is perfect). Agreement: share "
                    "of queries where the router's arm is one of the tied best arms.")
for column, name in zip(regret_columns[1:], list(agreements)[1:]):
    ui.name_metric(column, f"Regret · agreement of {name}", f"{regrets[name]:.3f} · {agreements[name]:.1%}",
                   help="Always answering with this fixed arm: its mean regret, and the share of queries where it "
                        "is one of the tied best arms. Compare regrets: a tie counts as agreement for every policy.")
weights_source = ("the sliders' weights, shared with the Pareto and Live query pages: a cost-conditioned router "
                  "decides at any weights" if conditioned
                  else "the checkpoint's weights: pick a cost-conditioned checkpoint to move them")
drawn_at = action_map.weights
st.caption(f"All at λ_in {drawn_at.lambda_in:g} / λ_out {drawn_at.lambda_out:g} ({weights_source}): λ_in "
           "prices input tokens (the evidence in the prompt: Raw's passages cost most), λ_out output tokens (the "
           "answer, and the reasoning of a cot arm), each normalized by its train maximum; hovers show both. "
           f"{TIE_RULE}")

router_column, oracle_column, agree_column = st.columns(3)
maps = (("Router", "router", router_column), ("Oracle", "oracle", oracle_column),
        ("Router vs oracle", "agreement", agree_column))
for title, colour, column in maps:
    column.subheader(title)
    chart = (action_map_charts.agreement_map(points, action_map.arms, action_map.centroids()) if colour == "agreement"
             else action_map_charts.action_map(points, colour, action_map.arms, action_map.centroids()))
    remember_click(action_map_charts.clicked_index(column.vega_lite_chart(*chart, key=f"map-{colour}",
                                                                          on_select="rerun")))
show_query(store, action_map, clicked_query())

ui.lazy_sections([("Action mix per cluster", "action-map-clusters", lambda: show_cluster_mix(action_map)),
                  ("Crossfit decisions", "action-map-crossfit",
                   lambda: show_crossfit_map(store, host, retriever, action_map, points))])
