"""Which recipe the store's own crossfit runs measure best: the recommended recipe, chosen by
measurement, never by date.

Two recipes are compared where the store measured both on the same queries at the same cost
weights, accounting, folds and split seed (two runs, or one Stage-2 run's routers against their
Stage-1 parents): for every FORGE router both measured, the paired bootstrap 95% interval of its
out-of-fold utility under one recipe minus under the other. A comparison is decided when its
interval excludes zero. Head to head, a recipe beats another when its decided comparisons favour it
beyond chance: a one-sided sign test over them at level `SIGN_TEST_LEVEL` (with no true difference,
a decided comparison falls either way with even odds). The recommended recipe is the simplest
(Stage 1 before Stage 2, the paper's warm start, the default seed; then the one more runs measured)
that no other recipe beats, among those the store's runs measured; with no run at all it is the
library's default (`recipe.default_recipe`).
Computed once per set of finished runs and kept under the cache directory.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from forge_core.evaluation.file_cache import cached_file
from forge_core.evaluation.recipe import STAGE1_PARENT_SUFFIX, Recipe, default_recipe, run_recipe
from forge_core.identity import canonical_hash
from forge_core.policies.registry import ConditionedRouter, TrainedRouter, variants
from forge_core.statistics import Interval, macro, paired_bootstrap_cis
from forge_core.store import Store
from forge_core.training.settings import PAPER_WARM_START_ARMS

CHOICE_VERSION = 1  # layout of a kept choice: bump when it changes
ROUTERS = (*variants(TrainedRouter), *variants(ConditionedRouter))  # the routers a recipe trains
SIGN_TEST_LEVEL = 0.05  # a recipe beats another when its decided comparisons favour it beyond this chance
CELL_KEYS = ("lambda_in", "lambda_out", "accounting", "folds", "split_seed", "dev_fraction", "n_arms")


@dataclass(frozen=True)
class MeasuredRecipe:
    """One recipe as one finished crossfit run measured it."""

    recipe: Recipe
    run_id: str
    suffix: str  # how the run names the recipe's routers: "" or `STAGE1_PARENT_SUFFIX`
    cell: str  # what the run shares with a run it can be paired with (weights, accounting, folds, ...)
    settings: dict


def measured_recipes(store: Store, host: str, retriever_hash: str, embedder: str) -> list[MeasuredRecipe]:
    """Every recipe each finished crossfit run of the host under the retriever measured, newest
    run first (a Stage-2 run measures its Stage-2 recipe and its Stage-1 parents')."""
    runs = store.crossfit_runs(host)
    measured = []
    for run_id, stored, folds, done in zip(runs["run_id"], runs["settings"], runs["folds"], runs["folds_done"]):
        settings = json.loads(stored)
        if done < folds or settings.get("retriever_hash", "") != retriever_hash:
            continue
        cell = json.dumps({key: settings.get(key) for key in CELL_KEYS}, sort_keys=True)
        measured.append(MeasuredRecipe(run_recipe(settings, embedder), str(run_id), "", cell, settings))
        if settings["stage"] == 2:
            measured.append(MeasuredRecipe(run_recipe(settings, embedder, stage=1), str(run_id),
                                           STAGE1_PARENT_SUFFIX, cell, settings))
    return measured


def recommended_recipe(store: Store, host: str, retriever_hash: str, embedder: str, n_arms: int,
                       cache_dir: Path, measured: list[MeasuredRecipe] | None = None) -> dict:
    """The recommended recipe and why: {"recipe": Recipe, "standings": [...] (the recommended one
    first), "comparisons": [...], "measured": bool}; see the module docstring. `measured`: the host's
    `measured_recipes` under the retriever and embedder when the caller keeps them (they change only
    with the store's crossfit runs), else read here."""
    if measured is None:
        measured = measured_recipes(store, host, retriever_hash, embedder)
    measured = [m for m in measured if m.recipe.n_arms == n_arms]
    fallback = default_recipe(n_arms, embedder, retriever_hash)
    # keyed by the recipe ids too: the kept comparisons name them, and a code change that names a run's
    # recipe otherwise must not read comparisons of ids no run has any more
    key = canonical_hash("recipe-choice", CHOICE_VERSION,
                         {"runs": sorted({m.run_id for m in measured}), "embedder": embedder, "n_arms": n_arms,
                          "recipes": sorted({f"{m.run_id}{m.suffix}:{m.recipe.recipe_id}" for m in measured})})
    path = Path(cache_dir) / "recipes" / f"{key[:16]}.json"
    comparisons = cached_file(path, lambda: _comparisons(store, measured),
                              lambda file: json.loads(file.read_text()),
                              lambda file, value: file.write_text(json.dumps(value)))
    recipes = {m.recipe.recipe_id: m.recipe for m in measured} or {fallback.recipe_id: fallback}
    runs = Counter(m.recipe.recipe_id for m in measured)
    standings = sorted(_standings(recipes, comparisons), key=lambda row: (
        bool(row["beaten_by"]), _simplicity(recipes[row["recipe_id"]], fallback, runs[row["recipe_id"]])))
    return {"recipe": recipes[standings[0]["recipe_id"]], "standings": standings, "comparisons": comparisons,
            "measured": any(row["comparisons"] for row in standings)}


def _simplicity(recipe: Recipe, fallback: Recipe, runs: int) -> tuple:
    """Sorts the simplest recipe first: Stage 1 before Stage 2, the paper's warm start, the library's
    default, the default seed; then the one measured by more runs (`runs`)."""
    return (recipe.stage, recipe.warm_start_arms != PAPER_WARM_START_ARMS, recipe != fallback, recipe.seed != 0,
            -runs, recipe.recipe_id)


def beats(above: int, below: int) -> bool:
    """Whether `above` comparisons decided in a recipe's favour against `below` against it are more
    than chance: the one-sided sign test's p-value at most `SIGN_TEST_LEVEL`."""
    decided = above + below
    p_value = sum(math.comb(decided, k) for k in range(above, decided + 1)) / 2 ** decided
    return above > below and p_value <= SIGN_TEST_LEVEL


def _standings(recipes: dict[str, Recipe], comparisons: list[dict]) -> list[dict]:
    """Per recipe, head to head against every recipe it was compared with: the recipes it beats,
    those that beat it (`beats`), and how many of its comparisons were decided each way."""
    decided: dict[tuple[str, str], list[int]] = {}
    for comparison in comparisons:
        interval = Interval.of(comparison["ci"])
        pair = decided.setdefault((comparison["recipe"], comparison["against"]), [0, 0, 0])
        pair[0] += int(interval.above)
        pair[1] += int(interval.below)
        pair[2] += 1
    rows = {recipe_id: {"recipe_id": recipe_id, "label": recipe.label, "beats": [], "beaten_by": [],
                        "comparisons": 0, "decidably_above": 0, "decidably_below": 0}
            for recipe_id, recipe in recipes.items()}
    for (first, second), (above, below, count) in decided.items():
        for recipe_id, other, ahead, behind in ((first, second, above, below), (second, first, below, above)):
            row = rows[recipe_id]
            row["comparisons"] += count
            row["decidably_above"] += ahead
            row["decidably_below"] += behind
            if beats(ahead, behind):
                row["beats"].append(other)
            if beats(behind, ahead):
                row["beaten_by"].append(other)
    return list(rows.values())


def _comparisons(store: Store, measured: list[MeasuredRecipe]) -> list[dict]:
    """Every paired comparison of two recipes measured in one cell (see the module docstring)."""
    comparisons = []
    by_cell: dict[str, list[MeasuredRecipe]] = {}
    for m in measured:
        by_cell.setdefault(m.cell, []).append(m)
    results: dict[str, pd.DataFrame] = {}
    for members in by_cell.values():
        for first, second in _pairs(members):
            for run_id in (first.run_id, second.run_id):
                if run_id not in results:
                    results[run_id] = store.crossfit_results(run_id)
            comparisons += _compare(first, second, results[first.run_id], results[second.run_id])
    return comparisons


def _pairs(members: list[MeasuredRecipe]) -> Iterator[tuple[MeasuredRecipe, MeasuredRecipe]]:
    """Each pair of different recipes in a cell, each recipe by its newest run."""
    newest: dict[str, MeasuredRecipe] = {}
    for m in members:
        newest.setdefault(m.recipe.recipe_id, m)
    ordered = sorted(newest.values(), key=lambda m: m.recipe.recipe_id)
    for i, first in enumerate(ordered):
        for second in ordered[i + 1:]:
            yield first, second


def _compare(first: MeasuredRecipe, second: MeasuredRecipe, rows_first: pd.DataFrame,
             rows_second: pd.DataFrame) -> list[dict]:
    """The paired comparisons of two recipes' routers on the queries both runs decided."""
    column = f"{first.settings['accounting']}_utility"
    out = []
    names, differences, benchmarks = [], [], None
    for router in ROUTERS:
        a = rows_first[rows_first["policy"] == router + first.suffix]
        b = rows_second[rows_second["policy"] == router + second.suffix]
        if a.empty or b.empty:
            continue
        joined = a.merge(b, on=["benchmark", "example_id"], suffixes=("_a", "_b")).sort_values(
            ["benchmark", "example_id"])
        if len(joined) != len(a) or len(joined) != len(b):
            continue  # not the same queries: the runs saw different data
        names.append(router)
        differences.append(joined[f"{column}_a"].to_numpy() - joined[f"{column}_b"].to_numpy())
        benchmarks = joined["benchmark"].to_numpy()
    if not names:
        return out
    matrix = np.vstack(differences)
    intervals = paired_bootstrap_cis(matrix, benchmarks)
    for name, difference, interval in zip(names, matrix, intervals):
        out.append({"recipe": first.recipe.recipe_id, "against": second.recipe.recipe_id, "router": name,
                    "runs": [first.run_id, second.run_id], "lambda_in": first.settings["lambda_in"],
                    "lambda_out": first.settings["lambda_out"], "split_seed": first.settings["split_seed"],
                    "difference": macro(difference, benchmarks), "ci": list(interval)})
    return out


def recommended_or_default(store: Store, host: str, n_arms: int, retriever: str, cache_dir: Path) -> Recipe:
    """The recommended recipe of a host, alphabet and retriever name with the current embedder (what
    `forge train`, `forge eval crossfit` and the Train page default to), or the library's default
    where the host has no outcomes under the retriever yet (the request's own check then says
    what is missing)."""
    from forge_core.errors import ForgeError
    from forge_core.evidence.embedders import embedder_name
    from forge_core.evidence.retrievers import evaluated_retriever_hash

    try:
        evidence = evaluated_retriever_hash(store, host, retriever)
    except ForgeError:
        return default_recipe(n_arms, embedder_name())
    return recommended_recipe(store, host, evidence, embedder_name(), n_arms, cache_dir)["recipe"]
