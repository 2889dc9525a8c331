"""Stage 0 enumeration: planning, resumability under SIGKILL, failures retried or recorded."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from forge_core.data.importing import import_benchmarks
from forge_core.enumeration.planning import EnumerationPlan, count_calls, order_work, plan_work
from forge_core.enumeration.runner import enumerate_arms
from forge_core.hosts.base import HostConfig
from forge_core.hosts.openai_compat import OpenAICompatibleHost
from forge_core.hosts.registry import save_host_config
from forge_core.store import Store, outcome_writer

from support.answering_server import AnsweringServer, held_after
from support.enumeration import host_config, run


@pytest.fixture
def store(tmp_path: Path, benchmarks_root: Path) -> Store:
    store = Store(os.environ["FORGE_STORE"])
    import_benchmarks(store, benchmarks_root, ["musique", "fever"])
    return store


def test_plan_interleaves_benchmarks_and_counts_calls(store: Store) -> None:
    plan = EnumerationPlan(host="test-host", split="test", benchmarks=("musique", "fever"), per_benchmark=3,
                           probes=True)
    work = plan_work(store, plan)
    assert [w.example.benchmark for w in work] == ["musique", "fever"] * 3
    assert count_calls(work) == 6 * (6 + 3)  # greedy probe reuses direct:no_think
    arm_major = order_work(work, 6, prefix_order=False)
    assert [u.arms[0].name for u in arm_major[:6]] == ["direct:no_think"] * 6
    assert sum(len(u.arms) for u in arm_major) == 36


def test_run_stores_every_outcome_and_rerun_does_nothing(store: Store) -> None:
    plan = EnumerationPlan(host="test-host", split="test", benchmarks=("musique",), per_benchmark=4, probes=True)
    with AnsweringServer() as server:
        report = run(store, plan, host_config(server.base_url))
    assert report.calls == 4 * 9 and report.errors == []
    assert report.cpu_s > 0  # the client's CPU from the first call to the last row written
    outcomes = store.arm_outcomes("test-host")
    assert len(outcomes) == 24 and outcomes["error"].isna().all()
    assert (outcomes["tokens_in"] > 0).all()
    assert len(store.probe_outcomes("test-host")) == 16
    assert plan_work(store, plan) == []


def test_failures_are_retried_or_recorded_never_scored(store: Store) -> None:
    def fail(body: dict, attempt: int) -> int | None:
        user = body["messages"][-1]["content"]
        if "Let us think" in user and "Evidence" in user:
            return 503  # the four summary/raw CoT calls fail every time
        return 500 if attempt == 1 else None  # everything else fails once, then succeeds

    plan = EnumerationPlan(host="test-host", split="test", benchmarks=("musique",), per_benchmark=2)
    with AnsweringServer(fail=fail) as server:
        report = run(store, plan, host_config(server.base_url))
    assert len(report.errors) == 4 and all("503" in e for e in report.errors)
    outcomes = store.arm_outcomes("test-host")
    errors = outcomes[outcomes["error"].notna()]
    assert len(errors) == 4 and errors["f1"].isna().all() and errors["em"].isna().all()
    assert outcomes[outcomes["error"].isna()]["f1"].notna().all()
    assert (errors["attempts"] == 3).all()  # the first attempt and both retries
    assert (outcomes[outcomes["error"].isna()]["attempts"] == 2).all()  # failed once, then answered
    assert len(plan_work(store, plan)) == 2  # the error rows are planned again


def test_a_host_that_keeps_failing_stops_the_run(store: Store) -> None:
    plan = EnumerationPlan(host="test-host", split="test", benchmarks=("fever",), per_benchmark=4)
    with AnsweringServer(fail=lambda body, attempt: 500) as server:
        report = run(store, plan, host_config(server.base_url, retries=0))
    assert report.calls == len(report.errors) == 10  # of 24 planned
    assert report.status == "stopped: 10 calls failed in a row (is the host up?)"


def test_call_limit_stops_cleanly(store: Store) -> None:
    plan = EnumerationPlan(host="test-host", split="test", benchmarks=("fever",), max_calls=5, concurrency=1)
    with AnsweringServer() as server:
        report = run(store, plan, host_config(server.base_url))
    assert report.calls == 5 and report.status == "stopped: call limit reached"
    assert store.job(report.job_id)["status"] == "stopped: call limit reached"


def test_call_limit_counts_calls_in_flight(store: Store) -> None:
    plan = EnumerationPlan(host="test-host", split="test", benchmarks=("musique", "fever"), probes=True,
                           max_calls=7, concurrency=3)
    with AnsweringServer(delay_s=0.05) as server:
        report = run(store, plan, host_config(server.base_url))
        requests = sum(server.attempts.values())
    assert report.calls == requests == 7
    samples = (store.probe_outcomes("test-host")["probe"] != "greedy").sum()
    assert len(store.arm_outcomes("test-host")) + samples == 7  # one stored row per call


def test_probes_added_later_reuse_the_stored_direct_answer(store: Store) -> None:
    without = EnumerationPlan(host="test-host", split="test", benchmarks=("musique",), per_benchmark=2)
    with_probes = dataclasses.replace(without, probes=True)
    with AnsweringServer() as server:
        run(store, without, host_config(server.base_url))
        direct = store.arm_outcomes("test-host").query("arm == 'direct:no_think'")
        assert count_calls(plan_work(store, with_probes)) == 2 * 3  # the three samples only
        report = run(store, with_probes, host_config(server.base_url))
    assert report.calls == 6
    after = store.arm_outcomes("test-host").query("arm == 'direct:no_think'")
    assert after["finished_at"].tolist() == direct["finished_at"].tolist()  # not asked again
    greedy = store.probe_outcomes("test-host").query("probe == 'greedy'")
    assert greedy["answer"].tolist() == direct["answer"].tolist()
    assert greedy["tokens_in"].tolist() == direct["tokens_in"].tolist()


def count_rows(path: str) -> tuple[int, int]:
    with duckdb.connect(path, read_only=True) as connection:
        total = connection.execute("SELECT count(*) FROM arm_outcomes").fetchone()[0]
        keys = connection.execute(
            "SELECT count(*) FROM (SELECT DISTINCT host, benchmark, example_id, arm FROM arm_outcomes)").fetchone()[0]
    return total, keys


def patient_host(url: str) -> HostConfig:
    """The test host with a timeout no held call reaches (a held call is not retried or failed)."""
    return dataclasses.replace(host_config(url), timeout_s=HELD_CALL_TIMEOUT_S)


HELD_CALL_TIMEOUT_S = 3600.0


def wait_for_rows(store: Store, rows: int, process: subprocess.Popen) -> None:
    """Until the store holds `rows` outcomes, the job still running (a hang ends at pytest's --timeout)."""
    while store.table_counts()["arm_outcomes"] < rows:
        assert process.poll() is None, "the job ended before writing the rows it was given"
        time.sleep(0.05)


def test_sigkill_midway_loses_nothing_and_rerun_completes(store: Store) -> None:
    release = threading.Event()
    with AnsweringServer() as server:
        server.on_request = held_after(24, release)  # 24 of 72 calls answered, then held: killed midway
        save_host_config(store, patient_host(server.base_url))
        command = [sys.executable, "-m", "forge_core.cli", "enumerate", "--host", "test-host", "--split", "test",
                   "--benchmark", "fever", "--per-benchmark", "12", "--concurrency", "2", "--json"]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            wait_for_rows(store, 20, process)
            process.send_signal(signal.SIGKILL)
            process.wait()
        finally:
            release.set()
        before_total, before_keys = count_rows(str(store.path))
        assert 20 <= before_total <= 24 and before_total == before_keys
        finished = store.arm_outcomes("test-host")[["example_id", "arm", "answer"]]
        rerun = subprocess.run(command, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert json.loads(rerun.stdout)["calls"] == 72 - before_total
    after_total, after_keys = count_rows(str(store.path))
    assert after_total == after_keys == 72
    kept = store.arm_outcomes("test-host").merge(finished, on=["example_id", "arm"], suffixes=("", "_before"))
    assert len(kept) == before_total and (kept["answer"] == kept["answer_before"]).all()


def test_ctrl_c_stops_cleanly_and_keeps_finished_rows(store: Store) -> None:
    release = threading.Event()
    with AnsweringServer() as server:
        server.on_request = held_after(12, release)  # 12 of 240 calls answered, then held until the job stopped
        save_host_config(store, patient_host(server.base_url))
        command = [sys.executable, "-m", "forge_core.cli", "enumerate", "--host", "test-host", "--split", "test",
                   "--benchmark", "fever", "--per-benchmark", "40"]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for_rows(store, 10, process)
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate()  # stops with calls in flight (a hang ends at pytest's --timeout)
        finally:
            release.set()
    assert process.returncode == 130 and "Traceback" not in stderr and "interrupted" in stderr
    jobs = store.jobs("enumerate")
    assert jobs.iloc[0]["status"] == "interrupted"
    assert 10 <= store.table_counts()["arm_outcomes"] <= 12


DURABILITY_BOUND_S = 1.0  # README: a kill -9 loses at most the calls finished in the last second


def stored_rows(store: Store) -> set[tuple]:
    rows = store.arm_outcomes("test-host")
    assert rows["answer"].notna().all() and rows["finished_at"].notna().all()  # never a partial row
    return set(rows[["benchmark", "example_id", "arm", "answer", "f1", "tokens_in"]].itertuples(index=False))


def test_sigkill_loses_no_stored_call_and_resume_equals_an_uninterrupted_run(
        store: Store, tmp_path: Path, benchmarks_root: Path) -> None:
    # The writer commits what waits at least every FLUSH_SECONDS (how soon, measured, is not a test's to say);
    # here every answered call is in the file while the job still runs, and a kill -9 then loses none of them.
    assert outcome_writer.FLUSH_SECONDS <= DURABILITY_BOUND_S
    command = [sys.executable, "-m", "forge_core.cli", "enumerate", "--host", "test-host", "--split", "test",
               "--benchmark", "musique", "--benchmark", "fever", "--per-benchmark", "30", "--concurrency", "4"]
    uninterrupted = Store(tmp_path / "uninterrupted.duckdb")
    import_benchmarks(uninterrupted, benchmarks_root, ["musique", "fever"])
    release = threading.Event()
    with AnsweringServer() as server:
        server.on_request = held_after(150, release)  # 150 of 360 calls answered, then held: no batch fills up
        for target in (store, uninterrupted):
            save_host_config(target, patient_host(server.base_url))
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for_rows(store, 150, process)  # every answered call stored, the job still running
            process.send_signal(signal.SIGKILL)
            process.wait()
        finally:
            release.set()
        with server.lock:
            answered = len(server.answered_at)
        total, keys = count_rows(str(store.path))
        assert total == keys == answered == 150  # no duplicate, and the kill lost no stored call
        assert subprocess.run(command, capture_output=True).returncode == 0  # resume
        environment = {**os.environ, "FORGE_STORE": str(uninterrupted.path)}
        assert subprocess.run(command, capture_output=True, env=environment).returncode == 0
    total, keys = count_rows(str(store.path))
    assert total == keys == 360
    assert stored_rows(store) == stored_rows(uninterrupted)


class CountingStore(Store):
    """Counts the store's connections and attached transactions (the outcome writer's batches)
    once `counting` is set."""

    counting = False
    connections = 0
    batches = 0

    def connect(self):
        self.connections += self.counting
        return super().connect()

    def attached_transaction(self, attacher):
        self.batches += self.counting
        return super().attached_transaction(attacher)


def test_progress_and_the_cancel_check_open_no_connection_while_calls_run(
        tmp_path: Path, benchmarks_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(outcome_writer, "FLUSH_SECONDS", 3600.0)  # one batch, written on close
    store = CountingStore(tmp_path / "counted.duckdb")
    import_benchmarks(store, benchmarks_root, ["musique"])
    plan = EnumerationPlan(host="test-host", split="test", benchmarks=("musique",), per_benchmark=8, concurrency=4)

    async def go():
        async with OpenAICompatibleHost(host_config(server.base_url), retry_base_delay_s=0.001) as client:
            return await enumerate_arms(store, plan, client, before_calls=lambda: setattr(store, "counting", True))

    with AnsweringServer() as server:
        report = asyncio.run(go())
    assert report.calls == 48 and report.status == "finished"
    # every outcome and the job's progress in the writer's one batch, then the job's row closed: two
    # connections for 48 calls (progress written apart would open the store while calls run)
    assert (store.batches, store.connections) == (1, 1)
    assert store.job(report.job_id)["done"] == 48 and len(store.arm_outcomes("test-host")) == 48
