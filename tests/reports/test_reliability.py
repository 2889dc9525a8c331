"""A checkpoint's reliability table on its held-out test queries: every test query in one margin
bin, margins in utility units, the realized difference of the same two arms."""

from __future__ import annotations

import numpy as np

from forge_core.reports.reliability import checkpoint_reliability
from forge_core.routing.outcome_table import load_outcome_table
from forge_core.routing.utility import CostWeights
from forge_core.store import Store

HOST = "synthetic-host"


def test_reliability_of_a_trained_checkpoint(trained_store: tuple[Store, str]) -> None:
    store, checkpoint_id = trained_store
    held_out = checkpoint_reliability(store, checkpoint_id)
    table = held_out.table
    assert table["queries"].sum() == len(load_outcome_table(store, HOST, 6).split("test"))
    assert (table["low"] >= 0).all() and (table["low"] <= table["high"]).all()
    assert np.all((table["share_right"] >= 0) & (table["share_right"] <= 1))
    assert held_out.weights == CostWeights(0.10, 0.20)  # a per-weight checkpoint's own weights


def test_reliability_from_its_weight_free_part_and_kept_as_a_view(trained_store: tuple[Store, str], tmp_path) -> None:
    import pandas as pd

    from forge_core.precompute.view_cache import reliability_view
    from forge_core.reports.reliability import reliability_at, reliability_base

    store, checkpoint_id = trained_store
    expected = checkpoint_reliability(store, checkpoint_id)
    from_base = reliability_at(reliability_base(store, checkpoint_id))
    assert from_base.weights == expected.weights
    pd.testing.assert_frame_equal(from_base.table, expected.table)
    computed = []
    for _ in range(2):  # the second call reads the kept file
        kept = reliability_view(store, checkpoint_id, None, tmp_path, lambda: computed.append(1) or expected)
        assert kept.weights == expected.weights and kept.checkpoint_id == checkpoint_id
        pd.testing.assert_frame_equal(kept.table, expected.table)  # to the last bit, dtypes too
    assert computed == [1]
