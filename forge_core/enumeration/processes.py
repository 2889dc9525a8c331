"""Stage 0 over several client processes on one machine, into one store.

One event loop keeps a few hundred calls in flight; past that, its own CPU per call (retrieval,
Summary, prompt, HTTP, scoring: about 0.8 ms) is the limit. `enumerate_in_processes` splits a
plan into parts (every n-th query of each benchmark, as `--shard` does across machines) and runs
each part in its own process with `enumerate_arms`, all writing to the same store file: each
process commits its own batches (DuckDB lets one process in at a time and every batch is a short
transaction, so they take turns) and has its own row in the jobs table. Concurrency, each
endpoint's `max_concurrency` (rounded up), `--limit`, `--max-calls` and `--max-tokens` are
shared out between the processes. The processes start their calls together, once each has
loaded its retrieval indexes and planned its part.

Ctrl-C reaches every process (they share the terminal's process group): each writes its
finished calls and stops, as a single process does. A process whose parent is gone (kill -9)
interrupts itself the same way within a second.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from multiprocessing import connection
from multiprocessing.connection import Connection

from forge_core.enumeration.planning import EnumerationPlan
from forge_core.enumeration.runner import EnumerationReport, enumerate_on_host
from forge_core.errors import InvalidInput
from forge_core.evidence.answering import load_retriever
from forge_core.hosts.base import HostConfig
from forge_core.store import Store


class EnumerationProcessError(RuntimeError):
    """One of the client processes failed; its finished calls are stored."""


PROGRESS_SECONDS = 0.5  # how often a process reports its counts to the parent
START_TIMEOUT_S = 600.0  # waiting for the slowest process to get ready
ORPHAN_CHECK_SECONDS = 1.0  # how often a process checks that its parent is alive


def check_processes(processes: int, concurrency: int) -> None:
    """Refuse a process count the plan cannot share out (each process needs a query in flight)."""
    if not 1 <= processes <= concurrency:
        raise InvalidInput(f"--processes {processes}: choose between 1 and the queries in flight ({concurrency})")


def split_plan(plan: EnumerationPlan, processes: int) -> list[EnumerationPlan]:
    """The plan's parts, one per process: disjoint, together the whole plan."""
    machine, machines = plan.shard
    return [dataclasses.replace(
        plan,
        shard=(machine + machines * index, machines * processes),
        concurrency=math.ceil(plan.concurrency / processes),
        limit=_share(plan.limit, processes, index),
        max_calls=_share(plan.max_calls, processes, index),
        max_tokens=_share(plan.max_tokens, processes, index),
        budget_usd=None if plan.budget_usd is None else plan.budget_usd / processes,
    ) for index in range(processes)]


def _share(total: int | None, parts: int, index: int) -> int | None:
    """Part `index` of `total` split as evenly as integers allow (None stays None)."""
    if total is None:
        return None
    return total // parts + (1 if index < total % parts else 0)


def enumerate_in_processes(
    store: Store,
    plan: EnumerationPlan,
    host_config: HostConfig,
    processes: int,
    on_progress: Callable[[EnumerationReport], None] | None = None,
) -> EnumerationReport:
    """Run the plan in `processes` client processes against a served host configuration; returns
    their reports merged (`seconds` from the first call started to the last one finished).
    When one process fails, the others are interrupted (keeping what they finished) and
    `EnumerationProcessError` names the failed one, once all have ended."""
    check_processes(processes, plan.concurrency)
    context = multiprocessing.get_context("spawn")
    ready = context.Barrier(processes)
    part_config = dataclasses.replace(host_config, max_concurrency=math.ceil(host_config.max_concurrency / processes))
    pipes = [context.Pipe(duplex=False) for _ in range(processes)]  # (receiver, sender), one per process
    children = [context.Process(target=_run_part, name=f"forge-enumerate-{index + 1}",
                                args=(str(store.path), part, part_config, os.getpid(), index, ready, sender))
                for index, (part, (_, sender)) in enumerate(zip(split_plan(plan, processes), pipes))]
    for child, (_, sender) in zip(children, pipes):
        child.start()
        sender.close()  # the child holds the only sending end: its exit is the receiver's end of file
    receivers = [receiver for receiver, _ in pipes]
    try:
        finals = _collect(children, receivers, on_progress)
    except EnumerationProcessError:
        _interrupt(children)  # the others stop too, as on Ctrl-C, keeping what they finished
        raise
    finally:
        ready.abort()  # a process still waiting for one that failed gives up at once
        _join(children, receivers)
    return _merge(list(finals.values()))


def _collect(children: list, receivers: list[Connection],
             on_progress: Callable[[EnumerationReport], None] | None) -> dict[int, EnumerationReport]:
    """Read the processes' messages until each has sent its final report; progress goes to
    `on_progress` merged. Each process has its own pipe, so one killed in the middle of a message
    (kill -9) cuts only its own pipe short, never the others' messages."""
    latest: dict[int, EnumerationReport] = {}
    finals: dict[int, EnumerationReport] = {}
    while len(finals) < len(children):
        for receiver in connection.wait([r for i, r in enumerate(receivers) if i not in finals], timeout=1.0):
            index = receivers.index(receiver)
            try:
                kind, _, payload = receiver.recv()
            except (EOFError, OSError):  # the process ended without its final report
                raise _ended_early(children[index], index) from None
            if kind == "failed":
                raise EnumerationProcessError(f"enumeration process {index + 1}: {payload}")
            if kind == "done":
                finals[index] = payload
            latest[index] = payload
            if on_progress:
                on_progress(_merge(list(latest.values())))
    return finals


def _ended_early(child, index: int) -> EnumerationProcessError:
    """The error for a process that ended before reporting: killed, crashed or interrupted on its own."""
    child.join(timeout=5.0)  # its pipe closes as it exits: wait for the exit code
    return EnumerationProcessError(
        f"enumeration process {index + 1} ended (exit code {child.exitcode}) before reporting; "
        "finished calls are stored, run the same command again to continue")


def _interrupt(children: list) -> None:
    for child in children:
        if child.is_alive():
            os.kill(child.pid, signal.SIGINT)


def _join(children: list, receivers: list[Connection]) -> None:
    """Wait for every process, reading what they still send (a process blocked sending to a full
    pipe cannot exit)."""
    while any(child.is_alive() for child in children):
        for receiver in connection.wait(receivers, timeout=0.2):
            try:
                receiver.recv()
            except (EOFError, OSError):
                receivers = [r for r in receivers if r is not receiver]
    for child in children:
        child.join()


def _merge(reports: list[EnumerationReport]) -> EnumerationReport:
    """One report for all processes: counts and CPU seconds summed, errors joined, the span of all calls."""
    started = min(report.started_at for report in reports)
    finished = max(report.started_at + report.seconds for report in reports)
    statuses = sorted({report.status for report in reports})
    return EnumerationReport(
        job_id=",".join(report.job_id for report in reports),
        planned_calls=sum(report.planned_calls for report in reports),
        calls=sum(report.calls for report in reports),
        tokens=sum(report.tokens for report in reports),
        errors=[line for report in reports for line in report.errors],
        status=statuses[0] if len(statuses) == 1 else "; ".join(statuses),
        seconds=max(0.0, finished - started),
        started_at=started,
        spent_usd=None if reports[0].spent_usd is None else sum(report.spent_usd or 0.0 for report in reports),
        cpu_s=sum(report.cpu_s for report in reports),
    )


# ------------------------------------------------------------------ in each process

def _run_part(store_path: str, plan: EnumerationPlan, host_config: HostConfig, parent_pid: int, index: int,
              ready, updates: Connection) -> None:
    """One process's part: load the indexes, wait for the others, enumerate, report."""
    # The parent stops its processes with SIGINT; a process started from a background job (nohup
    # ... &) would inherit SIGINT ignored and never stop, so take Python's Ctrl-C handler back.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=_interrupt_when_orphaned, args=(parent_pid,), daemon=True).start()
    store = Store(store_path)
    try:
        for benchmark in plan.benchmarks:
            load_retriever(store, benchmark)
        report = asyncio.run(_enumerate_part(store, plan, host_config, index, ready, updates))
    except KeyboardInterrupt:
        return  # Ctrl-C: enumerate_arms has written every finished call; the parent was interrupted too
    except BaseException as error:  # the parent turns it into one line naming this process
        ready.abort()
        updates.send(("failed", index, " ".join(str(error).split()) or type(error).__name__))
        return
    updates.send(("done", index, report))


def _interrupt_when_orphaned(parent_pid: int) -> None:
    """Interrupt this process, as Ctrl-C would, once its parent is gone (killed)."""
    while os.getppid() == parent_pid:
        time.sleep(ORPHAN_CHECK_SECONDS)
    os.kill(os.getpid(), signal.SIGINT)


async def _enumerate_part(store: Store, plan: EnumerationPlan, host_config: HostConfig,
                          index: int, ready, updates: Connection) -> EnumerationReport:
    last_sent = 0.0

    def on_progress(report: EnumerationReport) -> None:
        nonlocal last_sent
        if time.monotonic() - last_sent >= PROGRESS_SECONDS:
            last_sent = time.monotonic()
            updates.send(("progress", index, dataclasses.replace(report, errors=list(report.errors))))

    return await enumerate_on_host(store, plan, host_config, on_progress,
                                   before_calls=lambda: ready.wait(START_TIMEOUT_S))
