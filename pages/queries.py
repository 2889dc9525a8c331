"""Queries: every evaluated query of a host in one table (the router's arm, the oracle's arm set, the
router's regret, each arm's F1 and tokens), sorted worst regret first, filtered, exported, and each
query opened with its evidence and answers; a query has a URL (`?host=...&query=benchmark/id`, and
`&retriever=NAME` under a retriever other than bm25)."""

import streamlit as st

from app import data, routers, ui, weights
from app.action_map_view import show_query
from forge_core.errors import ForgeError
from forge_core.evidence.retrievers import DEFAULT_RETRIEVER
from forge_core.reports.action_map import SPLITS
from forge_core.reports.checkpoint_views import checkpoint_names
from forge_core.reports.query_explorer import (
    QueryFilter,
    fixed_arm,
    parse_query_key,
    query_key,
    query_table,
    with_comparison,
)
from forge_core.routing.checkpoints import conditioning_of

NO_COMPARISON = "nothing"
COMPARED = "compared"  # the table's column of the compared policy's arm

st.title("Queries")
st.caption("Every evaluated query of a host: the router's arm, the oracle's arm set (every arm within 1e-9 of the "
           "best utility: ties are common, e.g. when every arm scores F1 0), and the router's **regret**: the "
           "oracle's utility minus the utility of the arm it chose, U = F1 − λ_in c_in − λ_out c_out (0: it chose "
           "an oracle arm). Worst regret first; select a row to open the query, or share its URL.")
store = data.store()
hosts = ui.hosts_with_outcomes_or_stop(store)
linked_host = st.query_params.get("host")
if linked_retriever := st.query_params.get("retriever"):
    st.session_state.setdefault(ui.RETRIEVER_KEPT, linked_retriever)  # a link's retriever, unless one was picked
# two rows: four selects in one clip the host's and the router's names at 1,024 px
host_column, retriever_column, split_column = st.columns(3)
router_column = st.columns([3, 2])[0]
host = host_column.selectbox("Host", hosts, index=hosts.index(linked_host) if linked_host in hosts else 0)
retriever = ui.retriever_select(retriever_column, store, [host], "queries")
checkpoints = data.host_checkpoints(store, host, retriever)
if checkpoints.empty:
    st.info(ui.no_checkpoints(host, retriever), icon=":material/model_training:")
    st.stop()
checkpoint_id = routers.picker(router_column, store, host, checkpoints, "queries",
                               help="Opens on the host's default router; your pick is kept on every page.")
split = split_column.selectbox("Split", SPLITS, help="test: the queries no router trained on.")
with ui.user_errors():
    conditioned = conditioning_of(data.checkpoint_record(store, checkpoint_id)["lineage"]) is not None
chosen_weights = weights.sliders("queries") if conditioned else None
version = data.store_version(store)
with ui.user_errors(), st.spinner("Routing the host's queries…"):
    action_map = data.action_map(store, version, host, checkpoint_id, split, None, chosen_weights, retriever)
table = query_table(action_map)
drawn_at = action_map.weights
weights_owner = "the sliders" if conditioned else "the checkpoint"
st.caption(f"{len(table):,} complete {split} queries of {host} under retriever '{retriever}', at λ_in "
           f"{drawn_at.lambda_in:g} / λ_out {drawn_at.lambda_out:g} ({weights_owner}'s weights). Cluster: the Action "
           "map's region of the question.")

benchmark_column, arm_column, compare_column = st.columns([2, 2, 2])
benchmarks = benchmark_column.multiselect("Benchmarks", sorted(table["benchmark"].unique()),
                                          placeholder="every benchmark")
router_arms = arm_column.multiselect("Router's arm", list(action_map.arms), placeholder="every arm")
names = checkpoint_names(data.host_checkpoints(store, host, retriever, n_arms=len(action_map.arms)))
names.pop(checkpoint_id, None)  # the router the table shows
choices = [NO_COMPARISON, *action_map.arms, *names]
compare = compare_column.selectbox(
    "Compare with", choices, format_func=lambda c: (c if c == NO_COMPARISON else f"Always {c}" if c in action_map.arms
                                                    else names[c]),
    help="A fixed arm or another router of the host: its arm per query in a column, and a filter on disagreement.")
if compare != NO_COMPARISON:
    if compare in action_map.arms:
        table = with_comparison(table, COMPARED, fixed_arm(table, compare))
    else:
        with ui.user_errors(), st.spinner("Routing the queries with the other router…"):
            other_weights = chosen_weights if conditioning_of(
                data.checkpoint_record(store, compare)["lineage"]) is not None else None
            other = data.action_map(store, version, host, compare, split, None, other_weights, retriever).points()
        table = with_comparison(table, COMPARED, other.rename(columns={"router": "arm"}))
disagree = st.toggle("Only where the router's arm differs from the compared one", disabled=compare == NO_COMPARISON)
shown = QueryFilter(benchmarks, router_arms, COMPARED if disagree and compare != NO_COMPARISON else None).apply(table)

columns = st.columns([1, 1.4, 1, 1.2])  # labels whole at 1,024 px
columns[0].metric("Queries shown", f"{len(shown):,}", help=f"Of {len(table):,}.")
columns[1].metric("Router in the oracle set", f"{shown['router_in_oracle'].mean():.1%}" if len(shown) else "–")
columns[2].metric("Mean regret", f"{shown['regret'].mean():.4f}" if len(shown) else "–",
                  help="In utility units at these weights.")
columns[3].metric("Queries with regret", f"{int((shown['regret'] > 0).sum()):,}")

# what the table is sorted and read by first, so it is on screen at 1,280 px; the per-arm columns after
FIRST_COLUMNS = ("regret", "router", "oracle", "router_in_oracle", "compared", "question", "benchmark", "cluster")
first = [name for name in FIRST_COLUMNS if name in shown.columns]
event = st.dataframe(
    shown.drop(columns=["index"]), hide_index=True, on_select="rerun", selection_mode="single-row", key="query-table",
    column_order=first + [name for name in shown.columns if name not in first and name != "index"],
    column_config={"regret": st.column_config.NumberColumn(format="%.4f"),
                   "router_in_oracle": st.column_config.CheckboxColumn("router in oracle"),
                   "question": st.column_config.TextColumn(width="medium"),
                   **{name: st.column_config.NumberColumn(format="%.2f") for name in shown.columns
                      if name.startswith("F1 ")}})
st.download_button("Download these queries (CSV)", shown.drop(columns=["index"]).to_csv(index=False),
                   f"queries_{host}_{split}.csv", "text/csv", icon=":material/download:")

selected = event.selection.rows if event and event.selection else []
if selected:
    row = shown.iloc[selected[0]]
    st.query_params.update({"host": host, "query": query_key(row["benchmark"], row["example_id"])})
    if retriever == DEFAULT_RETRIEVER:
        st.query_params.pop("retriever", None)
    else:
        st.query_params["retriever"] = retriever
opened = None
if linked := st.query_params.get("query"):
    try:
        opened = action_map.keys.index(parse_query_key(linked))
    except ForgeError as error:
        st.error(str(error), icon=":material/error:")
    except ValueError:
        st.warning(f"Query {linked} is not among these {split} queries of {host}: choose its split or host.",
                   icon=":material/search_off:")
show_query(store, action_map, opened, how_to_open="Select a row of the table to open its query here.")
if opened is not None:
    link_retriever = "" if retriever == DEFAULT_RETRIEVER else f"&retriever={retriever}"
    st.caption(f"Link to this query: `?host={host}&query={linked}{link_retriever}` on this page.")

st.header("Questions asked live")
traces = store.live_traces(host)
if traces.empty:
    st.caption(f"None yet for {host}: each question answered on the Live query page is kept here (question, weights, "
               "router, arm, margin, answer, tokens, latency, time).")
else:
    st.caption("Each question answered on the Live query page, newest first (margin: the chosen arm's utility over "
               "the runner-up's as the router implies it, τ times their log-probability gap, the Live query page's "
               "\"+m utility over …\"; tokens: every host call made for the answer).")
    st.dataframe(traces.drop(columns=["trace_id"]), hide_index=True, column_config={
        "asked_at": st.column_config.DatetimeColumn("asked", format="YYYY-MM-DD HH:mm:ss"),
        "margin": st.column_config.NumberColumn(format="%.3f"), "f1": st.column_config.NumberColumn(format="%.2f")})
    st.download_button("Download the live questions (CSV)", traces.to_csv(index=False), f"live_{host}.csv",
                       "text/csv", icon=":material/download:", key="live-traces-csv")
