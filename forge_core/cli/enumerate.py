"""`forge enumerate`: Stage 0, every missing (query, arm) on a host, resumable."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from forge_core.cli.output import (
    HOST_RETRIEVER_HELP,
    AddressOption,
    EngineOption,
    chosen_retriever,
    console,
    counting_progress,
    open_store,
    print_json,
    print_summary,
    spinner_progress,
)
from forge_core.engines import DEFAULT_ENGINE, check_engine
from forge_core.enumeration.planning import EnumerationPlan
from forge_core.errors import InvalidInput
from forge_core.evidence.retrievers import DEFAULT_RETRIEVER

if TYPE_CHECKING:
    from forge_core.enumeration.estimate import StageZeroEstimate
    from forge_core.enumeration.planning import QueryWork
    from forge_core.hosts.base import HostConfig
    from forge_core.store import Store


# Over 60 lines: its typer options (53 lines) are `forge enumerate --help`; the body picks the mode.
def enumerate_command(
    host: Annotated[str, typer.Option(help="A host name (see `forge host list`).")] = "embedded",
    split: Annotated[str, typer.Option(help="train, dev, test or all.")] = EnumerationPlan.split,
    arms: Annotated[int, typer.Option(help="Alphabet size: 3, 6 or 12.")] = EnumerationPlan.n_arms,
    probes: Annotated[bool, typer.Option(help="Also run the Full-variant host probes.")] = EnumerationPlan.probes,
    benchmark: Annotated[Optional[list[str]], typer.Option(
        help="Only these benchmarks, built-in or imported with `data import-file` (repeatable; default: the five "
             "built-ins).")] = None,
    limit: Annotated[Optional[int], typer.Option(help="At most this many queries in all.")] = None,
    per_benchmark: Annotated[Optional[int], typer.Option(help="At most this many queries per benchmark.")] = None,
    max_calls: Annotated[Optional[int], typer.Option(help="Stop after this many host calls.")] = None,
    max_tokens: Annotated[Optional[int], typer.Option(help="Stop after this many tokens in + out.")] = None,
    concurrency: Annotated[Optional[int], typer.Option(
        help="Queries in flight at once (default: 1 on embedded hosts, else the host's max_concurrency).")] = None,
    split_seed: Annotated[int, typer.Option(help="Split seed (0, 1 or 2).")] = EnumerationPlan.split_seed,
    shard: Annotated[str, typer.Option(
        help="i/n: this machine's part of the plan (queries i, i+n, ... of each benchmark); merge the "
             "parts with `forge store export` and `forge store import`.")] = "{}/{}".format(*EnumerationPlan.shard),
    processes: Annotated[int, typer.Option(
        help="Client processes sharing the plan (and the concurrency and limits), for hosts fast enough "
             "that one process's CPU is the limit (hundreds of calls in flight).")] = 1,
    allow_unchecked_depths: Annotated[bool, typer.Option(
        help="Run 12 arms on a host whose `forge host check` is missing or found a depth not "
             "honoured.")] = EnumerationPlan.allow_unchecked_depths,
    queries_of: Annotated[Optional[str], typer.Option(
        help="Only the queries this other host has every arm of: a second host on the same queries "
             "(e.g. for `forge eval transfer`).")] = None,
    estimate: Annotated[bool, typer.Option(
        help="Print what the missing calls will cost (calls, tokens, USD at the host's prices, batch price) "
             "and make no call.")] = False,
    budget_usd: Annotated[Optional[float], typer.Option(
        help="Refuse a plan estimated above this many US dollars, and stop the run before its measured "
             "spend would pass it (finished calls kept). Needs the host's prices.")] = None,
    to_batch: Annotated[Optional[Path], typer.Option(
        help="Write every missing call as OpenAI batch lines to this JSONL file (split into FILE-001.jsonl, ... "
             "past the Batch API's limits) and make no call; run it with a Batch API or `vllm run-batch`.")] = None,
    from_batch: Annotated[Optional[Path], typer.Option(
        help="Score and store a batch results file (OpenAI, vLLM or Anthropic lines); a stored answer is "
             "skipped. The plan options are not used: each line's custom_id names its call.")] = None,
    requests: Annotated[Optional[Path], typer.Option(
        help="With --from-batch: the request lines the results answer; a line whose body differs from what "
             "the plan would send now is refused (needed for Anthropic results).")] = None,
    batch: Annotated[Optional[str], typer.Option(
        help="openai or anthropic: submit the missing calls to the host provider's Batch API (half the price, "
             "within 24 h), poll, download and store the results; a rerun resumes the stored batches.")] = None,
    poll_seconds: Annotated[float, typer.Option(help="With --batch: seconds between status requests.")] = 30.0,
    retriever: Annotated[Optional[str], typer.Option(
        help="The retriever whose passages Summary and Raw arms get (see `forge retriever list`); its outcomes "
             "are stored under its configuration hash, apart from every other retriever's. Direct arms use no "
             "evidence: one Direct outcome serves every retriever." + HOST_RETRIEVER_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object at the end.")] = False,
    engine: EngineOption = DEFAULT_ENGINE,
    address: AddressOption = None,
) -> None:
    """Run the host on every missing (query, arm) and store each outcome as it lands (resumable).
    With --engine ray the calls go through a Ray Data job; this process still stores every outcome."""
    from forge_core.data.catalog import imported_routable_benchmarks
    from forge_core.enumeration.estimate import check_budget
    from forge_core.enumeration.planning import concurrency_for, count_calls, parse_shard, plan_work
    from forge_core.hosts.registry import get_host_config

    modes = [name for name, chosen in (("--estimate", estimate), ("--to-batch", to_batch), ("--from-batch", from_batch),
                                       ("--batch", batch)) if chosen]
    if len(modes) > 1:
        raise InvalidInput(f"choose one of {' and '.join(modes)}")
    check_engine(engine, address)
    if engine == "ray" and (processes > 1 or to_batch or from_batch or batch):
        raise InvalidInput("--engine ray sends the calls itself: not with --processes, --to-batch, --from-batch or "
                           "--batch")
    store = open_store()
    if from_batch is not None:
        ingest_batch_results(store, from_batch, requests, as_json)
        return
    if requests is not None:
        raise InvalidInput("--requests goes with --from-batch")
    host_config = get_host_config(store, host)
    retriever = chosen_retriever(host, retriever)
    plan = EnumerationPlan(host=host, split=split, n_arms=arms, probes=probes,
                           benchmarks=tuple(benchmark or imported_routable_benchmarks(store)),
                           split_seed=split_seed, limit=limit,
                           per_benchmark=per_benchmark, max_calls=max_calls, max_tokens=max_tokens,
                           concurrency=concurrency_for(host_config, concurrency), shard=parse_shard(shard),
                           allow_unchecked_depths=allow_unchecked_depths, queries_of=queries_of,
                           budget_usd=budget_usd, retriever=retriever)
    if engine == "ray":
        from forge_core.enumeration.ray_stage0 import check_ray_plan

        check_ray_plan(plan)
    plan.check(store)
    if retriever != DEFAULT_RETRIEVER and (batch or to_batch):
        raise InvalidInput("--retriever other than bm25 goes with an online run, not --batch or --to-batch: a batch "
                           "line's custom_id names host/benchmark/example/arm only, and its result is stored by "
                           "rebuilding the prompt's evidence from that id with bm25")
    work = plan_work(store, plan)
    planned = count_calls(work)
    if estimate or budget_usd is not None:
        priced = estimate_with_progress(store, plan, work, host_config)
        if estimate:
            print_estimate(priced, as_json)
            return
        check_budget(priced, budget_usd, through_batch=batch is not None)
    if batch is not None:
        run_provider_batches(store, plan, host_config, batch, poll_seconds, as_json)
        return
    if to_batch is not None:
        write_batch_files(store, plan, host_config, work, to_batch, as_json)
        return
    if planned == 0:
        console.print("nothing to do: every planned call is already stored")
        if as_json:
            print_json({"job_id": None, "calls": 0, "errors": 0, "status": "nothing to do"})
        return

    run_online(store, plan, host_config, planned, processes, as_json, engine, address)


def run_online(store: Store, plan: EnumerationPlan, host_config: HostConfig, planned: int, processes: int,
               as_json: bool, engine: str = DEFAULT_ENGINE, address: str | None = None) -> None:
    """The plan's missing calls sent to the host (in `processes` client processes, or as a Ray Data
    job on `engine` "ray"), with progress; Ctrl-C keeps every finished call."""
    import asyncio

    from forge_core.enumeration.processes import EnumerationProcessError, check_processes, enumerate_in_processes
    from forge_core.enumeration.runner import enumerate_on_host
    from forge_core.hosts.registry import serving

    check_processes(processes, plan.concurrency)
    try:
        with serving(host_config) as served, counting_progress() as progress:
            task = progress.add_task("enumerating", total=min(planned, plan.max_calls or planned))

            def show(report: Any) -> None:
                progress.update(task, completed=report.calls, description=f"enumerating ({len(report.errors)} errors)")

            if engine == "ray":
                from forge_core.enumeration.ray_stage0 import enumerate_on_ray

                report = enumerate_on_ray(store, plan, served, on_progress=show, address=address)
            elif processes > 1:
                report = enumerate_in_processes(store, plan, served, processes, on_progress=show)
            else:
                report = asyncio.run(enumerate_on_host(store, plan, served, on_progress=show))
    except KeyboardInterrupt:
        console.print("interrupted: every finished call is stored; run the same command again to continue")
        raise typer.Exit(130) from None
    except EnumerationProcessError as error:
        console.print(f"[red]error:[/red] {error}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    for line in report.errors[:20]:
        console.print(f"[yellow]error[/yellow] {line}", highlight=False)
    summary = {"job_id": report.job_id, "calls": report.calls, "tokens": report.tokens,
               "errors": len(report.errors), "status": report.status, "seconds": round(report.seconds, 1)}
    if report.spent_usd is not None:
        summary["spent_usd"] = round(report.spent_usd, 4)
    print_summary(summary, as_json)


def write_batch_files(store: Store, plan: EnumerationPlan, host_config: HostConfig, work: list[QueryWork],
                      path: Path, as_json: bool) -> None:
    """`--to-batch`: the plan's missing calls as OpenAI batch lines."""
    from forge_core.enumeration.batch_files import check_batchable, openai_batch_line, write_request_files
    from forge_core.enumeration.calls import planned_calls

    if host_config.kind == "anthropic":
        raise InvalidInput(f"--to-batch writes OpenAI batch lines; for the Anthropic host '{plan.host}' use "
                           f"--batch anthropic")
    check_batchable(host_config, plan.n_arms)
    calls = list(planned_calls(store, plan, work))
    files = write_request_files(path, (openai_batch_line(host_config, call) for call in calls))
    print_summary({"requests": len(calls), "files": [str(file) for file in files]}, as_json)


def ingest_batch_results(store: Store, results_path: Path, requests_path: Path | None, as_json: bool) -> None:
    """`--from-batch`: score and store a results file."""
    from forge_core.enumeration.batch_files import ingest_lines, read_jsonl

    request_lines = None if requests_path is None else [line for _, line in read_jsonl(requests_path)]
    with spinner_progress() as progress:
        progress.add_task(f"storing {results_path.name}", total=None)
        report = ingest_lines(store, (line for _, line in read_jsonl(results_path)), request_lines)
    for line in report.refused[:20]:
        console.print(f"[yellow]refused[/yellow] {line}", highlight=False)
    print_summary({"stored": report.stored, "errors": report.errors, "skipped": report.skipped,
                   "refused": len(report.refused)}, as_json)


def estimate_with_progress(store: Store, plan: EnumerationPlan, work: list[QueryWork],
                           host_config: HostConfig) -> StageZeroEstimate:
    """The plan's estimate, counting its calls under a progress bar."""
    from forge_core.enumeration.estimate import estimate_plan
    from forge_core.enumeration.planning import count_calls

    with counting_progress(transient=True) as progress:
        task = progress.add_task("counting tokens", total=count_calls(work))
        return estimate_plan(store, plan, on_call=lambda done: progress.update(task, completed=done), work=work,
                             host_config=host_config)


def run_provider_batches(store: Store, plan: EnumerationPlan, host_config: HostConfig, provider: str,
                         poll_seconds: float, as_json: bool) -> None:
    """`--batch`: submit, poll (with a progress bar and ETA per batch), download and store."""
    from forge_core.enumeration.batch_api import batch_api, run_batches

    api = batch_api(provider, host_config)
    with counting_progress() as progress:
        tasks: dict[str, Any] = {}

        def show(submitted: Any, state: Any) -> None:
            if submitted.batch_id not in tasks:
                tasks[submitted.batch_id] = progress.add_task(f"{provider} batch {submitted.batch_id}", total=None)
            progress.update(tasks[submitted.batch_id], total=state.total or None,
                            completed=state.completed + state.failed,
                            description=f"{provider} batch {submitted.batch_id}: {state.status}")

        report = run_batches(store, plan, api, poll_seconds, on_progress=show)
    for line in report.refused[:20]:
        console.print(f"[yellow]refused[/yellow] {line}", highlight=False)
    print_summary({"submitted": report.submitted, "resumed": report.resumed, "stored": report.stored,
                   "errors": report.errors, "skipped": report.skipped, "refused": len(report.refused)}, as_json)


def print_estimate(priced: StageZeroEstimate, as_json: bool) -> None:
    """The estimate as a table (calls and tokens by arm and probe, then the totals and prices), or JSON."""
    if as_json:
        print_json(priced.as_dict())
        return
    table = Table("calls of", "calls", "input tokens", "expected output tokens", "output from", title=(
        f"Stage 0 on '{priced.host}': what is still missing"))
    for group in priced.groups:
        table.add_row(group.name, f"{group.calls:,}", f"{group.tokens_in:,}", f"{group.tokens_out:,.0f}",
                      group.output_source)
    table.add_row("all", f"{priced.calls:,}", f"{priced.tokens_in:,}", f"{priced.tokens_out:,.0f}", "", style="bold")
    Console().print(table)
    console.print(f"input tokens: {priced.input_method}", highlight=False)
    if priced.prices is None:
        console.print(f"no prices for '{priced.host}': set them with `forge host edit {priced.host} "
                      f"--price-in USD_PER_1M --price-out USD_PER_1M`", highlight=False)
        return
    console.print(f"price at {priced.prices.usd_per_million_in:g} / {priced.prices.usd_per_million_out:g} USD per "
                  f"million tokens in / out: {priced.usd:,.2f} USD online, {priced.batch_usd:,.2f} USD "
                  f"through a Batch API", highlight=False)

