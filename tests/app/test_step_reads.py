"""A Pareto slider step decides without re-reading what the weights do not change: `forge decide`
reads the host's crossfit runs (to choose the recipe, then to find its runs), and the page's
`data.decision_at` has them read once per store version, shared by every weight; a write to the
store (a new version) reads them again, so a step never decides on stale runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st

from app import data
from forge_core.evidence.retrievers import DEFAULT_RETRIEVER
from forge_core.routing.utility import CostWeights
from forge_core.store import Store


def count_calls(monkeypatch: pytest.MonkeyPatch, owners: tuple[object, ...], name: str) -> list[str]:
    """Replace `name` on each owner by one wrapper that records the host of every call."""
    calls: list[str] = []
    real = getattr(owners[0], name)

    def counted(*args, **kwargs):
        calls.append(args[1] if len(args) > 1 else kwargs.get("host"))
        return real(*args, **kwargs)

    for owner in owners:
        monkeypatch.setattr(owner, name, counted)
    return calls


@pytest.fixture(params=["crossfit runs read", "measured recipes built"])
def counted(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
            ) -> tuple[Store, list[str]]:
    """An empty store, and the hosts of every crossfit-run read (`Store.crossfit_runs`) or every
    measured-recipe build (`recipe_choice.measured_recipes`: every finished run's recipe, which
    `forge decide` needs to choose the recipe and to find its runs; imported by `decide` too)."""
    from forge_core.evaluation import decide, recipe_choice

    monkeypatch.setenv("FORGE_CACHE_DIR", str(tmp_path / "cache"))
    st.cache_data.clear()
    st.cache_resource.clear()
    if request.param == "crossfit runs read":
        calls = count_calls(monkeypatch, (Store,), "crossfit_runs")
    else:
        calls = count_calls(monkeypatch, (recipe_choice, decide), "measured_recipes")
    return Store(tmp_path / "store.duckdb"), calls


def test_slider_steps_do_it_once_per_store_version(counted) -> None:
    store, calls = counted
    version = data.store_version(store)
    for lambda_in in (0.10, 0.11, 0.12):  # the first render, then two steps
        decided = data.decision_at(store, version, "embedded", CostWeights(lambda_in, 0.2), "deploy")
        assert isinstance(decided, str) and "crossfit run" in decided  # the store has none: says which command
    assert calls == ["embedded"]


def test_a_new_store_version_does_it_again(counted) -> None:
    store, calls = counted
    data.decision_at(store, 1, "embedded", CostWeights(0.10, 0.2), "deploy")
    data.decision_at(store, 2, "embedded", CostWeights(0.11, 0.2), "deploy")
    assert calls == ["embedded", "embedded"]


def test_the_pareto_base_and_the_action_map_check_features_once_per_store_version(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Pareto page's evaluation base and the Action map's feature check (`data.features_ready`) both
    need the host's features computed: one check per store version serves both (it read every query's
    stored features, about a second on the demo store), a new version checks again."""
    monkeypatch.setenv("FORGE_CACHE_DIR", str(tmp_path / "cache"))
    st.cache_data.clear()
    st.cache_resource.clear()
    calls: list[str] = []  # a counting double: the store has no outcomes to compute features of
    monkeypatch.setattr(data, "compute_features", lambda store, host, retriever: calls.append(host))
    monkeypatch.setattr(data, "evaluation_context", lambda *args, **kwargs: "context")
    monkeypatch.setattr(data, "evaluated_retriever_hash", lambda *args: "")
    store = Store(tmp_path / "store.duckdb")
    assert data.evaluation_base(store, 1, "embedded", 6, "deploy", DEFAULT_RETRIEVER) == "context"
    assert data.features_ready(store, 1, "embedded", DEFAULT_RETRIEVER)  # as the Action map calls it
    assert calls == ["embedded"]
    data.features_ready(store, 2, "embedded", DEFAULT_RETRIEVER)
    assert calls == ["embedded", "embedded"]
