"""`forge store`: coverage, export, import (merge) and the demo data of the store."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from forge_core import config
from forge_core.cli.output import console, open_store, print_json, print_summary
from forge_core.errors import InvalidInput, MissingStep
from forge_core.store import EXPORTED_TABLES, Store

store_app = typer.Typer(help="Coverage, export and demo data of the store.", no_args_is_help=True)


@store_app.command("coverage")
def store_coverage(
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    arms: Annotated[Optional[int], typer.Option(help="K (default: 12 on thinking hosts, else 6).")] = None,
) -> None:
    """Per host: queries whose K arms all have a non-error outcome, with and without probes."""
    from forge_core.reports.tables import default_alphabet_size

    store = open_store()
    coverage = store.coverage({host: default_alphabet_size(store, host) if arms is None else arms
                               for host in store.hosts_with_outcomes()})
    if as_json:
        print_json({"hosts": coverage})
        return
    if not coverage:
        console.print("No outcomes yet: run `forge enumerate` (or `forge store load-demo`).")
    for host, summary in coverage.items():
        table = Table("benchmark", "complete", "with probes", title=f"{host}: {summary['arms']} arms")
        for benchmark, row in summary["by_benchmark"].items():
            table.add_row(benchmark, str(row["complete"]), str(row["with_probes"]))
        table.add_row("all", str(summary["queries_complete"]), str(summary["with_probes"]))
        Console().print(table)
        Console().print("by split: " + ", ".join(f"{k} {v}" for k, v in summary["by_split"].items()))


@store_app.command("export")
def store_export(
    out: Annotated[Optional[Path], typer.Option(help="Directory (default: data/demo).")] = None,
    host: Annotated[Optional[str], typer.Option(
        help="Only this host's rows (of the tables that name a host), e.g. one host's enumeration to merge "
             "elsewhere with `forge store import`.")] = None,
) -> None:
    """Write outcomes, probes, features, checkpoints and crossfit results to zstd Parquet (the
    committed demo data)."""
    if host is not None and out is None:
        raise InvalidInput("--host writes part of the store: name its directory with --out (the demo export "
                           "in data/demo holds every host)")
    store = open_store()
    if host is not None and host not in store.hosts_with_outcomes():
        raise InvalidInput(f"host '{host}' has no stored outcomes (hosts with some: "
                           f"{', '.join(store.hosts_with_outcomes()) or 'none'})")
    counts = store.export_tables(out or config.demo_dir(), host=host)
    console.print(", ".join(f"{table}: {n} rows" for table, n in counts.items()))


@store_app.command("load-demo")
def store_load_demo(
    source: Annotated[Optional[Path], typer.Option(help="Directory (default: data/demo).")] = None,
    again: Annotated[bool, typer.Option("--again", help="Add its rows even if this export was loaded before.")] = False,
    precompute: Annotated[bool, typer.Option(
        help="Compute the dashboard's slow first views into the cache (crossfit reports, the decision at the "
             "default weights and its routers for any weights, the Transfer page's first view).")] = True,
    wait: Annotated[bool, typer.Option(
        "--wait", help="Compute them here before returning, instead of in a background process.")] = False,
) -> None:
    """Add the committed demo outcomes to the store once per export (rows already there are kept),
    importing the benchmarks first when the store has none (from $FORGE_BENCHMARKS_DIR or
    ../shared/benchmarks): the dashboard then works on its own. Then starts the computation of the
    dashboard's slow first views in a background process and returns (`forge store views` and the
    pages that wait for a view show its progress; minutes once, seconds when run again)."""
    from forge_core.precompute.demo_store import load_demo, missing_benchmarks_line

    store, directory = open_store(), source or config.demo_dir()
    if not any((directory / f"{table}.parquet").exists() for table in EXPORTED_TABLES):
        raise InvalidInput(f"no exported tables (*.parquet of `forge store export`) in {directory}")
    loaded = load_demo(store, directory, config.benchmarks_dir(), again, on_benchmark=lambda result: console.print(
        f"{result.benchmark}: {result.examples} examples, {result.documents} documents (imported)"),
        map_cache=config.cache_dir() / "umap")
    if loaded.benchmarks_missing is not None:
        console.print(missing_benchmarks_line(loaded.benchmarks_missing))
    if loaded.map_arrays:
        console.print(f"action maps: {loaded.map_arrays} precomputed UMAP and cluster arrays in the cache")
    if loaded.added is None:
        console.print("this demo export is already loaded (`--again` adds its rows once more)")
    else:
        console.print(", ".join(f"{table}: +{n} rows" for table, n in loaded.added.items()) or "no demo files found")
    if precompute:
        compute_first_views(store, wait)


def compute_first_views(store: Store, wait: bool) -> None:
    """The dashboard's slow first views of the store: computed here (`wait`), or started in a
    background process, saying how to follow it."""
    from forge_core.precompute.background_views import start_background_views
    from forge_core.precompute.view_cache import precompute_views

    if wait:
        precompute_views(store, config.cache_dir(), on_step=console.print)
    elif start_background_views(store, config.cache_dir()):
        console.print("the dashboard's first views are being computed in a background process "
                      "(`forge store views` shows how far; the pages that need one show it too)")
    else:
        console.print("the dashboard's first views are already being computed (`forge store views` shows how far)")


@store_app.command("views")
def store_views(
    json_output: Annotated[bool, typer.Option("--json", help="Print the progress as JSON.")] = False,
) -> None:
    """How far the background computation of the dashboard's first views has come (started by
    `forge store load-demo` and `forge app`)."""
    from dataclasses import asdict

    from forge_core.precompute.background_views import views_progress

    progress = views_progress(config.cache_dir())
    if progress is None:
        raise MissingStep(f"no computation of the first views was started for {config.cache_dir()} "
                          "(`forge store load-demo` or `forge app` starts one)")
    if json_output:
        print_json(asdict(progress) | {"current": progress.current})
        return
    console.print(progress.line())
    for name, label in zip(progress.planned, progress.labels):
        console.print(f"  {'done' if name in progress.done else 'to do':5}  {label}")


@store_app.command("import")
def store_import(
    source: Annotated[Path, typer.Argument(help="A directory written by `forge store export`.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Merge another store's export into this one (e.g. machines that enumerated parts of one plan):
    new rows are added, an answered outcome replaces a stored error, answered rows are never
    replaced. Import the same benchmark files first (`forge data import`)."""
    if not source.is_dir():
        raise InvalidInput(f"no export directory {source}")
    if not any((source / f"{table}.parquet").exists() for table in EXPORTED_TABLES):
        raise InvalidInput(f"{source} holds no exported tables (write one with `forge store export --out DIR`)")
    merged = open_store().load_exported(source, replace_errors=True)
    print_summary({f"{table} added": n for table, n in merged.items()}, as_json)


@store_app.command("summary")
def store_summary(
    host: Annotated[str, typer.Option(help="Whose outcomes.")] = "embedded",
    split: Annotated[Optional[str], typer.Option(help="Only this split (default: every complete query).")] = None,
    arms: Annotated[int, typer.Option(help="Alphabet size.")] = 6,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Per benchmark: mean F1 and tokens of every arm, and of the utility oracle (costs normalized
    by train maxima, so the oracle needs complete train queries)."""
    from forge_core.reports.tables import policy_summary
    from forge_core.routing.outcome_table import load_outcome_table

    table = load_outcome_table(open_store(), host, arms)
    try:
        normalizer = table.fit_normalizer()
    except ValueError as error:
        normalizer = None
        console.print(f"no oracle: {error}")
    if split is not None:
        table = table.split(split)
        if not len(table):
            raise MissingStep(f"host '{host}' has no complete {split} queries")
    frame = policy_summary(table, normalizer)
    if as_json:
        print_json({"host": host, "split": split or "all", "rows": frame.to_dict("records")})
        return
    out = Table("benchmark", "policy", "queries", "F1", "tokens in", "tokens out", title=f"{host} ({split or 'all'})")
    for row in frame.itertuples():
        out.add_row(row.benchmark, row.policy, str(row.queries), f"{row.f1:.3f}", f"{row.tokens_in:.0f}",
                    f"{row.tokens_out:.0f}")
    Console().print(out)
