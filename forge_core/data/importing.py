"""Import benchmarks (built-in or a user's own file) into the store: read, split with every split
seed, write in one transaction."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from forge_core.data.importers import BENCHMARK_FILES, ImportedBenchmark, read_benchmark
from forge_core.data.splits import SPLIT_SEEDS, assign_splits
from forge_core.data.user_files import read_user_file
from forge_core.store import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImportResult:
    """What importing one benchmark did."""

    benchmark: str
    added: bool  # False when the same file had been imported before
    examples: int
    documents: int


def import_benchmarks(
    store: Store,
    benchmarks_dir: Path,
    names: Sequence[str] = tuple(BENCHMARK_FILES),
    on_done: Callable[[ImportResult], None] | None = None,
) -> list[ImportResult]:
    """Import each named benchmark (one transaction each); re-running adds nothing twice."""
    results = []
    for name in names:
        result = store_imported(store, read_benchmark(name, benchmarks_dir))
        results.append(result)
        if on_done:
            on_done(result)
    return results


def import_user_file(store: Store, path: Path, name: str, corpus: Path | None = None,
                     fmt: str | None = None) -> ImportResult:
    """Import a user's question file (and corpus) as benchmark `name`, split like the built-ins;
    the whole file is read and checked before anything is written."""
    return store_imported(store, read_user_file(path, name, corpus, fmt))


def store_imported(store: Store, imported: ImportedBenchmark) -> ImportResult:
    """Split a read benchmark under every split seed and write it in one transaction."""
    ids = [example.example_id for example in imported.examples]
    assignments = [assign_splits(imported.name, ids, seed, imported.source_sha256) for seed in SPLIT_SEEDS]
    added = store.import_benchmark(
        imported.name, imported.source_path, imported.source_sha256,
        imported.examples, imported.documents, assignments,
    )
    log.info("%s: %s", imported.name, "imported" if added else "already imported, unchanged")
    return ImportResult(imported.name, added, len(imported.examples), len(imported.documents))
