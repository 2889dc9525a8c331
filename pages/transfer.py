"""Transfer: a router trained on one host routing another host's queries, zero-shot and after a
target-side calibration on K labelled target queries (`forge eval transfer`)."""

import pandas as pd
import streamlit as st

from app import data, gain_charts, ui, weights
from app.pareto_chart import pareto_chart
from app.views_progress import waiting_for_views
from forge_core.errors import MissingStep
from forge_core.evaluation.setup import prepare_evaluation
from forge_core.evaluation.transfer_request import TransferRequest
from forge_core.evidence.retrievers import retriever_option
from forge_core.precompute.view_cache import TRANSFER_STEP, TRANSFER_VIEW_SIZES
from forge_core.reports.tables import arm_mix_frame, calibration_frame, transfer_frame

CALIBRATION_SIZES = (25, 50, 100, 200)


def _listed(stored: list) -> str:
    """e.g. "λ 0.1 / 0.2 and 0.6 / 0.6"."""
    pairs = [f"{w.lambda_in:g} / {w.lambda_out:g}" for w in stored]
    return "λ " + (", ".join(pairs[:-1]) + " and " + pairs[-1] if len(pairs) > 1 else pairs[0])


def show_policies(frame: pd.DataFrame, accounting: str) -> None:
    """Every policy's cost, F1, utility and gain over the target's own Lite router."""
    st.dataframe(frame, hide_index=True, column_config={
        name: st.column_config.NumberColumn(format="%.4f")
        for name in ("cost_k", "macro_f1", "macro_utility", "gain", "gain_low", "gain_high")})
    st.caption(f"gain: utility minus the target's own Lite router's, with its paired 95% interval; cost in k tokens "
               f"a query under {accounting} accounting.")


st.title("Transfer")
st.caption("Teams change models. Here the source host's routers (trained on its data only) route the target host's "
           "test queries from its stored outcomes: zero-shot (a Lite router needs no target call; a Full router's "
           "probes are the target's, and charged), and after refitting their last layers on K labelled target "
           "queries from its train or dev split (each K drawn 3 times). Beside them: the target's fixed arms, its "
           "oracle (a reference) and its own Lite router, trained on target data: the router a calibration tries "
           "to catch up with.")
store = data.store()
hosts = ui.hosts_with_outcomes_or_stop(store)
if len(hosts) < 2:
    st.info("Transfer needs outcomes on two hosts: enumerate a second one (e.g. `forge enumerate --host "
            "embedded-small --split test --probes`, then its train and dev splits).", icon=":material/swap_horiz:")
    st.stop()

# two rows: four selects in one clip the retriever's name at 1,024 px
source_column, target_column = st.columns(2)
retriever_column, split_column = st.columns(2)
# the first pair with routers at the default weights: the report the background views compute
opening_source, opening_target = data.transfer_opening(store, data.store_version(store)) or hosts[:2]
source = source_column.selectbox("Source host (whose routers)", hosts,
                                 index=hosts.index(opening_source) if opening_source in hosts else 0)
targets = [host for host in hosts if host != source]
target = target_column.selectbox("Target host (whose queries and costs)", targets,
                                 index=targets.index(opening_target) if opening_target in targets else 0)
retriever = ui.retriever_select(retriever_column, store, [source, target], "transfer")  # both hosts' evidence
calibration_split = split_column.selectbox("Calibrate on the target's", ["train", "dev"],
                                           help="Never the evaluated test split.")
sizes = st.multiselect("Calibration sizes K", CALIBRATION_SIZES, default=TRANSFER_VIEW_SIZES,
                       help="Each K refits the transferred routers' heads on K target queries, 3 draws each "
                            "(seconds per K).")
cost_weights = weights.sliders("transfer")
lambda_in, lambda_out = cost_weights.lambda_in, cost_weights.lambda_out

request = TransferRequest(source, target, weights=cost_weights, calibrate=tuple(sorted(sizes)),
                          calibration_split=calibration_split, store_calibrated=False, retriever=retriever)
with ui.user_errors():
    request.check(store)
if waiting_for_views(TRANSFER_STEP):
    st.stop()
try:
    with st.spinner(f"Routing {target}'s test queries with {source}'s routers…"):
        report = data.transfer(store, data.store_version(store), request)
except MissingStep as missing:
    stored = data.stored_transfer_weights(store, data.store_version(store), request)
    at = f"λ_in {lambda_in:g} / λ_out {lambda_out:g}"
    st.info(f"Transfer at {at} needs routers trained at exactly these weights on both hosts ({source}'s to route, "
            f"{target}'s own to compare with: Full, Lite and BGE+BM25, each on its own host's train and dev data), "
            "and they are not stored yet. "
            + (f"Both hosts have them at {_listed(stored)}: open one of those, or train them here (about a minute)."
               if stored else "Train them here (about a minute)."),
            icon=":material/model_training:")
    with st.expander("What is missing"):
        st.caption(str(missing))
    for column, stored_weights in zip(st.columns(max(len(stored), 1) + 1), stored):
        if column.button(f"Open at {stored_weights.lambda_in:g} / {stored_weights.lambda_out:g}",
                         icon=":material/history:", key=f"transfer_at_{stored_weights}"):
            weights.set_weights(stored_weights)
            st.rerun()
    if st.button("Train the missing routers", icon=":material/model_training:"):
        with ui.user_errors(), st.spinner("Training…"):
            for settings in request.evaluations():
                prepare_evaluation(store, settings)
        st.rerun()
    st.stop()

frame = transfer_frame(report)
policies = report["policies"]
zero_shot, own = policies["transfer_forge_lite"], policies["target_forge_lite"]
low, high = zero_shot["ci_utility_vs_target_router"]
verdict = ("worse than" if high < 0 else "better than" if low > 0 else "not distinguishable from")
st.markdown(f"**Zero-shot, {source}'s Lite router is {verdict} {target}'s own Lite router** at λ_in {lambda_in:g} / "
            f"λ_out {lambda_out:g}: utility {zero_shot['macro_utility']:+.4f} against {own['macro_utility']:+.4f}, "
            f"paired 95% interval of the difference [{low:+.4f}, {high:+.4f}] over {report['queries']} test queries.")
curves = calibration_frame(report)
lite_curve = curves[(curves["router"] == "transfer_forge_lite") & (curves["k"] > 0)]
caught_up = lite_curve[lite_curve["gain_high"] >= 0]
if len(lite_curve) and high >= 0:
    st.markdown("Zero-shot it is not decidably below the target's own router, so calibration has nothing to catch "
                "up here (its effect per K is in the chart below).")
elif len(lite_curve):
    st.markdown(f"Calibrated on **K = {int(caught_up['k'].iloc[0])}** target queries it is no longer below the "
                "target's own router (interval reaches zero)." if len(caught_up) else
                f"Up to K = {int(lite_curve['k'].max())} calibration queries it stays below the target's own router.")

columns = st.columns(4)
ui.name_metric(columns[0], "Target's best fixed arm", report["best_fixed_arm"])  # an arm name: wraps, never cut
# deltas this short, the comparison in their help: "utility vs best fixed" was cut at 1,024 px
over_best_fixed = "Macro F1 on the target; below, its utility minus the target's best fixed arm's."
best_fixed_utility = policies[report["best_fixed_policy"]]["macro_utility"]
columns[1].metric("Zero-shot Lite", f"{zero_shot['macro_f1']:.3f} F1",
                  f"{zero_shot['macro_utility'] - best_fixed_utility:+.4f} utility", help=over_best_fixed)
columns[2].metric("Target's own Lite", f"{own['macro_f1']:.3f} F1",
                  f"{own['macro_utility'] - best_fixed_utility:+.4f} utility", help=over_best_fixed)
columns[3].metric("Target oracle", f"{policies['oracle']['macro_f1']:.3f} F1", help="Sees every arm's score.")

st.subheader(f"{target}'s frontier with the transferred routers")
st.vega_lite_chart(*pareto_chart(frame.assign(name=frame["policy"]), False), key="transfer-pareto")
if len(curves):
    st.subheader("Utility against K, relative to the target's own router")
    st.vega_lite_chart(*gain_charts.calibration_gain(curves), key="transfer-calibration")
    st.caption(f"Store a calibrated router as a checkpoint of {target} (its source and K in its lineage): "
               f"`forge eval transfer --from {source} --to {target}{retriever_option(retriever)} --calibrate K`.")

st.subheader("Where the transferred allocation differs")
calibrated = [f"transfer_forge_lite_cal{k}" for k in request.calibrate][-1:]
# a static table: its cells (every arm's share) wrap rather than being cut
st.table(arm_mix_frame(report, ["oracle", "transfer_forge_lite", *calibrated, "target_forge_lite"])
         .set_index("benchmark"))
st.caption("Each policy's arms per benchmark on the target's test queries: the target oracle's mix is what its "
           "knowledge calls for; a transferred router that keeps the source's mix (e.g. Raw where the target "
           "answers without evidence) pays for evidence the target does not need.")
ui.lazy_sections([("Every policy", "transfer-policies", lambda: show_policies(frame, report["accounting"]))])
