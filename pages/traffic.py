"""Traffic: what `forge serve` has served, read from its traffic log while it serves (never the
store): requests and arm mix over time, realized tokens against each budget's target, the weights'
trajectory, the saving against Always-Raw and the shadow candidate, the slowest and costliest requests."""

from pathlib import Path

import streamlit as st

from forge_core.reports.traffic import (
    BUDGET_TOLERANCE,
    arm_mix_over_time,
    interval_text,
    parse_since,
    request_record,
    requests_frame,
    requests_over_time,
    summarize_traffic,
)
from forge_core.traffic_log import default_traffic_dir, read_traffic, served_manifests

st.title("Traffic")
st.caption("Every request `forge serve` received, from its traffic log (JSONL files beside the store, fsync'ed "
           "each second; the server never locks the store). Tokens count every host call made for an answer, as "
           "the deployment's accounting does; intervals are normal 95% intervals.")
folder_column, since_column, follow_column = st.columns([3, 1, 1])
folder = folder_column.text_input("Traffic log folder", str(default_traffic_dir()))
since = since_column.text_input("Since", "", help="A duration back from now (15m, 2h, 1d) or an ISO time; "
                                                  "empty: everything.")
follow = follow_column.toggle("Follow", value=True, help="Re-read the log every 5 seconds (while a server writes it).")


def _show_manifests(directory: Path, requests_by_manifest: dict[str, int]) -> None:
    """The deployment manifests the requests were served under (`forge serve --manifest`)."""
    manifests = served_manifests(directory)
    for manifest, count in requests_by_manifest.items():
        summary = manifests.get(manifest)
        if summary is None:
            st.caption(f"{count:,} requests served under {manifest}, whose file is not in {directory}.")
            continue
        gain = summary["gain"]
        st.success(f"**{count:,} requests served under {manifest}**: {summary['sentence']}", icon=":material/verified:")
        st.caption(f"Recipe `{summary['recipe_id']}` ({summary['recipe']}); out-of-fold evidence "
                   f"`{'`, `'.join(summary['crossfit_run_ids'])}`; gain {gain['difference']:+.3f} utility "
                   f"[{gain['ci'][0]:+.3f}, {gain['ci'][1]:+.3f}] over the best fixed arm; data "
                   f"{summary['data_version']}, code {summary['code_version']}.")
    if not requests_by_manifest:
        st.caption("No request here was served under a deployment manifest (`forge decide --manifest FILE`, then "
                   "`forge serve --manifest FILE`).")


@st.fragment(run_every=5.0 if follow else None)
def traffic_view() -> None:
    """The page body, re-run on its own while following."""
    try:
        records = read_traffic(Path(folder), parse_since(since or None))
    except ValueError as error:
        st.error(str(error))
        return
    summary = summarize_traffic(records)
    if not summary["answered"]:
        st.info(f"No answered request in {folder} yet: start `forge serve` (it logs there) and send requests.",
                icon=":material/monitoring:")
        return
    _show_manifests(Path(folder), summary["manifests"])
    frame = requests_frame(records)
    tokens = summary["tokens"]
    columns = st.columns(4)
    columns[0].metric("Requests", f"{summary['requests']:,}", help=f"by status: {summary['by_status']}")
    columns[1].metric("Tokens a request", f"{tokens['mean']:.1f}",
                      help=f"95% interval {tokens['ci95'][0]} to {tokens['ci95'][1]}")
    columns[2].metric("Host calls", f"{summary['host_calls']:,}")
    columns[3].metric("Latency (mean ms)", f"{summary['latency_ms']['mean']:.0f}")

    st.subheader("Requests over time")
    st.bar_chart(requests_over_time(frame))
    st.subheader("Arm mix over time")
    st.caption("Share of each arm in 20 equal runs of consecutive answered requests.")
    st.area_chart(arm_mix_over_time(frame))

    st.subheader("Realized tokens against the target")
    st.caption(f"The rolling mean over the last 200 requests of each budget with its 95% interval, the target "
               f"and the controller's +-{BUDGET_TOLERANCE:.0%} band.")
    for budget, group in frame.groupby("budget"):
        chart = group.set_index("time")[["rolling_tokens", "rolling_low", "rolling_high"]]
        target = group["budget_target"].dropna()
        last = group.iloc[-1]
        text = (f"**{budget}**: last 200 requests {last['rolling_tokens']:,.1f} tokens a request "
                f"[95% interval {last['rolling_low']:,.1f} to {last['rolling_high']:,.1f}]")
        if not target.empty:
            goal = float(target.iloc[-1])
            chart = chart.assign(target=goal, band_low=goal * (1 - BUDGET_TOLERANCE),
                                 band_high=goal * (1 + BUDGET_TOLERANCE))
            text += f" against a target of {goal:,.1f} ({last['rolling_tokens'] / goal - 1:+.1%})"
        st.markdown(text)
        st.line_chart(chart)
        budget_state = summary["budgets"].get(budget, {})
        if budget_state.get("out_of_reach"):
            side = ("less than the target even at its lowest trained weights (its cheapest price of a token)"
                    if budget_state["at_bound"] == "lowest" else "more than the target even at its highest weights")
            st.warning(f"Out of the router's reach: the controller sits at lambda_in {budget_state['lambda_in']:.4g}, "
                       f"lambda_out {budget_state['lambda_out']:.4g}, where the router spends {side}. A router "
                       "trained over a wider weight range (`forge train --conditioned --weight-range`) reaches "
                       "further.", icon=":material/warning:")

    st.subheader("Weights in force over time")
    weights = frame.dropna(subset=["lambda_in", "lambda_out"])
    if weights.empty:
        st.caption("No cost-conditioned router served these requests: no weights to show.")
    for budget, group in weights.groupby("budget"):
        st.markdown(f"**{budget}**: now lambda_in {group['lambda_in'].iloc[-1]:.4g}, "
                    f"lambda_out {group['lambda_out'].iloc[-1]:.4g}")
        st.line_chart(group.set_index("time")[["lambda_in", "lambda_out"]])

    saving = summary["shadow_raw"]["saving_tokens"]
    st.subheader("Saving against Always-Raw")
    if saving["n"]:
        raw = summary["shadow_raw"]["raw_tokens"]
        columns = st.columns(2)
        columns[0].metric("Tokens saved a request (shadow sample)", f"{saving['mean']:,.1f}")
        columns[1].metric("Always-Raw's tokens a request (same requests)", f"{raw['mean']:,.1f}")
        st.caption(f"Over {saving['n']} requests whose Always-Raw cost was measured after their response: "
                   f"saving, with its 95% interval, {interval_text(saving)}.")
    else:
        st.caption("No shadow Always-Raw sample: serve with `--shadow-raw 0.1` to measure it.")
    candidate = summary["candidate"]
    st.subheader("Candidate against the current router")
    if candidate["shadowed"]:
        difference = candidate["token_difference"]
        columns = st.columns(3)
        columns[0].metric("Routed by the candidate", f"{candidate['routed']:,}")
        columns[1].metric("Agreement with the current router",
                          "-" if candidate["agreement"] is None else f"{candidate['agreement']:.0%}")
        columns[2].metric("Candidate minus current tokens", "-" if difference["mean"] is None
                          else f"{difference['mean']:+,.1f}")
        st.caption(f"{candidate['calls']} shadow answers spent {candidate['tokens_spent']:,} tokens; "
                   f"{candidate['capped']} skipped past the token cap. Token difference over the "
                   f"{difference['n']} requests it routed and answered (agreements count 0), with its 95% interval: "
                   + interval_text(difference) + ".")
        quality = candidate["quality_difference"]
        if quality["n"]:
            st.metric("Candidate minus current rating (evaluator host, 0 to 1)", f"{quality['mean']:+.3f}")
            st.caption(f"Over {quality['n']} requests (agreements count 0), with its 95% interval: "
                       f"{interval_text(quality)}.")
        else:
            st.caption("No rating: serve with `--evaluator-host HOST` to rate both answers of each disagreement.")
        st.dataframe({"candidate arm": list(candidate["arms"]), "requests": list(candidate["arms"].values())})
    else:
        st.caption("No shadow candidate: serve with `--candidate CKPT --shadow-rate 0.1`.")

    st.subheader("Slowest and costliest requests")
    listed = {f"{r['id'][:8]} · {r['arm']} · {r['tokens']} tokens · {r['latency_ms']:.0f} ms · {kind}": r["id"]
              for kind in ("slowest", "costliest") for r in summary[kind]}
    # A radio, not a select box: the list stays open while Follow re-reads the log.
    chosen = st.radio("Open a request's record", list(listed))
    st.json(request_record(records, listed[chosen]))


traffic_view()
