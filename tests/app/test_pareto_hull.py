"""The Pareto page draws the hull of the fixed arms (the mixes) beside the frontier, overall and per
benchmark, and says for every policy's point how far above or below the hull it lies at its own
tokens with the paired 95% interval (AppTest)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from forge_core.policies.kinds import FIXED_ARM_KIND
from forge_core.reports.mix_view import HULL_NAME, hull_gap_text
from forge_core.store import Store

from support.app_store import PAGE_RUN_TIMEOUT_S
from support.pareto_page import hull_table, points_table
from support.stores import copy_store
from support.vega_charts import layer_drawing, vega_charts

PROJECT_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def hull_app(tmp_path: Path, trained_store: tuple[Store, str], monkeypatch: pytest.MonkeyPatch) -> str:
    """The synthetic-outcome store with its Lite checkpoint as the dashboard's store; the checkpoint's id."""
    store = copy_store(trained_store[0], tmp_path / "hull-app")
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    st.cache_data.clear()
    return trained_store[1]


def hull_vertices(app: AppTest) -> pd.DataFrame:
    """The points the Pareto chart's hull line is drawn through (its layer's filter on `on_hull`, in order of
    cost per benchmark), checking the layer is the dashed line named as the hull."""
    ((spec, frame),) = vega_charts(app)
    layer = layer_drawing(spec, "on_hull")
    assert {"calculate": json.dumps(HULL_NAME), "as": "line"} in layer["transform"] and layer["mark"]["type"] == "line"
    assert layer["encoding"]["order"]["field"] == "cost_k"
    return frame[frame["on_hull"]].sort_values(["benchmark", "cost_k"])


def test_the_hull_is_drawn_and_every_point_says_its_gap(hull_app: str) -> None:
    app = AppTest.from_file(str(PROJECT_ROOT / "pages" / "pareto.py"), default_timeout=PAGE_RUN_TIMEOUT_S).run()
    assert not app.exception, app.exception
    points = points_table(app)  # the page's table of points, overall
    fixed = points[points["kind"] == FIXED_ARM_KIND]
    vertices = fixed[fixed["on_hull"]].sort_values("cost_k")
    assert 2 <= len(vertices) <= len(fixed)
    hull = hull_vertices(app)
    assert np.allclose(hull["cost_k"], vertices["cost_k"]) and np.allclose(hull["macro_f1"], vertices["macro_f1"])
    slopes = np.diff(vertices["macro_f1"]) / np.diff(vertices["cost_k"])
    assert (np.diff(slopes) <= 1e-12).all() and (slopes > 0).all()  # concave, rising to the best arm
    within = fixed[fixed["cost_k"] <= vertices["cost_k"].max()]
    assert (within["macro_f1"] <= np.interp(within["cost_k"], vertices["cost_k"], vertices["macro_f1"]) + 1e-9).all()

    table = hull_table(app)
    by_policy = points.set_index("policy")
    assert "oracle" not in set(table["policy"])
    for row in table.itertuples():  # merged points as "a = b", a checkpoint under its human name beside its id
        policy = by_policy.loc[row.policy.split(" = ")[0]]
        assert row.hull_gap == pytest.approx(policy["hull_gap"]) and row.hull_gap_low <= row.hull_gap_high
        assert row.hull_gap_low == pytest.approx(policy["hull_gap_low"])
    listed = {policy for ids in table["policy"] for policy in ids.split(" = ")}  # one merged with the oracle too
    assert set(points[points["kind"] != "oracle"]["policy"]) <= listed <= set(points["policy"])
    on_hull = table[table["policy"].str.split(" = ").str[0].isin(vertices["policy"])]
    assert len(on_hull) == len(vertices) and (on_hull["hull_gap"].abs() < 1e-12).all()
    assert (on_hull["verdict"] == "not decidably different from the mix").all()
    router = by_policy.loc[hull_app]
    ((spec, frame),) = vega_charts(app)
    drawn = frame.set_index("policy").loc[hull_app]
    assert drawn["vs_mix"] == hull_gap_text(router["hull_gap"], router["hull_gap_low"], router["hull_gap_high"])
    assert {"field": "vs_mix", "type": "nominal", "title": "vs the mix"} in spec["layer"][0]["encoding"]["tooltip"]

    next(toggle for toggle in app.toggle if toggle.label == "One chart per benchmark").set_value(True).run()
    assert not app.exception, app.exception
    per_benchmark = points_table(app)
    benchmarks = sorted(set(per_benchmark["benchmark"]))
    hull = hull_vertices(app)  # one line per facet: the facets split the frame by benchmark
    assert sorted(set(hull["benchmark"])) == benchmarks and len(benchmarks) == 3
    for _, vertices in hull.groupby("benchmark"):
        assert (np.diff(vertices["cost_k"]) > 0).all()
    assert sorted(set(hull_table(app)["benchmark"])) == benchmarks
