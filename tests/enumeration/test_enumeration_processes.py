"""`forge enumerate --processes N`: one plan shared by N client processes writing one store."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from forge_core.data.importing import import_benchmarks
from forge_core.enumeration.planning import EnumerationPlan, plan_work
from forge_core.enumeration.processes import EnumerationProcessError, _collect, _merge, split_plan
from forge_core.enumeration.runner import EnumerationReport
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.store import Store

from support.answering_server import AnsweringServer

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


def test_merged_report_sums_counts_and_cpu_over_the_span_of_every_call() -> None:
    first = EnumerationReport("job-a", 10, calls=6, tokens=60, errors=["x"], status="finished", seconds=2.0,
                              started_at=100.0, cpu_s=1.5)
    second = EnumerationReport("job-b", 8, calls=4, tokens=40, status="finished", seconds=3.0, started_at=100.5,
                               cpu_s=0.25)
    merged = _merge([first, second])
    assert (merged.job_id, merged.planned_calls, merged.calls, merged.tokens) == ("job-a,job-b", 18, 10, 100)
    assert (merged.errors, merged.status, merged.started_at, merged.seconds) == (["x"], "finished", 100.0, 3.5)
    assert merged.cpu_s == 1.75  # every process's CPU from its first call to its last row written


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


def test_a_killed_process_stops_the_others_and_is_one_line(tmp_path: Path, benchmarks_root: Path) -> None:
    # One client process dies (kill -9, as the OOM killer would): the other is interrupted and
    # keeps what it finished, and the command ends with one line naming the dead one.
    store = Store(tmp_path / "s.duckdb")
    import_benchmarks(store, benchmarks_root, ("fever",))
    with AnsweringServer(delay_s=0.1) as server:
        save_host_config(store, HostConfig(name="fast-host", kind="openai", model="m", base_url=server.base_url,
                                           max_concurrency=2))
        command = forge_command(store, "enumerate", "--host", "fast-host", "--split", "train", "--benchmark", "fever",
                                "--processes", "2")
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "FORGE_STORE": str(store.path)}) as cli:
            while len(store_rows(store)) < 20:  # both processes are calling (a hang ends at pytest's --timeout)
                assert cli.poll() is None
                time.sleep(0.2)
            victim = client_processes(cli.pid)[1]
            os.kill(victim, signal.SIGKILL)
            output = "".join(cli.communicate(timeout=120))
    assert cli.returncode == 2 and "ended (exit code -9)" in output and "Traceback" not in output
    jobs = store.jobs("enumerate")
    assert "interrupted" in set(jobs["status"])  # the survivor stopped and closed its job
    rows = store_rows(store)
    assert not rows.duplicated(["benchmark", "example_id", "arm"]).any()
    survivor = jobs[jobs["status"] == "interrupted"].iloc[0]
    assert len(rows) >= int(survivor["done"])


def store_rows(store: Store):
    return store.arm_outcomes("fast-host")


def client_processes(parent: int) -> list[int]:
    """The enumeration processes a `forge enumerate` started (not multiprocessing's resource tracker)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if f"PPid:\t{parent}\n" in status and "spawn_main" in command:
                found.append(int(entry.name))
    return sorted(found)


def forge_command(store: Store, *args: str) -> list[str]:
    return [sys.executable, "-m", "forge_core.cli", *args]


class EndedChild:
    """What `_collect` reads of a process that has exited: its exit code."""

    exitcode = -9

    def join(self, timeout: float | None = None) -> None:
        pass


def test_a_process_killed_in_the_middle_of_a_message_is_one_error_not_a_hang() -> None:
    # kill -9 while a progress message is half written: its pipe ends short; the other's messages
    # are untouched, and the parent names the dead process instead of waiting forever.
    killed_receiver, killed_sender = multiprocessing.Pipe(duplex=False)
    other_receiver, other_sender = multiprocessing.Pipe(duplex=False)
    sent = [EnumerationReport("other-job", planned_calls=3, calls=calls, started_at=1.0) for calls in (1, 2, 3)]
    delivered: list[EnumerationReport] = []

    def on_progress(report: EnumerationReport) -> None:
        delivered.append(report)
        if len(delivered) == 1:  # the other has reported once: it sends the rest as the first one dies
            other_sender.send(("progress", 1, sent[1]))
            other_sender.send(("done", 1, sent[2]))
            os.write(killed_sender.fileno(), (1000).to_bytes(4, "big") + b"half a message")
            killed_sender.close()

    other_sender.send(("progress", 1, sent[0]))
    with pytest.raises(EnumerationProcessError, match=r"process 1 ended \(exit code -9\)"):
        _collect([EndedChild(), EndedChild()], [killed_receiver, other_receiver], on_progress)
    # every message of the other arrived whole and in order: read by the parent, or still in its pipe
    # for the parent's final drain
    pending = []
    while other_receiver.poll():
        pending.append(other_receiver.recv())
    assert delivered[0] == sent[0]
    assert delivered + [report for _, _, report in pending] == sent
    assert [(kind, index) for kind, index, _ in pending] == [("progress", 1), ("done", 1)][len(delivered) - 1:]
