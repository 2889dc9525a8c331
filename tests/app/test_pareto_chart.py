"""The Pareto chart's Vega-Lite spec (`app.pareto_chart`): valid Vega-Lite in every view, the oracle pinned
above an axis fitted to the deployable points, the frontier a staircase, the hull its own dashed line, each
point's gap to the mix in its tooltip."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from app.pareto_chart import ORACLE_NOTE, pareto_chart
from forge_core.reports.mix_view import HULL_NAME

from support.vega_charts import assert_valid, layer_drawing, layers

VIEWS = [(by_benchmark, color_by) for by_benchmark in (False, True) for color_by in ("policy", "utility")]


def points(oracle_f1: float = 0.80) -> pd.DataFrame:
    """Three fixed arms (two on the hull), a router above the mix and an oracle, on one benchmark."""
    return pd.DataFrame({
        "name": ["always_direct", "always_raw", "always_summary", "Lite · ckpt-1", "oracle"],
        "policy": ["always_direct", "always_raw", "always_summary", "ckpt-1", "oracle"],
        "kind": ["fixed arm", "fixed arm", "fixed arm", "router", "oracle"], "benchmark": ["all"] * 5,
        "cost_k": [0.07, 0.37, 0.25, 0.2, 0.1], "tokens_in": [60.0, 360.0, 240.0, 190.0, 90.0],
        "tokens_out": [10.0] * 5, "macro_f1": [0.20, 0.37, 0.30, 0.33, oracle_f1], "macro_utility": [0.1] * 5,
        "on_frontier": [True, True, False, True, False], "on_hull": [True, True, False, False, False],
        "hull_gap": [0.0, 0.0, -0.07, 0.05, 0.6], "hull_gap_low": [0.0, 0.0, -0.09, 0.02, 0.58],
        "hull_gap_high": [0.0, 0.0, -0.05, 0.08, 0.62]})


@pytest.mark.parametrize(("by_benchmark", "color_by"), VIEWS)
def test_every_view_is_valid_vega_lite(by_benchmark: bool, color_by: str) -> None:
    frame, spec = pareto_chart(points(), by_benchmark, color_by)
    assert_valid(frame, spec)
    assert len(frame) == 5 and ("facet" in spec) == by_benchmark
    titles = {layer["encoding"]["y"]["title"] for layer in layers(spec)}  # one F1 axis: each facet's, or the macro
    assert titles == {"F1" if by_benchmark else "F1 (macro over benchmarks)"}


@pytest.mark.parametrize("color_by", ["policy", "utility"])
def test_an_oracle_far_above_is_pinned_on_an_axis_fitted_to_the_deployable_points(color_by: str) -> None:
    frame, spec = pareto_chart(points(), False, color_by)
    low, top = layers(spec)[0]["encoding"]["y"]["scale"]["domain"]
    assert low < 0.20 and 0.37 < top < 0.40  # fitted to the deployable points, not stretched to the oracle
    oracle = frame.set_index("policy").loc["oracle"]
    assert oracle["f1_drawn"] == top and oracle["macro_f1"] == 0.80  # drawn at the top, its F1 kept for the tooltip
    assert oracle["note"] == ORACLE_NOTE.format(f1=0.80) == "oracle F1 0.800 ↑ (reference, above the axis)"
    assert (frame.loc[frame["kind"] != "oracle", "f1_drawn"] == frame.loc[frame["kind"] != "oracle", "macro_f1"]).all()


def test_an_oracle_within_reach_stays_on_its_own_axis() -> None:
    frame, spec = pareto_chart(points(oracle_f1=0.38), False)
    assert "domain" not in layers(spec)[0]["encoding"]["y"]["scale"] and "note" not in frame
    assert (frame["f1_drawn"] == frame["macro_f1"]).all()


@pytest.mark.parametrize(("by_benchmark", "color_by"), VIEWS)
def test_the_frontier_is_a_staircase_and_the_hull_its_own_dashed_line(by_benchmark: bool, color_by: str) -> None:
    frame, spec = pareto_chart(points(), by_benchmark, color_by)
    frontier, hull = layer_drawing(spec, "on_frontier"), layer_drawing(spec, "on_hull")
    assert frontier["mark"]["interpolate"] == "step-after" and hull["mark"]["interpolate"] == "linear"
    dashes = {layer["transform"][1]["calculate"]: layer["encoding"]["strokeDash"] for layer in (frontier, hull)}
    assert set(dashes) == {json.dumps("frontier"), json.dumps(HULL_NAME)}
    scale = dashes[json.dumps(HULL_NAME)]["scale"]
    assert scale["range"][scale["domain"].index(HULL_NAME)] != scale["range"][scale["domain"].index("frontier")]
    assert list(frame.loc[frame["on_hull"], "policy"]) == ["always_direct", "always_raw"]
    assert list(frame.loc[frame["on_frontier"], "policy"]) == ["ckpt-1", "always_direct", "always_raw"]


def test_a_point_says_its_gap_to_the_mix_and_its_tokens() -> None:
    frame, spec = pareto_chart(points(), False)
    router = frame.set_index("policy").loc["ckpt-1"]
    assert router["vs_mix"].startswith("+0.050 F1 [+0.020, +0.080] vs the mix") and router["name"] == "Lite · ckpt-1"
    tooltip = [field["field"] for field in layers(spec)[0]["encoding"]["tooltip"]]
    assert {"name", "policy", "tokens_in", "tokens_out", "macro_f1", "macro_utility", "vs_mix"} <= set(tooltip)
    color = layers(spec)[0]["encoding"]["color"]["scale"]
    assert color["domain"][-1] == "oracle (reference)" and len(set(color["range"])) == len(color["range"])


def crossfit_points() -> pd.DataFrame:
    """A crossfit run's points: each with its F1 interval and its gain over the best fixed arm."""
    shown = points()
    return shown.assign(f1_low=shown["macro_f1"] - 0.02, f1_high=shown["macro_f1"] + 0.02,
                        gain=[0.0, 0.0, -0.07, 0.05, 0.6], gain_low=[0.0, 0.0, -0.09, 0.02, 0.58],
                        gain_high=[0.0, 0.0, -0.05, 0.08, 0.62], decidable=[False, False, False, True, False])


def test_a_crossfit_runs_points_draw_their_intervals_and_keep_the_axis_for_them() -> None:
    frame, spec = pareto_chart(crossfit_points(), False)
    assert_valid(frame, spec)
    intervals = layers(spec)[0]
    assert intervals["mark"]["type"] == "rule" and intervals["encoding"]["y"]["field"] == "f1_low"
    assert intervals["encoding"]["y2"] == {"field": "f1_high"}
    assert intervals["transform"] == [{"filter": "datum.kind != 'oracle'"}]  # the pinned oracle's is left out
    low, top = layers(spec)[1]["encoding"]["y"]["scale"]["domain"]
    assert low < 0.18 and 0.39 < top < 0.42  # the deployable points' intervals, not the oracle's 0.80
    assert layers(spec)[1]["encoding"]["y"]["title"] == "F1 (macro, out of fold; 95% interval)"
    tooltip = {field["field"] for field in layers(spec)[1]["encoding"]["tooltip"]}
    assert {"f1_low", "f1_high", "gain", "gain_low", "gain_high", "decidable", "vs_mix"} <= tooltip
    assert frame.set_index("policy").loc["ckpt-1", "decidable"]
