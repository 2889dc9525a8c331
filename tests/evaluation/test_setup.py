"""prepare_evaluations: the features once per distinct host and benchmarks, the routers per settings."""

from __future__ import annotations

import dataclasses

from forge_core.evaluation import setup
from forge_core.evaluation.settings import EvaluationSettings
from forge_core.evaluation.setup import prepare_evaluations


def test_features_are_computed_once_per_host_benchmarks_and_retriever(monkeypatch) -> None:
    features, routers = [], []
    monkeypatch.setattr(setup, "compute_features", lambda store, host, benchmarks, on_progress=None, retriever="":
                        features.append((host, benchmarks, retriever)))
    monkeypatch.setattr(setup, "train_missing_routers", lambda store, settings:
                        routers.append(settings) or [f"ckpt-{len(routers)}"])
    base = EvaluationSettings("a")
    evaluations = [dataclasses.replace(base, split_seed=split_seed, seed=seed) for split_seed in (0, 1)
                   for seed in (0, 1)] + [EvaluationSettings("b"), EvaluationSettings("a", benchmarks=("popqa",)),
                                          EvaluationSettings("a", retriever="d")]
    assert prepare_evaluations(None, evaluations) == [f"ckpt-{i}" for i in range(1, 8)]
    assert features == [("a", None, "bm25"), ("b", None, "bm25"), ("a", ("popqa",), "bm25"), ("a", None, "d")]
    assert routers == evaluations
