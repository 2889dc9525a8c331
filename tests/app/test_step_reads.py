"""A Pareto slider step decides without re-reading what the weights do not change: `forge decide`
reads the host's crossfit runs (to choose the recipe, then to find its runs), and the page's
`data.decision_at` has them read once per store version, shared by every weight; a write to the
store (a new version) reads them again, so a step never decides on stale runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st

from app import data
from forge_core.routing.utility import CostWeights
from forge_core.store import Store


@pytest.fixture
def counted_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Store, list[str | None]]:
    """An empty store whose crossfit-run reads are counted (the host each read asked for)."""
    monkeypatch.setenv("FORGE_CACHE_DIR", str(tmp_path / "cache"))
    st.cache_data.clear()
    st.cache_resource.clear()
    reads: list[str | None] = []
    read = Store.crossfit_runs

    def counted(self: Store, host: str | None = None):
        reads.append(host)
        return read(self, host)

    monkeypatch.setattr(Store, "crossfit_runs", counted)
    return Store(tmp_path / "store.duckdb"), reads


def test_slider_steps_read_the_crossfit_runs_once_per_store_version(counted_store) -> None:
    store, reads = counted_store
    version = data.store_version(store)
    for lambda_in in (0.10, 0.11, 0.12):  # the first render, then two steps
        decided = data.decision_at(store, version, "embedded", CostWeights(lambda_in, 0.2), "deploy")
        assert isinstance(decided, str) and "crossfit run" in decided  # the store has none: says which command
    assert reads == ["embedded"]


def test_a_new_store_version_reads_the_crossfit_runs_again(counted_store) -> None:
    store, reads = counted_store
    data.decision_at(store, 1, "embedded", CostWeights(0.10, 0.2), "deploy")
    data.decision_at(store, 2, "embedded", CostWeights(0.11, 0.2), "deploy")
    assert reads == ["embedded", "embedded"]


@pytest.fixture
def counted_recipes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Store, list[str]]:
    """An empty store whose measured-recipe builds (`recipe_choice.measured_recipes`: every finished
    run's recipe, which `forge decide` needs to choose the recipe and to find its runs) are counted."""
    from forge_core.evaluation import decide, recipe_choice

    monkeypatch.setenv("FORGE_CACHE_DIR", str(tmp_path / "cache"))
    st.cache_data.clear()
    st.cache_resource.clear()
    builds: list[str] = []
    build = recipe_choice.measured_recipes

    def counted(store, host: str, retriever_hash: str, embedder: str):
        builds.append(host)
        return build(store, host, retriever_hash, embedder)

    monkeypatch.setattr(recipe_choice, "measured_recipes", counted)
    monkeypatch.setattr(decide, "measured_recipes", counted)
    return Store(tmp_path / "store.duckdb"), builds


def test_slider_steps_build_the_measured_recipes_once_per_store_version(counted_recipes) -> None:
    store, builds = counted_recipes
    version = data.store_version(store)
    for lambda_in in (0.10, 0.11, 0.12):  # the first render, then two steps
        decided = data.decision_at(store, version, "embedded", CostWeights(lambda_in, 0.2), "deploy")
        assert isinstance(decided, str) and "crossfit run" in decided
    assert builds == ["embedded"]


def test_a_new_store_version_builds_the_measured_recipes_again(counted_recipes) -> None:
    store, builds = counted_recipes
    data.decision_at(store, 1, "embedded", CostWeights(0.10, 0.2), "deploy")
    data.decision_at(store, 2, "embedded", CostWeights(0.11, 0.2), "deploy")
    assert builds == ["embedded", "embedded"]
