"""The fold trainings behind `forge decide --engine ray` as Ray tasks: the calibration's weight sweep
(`--budget-tokens` without weights) and the conditioned fold routers that decide at weights without
a stored run give, bit for bit, what they give in one process."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch

from forge_core.evaluation.calibration import CalibrationRequest, run_calibration
from forge_core.evaluation.crossfit import CrossfitSettings, crossfit_run_id
from forge_core.evaluation.fold_decisions import decision_context, fold_file, out_of_fold_outcomes
from forge_core.routing.conditioning import CostConditioning
from forge_core.routing.utility import CostWeights
from forge_core.store import Store
from forge_core.training.settings import Stage1Config

pytestmark = pytest.mark.e2e  # a local Ray cluster: scripts/test.sh runs the e2e tests after the default suite

HOST = "synthetic-host"
FAST = Stage1Config(max_epochs=2, patience=1, warm_start_arms=3)  # the same training either way: short will do
ANCHOR = CrossfitSettings(HOST, folds=2, stage1=FAST, conditioning=CostConditioning()).to_dict()


def fold_routers_at(store: Store, cache: Path, weights: CostWeights, **engine: str) -> tuple[pd.DataFrame, dict, str]:
    """The anchor run's out-of-fold outcomes at `weights` and the routers' reproduced shares, its fold
    routers trained into `cache` (from a context of its own), and the run's id."""
    base = decision_context(store, ANCHOR, "deploy")
    run_id = crossfit_run_id(ANCHOR, base)
    return *out_of_fold_outcomes(store, run_id, ANCHOR, weights, "deploy", cache, base=base, **engine), run_id


def test_decide_folds_on_ray_equal_the_in_process_ones(outcome_store: Store, ray_local, tmp_path: Path) -> None:
    address = ray_local.get_runtime_context().gcs_address
    request = CalibrationRequest(budget_tokens=300.0, host=HOST, folds=2, stage1=FAST)
    assert run_calibration(outcome_store, request, engine="ray", address=address) == run_calibration(outcome_store,
                                                                                                        request)

    weights = CostWeights(0.3, 0.5)
    local = fold_routers_at(outcome_store, tmp_path / "local", weights)
    on_ray = fold_routers_at(outcome_store, tmp_path / "ray", weights, engine="ray", address=address)
    pd.testing.assert_frame_equal(on_ray[0], local[0], check_exact=True)
    assert on_ray[1:] == local[1:]
    kept = [torch.load(fold_file(tmp_path / name, local[2]), weights_only=True)["folds"] for name in ("ray", "local")]
    for ray_fold, local_fold in zip(*kept, strict=True):
        for name, record in local_fold["routers"].items():
            assert record["standardizer"] == ray_fold["routers"][name]["standardizer"]
            for key, tensor in record["state"].items():
                assert torch.equal(ray_fold["routers"][name]["state"][key], tensor), (name, key)
        assert all(torch.equal(a, b) for a, b in zip(ray_fold["floor"]["coef"], local_fold["floor"]["coef"]))
