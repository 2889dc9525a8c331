"""`forge rewards judge` and `forge rewards support`: a judge host rates a host's stored outcomes, as
a resumable job. The request's `kind` (`forge_core.rewards.rating_kinds`) says what is asked: the
judge reward (is the answer correct?) or the support verdict (does the evidence support it?).

The work is every error-free outcome of the chosen queries, under the request's retriever, that has
no row under the rating's identity (its kind's `reward_key`, which names that retriever); queries
are taken round-robin over benchmarks, so a limited run covers every benchmark. Each rating is
stored the moment it lands, in its own short transaction: Ctrl-C, a cancel or kill -9 loses at most
the calls in flight, and the same command run again judges only what is missing. Progress goes to
the jobs table (kind "judge", for both kinds of rating) and a callback. The request itself
(`JudgeRequest`, checked) is `forge_core.rewards.judge_request`'s.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from forge_core.arms import alphabet, parse_arm
from forge_core.enumeration.planning import round_robin
from forge_core.enumeration.runner import JOB_UPDATE_SECONDS, MAX_FAILURES_IN_A_ROW
from forge_core.evidence.answering import Evidence, retrieve_evidence
from forge_core.evidence.retriever_backends import open_retriever
from forge_core.evidence.retrievers import get_retriever_config
from forge_core.hosts.base import Host, HostError
from forge_core.hosts.lifetime import hosted
from forge_core.hosts.registry import config_hash, get_host_config
from forge_core.records import RewardOutcome, is_fever_benchmark
from forge_core.rewards.judge_request import JudgeRequest
from forge_core.rewards.rating_kinds import RatingKind, rating_kind
from forge_core.store import Store, job_run, utc_now

log = logging.getLogger(__name__)

EVIDENCE_KEPT = 64  # queries whose retrieved evidence a run keeps


@dataclass(frozen=True)
class JudgeWork:
    """One stored outcome to judge."""

    benchmark: str
    example_id: str
    arm: str
    question: str
    answer: str  # the scored (extracted) answer


@dataclass
class JudgeReport:
    """What a judge run did; `errors` lists one line per failed call."""

    job_id: str
    reward_key: str
    planned: int
    judged: int = 0
    unrated: int = 0  # replies without a rating (stored as the kind's `unparsed_value`)
    errors: list[str] = field(default_factory=list)
    status: str = "running"
    seconds: float = 0.0


def plan_judging(store: Store, request: JudgeRequest, reward_key: str) -> list[JudgeWork]:
    """The outcomes still to judge, query by query, benchmarks round-robin, within the limit."""
    arms = {arm.name for arm in alphabet(request.n_arms)}
    outcomes = store.arm_outcomes(request.host, retriever_hash=request.retriever_hash(store))
    outcomes = outcomes[outcomes["error"].isna() & outcomes["arm"].isin(arms)
                        & outcomes["benchmark"].isin(request.chosen_benchmarks(store))]
    if request.split != "all":
        splits = store.split_table(request.split_seed)
        chosen = splits[splits["split"] == request.split][["benchmark", "example_id"]]
        outcomes = outcomes.merge(chosen, on=["benchmark", "example_id"])
    per_benchmark = [[(benchmark, example_id) for example_id in sorted(set(group["example_id"]))]
                     for benchmark, group in outcomes.groupby("benchmark", sort=True)]
    keys = round_robin(per_benchmark)[:request.limit]
    judged = store.judged_outcomes(request.host, reward_key)
    questions = _questions(store, keys)
    by_key = {key: group for key, group in outcomes.groupby(["benchmark", "example_id"])}
    work = []
    for key in keys:
        for row in by_key[key].sort_values("arm").itertuples():
            if (row.benchmark, row.example_id, row.arm) not in judged:
                work.append(JudgeWork(row.benchmark, row.example_id, row.arm, questions[key], row.extracted or ""))
    return work


def _questions(store: Store, keys: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    questions = {}
    for benchmark in sorted({benchmark for benchmark, _ in keys}):
        ids = [example_id for name, example_id in keys if name == benchmark]
        questions.update({(e.benchmark, e.example_id): e.question for e in store.examples(benchmark, ids)})
    return questions


class _JudgeRun:
    """One judge run: shared state of its workers."""

    def __init__(self, store: Store, request: JudgeRequest, judge: Host, report: JudgeReport,
                 on_progress: Callable[[JudgeReport], None] | None) -> None:
        self.store, self.request, self.judge, self.report, self.on_progress = store, request, judge, report, on_progress
        self.kind: RatingKind = rating_kind(request.kind)
        self.judge_hash = config_hash(judge.config)
        self.failures_in_a_row = 0
        self.stopping = False
        self.last_update = 0.0
        self.retriever_config = get_retriever_config(store, request.retriever)
        self.evidence_kept: dict[tuple[str, str], Evidence] = {}  # oldest first
        self.evidence_lock = threading.Lock()

    def support_text(self, work: JudgeWork) -> str:
        """The evidence the rating is given: what the answering host saw under the work's arm; for
        Direct arms "" (judge) or the retrieved passages as Raw holds them (support)."""
        support = parse_arm(work.arm).support
        if support == "direct":
            return self.evidence(work).support_text("raw") if self.kind.direct_evidence else ""
        return self.evidence(work).support_text(support)

    def evidence(self, work: JudgeWork) -> Evidence:
        """The query's top passages, retrieved once per query (as the enumeration does) rather than
        once per arm; the work comes query by query, so the last `EVIDENCE_KEPT` queries are kept."""
        key = (work.benchmark, work.example_id)
        with self.evidence_lock:  # the workers' threads share the cache
            if key not in self.evidence_kept:
                retriever = open_retriever(self.store, self.retriever_config, work.benchmark)
                self.evidence_kept[key] = retrieve_evidence(retriever, work.question)
                if len(self.evidence_kept) > EVIDENCE_KEPT:
                    del self.evidence_kept[next(iter(self.evidence_kept))]
            return self.evidence_kept[key]

    async def judge_one(self, work: JudgeWork) -> None:
        """Judge one outcome and store the row at once."""
        (reward, verdict), tokens_in, tokens_out, latency, error = self.kind.empty_answer, 0, 0, 0.0, None
        if work.answer.strip():
            support = await asyncio.to_thread(self.support_text, work)
            request = self.kind.build_request(work.question, work.answer, support, is_fever_benchmark(work.benchmark))
            try:
                generation = await self.judge.generate(request)
                verdict, tokens_in, tokens_out = generation.text, generation.tokens_in, generation.tokens_out
                latency, reward = generation.latency_ms, self.kind.parse(generation.text)
            except HostError as failure:
                verdict, reward, error = "", None, str(failure)
            if error is None and reward is None:
                self.report.unrated += 1
                reward = self.kind.unparsed_value
        row = RewardOutcome(self.request.host, work.benchmark, work.example_id, work.arm, self.report.reward_key,
                            self.kind.source, self.request.judge_host, self.judge_hash, self.kind.prompt_hash, reward,
                            verdict, tokens_in, tokens_out, latency, error, utc_now())
        await asyncio.to_thread(self.store.write_reward_outcome, row)
        await self.record(work, error)

    async def record(self, work: JudgeWork, error: str | None) -> None:
        """Count a finished call; publish progress and notice a cancel at most every 2 s."""
        self.report.judged += 1
        self.failures_in_a_row = self.failures_in_a_row + 1 if error else 0
        if error:
            self.report.errors.append(f"{work.benchmark}/{work.example_id} {work.arm}: {error}")
        if self.failures_in_a_row >= MAX_FAILURES_IN_A_ROW:
            self.stop(f"{MAX_FAILURES_IN_A_ROW} judge calls failed in a row (is the judge host up?)")
        if self.on_progress:
            self.on_progress(self.report)
        if time.monotonic() - self.last_update >= JOB_UPDATE_SECONDS:
            self.last_update = time.monotonic()
            await asyncio.to_thread(self.publish)

    def publish(self) -> None:
        """Write progress to the jobs table and notice a cancel request."""
        self.store.update_job(self.report.job_id, self.report.judged, len(self.report.errors))
        job = self.store.job(self.report.job_id)
        if job and job["status"] == "cancelling":
            self.stop("cancelled")

    def stop(self, reason: str) -> None:
        """Start no new call; calls in flight finish and are stored."""
        if not self.stopping:
            log.info("judging stopping: %s", reason)
            self.stopping = True
            self.report.status = "stopped: " + reason


def stored_reward_key(store: Store, request: JudgeRequest) -> str:
    """The rating's identity from the judge host's stored configuration, known before the host is
    started (the configuration hash ignores the URL a served host gets)."""
    judge_hash = config_hash(get_host_config(store, request.judge_host))
    return rating_kind(request.kind).reward_key(judge_hash, request.retriever_hash(store))


async def judge_outcomes(store: Store, request: JudgeRequest, judge: Host,
                         on_progress: Callable[[JudgeReport], None] | None = None,
                         work: list[JudgeWork] | None = None) -> JudgeReport:
    """Rate every missing outcome of the request with the client `judge` (`work`: the caller's
    `plan_judging` of it, else planned here); returns what was done."""
    reward_key = rating_kind(request.kind).reward_key(config_hash(judge.config), request.retriever_hash(store))
    if work is None:
        work = plan_judging(store, request, reward_key)
    job_id = f"{request.kind}-{uuid.uuid4().hex[:10]}"
    with job_run(store, "judge", request.to_dict(), len(work), job_id) as job:
        report = JudgeReport(job_id=job.job_id, reward_key=reward_key, planned=len(work))
        run = _JudgeRun(store, request, judge, report, on_progress)
        queue: asyncio.Queue = asyncio.Queue()
        for unit in work:
            queue.put_nowait(unit)
        started = time.monotonic()
        try:
            await asyncio.gather(*(_worker(run, queue) for _ in range(request.concurrency)))
        finally:
            report.seconds = time.monotonic() - started
            job.end("finished" if report.status == "running" else report.status,  # or "stopped: ..."
                    f"{report.judged} judged, {len(report.errors)} errors", report.judged, len(report.errors))
    report.status = job.status
    return report


async def judge_on_host(store: Store, request: JudgeRequest,
                        on_progress: Callable[[JudgeReport], None] | None = None) -> JudgeReport:
    """`judge_outcomes` on a client for the request's judge host (see `hosted`); with nothing left
    to rate, a report "nothing to do" without starting the host or writing a job row."""
    reward_key = stored_reward_key(store, request)
    work = plan_judging(store, request, reward_key)
    if not work:
        return JudgeReport(job_id="", reward_key=reward_key, planned=0, status="nothing to do")
    async with hosted(get_host_config(store, request.judge_host)) as judge:
        return await judge_outcomes(store, request, judge, on_progress, work)


async def _worker(run: _JudgeRun, queue: asyncio.Queue) -> None:
    while not queue.empty() and not run.stopping:
        await run.judge_one(queue.get_nowait())
