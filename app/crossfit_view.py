"""The Pareto page's crossfit protocol: stored out-of-fold results, never recomputed on page load."""

from __future__ import annotations

import streamlit as st

from app import charts, data
from forge_core.evaluation.reports import ORACLE, crossfit_frame, routing_gain_frame
from forge_core.store import Store


def _label(report: dict) -> str:
    return (f"λ_in {report['lambda_in']:g} / λ_out {report['lambda_out']:g}, stage {report['stage']}, "
            f"{report['folds']} folds, {report['queries']} queries")


def show_crossfit(store: Store, host: str) -> None:
    """A stored crossfit run's points with their intervals and the frontier of the deployable
    policies; the routing gain over the best fixed arm along the stored runs' cost weights."""
    reports = data.crossfit_reports(store, data.store_version(store), host)
    if not reports:
        st.info(f"No finished crossfit run for host '{host}' yet: run `forge eval --host {host} --protocol crossfit "
                "--lambda-in 0.1 --lambda-out 0.2` (one per cost weight; results are stored and shown here).",
                icon=":material/query_stats:")
        return
    report = st.selectbox("Crossfit run", reports, format_func=_label)
    frame = crossfit_frame(report)
    deployable = frame[frame["policy"] != ORACLE]
    best = deployable.loc[deployable["macro_utility"].idxmax()]
    columns = st.columns(4)
    columns[0].metric("Best fixed arm", report["best_fixed_arm"],
                      help=f"Macro utility {report['policies'][report['best_fixed_policy']]['macro_utility']:.4f}.")
    columns[1].metric("Best deployable policy", best["policy"],
                      help=f"Utility {best['macro_utility']:.4f}, gain {best['gain']:+.4f} "
                           f"[{best['gain_low']:+.4f}, {best['gain_high']:+.4f}] over the best fixed arm.")
    columns[2].metric("Oracle utility (reference)", f"{report['policies'][ORACLE]['macro_utility']:.4f}",
                      help="Descriptive only: it sees every arm's score, so it is not on the frontier.")
    columns[3].metric("On the frontier", int(frame["on_frontier"].sum()),
                      help=", ".join(frame[frame["on_frontier"]].sort_values("cost_k")["policy"]))
    st.plotly_chart(charts.crossfit_pareto(frame), key="crossfit-pareto")
    with st.expander("Table"):
        st.dataframe(frame, hide_index=True, column_config={
            name: st.column_config.NumberColumn(format="%.4f") for name in frame.columns[2:-1]})

    st.subheader("Routing gain vs cost weight")
    sweep = [r for r in reports if r["stage"] == report["stage"] and r["folds"] == report["folds"]]
    gains = routing_gain_frame(sorted(sweep, key=lambda r: r["lambda_in"] + r["lambda_out"]))
    st.caption("Each router's and ridge_utility's out-of-fold utility gain over the best fixed arm of each cost "
               "weight, with its paired bootstrap 95% interval (a band above zero: the gain is real). One point per "
               "stored crossfit run of this stage.")
    st.plotly_chart(charts.routing_gain(gains), key="routing-gain")
    for weights, rows in gains.groupby("weights", sort=False):
        shares = ", ".join(f"{row.policy} {row.oracle_share:.0%}" for row in rows.itertuples())
        st.markdown(f"**{weights}**: share of the oracle's gain over {rows['best_fixed_arm'].iloc[0]} recovered: "
                    f"{shares}.")
