"""Stage 0 as a Ray Data job (`forge enumerate --engine ray`).

The driver plans exactly what the in-process run would (`plan_work`, in `order_work`'s order) and
retrieves each query's evidence, so the workers need no store and no index. Ray Data then sends the
queries in batches to tasks (`call_queries`), one a core at a time, each with a host client of its
own; a task runs the queries of its batch concurrently and each query's calls one after another,
through the same
`call_arm`/`call_sample` as the in-process runner (the same request bodies, thinking fields per row,
the same scoring). The driver is the only writer: it takes each finished query's rows from the
stream into an `OutcomeWriter`, as the in-process run does, with its job row and progress.

Limits: `--max-calls` caps the planned calls before anything is sent (the first calls in run order);
`--max-tokens` stops the stream once the stored tokens reach it, and the queries then in flight are
dropped unstored (a rerun sends them again). The dollar budget needs every call's reservation before
it starts, which only the in-process run makes: it is refused here. Ctrl-C stores every query
already taken from the stream.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from forge_core.arms import parse_arm
from forge_core.engines import ray_session
from forge_core.enumeration.planning import EnumerationPlan, QueryWork, order_work, plan_work, query_calls
from forge_core.enumeration.runner import CallRows, CallSite, EnumerationReport, call_arm, call_sample
from forge_core.errors import InvalidInput
from forge_core.evidence.answering import Evidence, arm_request, retrieve_evidence
from forge_core.evidence.prompts import sample_probe_request
from forge_core.evidence.retriever_backends import open_retriever
from forge_core.evidence.retrievers import get_retriever_config, retriever_hash
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import config_hash, make_host
from forge_core.records import SAMPLE_PROBES, Example
from forge_core.store import Store, job_run
from forge_core.store.outcome_writer import OutcomeWriter

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class QueryTask:
    """One query as a worker gets it: the example, its evidence, and its calls in run order (arm or
    probe sample name, whether the call is also the greedy probe)."""

    example: Example
    evidence: Evidence
    calls: tuple[tuple[str, bool], ...]


@dataclass(frozen=True)
class CallerSettings:
    """What a Ray Data task needs to call the host: its configuration (the key is read from the
    worker's environment, never shipped), the configuration's hash and the evidence's."""

    host_config: HostConfig
    host_hash: str
    evidence_hash: str


def call_queries(batch: dict[str, Any], caller: CallerSettings) -> dict[str, list]:
    """A Ray Data task: each query of the batch (its calls in order), the queries concurrently, on a
    host client of the task's own (closed at the end)."""
    return {"calls": asyncio.run(_queries(list(batch["task"]), caller))}


async def _queries(tasks: list[QueryTask], caller: CallerSettings) -> list[list[CallRows]]:
    client = make_host(caller.host_config)  # inside the task's event loop: its connections belong to it
    site = CallSite(client, caller.host_config.name, caller.host_hash, caller.evidence_hash)
    try:
        return list(await asyncio.gather(*(_query(site, task) for task in tasks)))
    finally:
        await client.aclose()


async def _query(site: CallSite, task: QueryTask) -> list[CallRows]:
    rows = []
    for name, greedy_probe in task.calls:
        example, evidence = task.example, task.evidence
        if name in SAMPLE_PROBES:
            request = sample_probe_request(evidence.question, name, example.is_fever)
            rows.append(await call_sample(site, example, name, request))
        else:
            arm = parse_arm(name)
            rows.append(await call_arm(site, example, evidence, arm, arm_request(evidence, arm, example.is_fever),
                                       greedy_probe))
    return rows


def warm_workers(ray: Any, workers: int) -> threading.Thread:
    """Start, in a thread, a tiny Ray Data job of the same shape as the real one (one `map_batches`
    task on each of `workers` workers, spread over the nodes) whose function lives in this module:
    sent before the driver plans, it starts the worker processes and imports Ray Data's task code
    and this module in them while the driver plans and retrieves, so the job's first batches pay for
    none of it (Ray reuses the processes for the job's tasks). A bare `ray.remote` task does not do
    it: it never imports the map tasks' code, and the first batch then waited seconds for it."""
    items = [{"worker": worker} for worker in range(workers)]
    warm_up = ray.data.from_items(items).map_batches(_unchanged, batch_size=1, concurrency=workers, num_cpus=1)
    thread = threading.Thread(target=warm_up.materialize, daemon=True)
    thread.start()
    return thread


def _unchanged(batch: dict[str, Any]) -> dict[str, Any]:
    return batch


def workers_at_once(ray: Any, plan: EnumerationPlan) -> int:
    """The Ray Data tasks in flight: one a core of the cluster, no more than the plan's concurrency."""
    return max(1, min(int(ray.cluster_resources().get("CPU", 1)), plan.concurrency))


def query_tasks(store: Store, plan: EnumerationPlan, work: list[QueryWork]) -> list[QueryTask]:
    """The plan's missing calls as one task per query, in run order, with the evidence read here;
    at most `plan.max_calls` calls in all."""
    retriever_config = get_retriever_config(store, plan.retriever)
    retrievers = {benchmark: open_retriever(store, retriever_config, benchmark) for benchmark in plan.benchmarks}
    tasks, remaining = [], plan.max_calls
    for unit in order_work(work, plan.n_arms, prefix_order=True):
        calls = tuple(query_calls(unit))
        if remaining is not None:
            calls = calls[:remaining]
            remaining -= len(calls)
        if not calls:
            break
        evidence = retrieve_evidence(retrievers[unit.example.benchmark], unit.example.question)
        tasks.append(QueryTask(unit.example, evidence, calls))
    return tasks


def check_ray_plan(plan: EnumerationPlan) -> None:
    """Refuse, in one line, what a Ray run cannot honour: a dollar budget."""
    if plan.budget_usd is not None:
        raise InvalidInput("--budget-usd reserves each call before it starts, which only the in-process run "
                           "does: drop --engine ray, or bound the run with --max-calls / --max-tokens")


def enumerate_on_ray(store: Store, plan: EnumerationPlan, host_config: HostConfig,
                     on_progress: Callable[[EnumerationReport], None] | None = None,
                     address: str | None = None) -> EnumerationReport:
    """Run the plan's missing calls on Ray (see the module docstring) against a served host
    configuration (a base URL every worker can reach); returns what was done."""
    check_ray_plan(plan)
    ray = ray_session(address)
    warming = warm_workers(ray, workers_at_once(ray, plan))
    tasks = query_tasks(store, plan, plan_work(store, plan))
    warming.join()
    planned = sum(len(task.calls) for task in tasks)
    job_id = f"enumerate-{uuid.uuid4().hex[:10]}"
    report = EnumerationReport(job_id=job_id, planned_calls=planned)
    evidence_hash = retriever_hash(get_retriever_config(store, plan.retriever))
    with job_run(store, "enumerate", {**plan.to_dict(), "engine": "ray"}, planned, job_id) as job:
        writer = OutcomeWriter(store)
        try:
            if tasks:
                _stream(ray, tasks, plan, host_config, evidence_hash, writer, report, on_progress)
        finally:
            writer.close()  # every call taken from the stream is written before the job is closed
            job.end("finished" if report.status == "running" else report.status,
                    f"{report.calls} calls, {len(report.errors)} errors", report.calls, len(report.errors))
    report.status = job.status
    return report


def _stream(ray: Any, tasks: list[QueryTask], plan: EnumerationPlan, host_config: HostConfig, evidence_hash: str,
            writer: OutcomeWriter, report: EnumerationReport,
            on_progress: Callable[[EnumerationReport], None] | None) -> None:
    """Send the tasks through the actors and store each finished query's rows as it comes back."""
    at_once = min(workers_at_once(ray, plan), len(tasks))
    per_batch = max(1, math.ceil(plan.concurrency / at_once))
    caller = CallerSettings(host_config, config_hash(host_config), evidence_hash)
    calls = ray.data.from_items([{"task": task} for task in tasks]).map_batches(
        call_queries, fn_kwargs={"caller": caller}, batch_size=per_batch, concurrency=at_once, num_cpus=1,
        batch_format="numpy")
    report.started_at = started = time.monotonic()
    for batch in calls.iter_batches(batch_size=None, batch_format="numpy"):
        for query in batch["calls"]:
            for call in query:
                _store(call, writer, report)
            if on_progress:
                on_progress(report)
        if plan.max_tokens is not None and report.tokens >= plan.max_tokens:
            report.status = "stopped: token limit reached"
            break
    report.seconds = time.monotonic() - started


def _store(call: CallRows, writer: OutcomeWriter, report: EnumerationReport) -> None:
    for row in (*call.arms, *call.probes):
        writer.put(row)
    report.calls += 1
    report.tokens += call.tokens_in + call.tokens_out
    if call.error:
        report.errors.append(call.error)
