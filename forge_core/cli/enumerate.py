"""`forge enumerate`: Stage 0, every missing (query, arm) on a host, resumable."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from forge_core.cli.output import console, counting_progress, open_store, print_json, print_summary


def enumerate_command(
    host: Annotated[str, typer.Option(help="A host name (see `forge host list`).")] = "embedded",
    split: Annotated[str, typer.Option(help="train, dev, test or all.")] = "train",
    arms: Annotated[int, typer.Option(help="Alphabet size: 3, 6 or 12.")] = 6,
    probes: Annotated[bool, typer.Option(help="Also run the Full-variant host probes.")] = False,
    benchmark: Annotated[Optional[list[str]], typer.Option(
        help="Only these benchmarks, built-in or imported with `data import-file` (repeatable; default: the five "
             "built-ins).")] = None,
    limit: Annotated[Optional[int], typer.Option(help="At most this many queries in all.")] = None,
    per_benchmark: Annotated[Optional[int], typer.Option(help="At most this many queries per benchmark.")] = None,
    max_calls: Annotated[Optional[int], typer.Option(help="Stop after this many host calls.")] = None,
    max_tokens: Annotated[Optional[int], typer.Option(help="Stop after this many tokens in + out.")] = None,
    concurrency: Annotated[Optional[int], typer.Option(
        help="Queries in flight at once (default: 1 on embedded hosts, else the host's max_concurrency).")] = None,
    split_seed: Annotated[int, typer.Option(help="Split seed (0, 1 or 2).")] = 0,
    shard: Annotated[str, typer.Option(
        help="i/n: this machine's part of the plan (queries i, i+n, ... of each benchmark); merge the "
             "parts with `forge store export` and `forge store import`.")] = "1/1",
    processes: Annotated[int, typer.Option(
        help="Client processes sharing the plan (and the concurrency and limits), for hosts fast enough "
             "that one process's CPU is the limit (hundreds of calls in flight).")] = 1,
    allow_unchecked_depths: Annotated[bool, typer.Option(
        help="Run 12 arms on a host whose `forge host check` is missing or found a depth not honoured.")] = False,
    queries_of: Annotated[Optional[str], typer.Option(
        help="Only the queries this other host has every arm of: a second host on the same queries "
             "(e.g. for `forge eval transfer`).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object at the end.")] = False,
) -> None:
    """Run the host on every missing (query, arm) and store each outcome as it lands (resumable)."""
    import asyncio

    from forge_core.data.catalog import imported_routable_benchmarks
    from forge_core.enumeration.planning import EnumerationPlan, concurrency_for, count_calls, parse_shard, plan_work
    from forge_core.enumeration.processes import EnumerationProcessError, check_processes, enumerate_in_processes
    from forge_core.enumeration.runner import enumerate_on_host
    from forge_core.hosts.registry import get_host_config, serving

    store = open_store()
    host_config = get_host_config(store, host)
    plan = EnumerationPlan(host=host, split=split, n_arms=arms, probes=probes,
                           benchmarks=tuple(benchmark or imported_routable_benchmarks(store)),
                           split_seed=split_seed, limit=limit,
                           per_benchmark=per_benchmark, max_calls=max_calls, max_tokens=max_tokens,
                           concurrency=concurrency_for(host_config, concurrency), shard=parse_shard(shard),
                           allow_unchecked_depths=allow_unchecked_depths, queries_of=queries_of)
    plan.check(store)
    planned = count_calls(plan_work(store, plan))
    if planned == 0:
        console.print("nothing to do: every planned call is already stored")
        if as_json:
            print_json({"job_id": None, "calls": 0, "errors": 0, "status": "nothing to do"})
        return

    check_processes(processes, plan.concurrency)
    try:
        with serving(host_config) as served, counting_progress() as progress:
            task = progress.add_task("enumerating", total=min(planned, max_calls or planned))

            def show(report: Any) -> None:
                progress.update(task, completed=report.calls, description=f"enumerating ({len(report.errors)} errors)")

            if processes > 1:
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
    print_summary({"job_id": report.job_id, "calls": report.calls, "tokens": report.tokens,
                   "errors": len(report.errors), "status": report.status, "seconds": round(report.seconds, 1)},
                  as_json)

