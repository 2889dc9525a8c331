"""Cost conditioning: the weight inputs and the conditioned training rows, exact numbers."""

from __future__ import annotations

import numpy as np
import pytest

from forge_core.errors import InvalidInput
from forge_core.routing.conditioning import CostConditioning
from forge_core.routing.utility import CostWeights


def test_weights_are_log_scaled_onto_minus_one_one_and_clipped() -> None:
    conditioning = CostConditioning(low=0.01, high=1.0, spread=1.0)
    encoded = conditioning.encode([0.01, 0.1, 1.0, 0.0, 5.0], 0.1)
    assert np.allclose(encoded[:, 0], [-1.0, 0.0, 1.0, -1.0, 1.0])  # 0.1 is the log midpoint; 0 and 5 clip
    assert np.allclose(encoded[:, 1], 0.0)
    x = np.ones((3, 4), dtype=np.float32)
    inputs = conditioning.inputs(x, CostWeights(1.0, 0.01))
    assert inputs.shape == (3, 6) and np.allclose(inputs[:, 4:], [[1.0, -1.0]] * 3)
    with pytest.raises(InvalidInput, match="non-negative"):
        conditioning.inputs(x, CostWeights(-0.1, 0.2))


def test_expand_gives_each_query_its_drawn_weights_and_utilities() -> None:
    conditioning = CostConditioning(low=0.02, high=3.0)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    f1 = np.array([[0.5, 0.9], [0.2, 0.4]])
    c_in, c_out = np.array([[0.1, 1.0], [0.2, 0.5]]), np.array([[0.0, 0.5], [0.1, 0.1]])
    inputs, utility = conditioning.expand(x, f1, c_in, c_out, seed=3, copies=4)
    lambda_in, lambda_out = conditioning.draw(8, seed=3)
    assert inputs.shape == (8, 5) and utility.shape == (8, 2)
    assert (inputs[:4, :3] == x[0]).all() and (inputs[4:, :3] == x[1]).all()  # copies of a query are adjacent
    assert np.allclose(inputs[:, 3:], conditioning.encode(lambda_in, lambda_out))
    row = 5  # the second copy of query 1
    expected = f1[1] - lambda_in[row] * c_in[1] - lambda_out[row] * c_out[1]
    assert np.allclose(utility[row], expected)
    assert 0.02 <= lambda_in.min() and lambda_in.max() <= 3.0 and lambda_in.std() > 0.1
    assert not np.allclose(lambda_in, lambda_out)  # the two weights are drawn independently


def test_record_roundtrip_and_refusals() -> None:
    conditioning = CostConditioning(0.05, 2.0, 4.0, 3, 5)
    assert CostConditioning.from_dict(conditioning.to_dict()) == conditioning
    with pytest.raises(InvalidInput, match="0 < low < high"):
        CostConditioning(low=1.0, high=0.5)
    with pytest.raises(InvalidInput, match="draws"):
        CostConditioning(draws=0)
