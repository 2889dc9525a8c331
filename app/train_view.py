"""The Train page's runs panel: a training job's status, progress and live curves.

Training runs as its own `forge train` process (forge_core.jobs), which stores one log row per
Stage-1 epoch or per logged Stage-2 step as it goes; this fragment rereads them every few
seconds. When a run this tab watched finishes, the whole page reruns once so the new checkpoint
shows up in the list below.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import data, train_charts, ui
from forge_core import config, jobs
from forge_core.reports.checkpoint_views import (
    DEV_METRICS,
    checkpoint_names,
    latest_values,
    reproduces_stored_checkpoint,
    training_curves,
)
from forge_core.rewards.judge_job import plan_judging, stored_reward_key
from forge_core.rewards.judge_request import JudgeRequest
from forge_core.store import Store
from forge_core.training.request import TrainRequest

REFRESH_SECONDS = 2.0
STARTED_KEY = "started_train_job"  # session state: the last training job started from this tab
WATCHED_KEY = "watched_train_jobs"  # session state: job ids seen running, to rerun the page when they end
LIVE_LABELS = {"train_loss": "train loss", "dev_loss": "dev loss",
               "dev_target_agreement": "dev target agreement (trained arms)",
               "reward_mean": "reward", "loss": "loss", "kl": "KL to Stage 1", "entropy": "entropy", "beta": "beta",
               "dev_utility": "dev utility"}


def start_judging(store: Store, request: JudgeRequest) -> bool:
    """Spawn a judge run (its progress shows in the Rewards section's jobs table); False, and no
    run, when every answer it would rate is already rated."""
    if not plan_judging(store, request, stored_reward_key(store, request)):
        return False
    jobs.start_judge_job(request, store.path, config.cache_dir() / "jobs")
    return True


def start_training(store: Store, request: TrainRequest) -> None:
    """Spawn the run and remember it, so the panel can follow it until its job row appears."""
    ui.remember_started_job(STARTED_KEY, jobs.start_train_job(request, store.path, config.cache_dir() / "jobs"))


@st.fragment(run_every=REFRESH_SECONDS)
def runs_panel(store: Store, checkpoints: int) -> None:
    """The run starting from this tab, then a chosen run (the newest by default) with its curves
    (`checkpoints`: how many the store holds, to say where they came from when no run is listed)."""
    with ui.user_errors(stop=False):
        _starting(store)
        rows = data.recent_jobs(store, "train")
        if not rows:
            st.info("No training runs in this store's jobs yet: start one above."
                    + (f" The {checkpoints} checkpoints below came with the store (e.g. `forge store load-demo`) "
                       "or from runs whose job rows are gone; their curves are in Compare two checkpoints."
                       if checkpoints else ""))
            return
        _rerun_when_watched_job_ends(rows)
        labels = {row["job_id"]: _job_label(row, progress) for row, progress in rows}
        # No key: a new run changes the options, which resets the choice to the newest run.
        job_id = st.selectbox("Run", list(labels), format_func=labels.get)
        row, progress = next((r, p) for r, p in rows if r["job_id"] == job_id)
        _run(store, row, progress)
        with st.expander("Recent runs"):
            st.dataframe(ui.jobs_frame(rows).drop(columns=["errors", "rate (calls/s)"]).rename(
                columns={"done": "epochs/steps", "planned": "at most", "message": "checkpoint or error"}),
                hide_index=True)


def _job_label(row: dict, progress: jobs.JobProgress) -> str:
    request = TrainRequest.from_dict(row["params"])
    return (f"{progress.job_id}: stage {request.stage}, {request.variant}, {request.host}, "
            f"{request.n_arms} arms ({progress.status}, {row['started_at']:%Y-%m-%d %H:%M})")


def _starting(store: Store) -> None:
    ended = ui.job_ended_before_its_row(store, STARTED_KEY, "train", "loading the outcomes and features")
    if ended is not None:
        started, tail = ended
        st.error(f"The training process {started.pid} ended before it started:{ui.log_excerpt(started, tail)}")


def _rerun_when_watched_job_ends(rows: list[tuple[dict, jobs.JobProgress]]) -> None:
    watched: set[str] = st.session_state.setdefault(WATCHED_KEY, set())
    active = {progress.job_id for _, progress in rows if progress.active}
    ended = watched - active
    watched |= active
    if ended:
        watched -= ended
        data.refresh()
        st.rerun()  # the whole page: the checkpoint list gains the new checkpoint


def _run(store: Store, row: dict, progress: jobs.JobProgress) -> None:
    request = TrainRequest.from_dict(row["params"])
    unit = "steps" if request.stage == 2 else "epochs"
    logs = data.job_logs(store, row["job_id"])
    with st.container(border=True):
        if progress.active:
            st.progress(progress.fraction, text=f"{progress.done:,} of {'' if request.stage == 2 else 'at most '}"
                                                f"{progress.target:,} {unit}")
            ui.cancel_job_button(store, row, progress, "Stop at the next logged epoch or step. A cancelled run "
                                 "stores no checkpoint: the state so far is discarded.", icon=":material/stop:")
        elif progress.status == "finished":
            _finished(store, row, progress, unit)
        elif progress.status == "cancelled":
            st.warning(f"Run cancelled: {progress.message}.", icon=":material/cancel:")
        else:
            st.error(f"Run {progress.status}: {progress.message or 'no message'}", icon=":material/error:")
        latest = latest_values(logs)
        if latest:
            st.caption(f"Last logged {unit[:-1]}:")
            columns = st.columns(len(latest))
            for column, (key, value) in zip(columns, latest.items()):  # cards: long labels wrap, never cut
                ui.name_metric(column, LIVE_LABELS.get(key, key), f"{value:.4g}")
        curves = training_curves(logs)
        if len(curves):
            st.vega_lite_chart(*train_charts.training_curves(curves), key=f"curves-{row['job_id']}")
        elif progress.active:
            st.caption(f"The first curve points appear after the first logged {unit[:-1]}.")


def _finished(store: Store, row: dict, progress: jobs.JobProgress, unit: str) -> None:
    """The finished run's checkpoint, whether it reproduces a stored one, and its dev metrics (the
    kept state's: the same numbers as in Compare two checkpoints)."""
    checkpoint_id = progress.message
    record = data.checkpoint_record(store, checkpoint_id)
    note = ""
    if reproduces_stored_checkpoint(record["created_at"], row["started_at"]):
        note = (f" It reproduces the checkpoint stored on {record['created_at']:%Y-%m-%d %H:%M} bit for bit "
                "(same lineage and weights): the store keeps that one.")
    st.success(f"Finished after {progress.done:,} {unit}: checkpoint `{checkpoint_id}`.{note}",
               icon=":material/check_circle:")
    metrics = record["metrics"]
    shown = [(label, metrics[key]) for key, label in DEV_METRICS[:5] if metrics.get(key) is not None]
    if shown:
        st.caption("The checkpoint's dev metrics (the state kept):")
        columns = st.columns(len(shown))
        for column, (label, value) in zip(columns, shown):  # cards: long labels wrap, never cut
            ui.name_metric(column, label, f"{value:.4g}")


def default_router_mark(store: Store, host: str, checkpoints: pd.DataFrame, marked: str | None) -> None:
    """The host's default router (Live query, `forge ask --route`): which checkpoint is marked, and
    a picker to mark another. A new training run never takes the mark over."""
    names = checkpoint_names(checkpoints)
    ids = list(names)
    if marked is None:
        used = data.default_router(store, host)
        st.caption(f"No default router is marked for '{host}': **{names.get(used, used)}** is used (its newest "
                   "cost-conditioned Lite checkpoint, else its newest Lite checkpoint), so each new Lite run takes "
                   "over. Mark one to keep it.")
    else:
        st.caption(f"Default router of '{host}': **{names.get(marked, marked)}**, marked by you; new "
                   "runs do not take it over.")
    pick_column, button_column = st.columns([3, 1], vertical_alignment="bottom")  # the button whole at 1,024 px
    used = data.default_router(store, host)  # the marked one, else the fallback the caption names
    choice = pick_column.selectbox("Default router", ids, index=ids.index(used) if used in ids else 0,
                                   format_func=names.get)
    if button_column.button("Mark as default", disabled=choice == marked):  # no icon: whole at 1,024 px
        with ui.user_errors(stop=False):
            store.set_default_router(host, choice)
            data.refresh()
            ui.flash(f"{names[choice]} is now the default router of '{host}'.")
            st.rerun()
