"""Gold evidence recall of prompts: exact shares, policies' summaries, and the real store path."""

from __future__ import annotations

import math

import numpy as np
import pytest

from forge_core.policies.grounding import evidence_recall, gold_recall_frame, gold_recall_matrix, grounding_summary
from forge_core.routing.outcome_table import load_outcome_table


def test_evidence_recall_counts_whole_texts_up_to_case_and_spacing() -> None:
    prompt = "Title\nParis is the capital  of France. It is large.\nRome is in Italy."
    assert evidence_recall(("paris is the capital of france.", "Rome is in Italy.", "Berlin is big."), prompt) == \
        pytest.approx(2 / 3)
    assert math.isnan(evidence_recall((), prompt))


def test_grounding_summary_is_the_macro_over_annotated_benchmarks() -> None:
    recall = np.array([[0.0, 1.0], [0.0, 0.5], [np.nan, np.nan]])
    summary = grounding_summary(recall, np.array([1, 1, 0]), np.array(["a", "b", "popqa"]))
    assert summary == {"gold_recall": 0.75, "gold_recall_per_benchmark": {"a": 1.0, "b": 0.5}}


def test_direct_holds_no_evidence_and_raw_holds_some_on_real_questions(outcome_store) -> None:
    table = load_outcome_table(outcome_store, "synthetic-host")
    recall = gold_recall_matrix(outcome_store, table)
    arms = list(table.arms)
    annotated = table.benchmarks != "popqa"
    assert (recall[annotated][:, arms.index("direct:no_think")] == 0).all()
    assert np.isnan(recall[~annotated]).all()
    assert 0 < np.nanmean(recall[annotated][:, arms.index("raw:no_think")]) <= 1
    frame = gold_recall_frame(outcome_store, table)
    assert list(frame["support"]) == ["direct", "summary", "raw"] and "popqa" not in frame.columns
    assert "macro" in frame.columns


def test_each_query_recall_is_kept_on_disk_and_read_back(outcome_store, monkeypatch) -> None:
    from forge_core.policies import grounding

    table = load_outcome_table(outcome_store, "synthetic-host")
    ids = [example_id for name, example_id in table.keys if name == "musique"][:3]
    computed = grounding.benchmark_recall(outcome_store, "musique", ids)
    assert computed == {example.example_id: grounding.query_recall(outcome_store, example)
                        for example in outcome_store.examples("musique", ids)}  # to the last bit
    monkeypatch.setattr(grounding, "query_recall", lambda *args: pytest.fail("a kept recall was recomputed"))
    assert grounding.benchmark_recall(outcome_store, "musique", ids[1:]) == {i: computed[i] for i in ids[1:]}
