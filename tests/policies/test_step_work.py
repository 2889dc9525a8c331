"""What a Pareto slider step no longer recomputes (issue #51): TierMem's classifier, whose fit depends on
the weights only through its train labels, is fitted once per set of labels (a 0.01 step rarely changes
one); the BM25 thresholds' bands of the dev rows are made once per context; the hull of the fixed arms
is made once per set of arms' outcomes, not twice for each policy measured against it; a point whose
decisions did not move (every fixed arm's, most baselines') keeps its gap to the mix and its grounding; a recipe's id is
hashed once (`forge decide` compares every measured run's recipe with the chosen one). Each reused
result is the one a fresh computation gives."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from forge_core.evaluation import recipe
from forge_core.policies import baselines, mix_hull
from forge_core.policies.context import EvalContext, evaluation_context
from forge_core.routing.utility import CostWeights
from forge_core.store import Store

HOST = "synthetic-host"


def counting(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list[tuple]:
    """Replace `owner.name` by a wrapper recording the arguments of every call."""
    calls: list[tuple] = []
    real: Callable = getattr(owner, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def train_labels(context: EvalContext) -> np.ndarray:
    return baselines.TierMem().train_labels(context)[context.rows("train")]


def fitted(context: EvalContext) -> baselines.TierMem:
    policy = baselines.TierMem()
    policy.fit(context)
    return policy


def test_tiermem_is_fitted_once_per_set_of_train_labels(outcome_store: Store, monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    base = evaluation_context(outcome_store, HOST, 6, CostWeights(0.1, 0.2))
    first, step, far = CostWeights(0.1, 0.2), CostWeights(0.11, 0.2), CostWeights(0.6, 0.6)
    assert np.array_equal(train_labels(base.at(first)), train_labels(base.at(step)))  # a step: the same labels
    assert not np.array_equal(train_labels(base.at(first)), train_labels(base.at(far)))
    assert len(np.unique(train_labels(base.at(far)))) == 2  # a classifier, not a constant arm
    fits = counting(monkeypatch, baselines, "_classifier")
    policies = {weights: fitted(base.at(weights)) for weights in (first, step, far, first)}
    assert len(fits) == 2  # the first weights' labels, then the far weights'; the step and the return reuse them
    for weights, policy in policies.items():  # each as a fresh fit at its weights (a new context) makes it
        fresh = fitted(evaluation_context(outcome_store, HOST, 6, weights))
        assert np.array_equal(policy.model.coef_, fresh.model.coef_)


def test_bm25_thresholds_band_the_dev_rows_once_per_context(outcome_store: Store,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    base = evaluation_context(outcome_store, HOST, 6, CostWeights(0.1, 0.2))
    calls: list[tuple] = []
    real = baselines.BM25Threshold._dev_bands
    monkeypatch.setattr(baselines.BM25Threshold, "_dev_bands",
                        classmethod(lambda cls, *args: calls.append(args) or real(*args)))
    for weights in (CostWeights(0.1, 0.2), CostWeights(0.11, 0.2), CostWeights(0.6, 0.6)):
        policy = baselines.BM25Threshold()
        policy.fit(base.at(weights))
        fresh = baselines.BM25Threshold()
        fresh.fit(evaluation_context(outcome_store, HOST, 6, weights))  # a new context: bands made again
        assert (policy.low, policy.high, policy.order) == (fresh.low, fresh.high, fresh.order)
    assert len(calls) == 1 + 3  # the base context's once, and each fresh context's


def test_the_fixed_arms_hull_is_made_once_for_every_policy_measured_against_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    arms = mix_hull.ArmOutcomes(names=("cheap", "middle", "dear"), f1=rng.uniform(size=(3, 40)),
                                tokens=np.array([[100.0] * 40, [200.0] * 40, [300.0] * 40]),
                                benchmarks=np.array(["a", "b"] * 20))
    hulls = counting(monkeypatch, mix_hull, "upper_hull")
    masks = counting(monkeypatch, mix_hull, "benchmark_masks")
    gaps = [mix_hull.hull_gap(arms, rng.uniform(size=40), np.full(40, tokens)) for tokens in (150.0, 250.0, 300.0)]
    assert (len(hulls), len(masks)) == (1, 1)  # not one hull and one set of masks for each policy
    fresh = mix_hull.ArmOutcomes(arms.names, arms.f1, arms.tokens, arms.benchmarks)  # nothing made yet
    assert [gap["mix"] for gap in gaps] == [mix_hull.best_mix(fresh, tokens).to_dict() for tokens in (150, 250, 300)]


@pytest.mark.parametrize("by_benchmark", [False, True])
def test_a_point_whose_decisions_a_step_leaves_as_they_were_is_not_measured_again(
        outcome_store: Store, monkeypatch: pytest.MonkeyPatch, by_benchmark: bool) -> None:
    from forge_core.evaluation import cached
    from forge_core.evaluation.settings import EvaluationSettings

    base = evaluation_context(outcome_store, HOST, 6, CostWeights(0.1, 0.2))

    def points(weights: CostWeights, context: EvalContext | None = base) -> list[dict]:
        request = cached.CachedRequest(EvaluationSettings(HOST, "test", 6, weights), checkpoints=())
        return cached.pareto_points(outcome_store, request, by_benchmark, base=context)["points"]

    points(CostWeights(0.1, 0.2))
    measured = counting(monkeypatch, cached, "hull_gap")
    stepped = points(CostWeights(0.11, 0.2))
    fixed = [point for point in stepped if point["kind"] == "fixed arm"]
    assert fixed and len(measured) <= len(stepped) - len(fixed)  # the fixed arms' points: kept
    measured.clear()
    assert points(CostWeights(0.1, 0.2)) and measured == []  # a step back: every point's decisions as they were
    with monkeypatch.context() as nothing_kept:  # as computed with nothing reused
        nothing_kept.setattr(EvalContext, "weight_free", lambda self, key, compute: compute())
        assert stepped == points(CostWeights(0.11, 0.2), context=None)


def test_a_recipe_id_is_hashed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    hashes = counting(monkeypatch, recipe, "canonical_hash")
    chosen = recipe.default_recipe(6, "all-MiniLM-L6-v2@onnx")
    ids = {chosen.recipe_id for _ in range(3)}
    assert len(hashes) == 1
    assert ids == {recipe.default_recipe(6, "all-MiniLM-L6-v2@onnx").recipe_id}  # a new recipe: the same id
