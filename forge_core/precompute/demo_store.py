"""The demo store in one step: the committed demo outcomes (`data/demo`) with the benchmarks they
were enumerated on, which the export does not carry (their questions, gold answers and corpora are
read from the benchmark files), so a fresh store gives a working dashboard."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from forge_core.data.importing import ImportResult, import_benchmarks
from forge_core.precompute.map_cache import MAP_CACHE_FILE, import_map_cache
from forge_core.store import Store


@dataclass(frozen=True)
class DemoLoad:
    """What loading the demo did: the benchmarks imported first (none when the store had them),
    where the benchmark files were missing (None when found or not needed), the rows added per
    table (None: this export was loaded into this store before), and the Action map arrays put in
    the cache."""

    benchmarks: list[ImportResult]
    benchmarks_missing: Path | None
    added: dict[str, int] | None
    map_arrays: int = 0


def load_demo(store: Store, demo_dir: Path, benchmarks_dir: Path, again: bool = False,
              on_benchmark: Callable[[ImportResult], None] | None = None, map_cache: Path | None = None) -> DemoLoad:
    """Import the benchmarks when the store has none (from `benchmarks_dir`, when it exists), add
    the demo export's rows once per export (`again`: once more), and put its Action map arrays in
    `map_cache` (the cache directory's `umap/`) when given."""
    imported: list[ImportResult] = []
    missing = None
    if not store.benchmark_stats():
        if benchmarks_dir.is_dir():
            imported = import_benchmarks(store, benchmarks_dir, on_done=on_benchmark)
        else:
            missing = benchmarks_dir
    added = store.load_exported(demo_dir) if again else store.load_export_once(demo_dir)
    arrays = import_map_cache(demo_dir / MAP_CACHE_FILE, map_cache) if map_cache is not None else 0
    return DemoLoad(imported, missing, added, arrays)


def missing_benchmarks_line(directory: Path) -> str:
    """The one line that says the dashboard still needs the benchmarks, and how to add them."""
    return (f"the benchmarks are not imported and {directory} does not exist: the dashboard needs their questions "
            "and corpora; run `forge data import --benchmarks-dir DIR` (or set FORGE_BENCHMARKS_DIR)")
