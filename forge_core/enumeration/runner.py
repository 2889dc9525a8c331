"""Stage 0: run a host on every (query, arm) of an alphabet and store each outcome as it lands.

- Concurrent: `concurrency` queries in flight at once.
- In the plan's order (`forge_core.enumeration.planning.order_work`): prefix-aware by default, each
  query's calls one after another, ordered so each shares the longest prompt prefix with the one
  before (`query_calls`): on a one-context llama.cpp server at concurrency 1, a query's calls are
  never interleaved with another query's.
- Never waiting on the store: finished outcomes go to an `OutcomeWriter`, which commits them in
  batches from a background thread (every 0.5 s, or 4,096 rows), and the job's progress and its
  cancel check ride on those batches (one connection a batch, none of their own), so no store
  access runs on the event loop while calls fly.
- Resumable: a rerun plans only what is missing (error rows count as missing). A normal end,
  a cancel or Ctrl-C writes every finished call; a crash or kill -9 loses at most the calls
  finished in the last second (the writer's bound), which the rerun redoes; never a duplicate
  or a partial row.
- Fault-tolerant: the host client retries; a call that still fails is stored as an error row
  (no score) and reported; after 10 failed calls in a row the run stops (the host is likely down).
- Visible and bounded: progress goes to the `jobs` table and a callback; optional limits on
  calls, tokens and US dollars stop the run cleanly; the dashboard can ask a job to cancel. The
  dollar limit (`plan.budget_usd`) starts a call only while the measured spend of the finished
  calls, plus the most that the calls in flight and this one can cost (their counted input and
  their output cap, at the host's prices), stays within it.

Probes (Full features): the greedy Direct probe is the `direct:no_think` request itself (same
prompt, temperature 0), so its outcome is recorded as the `greedy` probe without a second call,
also when that arm was stored by an earlier run without probes; three self-consistency samples
on the same prompt run at temperature 0.7, top-p 0.9, 24 tokens.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from forge_core import telemetry
from forge_core.arms import Arm, parse_arm
from forge_core.enumeration.budget import SpendBudget
from forge_core.enumeration.outcome_rows import (
    answered_arm_row,
    answered_probe_row,
    failed_arm_row,
    failed_probe_row,
    greedy_probe_row,
)
from forge_core.enumeration.planning import EnumerationPlan, QueryWork, count_calls, order_work, plan_work, query_calls
from forge_core.evidence.answering import Evidence, arm_answer, arm_request, retrieve_evidence
from forge_core.evidence.prompts import sample_probe_request
from forge_core.evidence.retriever_backends import open_retriever
from forge_core.evidence.retrievers import get_retriever_config, retriever_hash
from forge_core.hosts.base import GenerationRequest, Host, HostConfig, HostError
from forge_core.hosts.lifetime import hosted
from forge_core.hosts.registry import config_hash
from forge_core.records import SAMPLE_PROBES, ArmOutcome, Example, ProbeOutcome
from forge_core.store import Store, job_run, utc_now
from forge_core.store.database import JobCounts
from forge_core.store.outcome_writer import OutcomeWriter

log = logging.getLogger(__name__)

JOB_UPDATE_SECONDS = 2.0  # judging's progress to the jobs table at most this often (enumeration's rides on batches)
MAX_FAILURES_IN_A_ROW = 10  # then the host is likely down: stop rather than fill the store with errors


@dataclass
class EnumerationReport:
    """What a run did; `errors` lists one line per failed call."""

    job_id: str
    planned_calls: int
    calls: int = 0
    tokens: int = 0
    errors: list[str] = field(default_factory=list)
    status: str = "running"
    seconds: float = 0.0  # from the first call started to the last one finished
    started_at: float = 0.0  # time.monotonic() when the calls started
    spent_usd: float | None = None  # measured spend at the host's prices, under a budget
    cpu_s: float = 0.0  # this process's CPU seconds (every thread) from the first call to the last row written


@dataclass(frozen=True)
class CallSite:
    """Who answers a run's calls, and what each of its rows records: the client, the host's name
    and configuration hash, and the hash of the retriever the evidence came from."""

    client: Host
    host: str
    host_hash: str
    retriever_hash: str


@dataclass(frozen=True)
class CallRows:
    """What one finished call stores, and what it counts: its tokens, and an error line if it failed."""

    arms: tuple[ArmOutcome, ...]
    probes: tuple[ProbeOutcome, ...]
    tokens_in: int
    tokens_out: int
    error: str | None


async def call_arm(site: CallSite, example: Example, evidence: Evidence, arm: Arm, request: GenerationRequest,
                   greedy_probe: bool) -> CallRows:
    """One (query, arm) call (`request`: `arm_request` of the evidence) and its scored row (an error
    row if the host failed it), with the greedy probe's row too when asked."""
    started = utc_now()
    try:
        generation = await telemetry.traced_generate(site.client, request, call_attributes(example, arm.name))
    except HostError as error:
        row = failed_arm_row(site.host, example, arm.name, str(error), site.host_hash, started, utc_now(),
                             latency_ms=0.0, attempts=error.attempts, retriever_hash=site.retriever_hash)
        return CallRows((row,), (), 0, 0, f"{example.benchmark}/{example.example_id} {arm.name}: {error}")
    answer = arm_answer(arm, generation, evidence.support_text(arm.support), example.is_fever)
    row = answered_arm_row(site.host, example, answer, site.host_hash, started, utc_now(),
                           latency_ms=answer.latency_ms, attempts=answer.attempts, retriever_hash=site.retriever_hash)
    probes = (greedy_probe_row(site.host, example, answer, site.host_hash, utc_now(), latency_ms=answer.latency_ms),)
    return CallRows((row,), probes if greedy_probe else (), answer.tokens_in, answer.tokens_out, None)


def call_attributes(example: Example, call: str) -> dict[str, str]:
    """FORGE's attributes of one enumeration call's span (`forge_core.telemetry`)."""
    return {"forge.call": call, "forge.benchmark": example.benchmark, "forge.example_id": example.example_id}


async def call_sample(site: CallSite, example: Example, probe: str, request: GenerationRequest) -> CallRows:
    """One self-consistency sample on the Direct prompt (`request`: `sample_probe_request`) and its
    row (an error row if it failed)."""
    try:
        generation = await telemetry.traced_generate(site.client, request, call_attributes(example, probe))
    except HostError as error:
        row = failed_probe_row(site.host, example, probe, str(error), site.host_hash, utc_now(), latency_ms=0.0)
        return CallRows((), (row,), 0, 0, f"{example.benchmark}/{example.example_id} {probe}: {error}")
    row = answered_probe_row(site.host, example, probe, generation, site.host_hash, utc_now(),
                             latency_ms=generation.latency_ms)
    return CallRows((), (row,), row.tokens_in, row.tokens_out, None)


class _Run:
    """One enumeration run: shared state of its workers."""

    def __init__(self, store: Store, writer: OutcomeWriter, plan: EnumerationPlan, client: Host,
                 host_config: HostConfig, report: EnumerationReport,
                 on_progress: Callable[[EnumerationReport], None] | None) -> None:
        self.store, self.writer, self.plan, self.report = store, writer, plan, report
        self.budget = SpendBudget.for_plan(store, plan, host_config)
        self.on_progress = on_progress
        retriever_config = get_retriever_config(store, plan.retriever)
        self.site = CallSite(client, plan.host, config_hash(host_config), retriever_hash(retriever_config))
        self.retrievers = {b: open_retriever(store, retriever_config, b) for b in plan.benchmarks}
        self.cancel_requested = False  # set by the writer thread when the job's row says "cancelling"
        self.in_flight = 0
        self.failures_in_a_row = 0
        self.stopping = False

    # -------------------------------------------------------------- bounds and progress

    def reserve_call(self, request: GenerationRequest) -> float | None:
        """Claim one host call: its cost bound in US dollars (0 without a budget), or None once the
        call, token or dollar limit is reached (calls in flight count against the call and dollar
        limits) or a cancel was requested."""
        plan, report = self.plan, self.report
        if self.cancel_requested:
            self.stop("cancelled")
        if plan.max_calls is not None and report.calls + self.in_flight >= plan.max_calls:
            self.stop("call limit reached")
        if plan.max_tokens is not None and report.tokens >= plan.max_tokens:
            self.stop("token limit reached")
        bound = self.budget.reserve(request) if self.budget and not self.stopping else 0.0
        if bound is None:
            self.stop(f"budget of {plan.budget_usd:g} USD reached (spent {self.budget.spent_usd:.4f} USD)")
        if self.stopping:
            return None
        self.in_flight += 1
        return bound

    def stop(self, reason: str) -> None:
        """Let calls in flight finish, start no new ones."""
        if not self.stopping:
            log.info("enumeration stopping: %s", reason)
            self.stopping = True
            self.report.status = "stopped: " + reason

    def record_call(self, tokens_in: int, tokens_out: int, error: str | None, bound: float) -> None:
        """Count a finished call and report progress to the callback (the writer stores it in the
        jobs table with its next batch)."""
        self.in_flight -= 1
        self.report.calls += 1
        self.report.tokens += tokens_in + tokens_out
        if self.budget:
            self.budget.record(tokens_in, tokens_out, bound)
        self.failures_in_a_row = self.failures_in_a_row + 1 if error else 0
        if error:
            self.report.errors.append(error)
        if self.failures_in_a_row >= MAX_FAILURES_IN_A_ROW:
            self.stop(f"{MAX_FAILURES_IN_A_ROW} calls failed in a row (is the host up?)")
        if self.on_progress:
            self.on_progress(self.report)

    def job_progress(self) -> JobCounts:
        """The counts the writer stores in the jobs table with a batch (called on its thread)."""
        return JobCounts(self.report.job_id, self.report.calls, len(self.report.errors))

    def job_status_read(self, status: str) -> None:
        """The job's status as a batch read it (on the writer's thread): a cancel request stops the
        run before its next call."""
        if status == "cancelling":
            self.cancel_requested = True

    # -------------------------------------------------------------- calls

    async def run_arm(self, example: Example, evidence: Evidence, arm: Arm, greedy_probe: bool) -> None:
        """One (query, arm) call if the limits allow it, stored at once; also stored as the greedy
        probe when asked."""
        request = arm_request(evidence, arm, example.is_fever)
        bound = self.reserve_call(request)
        if bound is not None:
            self.store_call(await call_arm(self.site, example, evidence, arm, request, greedy_probe), bound)

    async def run_sample(self, example: Example, evidence: Evidence, probe: str) -> None:
        """One self-consistency sample on the Direct prompt if the limits allow it, stored at once."""
        request = sample_probe_request(evidence.question, probe, example.is_fever)
        bound = self.reserve_call(request)
        if bound is not None:
            self.store_call(await call_sample(self.site, example, probe, request), bound)

    def store_call(self, call: CallRows, bound: float) -> None:
        """A finished call's rows to the writer, and the call counted."""
        for row in (*call.arms, *call.probes):
            self.writer.put(row)
        self.record_call(call.tokens_in, call.tokens_out, call.error, bound)

    async def run_query(self, work: QueryWork) -> None:
        """A query's missing calls one after another, in `query_calls` order (the Direct prompt's
        calls, then the other arms support by support): one stream of calls per query, each call
        sharing the longest prompt prefix with the one before it."""
        example = work.example
        evidence = retrieve_evidence(self.retrievers[example.benchmark], example.question)
        for name, greedy_probe in query_calls(work):
            if self.stopping:
                return
            if name in SAMPLE_PROBES:
                await self.run_sample(example, evidence, name)
            else:
                await self.run_arm(example, evidence, parse_arm(name), greedy_probe)


async def _worker(run: _Run, queue: asyncio.Queue) -> None:
    while not queue.empty() and not run.stopping:
        await run.run_query(queue.get_nowait())


async def _start_workers(run: _Run, queue: asyncio.Queue, count: int) -> list[asyncio.Task]:
    """Start the workers one after another, each given a turn of the event loop: a worker's first
    request then goes out as soon as its connection is open, instead of after every other worker's
    setup (at 256 workers that wait was about 0.13 s, and it sent the first 256 requests, hence
    their answers, in one burst that the run kept as a wave)."""
    workers = []
    for _ in range(count):
        workers.append(asyncio.create_task(_worker(run, queue)))
        await asyncio.sleep(0)
    return workers


async def enumerate_arms(
    store: Store,
    plan: EnumerationPlan,
    client: Host,
    on_progress: Callable[[EnumerationReport], None] | None = None,
    before_calls: Callable[[], object] | None = None,
) -> EnumerationReport:
    """Run every missing call of the plan on a live host; returns what was done. `before_calls`
    runs once the work is planned, just before the first call (several processes wait for each
    other there)."""
    work = plan_work(store, plan)
    planned = count_calls(work)
    job_id = f"enumerate-{uuid.uuid4().hex[:10]}"
    with job_run(store, "enumerate", plan.to_dict(), planned, job_id) as job:
        report = EnumerationReport(job_id=job.job_id, planned_calls=planned)
        queue: asyncio.Queue = asyncio.Queue()
        for unit in order_work(work, plan.n_arms, plan.prefix_order):
            queue.put_nowait(unit)
        writer = OutcomeWriter(store)
        try:
            run = _Run(store, writer, plan, client, client.config, report, on_progress)
            writer.progress, writer.on_job_status = run.job_progress, run.job_status_read  # with each batch
            if before_calls is not None:
                before_calls()
            started = report.started_at = time.monotonic()
            cpu_started = time.process_time()
            try:
                await asyncio.gather(*await _start_workers(run, queue, max(1, plan.concurrency)))
            finally:
                report.spent_usd = run.budget.spent_usd if run.budget else None
            report.seconds = time.monotonic() - started
        finally:
            job.end("finished" if report.status == "running" else report.status,  # or "stopped: ..."
                    f"{report.calls} calls, {len(report.errors)} errors", report.calls, len(report.errors))
            writer.close()  # every finished call is written before the job is closed (a full disk fails it)
            if report.started_at:
                report.cpu_s = time.process_time() - cpu_started
    report.status = job.status
    return report


async def enumerate_on_host(
    store: Store,
    plan: EnumerationPlan,
    host_config: HostConfig,
    on_progress: Callable[[EnumerationReport], None] | None = None,
    before_calls: Callable[[], object] | None = None,
) -> EnumerationReport:
    """`enumerate_arms` on a client for the host configuration `host_config` (see `hosted`)."""
    async with hosted(host_config) as client:
        return await enumerate_arms(store, plan, client, on_progress, before_calls)

