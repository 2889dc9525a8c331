"""Action map: where a router sends queries in question-embedding space, next to the oracle."""

import streamlit as st

from app import charts, data, ui
from forge_core.evaluation.action_map import N_CLUSTERS, SPLITS, UMAP_MIN_DIST, UMAP_NEIGHBORS
from forge_core.training.checkpoint_views import checkpoint_label

st.title("Action map")
st.caption(f"A 2-D UMAP of the question embeddings the router reads (n_neighbors {UMAP_NEIGHBORS}, min_dist "
           f"{UMAP_MIN_DIST}, cosine, fixed seed), coloured by the checkpoint's chosen arm and by the oracle's "
           f"(the per-query best arm under the checkpoint's λ_in and λ_out). Clusters: KMeans (k = {N_CLUSTERS}) "
           "on the map, numbered left to right. Hover a point for its question and every arm's outcome.")
store = data.store()
hosts = ui.hosts_with_outcomes_or_stop(store)

host_column, checkpoint_column, split_column, benchmark_column = st.columns([1, 2, 1, 2])
host = host_column.selectbox("Host", hosts)
checkpoints = data.checkpoints(store)
checkpoints = checkpoints[checkpoints["host"] == host]
if checkpoints.empty:
    st.info(ui.no_checkpoints(host), icon=":material/model_training:")
    st.stop()
labels = {row["checkpoint_id"]: checkpoint_label(row) for row in checkpoints.to_dict("records")}
checkpoint_id = checkpoint_column.selectbox("Checkpoint", list(labels), format_func=labels.get)
split = split_column.selectbox("Split", SPLITS)
benchmarks = benchmark_column.multiselect("Benchmarks", data.host_benchmarks(store, host),
                                          placeholder="every benchmark", help="Show these benchmarks' queries only.")

with ui.user_errors():
    action_map = data.action_map(store, data.store_version(store), host, checkpoint_id, split,
                                 tuple(benchmarks) or None)
points = action_map.points()

columns = st.columns(4)
columns[0].metric("Queries", f"{len(points):,}")
columns[1].metric("Oracle agreement", f"{action_map.agreement:.1%}",
                  help="Share of queries where the router's arm is the oracle's.")
columns[2].metric("Arms the router uses", points["router"].nunique())
columns[3].metric("Arms the oracle uses", points["oracle"].nunique())

router_column, oracle_column = st.columns(2)
router_column.subheader("Router")
router_column.plotly_chart(charts.action_map(points, "router", action_map.arms, action_map.centroids()),
                           key="map-router")
oracle_column.subheader("Oracle")
oracle_column.plotly_chart(charts.action_map(points, "oracle", action_map.arms, action_map.centroids()),
                           key="map-oracle")

st.subheader("Action mix per cluster")
st.plotly_chart(charts.cluster_mix(action_map.cluster_mix(), action_map.arms), key="cluster-mix")
st.dataframe(action_map.cluster_summary(), hide_index=True,
             column_config={"agreement": st.column_config.ProgressColumn(format="percent", min_value=0, max_value=1)})

st.subheader("Crossfit decisions")
crossfit_runs = data.crossfit_reports(store, data.store_version(store), host)
if not crossfit_runs:
    st.info(f"No finished crossfit run for host '{host}': `forge eval --host {host} --protocol crossfit` stores "
            "every policy's out-of-fold decisions, and they can colour this map.", icon=":material/query_stats:")
    st.stop()
run_column, policy_column = st.columns([2, 1])
run = run_column.selectbox("Crossfit run", crossfit_runs, format_func=lambda r: (
    f"λ_in {r['lambda_in']:g} / λ_out {r['lambda_out']:g}, stage {r['stage']}, {r['folds']} folds"))
routers = [name for name in run["policies"] if name.startswith(("forge_", "ridge_", "bge_"))]
policy = policy_column.selectbox("Policy", routers)
with ui.user_errors():
    decisions = data.crossfit_arms(store, data.store_version(store), run["run_id"], policy)
crossfit_points = points.merge(decisions.rename(columns={"arm": "crossfit"}), on=["benchmark", "example_id"])
st.caption(f"The map's queries coloured by {policy}'s out-of-fold arm in this run (each decided by a model "
           f"fitted on the other folds): {len(crossfit_points):,} of the map's {len(points):,} queries are in it.")
st.plotly_chart(charts.action_map(crossfit_points, "crossfit", action_map.arms, action_map.centroids()),
                key="map-crossfit")
