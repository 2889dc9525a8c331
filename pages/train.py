"""Train: start Stage 1 (KL distillation) and Stage 2 (GRPO family) runs as background jobs, follow
their curves live, and inspect and compare the checkpoints they leave."""

import dataclasses

import streamlit as st

from app import data, train_charts, ui, weights
from app.train_view import default_router_mark, runs_panel, start_judging, start_training
from forge_core.arms import ALPHABET_SIZES
from forge_core.enumeration.planning import SPLIT_CHOICES
from forge_core.evidence.retrievers import retriever_option, retriever_phrase
from forge_core.jobs import stage2_log_every
from forge_core.reports.checkpoint_views import (
    checkpoint_label,
    checkpoint_names,
    checkpoint_table,
    compare_curves,
    default_comparison,
    lineage_diff,
    metrics_comparison,
)
from forge_core.reports.tables import reward_audit_table
from forge_core.rewards.judge_request import JudgeRequest
from forge_core.rewards.sources import GOLD, PROXY_SOURCES, REWARD_SOURCES
from forge_core.routing.utility import DEFAULT_LAMBDA_IN, DEFAULT_LAMBDA_OUT
from forge_core.training.request import VARIANTS, TrainRequest
from forge_core.training.settings import LOSS_TYPES, Stage1Config, Stage2Config

VARIANT_LABELS = {"full": "Full (host probes)", "lite": "Lite (no probes)", "bge": "BGE+BM25 (baseline)"}
NEWEST_PARENT = "newest matching Stage-1 checkpoint"
DEFAULTS_1, DEFAULTS_2 = Stage1Config(), Stage2Config()


def show_reward_audit() -> None:
    """How far a proxy reward stands in for gold F1 at the section's weights, and a Lite router cross-fitted on
    each on demand (`forge rewards audit`)."""
    st.caption(f"How far a proxy reward can stand in for gold F1, on the queries that have both{under}, at the weights "
               f"below (shared with the Pareto and Live query pages). As `forge rewards audit --reward NAME{option}`.")
    proxy = st.segmented_control("Proxy", PROXY_SOURCES, default="consensus", key="audit_proxy") or "consensus"
    audit_weights = weights.sliders("rewards")
    with ui.user_errors(stop=False):
        audit = data.reward_audit(store, data.store_version(store), host, proxy, n_arms, audit_weights,
                                  retriever=retriever)
        st.dataframe(reward_audit_table(audit), hide_index=True)
        match_labels = {"best_arm_match": "by F1",
                        "best_utility_arm_match": (f"by utility at λ {audit_weights.lambda_in:.2f}/"
                                                   f"{audit_weights.lambda_out:.2f}")}
        for key, label in match_labels.items():
            match = audit[key]
            st.markdown(f"Proxy-best arm is a gold-best arm {label}: **{match['share']:.3f}** "
                        f"(95% interval {match['ci'][0]:.3f} to {match['ci'][1]:.3f}) on {audit['queries']} queries")
        crossfit_key = f"audit_crossfit_{host}_{proxy}_{retriever}"
        if st.button(f"Cross-fit a Lite router on gold and on {proxy} (5 folds, about a minute)", key="audit_crossfit"):
            st.session_state[crossfit_key] = True
        if st.session_state.get(crossfit_key):
            fitted = data.reward_audit(store, data.store_version(store), host, proxy, n_arms, audit_weights,
                                       routers=("forge_lite",), retriever=retriever)
            lite = fitted["routers"]["forge_lite"]
            low, high = lite["ci_regret_vs_gold"]
            st.markdown(f"Lite router trained on {proxy}: gold utility {lite['proxy_trained']['macro_utility']:.4f} "
                        f"against {lite['gold_trained']['macro_utility']:.4f} trained on gold, `regret_vs_gold` "
                        f"**{lite['regret_vs_gold']:+.4f}** (95% interval {low:+.4f} to {high:+.4f}).")
            (st.success if fitted["good_enough"] else st.error)(f"{proxy.capitalize()} is {fitted['verdict']}.")


def show_judging() -> None:
    """A judging job's form (judge rewards or support verdicts) and the recent judging jobs."""
    with st.form("judge", enter_to_submit=False):  # a judging job starts only from its button
        st.markdown(f"**Judge rewards and support verdicts**: a judge host rates {host}'s stored answers{under} (a "
                    f"resumable background job, as `forge rewards judge{option}` or `forge rewards support{option}`)")
        judge_kind = st.radio("The judge host says", ("judge", "support"), horizontal=True, format_func={
            "judge": "whether each answer is correct (judge reward)",
            "support": "whether the evidence in its prompt supports it (support verdict, for support_rate)"}.get)
        columns = st.columns(3)
        judge_host = columns[0].selectbox("Judge host", [configured.name for configured in data.host_configs(store)])
        judge_split = columns[1].selectbox("Queries of split", SPLIT_CHOICES, index=SPLIT_CHOICES.index("all"))
        judge_limit = columns[2].number_input("At most (queries; 0: all)", 0, 1_000_000, 50)
        if st.form_submit_button("Start judging", icon=":material/gavel:"):
            judge_request = JudgeRequest(host=host, judge_host=judge_host, split=judge_split, n_arms=n_arms,
                                         limit=judge_limit or None, kind=judge_kind, retriever=retriever)
            with ui.user_errors(stop=False):
                judge_request.check(store)
                if start_judging(store, judge_request):
                    st.success(f"Judging started ({judge_kind}): {judge_host} rates {host}'s answers.")
                else:
                    st.info(f"Nothing left to rate: {judge_host} has rated every chosen answer of {host} "
                            f"({judge_kind}).")
    judge_jobs = data.recent_jobs(store, "judge")
    if judge_jobs:
        st.dataframe(ui.jobs_frame(judge_jobs).rename(columns={"done": "judged"}), hide_index=True)


def show_comparison() -> None:
    """Two checkpoints side by side: their lineage, dev metrics and training curves."""
    labels = {row["checkpoint_id"]: checkpoint_label(row) for row in host_checkpoints.to_dict("records")}
    ids = list(labels)
    default_a, default_b = default_comparison(host_checkpoints)
    # one above the other: side by side, each label is clipped at 1,024 px
    a_id = st.selectbox("Checkpoint A", ids, index=ids.index(default_a), format_func=labels.get)
    b_id = st.selectbox("Checkpoint B", ids, index=ids.index(default_b), format_func=labels.get)
    with ui.user_errors():
        a_record, b_record = data.checkpoint_record(store, a_id), data.checkpoint_record(store, b_id)
    lineage_column, metrics_column = st.columns([3, 2])
    with lineage_column:
        st.markdown("**Lineage**")
        only_different = st.toggle("Only the differences", value=True)
        st.dataframe(lineage_diff(a_record["lineage"], b_record["lineage"], only_different), hide_index=True,
                     column_config={"same": st.column_config.CheckboxColumn()})
    with metrics_column:
        st.markdown("**Dev metrics**")
        st.dataframe(metrics_comparison(a_record["metrics"], b_record["metrics"]), hide_index=True,
                     column_config={name: st.column_config.NumberColumn(format="%.4g") for name in ("a", "b", "b - a")})
    names = checkpoint_names(host_checkpoints)
    curves = compare_curves({f"A: {names[a_id]}": a_record["training_log"],
                             f"B: {names[b_id]}": b_record["training_log"]})
    if len(curves):
        st.markdown("**Training curves**")
        st.vega_lite_chart(*train_charts.training_curves(curves, overlay=True), key="compare-curves")


st.title("Train")
st.caption("A run is its own `forge train` process: its curves fill in below while it trains, and its "
           "checkpoint (weights, lineage and dev metrics) lands in the store when it ends.")
store = data.store()
ui.show_flash()
hosts = ui.hosts_with_outcomes_or_stop(store)

st.header("New run")
# two rows of three: five widgets in one clip the host's and the features' names at 1,024 px
host_column, retriever_column, variant_column = st.columns(3)
arms_column, stage_column, _ = st.columns(3)
host = host_column.selectbox("Host", hosts)
retriever = ui.retriever_select(retriever_column, store, [host], "train")
under = retriever_phrase(retriever)
option = retriever_option(retriever)
variant = variant_column.selectbox("Features", VARIANTS, format_func=VARIANT_LABELS.get,
                                   help="Full reads four host probes per query; Lite needs one host call.")
default_size = data.alphabet_size(store, host)
n_arms = arms_column.selectbox("Alphabet", ALPHABET_SIZES, index=ALPHABET_SIZES.index(default_size),
                               format_func=lambda k: f"{k} arms")
stage = stage_column.segmented_control("Stage", [1, 2], default=1, format_func=lambda s: f"Stage {s}") or 1
host_checkpoints = data.host_checkpoints(store, host, retriever)  # only this evidence's routers
parents = data.host_checkpoints(store, host, retriever, n_arms=n_arms, variant=variant, stage=1)

# Enter in a field commits it, nothing more: a run starts only from its button
with st.form("run", enter_to_submit=False):
    st.markdown("**Objective** U = F1 − λ_in c_in − λ_out c_out, target softmax(U / τ)")
    columns = st.columns(4)
    lambda_in = columns[0].number_input("lambda_in", 0.0, weights.WEIGHT_MAX, DEFAULT_LAMBDA_IN, 0.01, format="%.2f",
                                        help="Weight of the normalized input-token cost.")
    lambda_out = columns[1].number_input("lambda_out", 0.0, weights.WEIGHT_MAX, DEFAULT_LAMBDA_OUT, 0.01, format="%.2f",
                                         help="Weight of the normalized output-token cost.")
    tau = columns[2].number_input("tau", 0.01, 10.0, DEFAULTS_1.tau, 0.1, help="Boltzmann temperature.")
    seed = columns[3].number_input("Seed", 0, 10_000, 0, help="Seeds dropout, shuffling and sampling.")
    reward = st.segmented_control(
        "Reward", REWARD_SOURCES, default=GOLD,
        help="What F1 stands for in U: gold F1, the judge's ratings (`forge rewards judge`) or the consensus of "
             "the query's answers. Audit a proxy in Rewards below before trusting it.") or GOLD
    benchmarks = st.multiselect("Benchmarks", data.host_benchmarks(store, host), placeholder="every benchmark",
                                help="Train on these benchmarks' queries only (empty: every benchmark of the host).")
    if stage == 1:
        st.markdown("**Stage 1**: KL distillation of the Boltzmann target (AdamW, early stop on dev)")
        columns = st.columns(4)
        target = columns[0].selectbox("Target", ["soft", "hard"],
                                      help="soft: the Boltzmann target; hard: the one-hot oracle (control).")
        warm_choices = sorted({3, n_arms})
        recommended = data.recommended_recipe(store, data.store_version(store), host, n_arms, retriever)
        warm_arms = columns[1].selectbox(
            "Warm-start arms", warm_choices,
            index=warm_choices.index(recommended.warm_start_arms) if recommended.warm_start_arms in warm_choices else 0,
            help="3: the support head on the NoThink arms (the paper's); all: the whole alphabet. Default: the "
                 f"recommended recipe's, `{recommended.recipe_id}` ({recommended.label}; `forge recipes`), as "
                 "`forge train` defaults to.")
        max_epochs = columns[2].number_input("Max epochs", 1, 500, DEFAULTS_1.max_epochs)
        patience = columns[3].number_input("Patience", 1, 100, DEFAULTS_1.patience,
                                           help="Epochs without a better dev loss before stopping.")
    else:
        st.markdown("**Stage 2**: group-relative policy optimization over the full alphabet from a Stage-1 policy")
        columns = st.columns(3)
        algorithm = columns[0].selectbox("Algorithm", LOSS_TYPES)
        steps = columns[1].number_input("Steps", 1, 100_000, DEFAULTS_2.steps, help="Rollouts (paper: 5,000).")
        rewards = columns[2].selectbox("Rewards", ["table", "live"],
                                       help="table: replay the stored enumeration; live: ask the host for "
                                            "outcomes not stored yet.")
        columns = st.columns(3)
        beta = columns[0].number_input("beta", 0.0, 10.0, DEFAULTS_2.beta, 0.01, format="%.3f",
                                       help="Initial weight of the KL anchor to the Stage-1 policy (adapted).")
        entropy_coef = columns[1].number_input("Entropy coefficient", 0.0, 1.0, DEFAULTS_2.entropy_coef, 0.005,
                                               format="%.3f")
        parent_labels = {NEWEST_PARENT: NEWEST_PARENT} | {
            row["checkpoint_id"]: checkpoint_label(row) for row in parents.to_dict("records")}
        # a row of its own: a checkpoint's label whole at 1,024 px
        parent = st.selectbox("Parent checkpoint", list(parent_labels), format_func=parent_labels.get)
    submitted = st.form_submit_button("Start training", type="primary", icon=":material/play_arrow:")

if submitted:
    with ui.user_errors(stop=False):  # a request the settings refuse (e.g. judge rewards under dense) is one line
        if stage == 1:
            request = TrainRequest(host=host, variant=variant, n_arms=n_arms, stage=1, lambda_in=lambda_in,
                                   lambda_out=lambda_out, reward=reward, stage1=Stage1Config(
                                       tau=tau, target=target, warm_start_arms=warm_arms, max_epochs=max_epochs,
                                       patience=patience, seed=seed), retriever=retriever)
        else:
            request = TrainRequest(host=host, variant=variant, n_arms=n_arms, stage=2, lambda_in=lambda_in,
                                   lambda_out=lambda_out, rewards=rewards, stage2_reward=reward,
                                   parent=None if parent == NEWEST_PARENT else parent,
                                   stage1=Stage1Config(tau=tau), stage2=Stage2Config(
                                       steps=steps, loss_type=algorithm, beta=beta, entropy_coef=entropy_coef,
                                       seed=seed, log_every=stage2_log_every(steps)), retriever=retriever)
        request = dataclasses.replace(request, benchmarks=tuple(benchmarks) or None)
        request.check(store)
        start_training(store, request)
        st.success(f"Training started: Stage {stage}, {variant}, {n_arms} arms on {host}{under}.")

st.header("Runs")
runs_panel(store, len(host_checkpoints))

st.header("Rewards")
with (rewards := st.expander("A proxy reward against gold, and judging", key="train-rewards", on_change="rerun")):
    if rewards.open:  # drawn only while open: a closed section costs the page nothing
        show_reward_audit()
        show_judging()

st.header("Checkpoints")
if host_checkpoints.empty:
    st.info(f"No router checkpoints for host '{host}'{under} yet: start a run above, or `forge train --stage 1 "
            f"--host {host}{option}`.", icon=":material/model_training:")
    st.stop()
marked = data.marked_default_router(store, host)
st.dataframe(checkpoint_table(host_checkpoints, marked), hide_index=True,
             column_config={"created": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm")})
default_router_mark(store, host, host_checkpoints, marked)

with (comparison := st.expander("Compare two checkpoints", key="train-compare", on_change="rerun")):
    if comparison.open:
        show_comparison()
