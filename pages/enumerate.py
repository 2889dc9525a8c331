"""Enumerate: run the host on every missing (query, arm) as a background job and watch it."""

import streamlit as st

from app import data, ui
from app.jobs_view import jobs_panel, start_job
from forge_core.arms import ALPHABET_SIZES
from forge_core.enumeration.estimate import check_budget
from forge_core.enumeration.planning import SPLIT_CHOICES, EnumerationPlan, concurrency_for

st.title("Enumerate")
st.caption("Stage 0: every (query, arm) outcome lands in the store the moment it is answered. A job runs "
           "as its own `forge enumerate` process: leave this page or close the browser and it keeps going; "
           "start the same plan again and only what is missing runs.")
store = data.store()
with ui.user_errors():
    stats = data.benchmark_stats(store)
    ui.require_benchmarks(stats)
    host_configs = {host.name: host for host in data.host_configs(store)}

with st.container(border=True):
    # two rows of three: five selects in one clip the host's name at 1,024 px
    host_column, retriever_column, split_column = st.columns(3)
    arms_column, seed_column, _ = st.columns(3)
    host = host_column.selectbox("Host", list(host_configs))
    retriever = ui.retriever_select(retriever_column, store, [host], "enumerate", needs_outcomes=False)
    split = split_column.selectbox("Split", SPLIT_CHOICES)
    n_arms = arms_column.selectbox("Alphabet", ALPHABET_SIZES, index=1, format_func=lambda k: f"{k} arms")
    split_seed = seed_column.selectbox("Split seed", [0, 1, 2])
    benchmarks = st.multiselect("Benchmarks", list(stats), default=list(stats))
    columns = st.columns(4)
    limit = columns[0].number_input("Queries in all", min_value=1, value=None, placeholder="no limit")
    per_benchmark = columns[1].number_input("Queries per benchmark", min_value=1, value=None, placeholder="no limit")
    max_calls = columns[2].number_input("Max host calls", min_value=1, value=None, placeholder="no limit")
    max_tokens = columns[3].number_input("Max tokens", min_value=1, value=None, placeholder="no limit")
    concurrency_column, budget_column = st.columns(2)
    concurrency = concurrency_column.selectbox(
        "Queries in flight", [None, 1, 2, 4, 8], format_func=lambda c: "host default" if c is None else str(c),
        help="Default: 1 on embedded hosts (one llama.cpp slot reuses its prompt cache best), "
             "else the host's max_concurrency.")
    budget_usd = budget_column.number_input(
        "Budget (USD)", min_value=0.0, value=None, placeholder="no limit", format="%.2f",
        help="Refuse a plan estimated above it, and stop the job before its measured spend would pass it "
             "(at the host's prices, set on the Hosts page).")
    probes_column, unchecked_column = st.columns(2)  # labels whole at 1,024 px
    probes = probes_column.checkbox("Run the four host probes too",
                                    help="The probes a Full router reads: a greedy Direct answer and three samples "
                                         "per query (`forge enumerate --probes`).")
    allow_unchecked = unchecked_column.checkbox(
        "Allow 12 arms unchecked",
        help="12 arms need a depth check of the host that found every thinking depth honoured (Hosts page, or "
             "`forge host check NAME`); tick to run anyway.")
    plan = EnumerationPlan(host=host, split=split, n_arms=n_arms, probes=probes, benchmarks=tuple(benchmarks),
                           split_seed=split_seed, limit=limit, per_benchmark=per_benchmark, max_calls=max_calls,
                           max_tokens=max_tokens, concurrency=concurrency_for(host_configs[host], concurrency),
                           allow_unchecked_depths=allow_unchecked, budget_usd=budget_usd, retriever=retriever)
    plan_checked = False  # the plan passed its check (its error, if any, is shown once, above the button)
    with ui.user_errors(stop=False):
        plan.check(store)
        plan_checked = True
        ui.plan_estimate(store, plan)
    submitted = st.button("Start job", type="primary", icon=":material/play_arrow:", disabled=not plan_checked)

if submitted and plan_checked:
    with ui.user_errors(stop=False):
        missing = data.missing_calls(store, plan)
        if budget_usd is not None and missing:
            check_budget(data.plan_estimate(store, plan), budget_usd)
        if missing == 0:
            st.success("Nothing to do: every planned call is already stored.")
        else:
            start_job(store, plan)
            st.success(f"Job started: {missing:,} missing calls planned"
                       f"{f' (stopping after {max_calls:,})' if max_calls else ''}.")

st.header("Jobs")
jobs_panel(store)
