"""The gates' drafts in the store: written, read back, exported with the demo tables and loaded
into another store (as `forge store load-demo` does) with their per-token logprobs intact."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from forge_core.records import DraftLogprobs
from forge_core.store import Store, utc_now


def _draft(example_id: str, error: str | None = None) -> DraftLogprobs:
    return DraftLogprobs("embedded", "popqa", example_id, "Paris", 41, 2, (-0.25, -1.5), (-3.0, float("-inf")),
                         12.5, error, "cfg", utc_now())


def test_drafts_round_trip_through_the_demo_export(tmp_path: Path) -> None:
    store = Store(tmp_path / "a.duckdb")
    store.write_draft_logprobs(_draft("1"), _draft("2", error="timeout"))
    assert store.finished_drafts("embedded") == {("popqa", "1")}  # an error row is not finished
    counts = store.export_tables(tmp_path / "demo")
    assert counts["draft_logprobs"] == 2 and (tmp_path / "demo" / "draft_logprobs.parquet").exists()

    loaded = Store(tmp_path / "b.duckdb")
    assert loaded.load_export_once(tmp_path / "demo")["draft_logprobs"] == 2
    row = loaded.draft_logprobs("embedded").iloc[0]
    assert (row["example_id"], row["answer"], row["tokens_in"], row["tokens_out"]) == ("1", "Paris", 41, 2)
    np.testing.assert_array_equal(row["top1"], [-0.25, -1.5])
    np.testing.assert_array_equal(row["top2"], [-3.0, -np.inf])
