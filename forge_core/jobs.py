"""Background jobs started from the dashboard: a Stage-0 plan, a training request or a judge run,
run by a detached process (`python -m forge_core.jobs run REQUEST.json`).

A job runs the same request object the command line builds (`EnumerationPlan`, `TrainRequest`,
`JudgeRequest`),
written as JSON beside its log, so a knob lives in its dataclass, its CLI flag and its form only.
The job is its own process: it writes its row in the jobs table and every outcome as it lands,
in short transactions, so the dashboard keeps reading the store while it runs, and it outlives
the dashboard's reruns and restarts. Cancelling asks it, through the jobs table, to stop after
its calls in flight; starting the same plan again runs only what is still missing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from forge_core import config
from forge_core.enumeration.planning import EnumerationPlan, count_calls, plan_work
from forge_core.enumeration.runner import enumerate_on_host
from forge_core.errors import ForgeError, InvalidInput
from forge_core.hosts.registry import get_host_config, serving
from forge_core.rewards.judge_job import judge_on_host
from forge_core.rewards.judge_request import JudgeRequest
from forge_core.routing.features import compute_features
from forge_core.store import Store, utc_now
from forge_core.training.request import TrainRequest

log = logging.getLogger(__name__)

JobRequest = EnumerationPlan | TrainRequest | JudgeRequest
REQUEST_KINDS: dict[type, str] = {EnumerationPlan: "enumerate", TrainRequest: "train", JudgeRequest: "judge"}
ACTIVE_STATUSES = ("running", "cancelling")
GONE_STATUS = "interrupted"  # a job whose row says running but whose process has gone


@dataclass(frozen=True)
class StartedJob:
    """A job process just spawned; its jobs-table row appears once the host is ready."""

    pid: int
    log_path: Path  # the process's stdout and stderr
    started_at: datetime  # naive UTC, as the jobs table stores it
    command: tuple[str, ...]


@dataclass(frozen=True)
class JobProgress:
    """A job's progress as the dashboard shows it."""

    job_id: str
    status: str  # running, cancelling, finished, stopped: ..., interrupted, failed
    done: int  # host calls finished (errors included)
    target: int  # planned calls, capped by the plan's max_calls
    errors: int
    elapsed_s: float  # from start to the last progress update
    rate_per_s: float | None  # calls per second so far; None before the first call
    eta_s: float | None  # seconds left at that rate; None when unknown or not running
    message: str

    @property
    def active(self) -> bool:
        """True while the job's process is (still) working."""
        return self.status in ACTIVE_STATUSES

    @property
    def fraction(self) -> float:
        """Share of the target done, in [0, 1]."""
        return min(1.0, self.done / self.target) if self.target else 1.0


def start_enumeration_job(plan: EnumerationPlan, store_path: Path, log_dir: Path) -> StartedJob:
    """Run `plan` on the store at `store_path` in a detached process (own session, output to a
    log file); returns at once."""
    return _spawn(plan, store_path, log_dir)


def _spawn(request: JobRequest, store_path: Path, log_dir: Path) -> StartedJob:
    kind = REQUEST_KINDS[type(request)]
    log_dir.mkdir(parents=True, exist_ok=True)
    started_at = utc_now()
    log_path = log_dir / f"{kind}-{started_at:%Y%m%d-%H%M%S-%f}.log"
    request_path = write_request(request, log_path.with_suffix(".json"))
    command = [sys.executable, "-m", "forge_core.jobs", "run", str(request_path)]
    environment = {**os.environ, "FORGE_STORE": str(store_path)}
    with log_path.open("w") as log_file:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
                                   env=environment, cwd=config.PROJECT_ROOT, start_new_session=True)
    # Reap the child when it exits, so a finished job leaves no zombie behind.
    threading.Thread(target=process.wait, name=f"reap-{process.pid}", daemon=True).start()
    log.info("started %s job pid %d: %s", kind, process.pid, " ".join(command))
    return StartedJob(process.pid, log_path, started_at, tuple(command))


def write_request(request: JobRequest, path: Path) -> Path:
    """The request as JSON at `path` (written atomically), for `python -m forge_core.jobs run`."""
    kind = REQUEST_KINDS[type(request)]
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps({"kind": kind, "request": request.to_dict()}))
    os.replace(temporary, path)
    return path


def read_request(path: Path) -> JobRequest:
    """The request `write_request` wrote."""
    written = json.loads(path.read_text())
    for request_type, kind in REQUEST_KINDS.items():
        if written.get("kind") == kind:
            return request_type.from_dict(written["request"])
    raise InvalidInput(f"{path}: not a FORGE job request")


def run_request(store: Store, request: JobRequest) -> None:
    """Run one job's request in this process, logging its progress (the job's row in the jobs
    table is written by the enumeration, the training or the judging itself)."""
    request.check(store)
    if isinstance(request, JudgeRequest):
        _run_judging(store, request)
        return
    if isinstance(request, TrainRequest):
        from forge_core.training.trainer import train_router_job

        compute_features(store, request.host, request.benchmarks)
        train_router_job(store, request, on_log=lambda row: log.info("%s", row))
        return
    if count_calls(plan_work(store, request)) == 0:
        log.info("nothing to do: every planned call is already stored")
        return
    with serving(get_host_config(store, request.host)) as served:
        report = asyncio.run(enumerate_on_host(store, request, served))
    log.info("job %s: %s, %d calls, %d errors", report.job_id, report.status, report.calls, len(report.errors))


def _run_judging(store: Store, request: JudgeRequest) -> None:
    report = asyncio.run(judge_on_host(store, request))
    log.info("job %s: %s, %d judged, %d errors", report.job_id, report.status, report.judged, len(report.errors))


def start_judge_job(request: JudgeRequest, store_path: Path, log_dir: Path) -> StartedJob:
    """Run a judge request on the store at `store_path` in a detached process; its jobs-table row
    (kind "judge") appears once the judge host is ready."""
    return _spawn(request, store_path, log_dir)


def main(arguments: list[str]) -> int:
    """`python -m forge_core.jobs run REQUEST.json`: run a job on the store at FORGE_STORE."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if len(arguments) != 2 or arguments[0] != "run":
        log.error("usage: python -m forge_core.jobs run REQUEST.json")
        return 2
    try:
        run_request(Store(config.store_path()), read_request(Path(arguments[1])))
    except ForgeError as error:
        log.error("%s", error)
        return 2
    return 0


# ---------------------------------------------------------------- training jobs


def stage2_log_every(steps: int) -> int:
    """Steps per logged Stage-2 row for a run of `steps`: about 20 to 100 points on the curves
    (every 50 steps from 1,000 steps on, as the CLI's default)."""
    return max(1, min(50, steps // 20))


def start_train_job(request: TrainRequest, store_path: Path, log_dir: Path) -> StartedJob:
    """Run `request` on the store at `store_path` in a detached process, like an enumeration job;
    its jobs-table row (kind "train") appears once the data is loaded."""
    return _spawn(request, store_path, log_dir)


def process_alive(pid: int) -> bool:
    """True when a process with this id exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


def job_progress(row: dict[str, Any], alive: bool) -> JobProgress:
    """Progress of one jobs-table row; `alive` says whether its process still runs (a row left
    "running" by a killed process is reported as interrupted)."""
    params = json.loads(row["params"]) if isinstance(row["params"], str) else row["params"]
    total = int(row["total"] or 0)
    max_calls = params.get("max_calls")
    target = min(total, max_calls) if max_calls is not None else total
    done = int(row["done"] or 0)
    status = row["status"]
    if status in ACTIVE_STATUSES and not alive:
        status = GONE_STATUS
    elapsed = max(0.0, (row["updated_at"] - row["started_at"]).total_seconds())
    rate = done / elapsed if done and elapsed > 0 else None
    eta = (target - done) / rate if rate and status in ACTIVE_STATUSES else None
    return JobProgress(job_id=row["job_id"], status=status, done=done, target=target,
                       errors=int(row["errors"] or 0), elapsed_s=elapsed, rate_per_s=rate,
                       eta_s=eta, message=row["message"] or "")


def recent_jobs(store: Store, kind: str = "enumerate", limit: int = 20) -> list[tuple[dict[str, Any], JobProgress]]:
    """The newest jobs of a kind with their progress, newest first."""
    rows = store.jobs(kind, limit).to_dict("records")
    return [(row, job_progress(row, process_alive(int(row["pid"])))) for row in rows]


def job_for_process(store: Store, started: StartedJob, kind: str = "enumerate") -> dict[str, Any] | None:
    """The jobs-table row of a spawned job, or None while it is still starting (loading the host
    or the training data)."""
    frame = store.jobs(kind)
    frame = frame[(frame["pid"] == started.pid) & (frame["started_at"] >= started.started_at)]
    return frame.to_dict("records")[0] if len(frame) else None


def cancel_job(store: Store, row: dict[str, Any]) -> None:
    """Ask a running job to stop after its calls in flight; a job whose process has gone is
    closed as interrupted instead (nobody is left to read the request)."""
    if process_alive(int(row["pid"])):
        store.request_job_cancel(row["job_id"])
    else:
        store.finish_job(row["job_id"], GONE_STATUS, "process gone")


def recent_errors(store: Store, host: str, limit: int = 5) -> list[str]:
    """The host's latest failed calls still stored as error rows, one line each, newest first."""
    return [f"{r.benchmark}/{r.example_id} {r.arm}: {r.error}" for r in store.recent_arm_errors(host, limit)]


def log_tail(path: Path, lines: int = 5) -> str:
    """The last lines of a job's log ("" when there is none)."""
    try:
        return "\n".join(path.read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return ""


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
