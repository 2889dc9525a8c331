"""Dashboard jobs: the request a job runs, progress arithmetic, and jobs whose process has gone."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

from forge_core.enumeration.planning import EnumerationPlan
from forge_core.jobs import (
    cancel_job,
    job_progress,
    process_alive,
    read_request,
    run_request,
    stage2_log_every,
    start_enumeration_job,
    write_request,
)
from forge_core.store import Store
from forge_core.training.request import TrainRequest
from forge_core.training.settings import Stage1Config, Stage2Config

START = datetime(2026, 1, 1, 12, 0, 0)


def row(status: str = "running", done: int = 30, total: int = 120, max_calls: int | None = None) -> dict:
    plan = EnumerationPlan(host="h", max_calls=max_calls)
    return {"job_id": "enumerate-1", "status": status, "params": json.dumps(dataclasses.asdict(plan)),
            "total": total, "done": done, "errors": 2, "message": "", "pid": 1,
            "started_at": START, "updated_at": START + timedelta(seconds=60)}


def test_a_job_runs_the_plan_it_was_given(tmp_path) -> None:
    plan = EnumerationPlan(host="embedded", split="dev", n_arms=3, probes=True, benchmarks=("musique", "fever"),
                           split_seed=1, per_benchmark=5, max_tokens=1000, concurrency=3, shard=(2, 3))
    started = start_enumeration_job(plan, tmp_path / "store.duckdb", tmp_path / "jobs")
    assert started.command[1:4] == ("-m", "forge_core.jobs", "run")
    assert read_request(Path(started.command[4])) == plan  # every field of the plan, no command line between


def test_plans_are_validated_with_the_next_step(tmp_path, benchmarks_root) -> None:
    from forge_core.data.importing import import_benchmarks
    from forge_core.hosts.base import HostConfig
    from forge_core.hosts.registry import save_host_config
    from forge_core.records import ArmOutcome

    store = Store(os.environ["FORGE_STORE"])
    import_benchmarks(store, benchmarks_root, ["musique"])
    save_host_config(store, HostConfig(name="h", kind="openai", model="m", base_url="http://127.0.0.1:1/v1"))
    plan = EnumerationPlan(host="h", benchmarks=("musique",))
    plan.check(store)
    with pytest.raises(ValueError, match="--per-benchmark must be at least 1, not -1"):
        dataclasses.replace(plan, per_benchmark=-1).check(store)
    with pytest.raises(ValueError, match="--concurrency must be at least 1"):
        dataclasses.replace(plan, concurrency=0).check(store)
    with pytest.raises(ValueError, match="split seed must be one of 0, 1, 2"):
        dataclasses.replace(plan, split_seed=5).check(store)
    with pytest.raises(ValueError, match=r"not imported: popqa \(run `forge data import`\)"):
        dataclasses.replace(plan, benchmarks=("musique", "popqa")).check(store)
    store.write_arm_outcome(ArmOutcome("h", "musique", "q1", "raw:cot", "x", "x", 1.0, 1.0, 10, 2, 0, 5.0, None, 1,
                                       "another-model", START, START))
    with pytest.raises(ValueError, match="another configuration"):
        plan.check(store)


def test_plan_round_trips_through_the_jobs_table_params() -> None:
    plan = EnumerationPlan(host="h", split="test", benchmarks=("popqa",), limit=7)
    assert EnumerationPlan.from_dict(json.dumps(plan.to_dict())) == plan


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


def train_request() -> TrainRequest:
    return TrainRequest(host="h", variant="lite", n_arms=6, stage=2, lambda_in=0.15, lambda_out=0.3, rewards="table",
                        parent="ckpt-1", split_seed=1, stage1=Stage1Config(tau=0.5),
                        stage2=Stage2Config(steps=40, loss_type="rloo", beta=0.1, entropy_coef=0.02, seed=3,
                                            log_every=2))


def test_a_training_job_trains_exactly_its_request(tmp_path, monkeypatch) -> None:
    """Every knob of the Train page's request reaches the training: the job reads the request the
    page wrote and runs it, without a command line in between."""
    import forge_core.jobs as jobs_module
    import forge_core.training.trainer as trainer_module  # the job imports its training on first use

    seen = []
    monkeypatch.setattr(trainer_module, "train_router_job", lambda store, request, on_log=None: seen.append(request))
    monkeypatch.setattr(jobs_module, "compute_features", lambda store, host, benchmarks=None: {})
    monkeypatch.setattr(TrainRequest, "check", lambda self, store: None)
    for request in (train_request(), TrainRequest(host="h", variant="bge", n_arms=3, benchmarks=("mine", "popqa"),
                                                  stage1=Stage1Config(target="hard", warm_start_arms=3, max_epochs=9,
                                                                      patience=2, seed=4, tau=2.0))):
        run_request(SimpleNamespace(), read_request(write_request(request, tmp_path / "request.json")))
        assert seen[-1] == request


def test_python_m_jobs_refuses_a_file_that_is_no_request(tmp_path) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"kind": "something"}))
    result = subprocess.run([sys.executable, "-m", "forge_core.jobs", "run", str(path)], capture_output=True, text=True)
    assert result.returncode == 2 and "not a FORGE job request" in result.stderr
    assert "Traceback" not in result.stderr


def test_train_request_round_trips_through_the_jobs_table_params() -> None:
    request = train_request()
    assert TrainRequest.from_dict(json.dumps(request.to_dict())) == request
    restricted = dataclasses.replace(request, benchmarks=("mine",))
    assert TrainRequest.from_dict(json.dumps(restricted.to_dict())) == restricted


def test_train_request_params_written_before_the_renames_still_load() -> None:
    """Job rows of older versions name the network kind `router` and the warm-start arms `arms`."""
    request = dataclasses.replace(train_request(), router_kind="flat", stage1=Stage1Config(warm_start_arms=6))
    params = dataclasses.asdict(request)
    params["router"] = params.pop("router_kind")
    params["stage1"]["arms"] = params["stage1"].pop("warm_start_arms")
    assert TrainRequest.from_dict(json.dumps(params)) == request


def test_judge_request_round_trips_and_leaves_out_fields_it_does_not_know(tmp_path) -> None:
    from forge_core.rewards.judge_request import JudgeRequest

    request = JudgeRequest(host="h", benchmarks=("musique",), limit=3)
    assert JudgeRequest.from_dict(json.dumps(request.to_dict())) == request
    path = tmp_path / "judge.json"
    path.write_text(json.dumps({"kind": "judge", "request": {**dataclasses.asdict(request), "from_a_newer": 1}}))
    assert read_request(path) == request


def test_stage2_log_every() -> None:
    assert [stage2_log_every(steps) for steps in (1, 30, 200, 1000, 5000)] == [1, 1, 10, 50, 50]


def test_train_requests_are_validated_with_the_next_step(outcome_store: Store) -> None:
    host = "synthetic-host"
    TrainRequest(host=host, variant="lite").check(outcome_store)
    with pytest.raises(ValueError, match="unknown variant"):
        TrainRequest(host=host, variant="huge").check(outcome_store)
    with pytest.raises(ValueError, match="3 arms or on all 6"):
        TrainRequest(host=host, stage1=Stage1Config(warm_start_arms=12)).check(outcome_store)
    with pytest.raises(ValueError, match="no query with all 12 arms"):
        TrainRequest(host=host, n_arms=12).check(outcome_store)
    with pytest.raises(ValueError, match="forge enumerate --host nobody"):
        TrainRequest(host="nobody").check(outcome_store)
    with pytest.raises(ValueError, match="Stage 2 starts from a Stage-1 checkpoint"):
        TrainRequest(host=host, variant="bge", n_arms=3, stage=2).check(outcome_store)


def test_training_without_dev_queries_names_the_split(tmp_path, outcome_store: Store) -> None:
    from support.stores import copy_store, synthetic_outcomes

    store = copy_store(outcome_store, tmp_path)
    synthetic_outcomes(store, "train-only", {"train": 5, "test": 5}, ("musique",))
    with pytest.raises(ValueError, match="no complete dev queries .* `forge enumerate --host train-only --split dev`"):
        TrainRequest(host="train-only", variant="lite").check(store)
