"""The recipe identity: one value for a crossfit run's routers and a checkpoint's, older stored
forms read as what they were, and the sign test that says when one recipe beats another."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from forge_core.evaluation.recipe import checkpoint_recipe, default_recipe, recipe_checkpoint, run_recipe
from forge_core.evaluation.recipe_choice import beats
from forge_core.routing.utility import CostWeights

EMBEDDER = "all-MiniLM-L6-v2@onnx"
STAGE1 = {"lr": 0.0002, "weight_decay": 0.01, "batch_size": 64, "max_epochs": 50, "patience": 7, "tau": 1.0,
          "target": "soft", "seed": 0}
CONDITIONING = {"low": 0.02, "high": 3.0, "spread": 6.0, "draws": 1, "fixed_draws": 8}


def run_settings(stage: int = 1, warm: int | None = 3, conditioning: dict | None = None) -> dict:
    stage1 = STAGE1 | ({} if warm is None else {"warm_start_arms": warm})
    return {"stage": stage, "n_arms": 6, "seed": 0, "stage1": stage1, "stage2": {"steps": 1000, "seed": 0},
            "conditioning": conditioning, "lambda_in": 0.6, "lambda_out": 0.6}


def lineage(stage: int = 1, warm: int = 3, draws: int | None = 1, parent: str | None = None) -> dict:
    config = STAGE1 | {"arms": warm} if stage == 1 else {"steps": 1000, "seed": 0}
    record = {"stage": stage, "n_arms": 6, "embedder": EMBEDDER, "seed": 0, "config": config, "parent": parent,
              "lambda_in": None if draws else 0.6, "lambda_out": None if draws else 0.6}
    return record | ({"conditioning": CONDITIONING | {"draws": draws}} if draws else {})


def test_older_runs_read_as_the_recipe_they_ran() -> None:
    """A run stored before the warm start was a setting ran the paper's 3 arms; one stored with no
    conditioning trained its conditioned routers with the default one."""
    today = run_recipe(run_settings(conditioning=CONDITIONING), EMBEDDER)
    assert run_recipe(run_settings(warm=None, conditioning=None), EMBEDDER) == today
    assert today == default_recipe(6, EMBEDDER)
    assert today.label == f"paper's Stage 1 (3 NoThink arms), 1 weight draw, 6 arms, seed 0, {EMBEDDER}"
    assert run_recipe(run_settings(warm=6), EMBEDDER).recipe_id != today.recipe_id


def test_a_stage2_runs_parents_are_the_stage1_recipe() -> None:
    stage2 = run_settings(stage=2)
    assert run_recipe(stage2, EMBEDDER, stage=1) == run_recipe(run_settings(), EMBEDDER)
    assert run_recipe(stage2, EMBEDDER).stage == 2
    assert "+ Stage 2 (1000 steps)" in run_recipe(stage2, EMBEDDER).label


def test_a_checkpoint_is_of_the_recipe_its_lineage_says() -> None:
    recipe = run_recipe(run_settings(), EMBEDDER)
    assert recipe.serves(checkpoint_recipe(lineage()))
    assert not recipe.serves(checkpoint_recipe(lineage(draws=8)))  # 8 weight draws: another recipe
    assert not recipe.serves(checkpoint_recipe(lineage(warm=6)))
    assert recipe.serves(checkpoint_recipe(lineage(draws=None)))  # a per-weight router has no draws
    stage2 = run_recipe(run_settings(stage=2), EMBEDDER)
    assert stage2.serves(checkpoint_recipe(lineage(stage=2, parent="p"), lineage()))
    assert not stage2.serves(checkpoint_recipe(lineage(stage=2, parent="p"), lineage(warm=6)))


def test_the_checkpoint_named_is_the_newest_of_the_recipe_variant_and_weights() -> None:
    rows = [("ckpt-new-other", "lite", lineage(draws=8)), ("ckpt-full", "full", lineage()),
            ("ckpt-lite", "lite", lineage()), ("ckpt-lite-older", "lite", lineage()),
            ("ckpt-weights", "lite", lineage(draws=None))]
    checkpoints = pd.DataFrame([{"checkpoint_id": cid, "variant": variant, "lineage": json.dumps(record)}
                                for cid, variant, record in rows])
    recipe = run_recipe(run_settings(), EMBEDDER)
    assert recipe_checkpoint(checkpoints, recipe, "lite", None) == "ckpt-lite"
    assert recipe_checkpoint(checkpoints, recipe, "full", None) == "ckpt-full"
    assert recipe_checkpoint(checkpoints, recipe, "lite", CostWeights(0.6, 0.6)) == "ckpt-weights"
    assert recipe_checkpoint(checkpoints, recipe, "lite", CostWeights(0.1, 0.2)) is None
    assert recipe_checkpoint(checkpoints, run_recipe(run_settings(warm=6), EMBEDDER), "lite", None) is None


@pytest.mark.parametrize(("above", "below", "expected"), [
    (5, 0, True),  # one-sided p = 1/32
    (4, 0, False),  # 1/16
    (6, 1, False),  # 8/128
    (7, 1, True),  # 9/256
    (2, 1, False),
    (0, 5, False),
])
def test_a_recipe_beats_another_only_beyond_chance(above: int, below: int, expected: bool) -> None:
    assert beats(above, below) is expected


def test_a_kept_recipe_choice_is_not_read_for_recipes_named_otherwise(tmp_path, monkeypatch) -> None:
    """The kept comparisons name recipe ids: when the same runs' recipes are named otherwise (here, as the
    code that reads a run's settings changed: another retriever hash in the recipe), they are computed
    again, not read (a kept file of the old ids raised a KeyError on the Pareto page)."""
    from forge_core.evaluation import recipe_choice

    def measured(retriever_hash: str) -> list:
        return [recipe_choice.MeasuredRecipe(default_recipe(6, EMBEDDER, retriever_hash, stage=stage), f"run-{stage}",
                                             "", "cell", {}) for stage in (1, 2)]

    def comparisons(store, runs: list) -> list[dict]:  # one decided comparison of the two recipes, as measured
        return [{"recipe": runs[0].recipe.recipe_id, "against": runs[1].recipe.recipe_id, "ci": [0.01, 0.02]}]

    monkeypatch.setattr(recipe_choice, "_comparisons", comparisons)
    for retriever_hash in ("before", "after"):
        chosen = recipe_choice.recommended_recipe(None, "host", "", EMBEDDER, 6, tmp_path,
                                                  measured=measured(retriever_hash))
        assert chosen["recipe"] == default_recipe(6, EMBEDDER, retriever_hash, stage=1)
