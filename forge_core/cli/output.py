"""Output helpers of the `forge` command line: the console, progress bars, JSON and summaries, the store,
and the options of the commands that run on an engine (`--engine`, `--address`)."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from forge_core import config
from forge_core.engines import ENGINES
from forge_core.store import Store

console = Console(stderr=True)


BENCHMARK_SUBSET_HELP = ("Only the queries of this benchmark, built-in or imported with `data import-file` "
                         "(repeatable; default: every benchmark of the host).")
EngineOption = Annotated[str, typer.Option(
    help=f"Where the work runs: {' or '.join(ENGINES)} (Ray: a local instance sized to this machine, or --address).")]
GuardFallbackOption = Annotated[str, typer.Option(
    "--guard-fallback", help="With --guard: fall back to the best fixed arm of the router's train and dev queries "
                             "(arm), or to the cost-matched mix of fixed arms at the router's own tokens there, "
                             "each question to the arm the mix draws for it (mix).")]
AddressOption = Annotated[Optional[str], typer.Option(
    help="With --engine ray: the Ray cluster to join (as `ray start --head` prints it; default: RAY_ADDRESS, else "
         "a local instance).")]


class _RateColumn(ProgressColumn):
    """Items per second so far (rich's own speed estimate)."""

    def render(self, task: Any) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:.2f}/s")


def counting_progress(transient: bool = False) -> Progress:
    """A progress bar for long work: done/total, rate, elapsed time and ETA."""
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), _RateColumn(),
                    TimeElapsedColumn(), TimeRemainingColumn(), console=console, transient=transient,
                    disable=not console.is_terminal)


def spinner_progress() -> Progress:
    """A transient progress line for work of unknown or small size (off when stderr is no terminal,
    so logs and captured output hold only what the command reports)."""
    return Progress(console=console, transient=True, disable=not console.is_terminal)


HOST_RETRIEVER_HELP = " Default: the host's (`forge retriever use`), else bm25."


def chosen_retriever(host: str, retriever: str | None) -> str:
    """The retriever a command runs under: the one named, else the host's default (`forge retriever
    use`), else bm25."""
    if retriever is not None:
        return retriever
    from forge_core.evidence.retrievers import host_default_retriever

    return host_default_retriever(open_store(), host)


KEEP_STORE_OPEN_S = 0.25  # a command's burst of reads opens the file once (`StoreFile.keep_open_s`), as the
# dashboard's do; short, because another process waits that much longer for the file


def open_store() -> Store:
    """The store at FORGE_STORE (default data/forge.duckdb), kept open between a burst of reads."""
    return Store(config.store_path(), keep_open_s=KEEP_STORE_OPEN_S)


def warn_if_other_host(store: Store, checkpoint_id: str, host: str) -> None:
    """Warn on stderr when the checkpoint was trained on another host than the one it routes for
    (an unknown id is left to the command's own one-line error)."""
    from forge_core.routing.checkpoints import other_host_warning

    found = store.checkpoint(checkpoint_id)
    warning = found and other_host_warning(checkpoint_id, found[0]["host"], host)
    if warning:
        console.print(f"[yellow]warning: {warning}[/yellow]", highlight=False, soft_wrap=True)


def print_json(value: Any) -> None:
    """One JSON object on stdout."""
    sys.stdout.write(json.dumps(value) + "\n")


def print_summary(summary: dict[str, Any], as_json: bool) -> None:
    """A flat summary: one JSON object on stdout, or `key=value` pairs on stderr."""
    if as_json:
        print_json(summary)
    else:
        console.print(" ".join(f"{key}={value}" for key, value in summary.items()))

