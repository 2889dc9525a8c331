"""The dashboard's kept views: read back exactly while the store holds the same rows, computed
again once an outcome is added or rewritten in place."""

from __future__ import annotations

import dataclasses

import pandas as pd

from forge_core.evaluation.cached import CachedRequest
from forge_core.precompute.view_cache import pareto_view
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
