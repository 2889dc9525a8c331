"""The training-free gates' probes, enumerated on a host for the stored queries, resumable.

TARG (arXiv 2511.09803) and the calibrated log-probability ladder (arXiv 2606.29959) read one
no-context draft with token log-probabilities: the Direct prompt, greedy, Stage 0's answer cap,
with each output token's two most likely logprobs (`draft_request`). The Full-feature probes
already store that draft's text (the greedy probe is the `direct:no_think` request) but not its
logprobs, so this is the one call enumerated here. DART's second draft (arXiv 2606.23181) is a
no-think sample at the self-consistency temperature: the stored `sample1` probe is exactly that
request, so it is reused and never sent again.

Which queries: those of the host with a stored greedy probe (the Full-feature rows every policy
is evaluated on), in a fixed order that mixes benchmarks and splits (a sha256 of the key), so a
run stopped early still covers every benchmark. Resumable: a draft stored without error is never
sent again; an error row is redone by the next run; each draft is stored as it lands.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

from forge_core.evidence.prompts import greedy_probe_request
from forge_core.hosts.base import Generation, GenerationRequest, Host, HostConfig, HostError
from forge_core.hosts.lifetime import hosted
from forge_core.hosts.registry import config_hash
from forge_core.records import DraftLogprobs, Example
from forge_core.store import Store, job_run, utc_now

log = logging.getLogger(__name__)

DRAFT_TOP_LOGPROBS = 2  # logprobs per output token: the top two give TARG's margin
GATE_PROBES_JOB = "gate-probes"  # the jobs table's kind of a run
MAX_ERRORS_IN_A_ROW = 10  # the host is likely down: stop the run


def draft_request(question: str, is_fever: bool) -> GenerationRequest:
    """The gates' draft: the greedy Direct probe's request, with the top-2 logprobs of every token."""
    return dataclasses.replace(greedy_probe_request(question, is_fever), top_logprobs=DRAFT_TOP_LOGPROBS)


def _order_key(example: Example) -> str:
    return hashlib.sha256(f"{example.benchmark}\x00{example.example_id}".encode()).hexdigest()


def missing_drafts(store: Store, host: str, limit: int | None = None) -> list[Example]:
    """The host's queries with a stored greedy probe and no error-free draft, in the run's order."""
    probes = store.probe_outcomes(host)
    if probes.empty:
        return []
    greedy = probes[(probes["probe"] == "greedy") & probes["error"].isna()]
    done = store.finished_drafts(host)
    wanted: dict[str, list[str]] = {}
    for benchmark, example_id in zip(greedy["benchmark"], greedy["example_id"]):
        if (benchmark, example_id) not in done:
            wanted.setdefault(benchmark, []).append(example_id)
    examples = [example for benchmark, ids in wanted.items() for example in store.examples(benchmark, ids)]
    examples.sort(key=_order_key)
    return examples[:limit] if limit is not None else examples


def draft_record(host: str, host_hash: str, example: Example, generation: Generation) -> DraftLogprobs:
    """The stored draft of one answered call; a token the host gave one alternative has top2 -inf."""
    top1 = tuple(top[0] if top else float("nan") for top in generation.top_logprobs)
    top2 = tuple(top[1] if len(top) > 1 else float("-inf") for top in generation.top_logprobs)
    return DraftLogprobs(host, example.benchmark, example.example_id, generation.text, generation.tokens_in,
                         generation.tokens_out, top1, top2, generation.latency_ms, None, host_hash, utc_now())


def failed_draft(host: str, host_hash: str, example: Example, error: HostError) -> DraftLogprobs:
    """The error row of a call that failed for good (redone by the next run)."""
    return DraftLogprobs(host, example.benchmark, example.example_id, "", 0, 0, (), (), None, str(error),
                         host_hash, utc_now())


@dataclass(frozen=True)
class GateProbeReport:
    """What one run did."""

    planned: int  # drafts missing at the start
    answered: int
    errors: int
    seconds: float  # wall time of the calls


async def enumerate_drafts(store: Store, client: Host, examples: list[Example],
                           progress: Callable[[int, int], None] | None = None) -> GateProbeReport:
    """Send each example's draft request, one at a time (an embedded host has one slot), storing
    each result as it lands; stop after `MAX_ERRORS_IN_A_ROW` failures in a row."""
    host, host_hash = client.config.name, config_hash(client.config)
    answered = errors = in_a_row = 0
    loop = asyncio.get_running_loop()
    started = loop.time()
    for example in examples:
        try:
            generation = await client.generate(draft_request(example.question, example.is_fever))
        except HostError as error:
            errors, in_a_row = errors + 1, in_a_row + 1
            await asyncio.to_thread(store.write_draft_logprobs, failed_draft(host, host_hash, example, error))
            if in_a_row >= MAX_ERRORS_IN_A_ROW:
                log.error("gate probes: %d failed calls in a row, stopping (%s)", in_a_row, error)
                break
            continue
        answered, in_a_row = answered + 1, 0
        await asyncio.to_thread(store.write_draft_logprobs, draft_record(host, host_hash, example, generation))
        if progress is not None:
            progress(answered + errors, len(examples))
    return GateProbeReport(len(examples), answered, errors, loop.time() - started)


def run_gate_probes(store: Store, config: HostConfig, limit: int | None = None,
                    progress: Callable[[int, int], None] | None = None) -> GateProbeReport:
    """Enumerate the missing drafts of `config`'s host (at most `limit`) as a job on that host."""
    examples = missing_drafts(store, config.name, limit)
    with job_run(store, GATE_PROBES_JOB, {"host": config.name, "limit": limit}, len(examples)) as job:
        async def run() -> GateProbeReport:
            async with hosted(config) as client:
                return await enumerate_drafts(store, client, examples, progress)

        report = asyncio.run(run()) if examples else GateProbeReport(0, 0, 0, 0.0)
        job.end("finished", f"{report.answered} drafts stored, {report.errors} errors", report.answered, report.errors)
    return report
