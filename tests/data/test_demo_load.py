"""`load_demo`: the demo outcomes with the benchmarks they need, so a fresh store's dashboard works."""

from pathlib import Path

import pytest

from forge_core.data.demo import load_demo, missing_benchmarks_line
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
