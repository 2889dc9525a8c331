"""`load_demo`: the demo outcomes with the benchmarks they need, so a fresh store's dashboard works."""

from pathlib import Path

import pytest

from forge_core.precompute.demo_store import load_demo, missing_benchmarks_line
from forge_core.store import Store


@pytest.mark.slow  # imports the five benchmarks (about 10 s on an idle machine, minutes beside a test run)
def test_load_demo_imports_the_benchmarks_a_fresh_store_lacks(outcome_store: Store, benchmarks_root: Path,
                                                              tmp_path: Path) -> None:
    outcome_store.export_tables(tmp_path / "demo", tables=("arm_outcomes",))
    fresh = Store(tmp_path / "fresh.duckdb")
    loaded = load_demo(fresh, tmp_path / "demo", benchmarks_root)
    assert {result.benchmark for result in loaded.benchmarks} >= {"musique", "popqa", "2wikimultihopqa"}
    assert loaded.benchmarks_missing is None and loaded.added == {"arm_outcomes": 1440}
    again = load_demo(fresh, tmp_path / "demo", benchmarks_root)
    assert again.benchmarks == [] and again.added is None  # benchmarks there, export loaded: nothing redone


def test_load_demo_says_which_benchmark_directory_is_missing(tmp_path: Path) -> None:
    Store(tmp_path / "source.duckdb").export_tables(tmp_path / "demo", tables=("arm_outcomes",))
    loaded = load_demo(Store(tmp_path / "fresh.duckdb"), tmp_path / "demo", tmp_path / "nowhere")
    assert loaded.benchmarks == [] and loaded.benchmarks_missing == tmp_path / "nowhere"
    assert loaded.added == {"arm_outcomes": 0}
    assert str(tmp_path / "nowhere") in missing_benchmarks_line(loaded.benchmarks_missing)


def test_the_action_map_arrays_travel_with_the_export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from forge_core.precompute.map_cache import MAP_CACHE_FILE, export_map_cache
    from forge_core.reports import action_map

    coordinates = np.random.default_rng(0).normal(size=(12, 2))  # KMeans clusters: a cached array made in seconds
    computed = action_map.cached_clusters(coordinates, tmp_path / "made")
    Store(tmp_path / "source.duckdb").export_tables(tmp_path / "demo", tables=("arm_outcomes",))
    assert export_map_cache(tmp_path / "made", tmp_path / "demo" / MAP_CACHE_FILE) == 1
    loaded = load_demo(Store(tmp_path / "fresh.duckdb"), tmp_path / "demo", tmp_path / "nowhere",
                       map_cache=tmp_path / "fresh-cache")
    assert loaded.map_arrays == 1
    monkeypatch.setattr(action_map, "cluster_points", lambda *args, **kwargs: pytest.fail("computed again"))
    read = action_map.cached_clusters(coordinates, tmp_path / "fresh-cache")  # read back from the export
    assert read.dtype == computed.dtype and np.array_equal(read, computed)
