"""Live query: one question on a host under one arm, with its evidence, answer, tokens and latency,
and what Always-Raw would have cost for the same question."""

import streamlit as st

from app import data, ui
from app.router_view import ARM_KEY, router_section
from forge_core.arms import alphabet, parse_arm
from forge_core.routing.live import ask_live

ANSWER_KEY = "live_answer"

st.title("Live query")
store = data.store()
with ui.user_errors():
    stats = data.benchmark_stats(store)
    ui.require_benchmarks(stats)
    configs = {config.name: config for config in data.host_configs(store)}

host_column, benchmark_column, arm_column = st.columns(3)
host = host_column.selectbox("Host", list(configs))
benchmark = benchmark_column.selectbox("Benchmark (corpus to retrieve from)", list(stats))
arms = [arm.name for arm in alphabet(data.alphabet_size(store, host))]
st.session_state.setdefault(ARM_KEY, "summary:no_think")
arm = arm_column.selectbox("Arm", arms, key=ARM_KEY)

example = None
if st.radio("Question", ["Type one", "Pick one from the benchmark"], horizontal=True) == "Type one":
    question = st.text_area("Your question", placeholder="e.g. Who directed the film that won Best Picture in 1998?")
else:
    split_column, example_column = st.columns([1, 3])
    split = split_column.selectbox("Split", ["test", "dev", "train"])
    with ui.user_errors():
        examples = data.split_examples(store, benchmark, split)
    example = example_column.selectbox("Example", examples, format_func=lambda e: e.question)
    question = example.question if example else ""
asked = st.button("Ask", type="primary", icon=":material/send:")

if asked and not question.strip():
    st.warning("Type a question first.")
elif asked:
    with ui.user_errors(stop=False), st.spinner(f"Asking {host}…"):
        served = data.served_host(configs[host])
        st.session_state[ANSWER_KEY] = ask_live(store, served, data.retriever(store, benchmark), question.strip(),
                                                benchmark, parse_arm(arm), example)

live = st.session_state.get(ANSWER_KEY)
if live is not None:
    st.header(f"Answer ({live.answer.arm})")
    st.success(live.answer.answer or "(empty answer)")
    if live.golds:
        st.caption(f"Scored answer: {live.answer.extracted!r}; gold: {' | '.join(live.golds)}")
    columns = st.columns(5)
    columns[0].metric("Tokens in", f"{live.answer.tokens_in:,}")
    columns[1].metric("Tokens out", f"{live.answer.tokens_out:,}")
    columns[2].metric("Latency", f"{live.answer.latency_ms:,.0f} ms")
    columns[3].metric("F1", "–" if live.f1 is None else f"{live.f1:.2f}")
    columns[4].metric("Always-Raw would cost", f"{live.raw.tokens:,} tokens",
                      delta=f"{live.tokens_vs_raw:+,} tokens vs Raw", delta_color="inverse",
                      help=f"Tokens in + out of raw:no_think for this question ({live.raw.source}).")
    with st.expander("Evidence"):
        st.text(live.answer.support_text or "(none: the Direct arm gets the question only)")
        st.dataframe(ui.evidence_frame(live.evidence), hide_index=True)

router_section(store, question, benchmark, configs[host], arms)
