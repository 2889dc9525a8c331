"""The live jobs panel of the Enumerate page: progress, rate, ETA and errors; cancel and resume.

It is a fragment that reruns on its own every few seconds, so the rest of the page stays as it
is while a job runs.
"""

from __future__ import annotations

import streamlit as st

from app import data, ui
from forge_core import config, jobs
from forge_core.enumeration.planning import EnumerationPlan
from forge_core.store import Store

REFRESH_SECONDS = 2.0
STARTED_KEY = "started_job"  # session state: the last job started from this browser tab


def start_job(store: Store, plan: EnumerationPlan) -> None:
    """Spawn the job and remember it, so the panel can follow it until its row appears."""
    ui.remember_started_job(STARTED_KEY, jobs.start_enumeration_job(plan, store.path, config.cache_dir() / "jobs"))


@st.fragment(run_every=REFRESH_SECONDS)
def jobs_panel(store: Store) -> None:
    """Active jobs with progress bars and a cancel button, then the recent jobs."""
    with ui.user_errors(stop=False):
        _starting_job(store)
        rows = data.recent_jobs(store)
        for row, progress in rows:
            if progress.active:
                _active_job(store, row, progress)
        if not rows:
            st.info("No enumeration jobs yet: start one above.")
            return
        st.subheader("Recent jobs")
        st.dataframe(ui.jobs_frame(rows), hide_index=True)
        _resume(store, [row for row, progress in rows if not progress.active])


def _starting_job(store: Store) -> None:
    ended = ui.job_ended_before_its_row(store, STARTED_KEY, "enumerate", "planning, loading the host")
    if ended is None:
        return
    started, tail = ended
    if "nothing to do" in tail:
        st.success("Nothing to do: every planned call is already stored.")
    else:
        st.error(f"The job process {started.pid} ended before its first call:{ui.log_excerpt(started, tail)}")


def _active_job(store: Store, row: dict, progress: jobs.JobProgress) -> None:
    params = EnumerationPlan.from_dict(row["params"])
    with st.container(border=True):
        st.markdown(f"**{progress.job_id}**: {params.host}, {params.split} split, {params.n_arms} arms "
                    f"({progress.status})")
        st.progress(progress.fraction, text=f"{progress.done:,} of {progress.target:,} calls")
        columns = st.columns([1, 1, 1, 1])
        columns[0].metric("Rate", f"{progress.rate_per_s:.2f} calls/s" if progress.rate_per_s else "–")
        columns[1].metric("ETA", ui.format_duration(progress.eta_s))
        columns[2].metric("Errors", progress.errors)
        with columns[3]:
            ui.cancel_job_button(store, row, progress,
                                 "Stop after the calls in flight; everything finished stays stored.")
        if progress.errors:
            st.caption("Latest failed calls (stored as error rows and planned again on the next run):")
            st.code("\n".join(data.recent_errors(store, params.host)) or "–", language=None)


def _resume(store: Store, rows: list[dict]) -> None:
    if not rows:
        return
    choice = st.selectbox("Job to resume", [row["job_id"] for row in rows],
                          help="Starts the same plan again: only the calls still missing run.")
    if st.button("Resume", icon=":material/replay:"):
        row = next(row for row in rows if row["job_id"] == choice)
        start_job(store, EnumerationPlan.from_dict(row["params"]))
        st.rerun()
