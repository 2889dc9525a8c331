"""Live query: one click routes a question with a trained router, answers it with the chosen arm
on a host, and sets it beside what Always-Raw answers and costs (a demonstration: an extra call
that routing does not need); a session history keeps the running totals."""

import streamlit as st

from app import data, demo_view, live_view, routers, ui, weights
from forge_core.arms import SUMMARY_NO_THINK, alphabet
from forge_core.evidence.retrievers import retriever_hash
from forge_core.hosts.base import HostError
from forge_core.reports.checkpoint_views import checkpoint_names
from forge_core.rewards.live_support import judge_live_support_on
from forge_core.routing.ask import AskRequest, run_ask
from forge_core.routing.checkpoints import conditioning_of, other_host_warning
from forge_core.routing.guard import GUARD_FALLBACKS
from forge_core.routing.traces import live_trace
from forge_core.routing.utility import CostWeights

HISTORY_KEY = "live_history"  # the session's RoutedAnswer records, oldest first
ASKED_KEY = "live_answered_inputs"  # the inputs of the answer on screen (none after a failed ask)
SUPPORT_KEY = "live_support"  # the evaluator's verdict on the answer on screen (a LiveSupport, or why none)
NO_EVALUATOR = "none"
GUARD_FALLBACK_KEY = "live_guard_fallback"  # the guard shown: its fallback the best fixed arm or the mix
BENCHMARK_KEY = "live_benchmark"  # the corpus select: follows a picked demo question
TYPE_ONE, PICK_ONE = "Type one", demo_view.PICK_MODE
ROUTER_CHOICE = "the router's choice"
NO_ROUTER = ("No trained router yet: run `forge train --stage 1` or use the Train page. Until then, pick an arm "
             "by hand under Override.")

st.title("Live query")
st.caption("Type or pick a question and press one button: the router picks the arm, the host answers with it, "
           "and Always-Raw (raw:no_think) answers beside it, for comparison: an extra call that routing does not "
           "need (`forge serve` never makes it).")
store = data.store()
with ui.user_errors():
    stats = data.benchmark_stats(store)
    ui.require_benchmarks(stats)
    configs = {config.name: config for config in data.host_configs(store)}
    checkpoints = data.checkpoints(store)

demo_example = demo_view.picked_example(store)
if demo_view.QUESTION_MODE_KEY not in st.session_state:
    st.session_state[demo_view.QUESTION_MODE_KEY] = PICK_ONE if demo_example else TYPE_ONE
demo_shown = demo_example is not None and st.session_state[demo_view.QUESTION_MODE_KEY] == PICK_ONE
if demo_shown:  # the question is answered from its own benchmark's corpus: the select says so
    st.session_state[BENCHMARK_KEY] = demo_example.benchmark
host_column, benchmark_column, retriever_column = st.columns([1, 1.2, 1])
router_column = st.container()  # a row of its own: the router's name whole at 1,024 px
host = host_column.selectbox("Host", list(configs))
benchmark = benchmark_column.selectbox(
    "Benchmark (corpus to retrieve from)", list(stats), key=BENCHMARK_KEY, disabled=demo_shown,
    help="The demo question's own benchmark while one is picked (Clear it to choose)." if demo_shown else None)
own_first = checkpoints.sort_values("host", key=lambda hosts: hosts != host, kind="stable")
checkpoint_id = routers.picker(
    router_column, store, host, own_first, "live",
    help="Opens on the host's default router (marked on the Train page, else its newest cost-conditioned Lite "
         "router, which decides at the weights below); your pick is kept on every page. A Full router first runs "
         "four probes on the host.")
if checkpoint_id is None:
    router_column.info(NO_ROUTER, icon=":material/route:")
retriever_name = ui.retriever_select(retriever_column, store, [host], "live", needs_outcomes=False)
record = data.checkpoint_record(store, checkpoint_id) if checkpoint_id else None
if record is not None and (warning := other_host_warning(checkpoint_id, record["host"], host)):
    st.warning(warning, icon=":material/swap_horiz:")
router_is_conditioned = record is not None and conditioning_of(record["lineage"]) is not None
cost_weights = weights.sliders("live")
st.caption(f"The router decides at these cost weights. {weights.CAPTION}" if router_is_conditioned else
           "This router was trained at one weight pair and ignores the sliders: pick a cost-conditioned router "
           "(`forge train --conditioned`) to route at them.")
if router_is_conditioned:
    demo_view.demo_list(store, record["host"], checkpoint_id)

example = None
picked = st.radio("Question", [TYPE_ONE, PICK_ONE], horizontal=True, key=demo_view.QUESTION_MODE_KEY) != TYPE_ONE
if picked and demo_example is not None:
    example = demo_example
    benchmark, question = example.benchmark, example.question
    demo_column, clear_column = st.columns([5, 1])
    demo_column.info(f"Demo question ({benchmark}): {question}", icon=":material/bolt:")
    clear_column.button("Clear", icon=":material/close:", on_click=demo_view.clear_pick, args=(TYPE_ONE,))
elif picked:
    split_column, example_column = st.columns([1, 3])
    split = split_column.selectbox("Split", ["test", "dev", "train"])
    with ui.user_errors():
        examples = data.split_examples(store, benchmark, split)
    example = example_column.selectbox("Example", examples, format_func=lambda e: e.question)
    question = example.question if example else ""
else:
    question = st.text_area("Your question", placeholder="e.g. Who directed the film that won Best Picture in 1998?")
compare_raw = st.toggle("Answer with Always-Raw too (raw:no_think), side by side: an extra call that routing "
                        "does not need", value=picked, key=f"compare_raw_{picked}",
                        help="On by default for benchmark questions. Off: Always-Raw's cost comes from its stored "
                             "outcome when there is one, else from the same extra call.")
evaluator_host = st.selectbox(
    "Support evaluator", [NO_EVALUATOR, *configs],
    help="A host that checks whether the evidence in the answer's prompt supports it, as `forge rewards support` "
         "does for stored answers, and rates whether the answer is correct, as `forge rewards judge` does (two extra "
         "calls); the verdict is kept with the question on the Queries page, the rating shown beside the F1 "
         "verdict. none: no check.")
arms = [arm.name for arm in alphabet(data.alphabet_size(store, host))]
with st.expander("Override: answer with a hand-picked arm", expanded=checkpoint_id is None):
    choices = arms if checkpoint_id is None else [ROUTER_CHOICE, *arms]
    override = st.selectbox("Arm", choices, index=choices.index(SUMMARY_NO_THINK) if checkpoint_id is None else 0)
asked = st.button("Route and answer", type="primary", icon=":material/send:")

inputs_now = {"question": question.strip(), "benchmark": benchmark, "host": host, "router": override
              if override != ROUTER_CHOICE else checkpoint_id, "weights": cost_weights, "retriever": retriever_name}
if asked:
    st.session_state.pop(ASKED_KEY, None)  # a failed ask leaves no earlier answer on screen
    st.session_state.pop(SUPPORT_KEY, None)
    with ui.user_errors(stop=False):
        by_hand = override != ROUTER_CHOICE
        request = AskRequest(question=question, benchmark=benchmark, host_name=host,
                             arm=override if by_hand else None, checkpoint_id=None if by_hand else checkpoint_id,
                             example_id=example.example_id if example else None,
                             always_raw="answer" if compare_raw else "cost", weights=cost_weights,
                             retriever=retriever_name)
        inputs = request.check(store)
        served = data.served_host(configs[host])
        checkpoint = None if by_hand else data.loaded_checkpoint(store, checkpoint_id)
        retriever = data.configured_retriever(store, benchmark, retriever_hash(inputs.retriever_config))
        data.embedder()
        with st.spinner(f"Routing and answering on {host}…"):
            result = run_ask(store, request, inputs=inputs, host_config=served, retriever=retriever,
                             checkpoint=checkpoint)
        st.session_state.setdefault(HISTORY_KEY, []).append(result)
        st.session_state[ASKED_KEY] = inputs_now
        support = None
        if evaluator_host != NO_EVALUATOR:
            try:
                with st.spinner(f"Checking the answer's support with {evaluator_host}…"):
                    support = judge_live_support_on(result, data.served_host(configs[evaluator_host]))
                st.session_state[SUPPORT_KEY] = support
            except HostError as error:
                st.session_state[SUPPORT_KEY] = f"not checked: {evaluator_host} failed ({error})"
        verdict, evaluator = (support.verdict, support.evaluator) if support else (None, None)
        store.write_live_trace(live_trace(result, inputs.retriever_config, example.example_id if example else None,
                                          verdict, evaluator))

history = st.session_state.get(HISTORY_KEY, [])
answered = st.session_state.get(ASKED_KEY)
if answered is not None:
    if (changed := live_view.changed_inputs(answered, inputs_now)):
        st.warning(f"This answer is for other inputs ({changed} changed since): press Route and answer for the "
                   "current ones.", icon=":material/history:")
    last = history[-1]
    held_out = (None if not last.probabilities
                else data.reliability(store, data.store_version(store), last.checkpoint_id,
                                      None if last.weights is None else CostWeights(*last.weights)))
    live_view.routed_answer(last, held_out, checkpoint_names(checkpoints))
    if last.probabilities:  # a router decided: its guard's verdict on this query, under the fallback chosen here
        fallback = st.radio("Guard fallback", GUARD_FALLBACKS, format_func=live_view.GUARD_FALLBACK_NAMES.get,
                            horizontal=True, key=GUARD_FALLBACK_KEY,
                            help="What the guarded router answers with where the router's margin is below the "
                                 "threshold: the best fixed arm of the router's train and dev queries, or the "
                                 "cost-matched mix of fixed arms at the router's own tokens there, each question "
                                 "to the arm the mix draws for it (`forge serve --guard 0.2 --guard-fallback`).")
        live_view.guard_verdict(data.checkpoint_guard(store, data.store_version(store), last.checkpoint_id,
                                                      None if last.weights is None else CostWeights(*last.weights),
                                                      fallback), last)
    live_view.support_verdict(st.session_state.get(SUPPORT_KEY))
if history:
    live_view.session_history(history, checkpoint_names(checkpoints))
