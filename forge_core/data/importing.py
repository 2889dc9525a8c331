"""Import benchmarks into the store: read, split with every split seed, write in one transaction."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from forge_core.data.importers import BENCHMARK_FILES, read_benchmark
from forge_core.data.splits import SPLIT_SEEDS, assign_splits
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
        imported = read_benchmark(name, benchmarks_dir)
        ids = [example.example_id for example in imported.examples]
        assignments = [assign_splits(name, ids, seed, imported.source_sha256) for seed in SPLIT_SEEDS]
        added = store.import_benchmark(
            name, imported.source_path, imported.source_sha256,
            imported.examples, imported.documents, assignments,
        )
        result = ImportResult(name, added, len(imported.examples), len(imported.documents))
        log.info("%s: %s", name, "imported" if added else "already imported, unchanged")
        results.append(result)
        if on_done:
            on_done(result)
    return results
