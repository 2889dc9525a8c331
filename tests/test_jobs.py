"""Dashboard jobs: the command a plan becomes, progress arithmetic, and jobs whose process has gone."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from datetime import datetime, timedelta

from forge_core.enumeration import EnumerationPlan
from forge_core.jobs import cancel_job, enumeration_command, job_progress, plan_from_params, process_alive
from forge_core.store import Store

START = datetime(2026, 1, 1, 12, 0, 0)


def row(status: str = "running", done: int = 30, total: int = 120, max_calls: int | None = None) -> dict:
    plan = EnumerationPlan(host="h", max_calls=max_calls)
    return {"job_id": "enumerate-1", "status": status, "params": json.dumps(dataclasses.asdict(plan)),
            "total": total, "done": done, "errors": 2, "message": "", "pid": 1,
            "started_at": START, "updated_at": START + timedelta(seconds=60)}


def test_enumeration_command_has_every_option_of_the_plan() -> None:
    plan = EnumerationPlan(host="embedded", split="dev", n_arms=3, probes=True, benchmarks=("musique", "fever"),
                           split_seed=1, per_benchmark=5, max_tokens=1000, concurrency=3)
    assert enumeration_command(plan)[1:] == [
        "-m", "forge_core.cli", "enumerate", "--host", "embedded", "--split", "dev", "--arms", "3",
        "--split-seed", "1", "--concurrency", "3", "--probes", "--benchmark", "musique", "--benchmark", "fever",
        "--per-benchmark", "5", "--max-tokens", "1000"]


def test_plan_round_trips_through_the_jobs_table_params() -> None:
    plan = EnumerationPlan(host="h", split="test", benchmarks=("popqa",), limit=7)
    assert plan_from_params(json.dumps(dataclasses.asdict(plan))) == plan


def test_progress_rate_and_eta() -> None:
    progress = job_progress(row(), alive=True)
    assert (progress.done, progress.target, progress.errors, progress.elapsed_s) == (30, 120, 2, 60.0)
    assert progress.rate_per_s == 0.5 and progress.eta_s == 180.0 and progress.fraction == 0.25
    capped = job_progress(row(max_calls=40), alive=True)
    assert capped.target == 40 and capped.eta_s == 20.0
    assert job_progress(row(done=0), alive=True).rate_per_s is None


def test_a_running_row_without_its_process_is_interrupted() -> None:
    progress = job_progress(row(), alive=False)
    assert progress.status == "interrupted" and not progress.active and progress.eta_s is None
    assert job_progress(row(status="finished"), alive=False).status == "finished"


def test_process_alive_sees_exit() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert process_alive(os.getpid()) and not process_alive(child.pid)


def test_cancelling_a_gone_job_closes_it() -> None:
    store = Store(os.environ["FORGE_STORE"])
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    store.create_job("enumerate-gone", "enumerate", {"host": "h"}, 10, child.pid)
    cancel_job(store, store.job("enumerate-gone"))
    assert store.job("enumerate-gone")["status"] == "interrupted"
    store.create_job("enumerate-live", "enumerate", {"host": "h"}, 10, os.getpid())
    cancel_job(store, store.job("enumerate-live"))
    assert store.job("enumerate-live")["status"] == "cancelling"
