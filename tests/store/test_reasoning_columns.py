"""Reasoning on record in the store: written with every outcome and probe, read back, and exports
made before the reasoning columns still load (with NULL there: not recorded)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pandas as pd

from forge_core.records import ArmOutcome, ProbeOutcome
from forge_core.store import Store

NOW = datetime(2026, 1, 1)


def _outcomes(store: Store) -> None:
    store.write_arm_outcome(
        ArmOutcome("h", "musique", "q1", "raw:think_low", "a", "a", 1.0, 1.0, 50, 700, 600, 5.0, None, 1, "x", NOW,
                   NOW, "usage"),
        ArmOutcome("h", "musique", "q1", "raw:no_think", "a", "a", 1.0, 1.0, 50, 4, 0, 5.0, None, 1, "x", NOW, NOW,
                   "none"))
    store.write_probe_outcome(ProbeOutcome("h", "musique", "q1", "sample1", "a", 20, 30, 1.0, None, "x", NOW, 25,
                                           "estimated"))


def test_reasoning_is_stored_with_outcomes_and_probes_and_summarized_per_arm(tmp_path: Path) -> None:
    store = Store(tmp_path / "store.duckdb")
    _outcomes(store)
    assert store.arm_outcome("h", "musique", "q1", "raw:think_low").reasoning_method == "usage"
    probe = store.probe_outcomes("h").iloc[0]
    assert (probe["tokens_reasoning"], probe["reasoning_method"]) == (25, "estimated")
    summary = store.reasoning_by_arm("h").set_index("arm")
    assert summary.loc["raw:think_low", ["tokens_out", "tokens_reasoning", "counted_by"]].tolist() == [
        700, 600, "usage"]


def test_an_export_made_before_the_reasoning_columns_loads_with_null_there(tmp_path: Path) -> None:
    source = Store(tmp_path / "source.duckdb")
    _outcomes(source)
    export = tmp_path / "export"
    source.export_tables(export)
    for table, later in (("arm_outcomes", ["reasoning_method"]), ("probe_outcomes", ["tokens_reasoning",
                                                                                    "reasoning_method"])):
        path = export / f"{table}.parquet"
        pd.read_parquet(path).drop(columns=later).to_parquet(path, index=False)
    target = Store(tmp_path / "target.duckdb")
    added = target.load_exported(export)
    assert added["arm_outcomes"] == 2 and added["probe_outcomes"] == 1
    assert target.arm_outcome("h", "musique", "q1", "raw:think_low").reasoning_method is None
    assert pd.isna(target.probe_outcomes("h").iloc[0]["tokens_reasoning"])
    assert target.reasoning_by_arm("h").set_index("arm").loc["raw:no_think", "counted_by"] == "not recorded"
