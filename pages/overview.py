"""Overview: what the store holds, per-arm quality and cost, and the fixed arms against the oracle."""

import streamlit as st

from app import data, overview_charts, ui
from app.overview_view import TERMS, first_contact
from app.views_progress import waiting_for_views
from forge_core.arms import ALPHABET_SIZES
from forge_core.data.importing import Upload, import_uploaded
from forge_core.data.user_files import EXTENSIONS
from forge_core.evidence.retrievers import retriever_option
from forge_core.precompute.view_cache import view_name
from forge_core.reports.evidence import evidence_frame
from forge_core.reports.tables import MACRO, coverage_frame, oracle_gap_summary, policy_summary
from forge_core.routing.utility import DEFAULT_LAMBDA_IN, DEFAULT_LAMBDA_OUT

UPLOAD_TYPES = [extension.lstrip(".") for extension in EXTENSIONS]
EVIDENCE_RECALL_COLUMNS = ("benchmark", "retriever", "kind", "k", "queries", "gold recall@k", "minus the run's first")
EVIDENCE_COST_COLUMNS = ("benchmark", "retriever", "Summary tokens in", "Raw tokens in", "latency p50 / p95 ms",
                         "measured")

st.title("Overview")
store = data.store()
ui.show_flash()

with st.expander("Import your own questions", icon=":material/upload_file:"):
    st.caption("A file of records with `question` and `answers` (a string or a list of strings), an optional "
               "`id`, and either per-record `contexts` (a list of `{title, text}`) or a corpus file of "
               "`{title, text}` records; see docs/data.md. Split like the built-in benchmarks.")
    with st.form("import-file"):
        uploaded = st.file_uploader("Questions (JSON lines, CSV or Parquet)", type=UPLOAD_TYPES)
        corpus = st.file_uploader("Corpus (optional)", type=UPLOAD_TYPES)
        name = st.text_input("Benchmark name", placeholder="my-questions",
                             help="Lowercase letters, digits, '-' and '_'; not a built-in benchmark's name.")
        submitted = st.form_submit_button("Import", icon=":material/upload:")
    if submitted and uploaded is None:
        st.error("Choose a question file to import.", icon=":material/error:")
    elif submitted:
        with ui.user_errors(stop=False):
            result = import_uploaded(store, name.strip(), Upload(uploaded.name, uploaded.getvalue()),
                                     Upload(corpus.name, corpus.getvalue()) if corpus else None)
            data.benchmark_stats.clear()
            ui.flash(f"{result.benchmark}: {result.examples} examples, {result.documents} documents "
                     f"({'imported' if result.added else 'already imported, unchanged'}).")
            st.rerun()

with ui.user_errors():
    stats = data.benchmark_stats(store)
    ui.require_benchmarks(stats)
    hosts = data.hosts_with_outcomes(store)
    coverage = data.coverage(store)

complete = {host: summary["queries_complete"] for host, summary in coverage.items()}
first_contact(hosts, {config.name: config for config in data.host_configs(store)}, list(stats), complete)
st.caption(f"Store: `{store.path}`")

columns = st.columns([0.9, 0.9, 1.2, 1.6])  # every label whole at 1,024 px
columns[0].metric("Benchmarks", len(stats))
columns[1].metric("Examples", f"{sum(row['examples'] for row in stats.values()):,}")
columns[2].metric("Hosts with outcomes", len(hosts))
columns[3].metric("Complete queries (all hosts)", f"{sum(complete.values()):,}",
                  help="Summed over the hosts (a question counts once per host): "
                       + ", ".join(f"{host} {count:,}" for host, count in complete.items()) + ". " + TERMS[
                           "complete query"])

# one table under the other: side by side at 1,280 px each cut its last column
st.subheader("Benchmarks and splits")
st.dataframe(ui.benchmarks_frame(stats), hide_index=True)
st.subheader("Coverage")
st.caption("complete: queries whose every arm of the host's alphabet has an outcome without error; probes: "
           "those of them with a Full router's four probes too (a Full router is scored on those, so it can see "
           "a few queries fewer than a Lite one).")
st.dataframe(coverage_frame(coverage).rename(columns={"complete queries": "complete", "with probes": "probes"}),
             hide_index=True)

st.subheader("Evidence by retriever")
evidence = evidence_frame(store.evidence_results())
if evidence.empty:
    st.caption("No evidence measured yet: `forge evidence compare --benchmark hotpotqa` measures each retriever's "
               "gold recall, prompt tokens and latency before any host call (docs/retrievers.md).")
else:
    st.caption("Stored `forge evidence compare` runs, no host call: per benchmark and retriever, the share of each "
               "query's gold evidence in its top k passages with the paired interval of recall minus the run's first "
               "retriever's (above), Summary's and Raw's prompt tokens (means with 95% bootstrap intervals over "
               "queries) and retrieval latency one query at a time (below).")
    # two tables: all eleven columns side by side are wider than the page at 1,280 px (the last ones were cut)
    st.dataframe(evidence[list(EVIDENCE_RECALL_COLUMNS)], hide_index=True)
    st.dataframe(evidence[list(EVIDENCE_COST_COLUMNS)], hide_index=True)

if not hosts:
    st.info(ui.NO_OUTCOMES, icon=":material/hourglass_empty:")
    st.stop()

st.header("Arms and the oracle")
host_column, retriever_column, arms_column, split_column = st.columns([2, 1, 1, 1])  # the host's name whole
host = host_column.selectbox("Host", hosts)
retriever = ui.retriever_select(retriever_column, store, [host], "overview")
default_size = data.alphabet_size(store, host)
n_arms = arms_column.selectbox("Alphabet", ALPHABET_SIZES, index=ALPHABET_SIZES.index(default_size),
                               format_func=lambda k: f"{k} arms", help=TERMS["alphabet"])
split = split_column.selectbox("Split", ["all", "train", "dev", "test"])

with ui.user_errors():
    table = data.outcome_table(store, host, n_arms, retriever)
shown = table if split == "all" else table.split(split)
if not len(shown):
    st.info(f"No complete {split} queries on {host} with {n_arms} arms yet: `forge enumerate --host {host} --split "
            f"{split} --arms {n_arms}{retriever_option(retriever)}`.")
    st.stop()

scope = "" if split == "all" else f"{split} "
st.caption(f"{len(shown):,} complete {scope}queries of {host} (its Coverage count"
           f"{'' if split == 'all' else ', this split only'}): every arm and the oracle are scored on the same ones. "
           f"Oracle: per query, the arm of highest utility U = F1 − {DEFAULT_LAMBDA_IN} c_in − {DEFAULT_LAMBDA_OUT} "
           "c_out, costs normalized by the maxima over the host's train queries (descriptive only: it sees the "
           "scores).")
try:
    normalizer = table.fit_normalizer()
except ValueError as error:
    normalizer = None
    st.info(f"No oracle yet: {error}.", icon=":material/info:")
summary = policy_summary(shown, normalizer)

benchmark = st.segmented_control("Benchmark", [MACRO, *sorted(set(shown.benchmarks))], default=MACRO)
st.vega_lite_chart(*overview_charts.cost_quality(summary, benchmark or MACRO))

f1_column, tokens_column = st.columns(2)
f1_column.subheader("F1 per arm")
f1_column.vega_lite_chart(*overview_charts.per_arm(summary, "f1", "mean F1"))
tokens_column.subheader("Token cost per arm")
tokens_column.vega_lite_chart(*overview_charts.per_arm(summary, "tokens", overview_charts.TOKENS_LABEL))
with st.expander("Table"):
    st.dataframe(summary, hide_index=True)
if normalizer is not None:
    st.subheader("Each arm against the oracle")
    st.caption("Regret: the mean of the query's best utility minus the arm's (0 is the oracle; macro over "
               "benchmarks, same weights as above). Oracle agreement: the share of queries where the arm is one "
               "of the tied best arms, so a query where every arm scores F1 0 agrees with every arm and decides "
               "nothing: compare policies by regret.")
    st.dataframe(oracle_gap_summary(shown, normalizer), hide_index=True,
                 column_config={"regret": st.column_config.NumberColumn(format="%.3f"),
                                "oracle_agreement": st.column_config.ProgressColumn(
                                    "oracle agreement", format="percent", min_value=0, max_value=1)})

st.subheader("Reasoning tokens per arm")
st.caption(f"Over every answered outcome of the host under retriever '{retriever}'. Reasoning tokens are part of "
           "the output tokens and are charged as output; 'counted by' says whether the provider reported them "
           "(usage), the host's own tokenizer counted the returned reasoning text (tokenizer), they were estimated "
           "from that text (estimated), or none came back.")
reasoning = data.reasoning_summary(store, host, retriever)
st.vega_lite_chart(*overview_charts.reasoning_per_arm(reasoning))
if not reasoning.empty and not reasoning["tokens_reasoning"].fillna(0).any():
    st.caption(f"No arm of {host} returned reasoning tokens (it is not a thinking host): every output token is the "
               "visible answer.")
with st.expander("Reasoning table"):
    st.dataframe(reasoning, hide_index=True, column_config={
        "tokens_out": st.column_config.NumberColumn("output tokens", format="%.1f"),
        "tokens_reasoning": st.column_config.NumberColumn("reasoning tokens", format="%.1f"),
        "reasoning_share": st.column_config.NumberColumn("reasoning share", format="percent"),
        "counted_by": "counted by"})

st.subheader("Gold evidence in the prompt")
if not waiting_for_views(view_name("gold_recall", host)):  # else its progress is shown in place
    recall = data.gold_recall(store, host, n_arms, split, retriever)
    if recall.empty:
        st.caption("No benchmark of these queries annotates its gold evidence.")
    else:
        missing = sorted(set(shown.benchmarks) - set(recall.columns))
        st.caption("Share of each query's annotated supporting facts, paragraphs or evidence found in the prompt of "
                   "each support form (`gold_recall`; Direct prompts hold none)."
                   + (f" No column for {', '.join(missing)}: it annotates no gold evidence." if missing else ""))
        st.dataframe(recall, hide_index=True, column_config={
            name: st.column_config.NumberColumn(format="%.3f") for name in recall.columns if name != "support"})

st.subheader("Answers supported by their evidence")
support, evaluator = data.support_rates(store, host, n_arms, split, retriever)
if support.empty:
    st.caption(f"No support verdicts for these queries yet: run `forge rewards support --host {host}"
               f"{retriever_option(retriever)}`.")
else:
    st.caption(f"Per arm, the share of its answers that the evidence in its prompt supports (`support_rate`) or "
               f"contradicts (`unsupported_rate`; Direct answers against the retrieved passages), over the queries "
               f"with a verdict (`support_coverage`). Evaluator: {evaluator}.")
    st.dataframe(support, hide_index=True, column_config={
        name: st.column_config.NumberColumn(format="%.3f")
        for name in ("support_rate", "unsupported_rate", "support_coverage")})
