"""The dashboard's kept views: read back exactly while the store holds the same rows, computed
again once an outcome is added or rewritten in place; an action map to its last field."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from forge_core.evaluation.cached import CachedRequest
from forge_core.precompute.view_cache import action_map_view, pareto_view
from forge_core.reports.action_map import compute_action_map
from forge_core.routing.utility import CostWeights
from forge_core.store import Store

from support.app_store import synthetic_outcome


def test_a_kept_view_is_read_until_an_outcome_changes(tmp_path) -> None:
    store = Store(tmp_path / "store.duckdb")
    outcome = synthetic_outcome("musique", "q1", "raw:no_think", 1)
    store.write_arm_outcome(outcome)
    frame = pd.DataFrame({"policy": ["always_raw"], "cost_k": [0.123456789], "on_frontier": [True]})
    computed = []

    def view() -> pd.DataFrame:
        return pareto_view(store, CachedRequest(), False, tmp_path / "cache", lambda: computed.append(1) or frame)

    pd.testing.assert_frame_equal(view(), frame)
    pd.testing.assert_frame_equal(view(), frame)  # read back to the last bit
    assert len(computed) == 1
    store.write_arm_outcome(dataclasses.replace(outcome, f1=0.0, finished_at=outcome.finished_at.replace(year=2027)))
    view()  # the same rows, one rewritten: another view
    assert len(computed) == 2


def test_a_kept_action_map_is_read_back_field_by_field(trained_store: tuple[Store, str], tmp_path) -> None:
    store, checkpoint_id = trained_store
    computed = []

    def view(weights: CostWeights | None):
        def compute():
            computed.append(weights)
            return compute_action_map(store, "synthetic-host", checkpoint_id, "test", umap_cache=tmp_path / "umap")

        return action_map_view(store, checkpoint_id, "test", None, weights, tmp_path / "cache", compute)

    made, kept = view(None), view(None)
    assert computed == [None]  # the second one read from its file
    for field in dataclasses.fields(made):
        ours, theirs = getattr(made, field.name), getattr(kept, field.name)
        if isinstance(ours, np.ndarray):
            assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs), field.name
        else:
            assert type(ours) is type(theirs) and ours == theirs, field.name
    view(CostWeights(0.5, 0.5))  # other weights: another map
    assert computed == [None, CostWeights(0.5, 0.5)]
