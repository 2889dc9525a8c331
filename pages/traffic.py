"""Traffic: what `forge serve` has served, read from its traffic log while it serves (never the
store): requests and arm mix over time, realized tokens against each budget's target, the weights'
trajectory, the saving against Always-Raw and the shadow candidate, the slowest and costliest requests."""

from pathlib import Path

import streamlit as st

from forge_core.reports.traffic import (
    arm_mix_over_time,
    default_traffic_dir,
    parse_since,
    read_traffic,
    request_record,
    requests_frame,
    summarize_traffic,
)

st.title("Traffic")
st.caption("Every request `forge serve` received, from its traffic log (JSONL files beside the store, fsync'ed "
           "each second; the server never locks the store). Tokens count every host call made for an answer, as "
           "the deployment's accounting does; intervals are normal 95% intervals.")
folder_column, since_column, follow_column = st.columns([3, 1, 1])
folder = folder_column.text_input("Traffic log folder", str(default_traffic_dir()))
since = since_column.text_input("Since", "", help="A duration back from now (15m, 2h, 1d) or an ISO time; "
                                                  "empty: everything.")
follow = follow_column.toggle("Follow", value=False, help="Re-read the log every 2 seconds.")


@st.fragment(run_every=2.0 if follow else None)
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
    frame = requests_frame(records)
    tokens = summary["tokens"]
    columns = st.columns(4)
    columns[0].metric("Requests", f"{summary['requests']:,}", help=f"by status: {summary['by_status']}")
    columns[1].metric("Tokens a request", f"{tokens['mean']:.1f}",
                      help=f"95% interval {tokens['ci95'][0]} to {tokens['ci95'][1]}")
    columns[2].metric("Host calls", f"{summary['host_calls']:,}")
    columns[3].metric("Latency (mean ms)", f"{summary['latency_ms']['mean']:.0f}")

    st.subheader("Requests over time")
    per_minute = frame.set_index("time").resample("1min")["id"].count().rename("requests a minute")
    st.bar_chart(per_minute)
    st.subheader("Arm mix over time")
    st.area_chart(arm_mix_over_time(frame))

    st.subheader("Realized tokens against the target")
    st.caption("The rolling mean over the last 200 requests of each budget, with its 95% interval, and the target.")
    for budget, group in frame.groupby("budget"):
        chart = group.set_index("time")[["rolling_tokens", "rolling_low", "rolling_high"]]
        target = group["budget_target"].dropna()
        if not target.empty:
            chart = chart.assign(target=float(target.iloc[-1]))
        st.markdown(f"**{budget}**")
        st.line_chart(chart)
        weights = group.set_index("time")[["lambda_in", "lambda_out"]].dropna()
        if not weights.empty:
            st.caption(f"Weights in force ({budget}): lambda_in, lambda_out")
            st.line_chart(weights)

    saving = summary["shadow_raw"]["saving_tokens"]
    st.subheader("Saving against Always-Raw")
    if saving["n"]:
        low, high = saving["ci95"]
        st.metric("Tokens saved a request (shadow sample)", f"{saving['mean']:.1f}",
                  help=f"{saving['n']} shadowed requests; 95% interval {low} to {high}")
    else:
        st.caption("No shadow Always-Raw sample: serve with `--shadow-raw 0.1` to measure it.")
    candidate = summary["candidate"]
    st.subheader("Candidate against the current router")
    if candidate["shadowed"]:
        difference = candidate["token_difference"]
        st.write(f"{candidate['routed']} requests routed by the candidate; agreement "
                 f"{candidate['agreement']:.0%}; {candidate['calls']} shadow answers, {candidate['tokens_spent']:,} "
                 f"tokens; {candidate['capped']} past the token cap. Candidate minus current tokens a request: "
                 f"{difference['mean']} (95% interval {difference['ci95'][0]} to {difference['ci95'][1]}).")
        quality = candidate["quality_difference"]
        if quality["n"]:
            st.metric("Candidate minus current rating (evaluator host, 0 to 1)", f"{quality['mean']:+.3f}",
                      help=f"{quality['n']} requests (agreements count 0); 95% interval {quality['ci95'][0]} to "
                           f"{quality['ci95'][1]}")
        else:
            st.caption("No rating: serve with `--evaluator-host HOST` to rate both answers of each disagreement.")
        st.dataframe({"candidate arm": list(candidate["arms"]), "requests": list(candidate["arms"].values())})
    else:
        st.caption("No shadow candidate: serve with `--candidate CKPT --shadow-rate 0.1`.")

    st.subheader("Slowest and costliest requests")
    listed = {f"{r['id'][:8]} · {r['arm']} · {r['tokens']} tokens · {r['latency_ms']:.0f} ms · {kind}": r["id"]
              for kind in ("slowest", "costliest") for r in summary[kind]}
    chosen = st.selectbox("Open a request's record", list(listed))
    st.json(request_record(records, listed[chosen]))


traffic_view()
