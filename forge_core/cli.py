"""The `forge` command line: the same work as the dashboard, without a browser."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from forge_core import config
from forge_core.importers import BENCHMARK_FILES, QA_ONLY_FILES, ImportFormatError
from forge_core.store import Store, StoreError

app = typer.Typer(help="FORGE: route a frozen LLM between evidence forms and reasoning budgets.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
data_app = typer.Typer(help="Import benchmarks and inspect what the store holds.", no_args_is_help=True)
app.add_typer(data_app, name="data")

console = Console(stderr=True)

# Errors a user can act on: shown as one line, never as a traceback.
USER_ERRORS: tuple[type[Exception], ...] = (ImportFormatError, StoreError, ValueError, FileNotFoundError)


def open_store() -> Store:
    """The store at FORGE_STORE (default data/forge.duckdb)."""
    return Store(config.store_path())


def print_json(value: Any) -> None:
    """One JSON object on stdout."""
    sys.stdout.write(json.dumps(value) + "\n")


@data_app.command("import")
def data_import(
    benchmarks_dir: Annotated[Optional[Path], typer.Option(
        help="Benchmark files (default: $FORGE_BENCHMARKS_DIR or ../shared/benchmarks).")] = None,
    qa_only: Annotated[bool, typer.Option(help="Also import the question-only lists.")] = False,
) -> None:
    """Import the five benchmarks (and optionally the qa_only lists) with their splits."""
    from forge_core.data_import import import_benchmarks

    root = benchmarks_dir or config.benchmarks_dir()
    if not root.is_dir():
        raise FileNotFoundError(f"benchmarks directory {root} not found (set --benchmarks-dir or FORGE_BENCHMARKS_DIR)")
    names = [*BENCHMARK_FILES, *(QA_ONLY_FILES if qa_only else ())]
    store = open_store()
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("importing", total=len(names))

        def report(result: Any) -> None:
            state = "imported" if result.added else "unchanged"
            console.print(f"{result.benchmark}: {result.examples} examples, {result.documents} documents ({state})")
            progress.advance(task)

        import_benchmarks(store, root, names, on_done=report)
    console.print(f"store: {store.path}")


@data_app.command("stats")
def data_stats(
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    split_seed: Annotated[int, typer.Option(help="Split seed (0, 1 or 2).")] = 0,
) -> None:
    """Examples, documents and split sizes per benchmark."""
    stats = open_store().benchmark_stats(split_seed)
    if as_json:
        print_json({"benchmarks": stats})
        return
    if not stats:
        console.print("The store is empty: run `forge data import` first.")
        return
    table = Table("benchmark", "examples", "documents", "train", "dev", "test")
    for name, row in stats.items():
        splits = row["splits"]
        table.add_row(name, str(row["examples"]), str(row["documents"]),
                      str(splits["train"]), str(splits["dev"]), str(splits["test"]))
    Console().print(table)


def main() -> None:
    """Entry point: run the CLI, turning user errors into one line on stderr and exit code 2."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        app(standalone_mode=False)
    except USER_ERRORS as error:
        console.print(f"[red]error:[/red] {error}", highlight=False, soft_wrap=True)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        console.print("interrupted")
        raise SystemExit(130) from None
    except typer.Exit as exit_:
        raise SystemExit(exit_.exit_code) from None
    except Exception as error:  # click usage errors arrive here in standalone_mode=False
        import click

        if isinstance(error, click.ClickException):
            error.show()
            raise SystemExit(error.exit_code) from None
        raise


if __name__ == "__main__":
    main()
