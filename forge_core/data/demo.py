"""The demo store in one step: the committed demo outcomes (`data/demo`) with the benchmarks they
were enumerated on, which the export does not carry (their questions, gold answers and corpora are
read from the benchmark files), so a fresh store gives a working dashboard."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from forge_core.data.importing import ImportResult, import_benchmarks
from forge_core.store import Store


@dataclass(frozen=True)
class DemoLoad:
    """What loading the demo did: the benchmarks imported first (none when the store had them),
    where the benchmark files were missing (None when found or not needed), and the rows added per
    table (None: this export was loaded into this store before)."""

    benchmarks: list[ImportResult]
    benchmarks_missing: Path | None
    added: dict[str, int] | None


def load_demo(store: Store, demo_dir: Path, benchmarks_dir: Path, again: bool = False,
              on_benchmark: Callable[[ImportResult], None] | None = None) -> DemoLoad:
    """Import the benchmarks when the store has none (from `benchmarks_dir`, when it exists), then
    add the demo export's rows once per export (`again`: once more)."""
    imported: list[ImportResult] = []
    missing = None
    if not store.benchmark_stats():
        if benchmarks_dir.is_dir():
            imported = import_benchmarks(store, benchmarks_dir, on_done=on_benchmark)
        else:
            missing = benchmarks_dir
    added = store.load_exported(demo_dir) if again else store.load_export_once(demo_dir)
    return DemoLoad(imported, missing, added)


def missing_benchmarks_line(directory: Path) -> str:
    """The one line that says the dashboard still needs the benchmarks, and how to add them."""
    return (f"the benchmarks are not imported and {directory} does not exist: the dashboard needs their questions "
            "and corpora; run `forge data import --benchmarks-dir DIR` (or set FORGE_BENCHMARKS_DIR)")
