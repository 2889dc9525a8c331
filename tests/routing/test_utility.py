"""Exact-value tests for cost normalization, Pareto utility, Boltzmann targets and the oracle."""

from __future__ import annotations

import math

import numpy as np
import pytest

from forge_core.routing.utility import (
    CostNormalizer,
    CostWeights,
    boltzmann_target,
    oracle_actions,
    oracle_sets,
    pareto_utility,
    regret,
)

TOKENS_IN = np.array([[100.0, 200.0], [50.0, 400.0]])
TOKENS_OUT = np.array([[10.0, 20.0], [64.0, 5.0]])


def test_normalizer_fits_training_maxima_over_all_query_arm_entries() -> None:
    normalizer = CostNormalizer.fit(TOKENS_IN, TOKENS_OUT, split="train")
    assert normalizer == CostNormalizer(max_input_tokens=400.0, max_output_tokens=64.0)
    c_in, c_out = normalizer.transform([[200.0, 800.0]], [[32.0, 16.0]])
    np.testing.assert_array_equal(c_in, [[0.5, 2.0]])  # dev/test costs may exceed 1
    np.testing.assert_array_equal(c_out, [[0.5, 0.25]])


@pytest.mark.parametrize("split", ["dev", "test", "all", "TRAIN"])
def test_normalizer_refuses_every_split_but_train(split: str) -> None:
    with pytest.raises(ValueError, match="train split only"):
        CostNormalizer.fit(TOKENS_IN, TOKENS_OUT, split=split)


@pytest.mark.parametrize(
    ("tokens_in", "tokens_out"),
    [([], [1.0]), ([1.0, -1.0], [1.0]), ([1.0, np.nan], [1.0]), ([0.0, 0.0], [3.0])],
)
def test_normalizer_rejects_bad_token_counts(
    tokens_in: list[float], tokens_out: list[float]
) -> None:
    with pytest.raises(ValueError):
        CostNormalizer.fit(tokens_in, tokens_out, split="train")


def test_normalizer_round_trips_and_refuses_records_not_fitted_on_train() -> None:
    normalizer = CostNormalizer.fit(TOKENS_IN, TOKENS_OUT, split="train")
    record = normalizer.to_dict()
    assert record == {"fit_split": "train", "max_input_tokens": 400.0, "max_output_tokens": 64.0}
    assert CostNormalizer.from_dict(record) == normalizer
    with pytest.raises(ValueError, match="not fitted on the train split"):
        CostNormalizer.from_dict({**record, "fit_split": "dev"})
    with pytest.raises(ValueError, match="finite and positive"):
        CostNormalizer.from_dict({**record, "max_output_tokens": 0.0})


def test_pareto_utility_exact_values_and_default_weights() -> None:
    utility = pareto_utility([[0.8, 1.0, 0.0]], [[0.5, 1.0, 0.0]], [[0.25, 1.0, 0.5]])
    expected = [[0.8 - 0.10 * 0.5 - 0.20 * 0.25, 1.0 - 0.10 - 0.20, -0.20 * 0.5]]
    np.testing.assert_array_equal(utility, expected)
    assert utility[0, 0] == pytest.approx(0.7, abs=1e-15)
    assert pareto_utility(0.5, 1.0, 1.0, CostWeights(0.0, 0.5)) == 0.0


def test_pareto_utility_rejects_percent_f1_and_negative_weights() -> None:
    with pytest.raises(ValueError, match="fraction"):
        pareto_utility([80.0], [0.1], [0.1])
    with pytest.raises(ValueError, match="non-negative"):
        pareto_utility([0.8], [0.1], [0.1], CostWeights(lambda_in=-0.1))


def test_boltzmann_target_hand_computed_softmax() -> None:
    utility = np.array([[0.0, math.log(2.0), math.log(3.0)], [0.2, 0.2, 0.2]])
    target = boltzmann_target(utility)
    np.testing.assert_allclose(target, [[1 / 6, 2 / 6, 3 / 6], [1 / 3, 1 / 3, 1 / 3]], rtol=0, atol=1e-15)
    # tau = 2 on doubled utilities gives the same target
    np.testing.assert_allclose(boltzmann_target(2 * utility, tau=2.0), target, rtol=0, atol=1e-15)
    # tau = 0.5: softmax of [0, 2 ln 2, 2 ln 3] = [1, 4, 9] / 14
    np.testing.assert_allclose(boltzmann_target(utility[0], tau=0.5), [1 / 14, 4 / 14, 9 / 14], atol=1e-15)


def test_boltzmann_target_is_stable_for_large_utilities() -> None:
    target = boltzmann_target([[1000.0, 1000.0 + math.log(3.0)], [-1000.0, -1000.0]])
    np.testing.assert_allclose(target, [[0.25, 0.75], [0.5, 0.5]], atol=1e-12)
    with pytest.raises(ValueError, match="tau"):
        boltzmann_target([[0.0, 1.0]], tau=0.0)


def test_oracle_breaks_ties_towards_the_lowest_index() -> None:
    utility = [[0.5, 0.7, 0.7], [0.2, 0.2, 0.1], [-0.1, -0.3, 0.0]]
    np.testing.assert_array_equal(oracle_actions(utility), [1, 0, 2])
    assert oracle_actions(utility).dtype == np.int64


def test_oracle_sets_hold_every_tied_best_arm_and_regret_is_the_gap_to_the_best():
    utility = np.array([[0.0, 0.0, 0.0], [0.2, 0.5, 0.5 - 1e-12], [0.3, 0.1, -0.2]])
    assert oracle_sets(utility).tolist() == [[True, True, True], [False, True, True], [True, False, False]]
    assert regret(utility, [2, 0, 1]) == pytest.approx([0.0, 0.3, 0.2])
