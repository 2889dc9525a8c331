"""`forge enumerate --processes N`: one plan shared by N client processes writing one store."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

from answering_server import AnsweringServer

from forge_core.data.importing import import_benchmarks
from forge_core.enumeration.planning import EnumerationPlan, plan_work
from forge_core.enumeration.processes import split_plan
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.store import Store

BENCHMARKS = ("musique", "fever")
PLAN = EnumerationPlan(host="fast-host", split="test", benchmarks=BENCHMARKS, per_benchmark=5, concurrency=4)


def test_parts_are_disjoint_cover_the_plan_and_share_its_bounds(tmp_path: Path, benchmarks_root: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    import_benchmarks(store, benchmarks_root, BENCHMARKS)
    for plan in (PLAN, dataclasses.replace(PLAN, shard=(2, 3), per_benchmark=None)):  # also within a machine's shard
        whole = {(w.example.benchmark, w.example.example_id) for w in plan_work(store, plan)}
        parts = [{(w.example.benchmark, w.example.example_id) for w in plan_work(store, part)}
                 for part in split_plan(plan, 3)]
        assert set().union(*parts) == whole and sum(map(len, parts)) == len(whole) > 0
    bounded = split_plan(dataclasses.replace(PLAN, concurrency=5, limit=7, max_calls=10, max_tokens=None), 3)
    assert [p.limit for p in bounded] == [3, 2, 2] and [p.max_calls for p in bounded] == [4, 3, 3]
    assert [p.concurrency for p in bounded] == [2, 2, 2] and {p.max_tokens for p in bounded} == {None}


def test_two_processes_enumerate_one_plan_into_one_store(tmp_path: Path, benchmarks_root: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    import_benchmarks(store, benchmarks_root, BENCHMARKS)
    with AnsweringServer() as server:
        save_host_config(store, HostConfig(name="fast-host", kind="openai", model="m", base_url=server.base_url,
                                           max_concurrency=4))
        result = forge(store, "enumerate", "--host", "fast-host", "--split", "test", "--per-benchmark", "5",
                       "--benchmark", "musique", "--benchmark", "fever", "--processes", "2", "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["calls"] == 60 and summary["errors"] == 0 and summary["status"] == "finished"
    rows = store.arm_outcomes("fast-host")
    assert len(rows) == 60 and not rows.duplicated(["benchmark", "example_id", "arm"]).any()
    assert rows["error"].isna().all() and plan_work(store, PLAN) == []
    jobs = store.jobs("enumerate")
    assert sorted(jobs["job_id"]) == sorted(summary["job_id"].split(",")) and set(jobs["status"]) == {"finished"}
    assert sorted(jobs["done"]) == [24, 36]  # queries 2, 4 and 1, 3, 5 of each benchmark


def test_more_processes_than_queries_in_flight_is_one_line(tmp_path: Path, benchmarks_root: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    import_benchmarks(store, benchmarks_root, BENCHMARKS)
    save_host_config(store, HostConfig(name="fast-host", kind="openai", model="m", base_url="http://127.0.0.1:9/v1"))
    result = forge(store, "enumerate", "--host", "fast-host", "--split", "test", "--per-benchmark", "2",
                   "--benchmark", "fever", "--concurrency", "2", "--processes", "3")
    assert result.returncode == 2 and "--processes 3" in result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def forge(store: Store, *args: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "FORGE_STORE": str(store.path)}
    return subprocess.run([sys.executable, "-m", "forge_core.cli", *args], capture_output=True, text=True,
                          env=environment, timeout=300)
