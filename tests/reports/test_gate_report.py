"""The gates' report on the queries with a stored draft: only those queries, exact macro numbers."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from forge_core.errors import InvalidInput
from forge_core.records import DraftLogprobs
from forge_core.reports.gates import gate_report
from forge_core.store import Store, utc_now


def _rows(policy: str, kind: str, arms: list[str], utility: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"policy": policy, "kind": kind, "benchmark": "popqa", "example_id": ["1", "2", "3", "4"],
                         "arm": arms, "f1": utility, "deploy_utility": utility, "answer_utility": utility,
                         "deploy_tokens": [100.0] * 4, "answer_tokens": [90.0] * 4, "calls": [1] * 4})


def test_the_report_reads_only_the_drafted_queries(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    store.save_crossfit_run("crossfit-x", "embedded", {"host": "embedded"}, 5)
    store.write_crossfit_fold("crossfit-x", 0, pd.concat([
        _rows("always_raw", "fixed arm", ["raw:no_think"] * 4, [0.5, 0.5, 0.5, 0.0]),
        _rows("always_direct", "fixed arm", ["direct:no_think"] * 4, [0.2, 0.2, 0.2, 1.0]),
        _rows("targ", "baseline", ["direct:no_think", "raw:no_think", "raw:no_think", "direct:no_think"],
              [0.2, 0.5, 0.5, 1.0]),
        _rows("ridge_utility", "baseline", ["raw:no_think"] * 4, [0.0] * 4)]))
    now = utc_now()
    store.write_draft_logprobs(*(DraftLogprobs("embedded", "popqa", i, "a", 1, 1, (-0.1,), (-1.0,), 1.0, None, "c", now)
                                 for i in ("1", "2", "3")))  # query 4 has no draft
    report = gate_report(store, "crossfit-x")
    assert (report["queries_with_draft"], report["queries_in_run"], report["best_fixed_policy"]) == (3, 4, "always_raw")
    assert set(report["policies"]) == {"always_raw", "always_direct", "targ"}  # the gates and the fixed arms
    targ = report["policies"]["targ"]
    assert targ["macro_utility"] == pytest.approx(0.4) and targ["retrieval_share"] == pytest.approx(2 / 3)
    assert targ["thinking_share"] == 0.0 and targ["tokens"] == 100.0
    assert targ["ci_utility_vs_best_fixed"] == pytest.approx([-0.3, 0.0])  # -0.3 on query 1, 0 on 2 and 3
    with pytest.raises(InvalidInput):
        gate_report(store, "crossfit-missing")
