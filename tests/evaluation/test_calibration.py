"""Calibration of the cost-conditioned router to a token budget or an F1 floor, on the synthetic store."""

from __future__ import annotations

import numpy as np
import pytest

from forge_core.errors import InvalidInput
from forge_core.evaluation.calibration import RAY_POINTS, CalibrationRequest, _choose, run_calibration
from forge_core.routing.conditioning import CostConditioning
from forge_core.store import Store
from forge_core.training.settings import Stage1Config

HOST = "synthetic-host"
# The paper's warm start: with the six-arm default, 15 epochs on the small synthetic store leave a conditioned
# router that picks ~100-token arms at every weight, so no budget moves it (to look into)
FAST = Stage1Config(max_epochs=15, patience=4, warm_start_arms=3)


def test_the_ray_stays_in_the_trained_range_and_targets_are_checked() -> None:
    ray = CalibrationRequest(budget_tokens=100, ratio=2.0, conditioning=CostConditioning(0.02, 3.0)).ray()
    assert len(ray) == RAY_POINTS and ray[0] == pytest.approx(0.02) and ray[-1] == pytest.approx(1.5)
    assert (np.diff(ray) > 0).all()
    with pytest.raises(InvalidInput, match="give one target"):
        CalibrationRequest()
    with pytest.raises(InvalidInput, match="give one target"):
        CalibrationRequest(budget_tokens=100, min_f1=0.3)
    with pytest.raises(InvalidInput, match="fraction"):
        CalibrationRequest(min_f1=30)
    with pytest.raises(InvalidInput, match="ratio"):
        CalibrationRequest(budget_tokens=100, ratio=0)


def test_the_choice_along_the_ray() -> None:
    lambdas = np.array([0.1, 0.2, 0.4, 0.8])
    tokens, f1 = np.array([400.0, 300.0, 200.0, 100.0]), np.array([0.5, 0.45, 0.4, 0.2])
    assert _choose(CalibrationRequest(budget_tokens=250), lambdas, tokens, f1) == (2, True)  # most quality in budget
    assert _choose(CalibrationRequest(budget_tokens=50), lambdas, tokens, f1) == (3, False)  # cheapest end
    assert _choose(CalibrationRequest(min_f1=0.42), lambdas, tokens, f1) == (1, True)  # fewest tokens above F
    assert _choose(CalibrationRequest(min_f1=0.9), lambdas, tokens, f1) == (0, False)


def test_a_tighter_budget_buys_fewer_tokens_out_of_fold(outcome_store: Store) -> None:
    results = {budget: run_calibration(outcome_store, CalibrationRequest(
        budget_tokens=budget, host=HOST, folds=3, stage1=FAST)) for budget in (150.0, 600.0)}
    tight, loose = results[150.0], results[600.0]
    assert tight.queries == 240 and len(tight.folds) == 3
    assert tight.weights.lambda_in > loose.weights.lambda_in
    assert tight.weights.lambda_out == pytest.approx(2 * tight.weights.lambda_in)
    assert tight.tokens < loose.tokens and tight.f1 <= loose.f1
    assert tight.tokens_ci[0] <= tight.tokens <= tight.tokens_ci[1] and tight.f1_ci[0] <= tight.f1 <= tight.f1_ci[1]
    assert all(fold.dev_tokens <= 150.0 for fold in tight.folds if fold.met_on_dev)
    report = tight.to_json()
    assert report["target"] == "at most 150 tokens a query" and report["realized_tokens"] == tight.tokens


def test_too_many_folds_are_refused_before_any_fold(outcome_store: Store) -> None:
    folds_seen = []
    with pytest.raises(InvalidInput, match="fewer than 1000 folds"):
        run_calibration(outcome_store, CalibrationRequest(budget_tokens=100, host=HOST, folds=1000, stage1=FAST),
                        on_fold=lambda done, total: folds_seen.append(done))
    assert folds_seen == []


@pytest.mark.slow
def test_where_serve_starts_a_budget_the_best_mix_is_named_beside_it(conditioned_store: tuple[Store, str]) -> None:
    """`forge serve --budget-tokens`'s start for a stored conditioned router comes with the best mix of
    fixed arms within the budget on the same test queries and the router's F1 gain over it, paired.
    Slow: the 41 weights of the ray scored on the test split took 16 s at load (6.6 s alone)."""
    from forge_core.evaluation.calibration import ray_start_for_budget
    from forge_core.server.app import budget_mix_text

    store, checkpoint_id = conditioned_store
    start = ray_start_for_budget(store, checkpoint_id, 300.0)
    mix = start.mix
    assert mix["tokens"] <= 300.0 and sum(mix["shares"]) == pytest.approx(1.0)
    gain = mix["gains"][checkpoint_id]
    assert -1.0 <= gain["difference"] <= 1.0 and gain["ci"][0] <= gain["difference"] <= gain["ci"][1]
    text = budget_mix_text(mix, checkpoint_id)
    assert mix["arms"][0] in text and f"--mix {mix['arms'][0]}=" in text
