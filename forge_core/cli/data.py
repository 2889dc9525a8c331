"""`forge data` and `forge index`: benchmarks and your own files in, what the store holds, retrieval indexes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from forge_core import config
from forge_core.cli.output import console, counting_progress, open_store, print_json, print_summary, spinner_progress
from forge_core.data.importers import BENCHMARK_FILES, QA_ONLY_FILES
from forge_core.data.splits import SPLIT_SEEDS
from forge_core.errors import InvalidInput, MissingStep

data_app = typer.Typer(help="Import benchmarks and inspect what the store holds.", no_args_is_help=True)


index_app = typer.Typer(help="Retrieval indexes: BM25 and the passage vectors of each corpus.", no_args_is_help=True)


@data_app.command("import")
def data_import(
    benchmarks_dir: Annotated[Optional[Path], typer.Option(
        help="Benchmark files (default: $FORGE_BENCHMARKS_DIR or ../shared/benchmarks).")] = None,
    qa_only: Annotated[bool, typer.Option(help="Also import the question-only lists.")] = False,
) -> None:
    """Import the five benchmarks (and optionally the qa_only lists) with their splits."""
    from forge_core.data.importing import import_benchmarks

    root = benchmarks_dir or config.benchmarks_dir()
    if not root.is_dir():
        raise InvalidInput(f"benchmarks directory {root} not found (set --benchmarks-dir or FORGE_BENCHMARKS_DIR)")
    names = [*BENCHMARK_FILES, *(QA_ONLY_FILES if qa_only else ())]
    store = open_store()
    with spinner_progress() as progress:
        task = progress.add_task("importing", total=len(names))

        def report(result: Any) -> None:
            state = "imported" if result.added else "unchanged"
            console.print(f"{result.benchmark}: {result.examples} examples, {result.documents} documents ({state})")
            progress.advance(task)

        import_benchmarks(store, root, names, on_done=report)
    console.print(f"store: {store.path}")


@data_app.command("import-file")
def data_import_file(
    path: Annotated[Path, typer.Argument(help="Your questions: JSON lines, CSV or Parquet.")],
    name: Annotated[str, typer.Option(help="The benchmark name to give them (not a built-in one).")],
    corpus: Annotated[Optional[Path], typer.Option(
        help="A file of {title, text} passages every question retrieves from.")] = None,
    file_format: Annotated[Optional[str], typer.Option(
        "--format", help="jsonl, csv or parquet (default: from the file extension).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Import your own questions as a benchmark, split like the built-in ones (all or nothing;
    importing the same file again changes nothing)."""
    import dataclasses

    from forge_core.data.importing import import_user_file

    result = import_user_file(open_store(), path, name, corpus, file_format)
    state = "imported" if result.added else "unchanged"
    if as_json:
        print_json(dataclasses.asdict(result))
        return
    console.print(f"{result.benchmark}: {result.examples} examples, {result.documents} documents ({state})")


@data_app.command("stats")
def data_stats(
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    split_seed: Annotated[int, typer.Option(help="Split seed (0, 1 or 2).")] = 0,
) -> None:
    """Examples, documents and split sizes per benchmark."""
    if split_seed not in SPLIT_SEEDS:
        raise InvalidInput(f"--split-seed is one of {', '.join(map(str, SPLIT_SEEDS))}, not {split_seed}")
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


class PassageProgress:
    """One progress bar per corpus whose passage vectors are being embedded."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.tasks: dict[str, Any] = {}

    def update(self, benchmark: str, done: int, total: int) -> None:
        """Callback of `build_passage_vectors`."""
        if benchmark not in self.tasks:
            self.tasks[benchmark] = self.progress.add_task(f"passage vectors {benchmark}", total=total)
        self.progress.update(self.tasks[benchmark], completed=done, total=total)


@index_app.command("build")
def index_build(
    benchmark: Annotated[Optional[list[str]], typer.Option(
        help="Benchmark whose corpus to index (repeatable; default: every imported corpus).")] = None,
    embedder: Annotated[Optional[str], typer.Option(
        help="Embedder spec (default: $FORGE_EMBEDDER or all-MiniLM-L6-v2@onnx).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Build (or check) the BM25 index and the passage vectors of each corpus, kept under the
    cache directory; routing then embeds only the question."""
    from forge_core.data.catalog import check_benchmarks, imported_routable_benchmarks
    from forge_core.evidence.embedders import embedder_name
    from forge_core.evidence.passage_vectors import build_passage_vectors

    store = open_store()
    benchmarks = check_benchmarks(store, benchmark) if benchmark else imported_routable_benchmarks(store)
    if not benchmarks:
        raise MissingStep("no corpus in the store: run `forge data import`")
    started = time.monotonic()
    with counting_progress(transient=True) as progress:
        vectors = build_passage_vectors(store, benchmarks, embedder, PassageProgress(progress).update)
    print_summary({"embedder": embedder_name(embedder), "passages": {b: len(v.vectors) for b, v in vectors.items()},
                   "seconds": round(time.monotonic() - started, 1)}, as_json)

