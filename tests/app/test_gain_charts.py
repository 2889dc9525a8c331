"""The utility-gain charts (`app.gain_charts`): valid Vega-Lite, a line per policy with its interval, a panel
per reference, zero marked."""

from __future__ import annotations

import pandas as pd

from app import gain_charts

from support.vega_charts import assert_valid


def test_the_routing_gain_has_a_panel_per_reference_and_a_band_per_policy() -> None:
    gains = pd.DataFrame({"weights": ["0.1 / 0.2", "0.6 / 0.6"] * 3, "lambda_total": [0.3, 1.2] * 3,
                          "policy": ["forge_lite"] * 2 + ["ridge_utility"] * 2 + ["forge_lite"] * 2,
                          "reference": ["best fixed arm"] * 4 + ["ridge floor"] * 2, "against": ["always_raw"] * 6,
                          "gain": [0.01, 0.02, 0.0, 0.01, 0.01, 0.01], "gain_low": [-0.01, 0.0, -0.02, 0.0, 0.0, 0.0],
                          "gain_high": [0.03, 0.04, 0.02, 0.02, 0.02, 0.02], "oracle_share": [0.1] * 6})
    frame, spec = gain_charts.routing_gain(gains)
    assert_valid(frame, spec)
    assert spec["facet"]["sort"] == ["over the best fixed arm", "over the ridge floor"] and spec["columns"] == 2
    band, line, zero = spec["spec"]["layer"]
    assert band["encoding"]["y"]["field"] == "gain_low" and band["encoding"]["y2"] == {"field": "gain_high"}
    assert line["encoding"]["y"]["field"] == "gain" and zero["encoding"]["y"] == {"datum": 0}
    assert line["encoding"]["x"]["sort"] == ["0.1 / 0.2", "0.6 / 0.6"]  # in order of total weight, as given


def test_the_calibration_gain_draws_each_routers_interval_against_k() -> None:
    curves = pd.DataFrame({"router": ["transfer_forge_lite"] * 2 + ["transfer_forge_lite_cal100"], "k": [0, 50, 0],
                           "gain": [-0.1, -0.02, 0.0], "gain_low": [-0.2, -0.05, -0.1], "gain_high": [0.0, 0.01, 0.1]})
    frame, spec = gain_charts.calibration_gain(curves)
    assert_valid(frame, spec)
    bars, line, zero, note = spec["layer"]
    assert bars["mark"]["type"] == "rule" and bars["encoding"]["y2"] == {"field": "gain_high"}
    assert line["encoding"]["color"]["scale"]["domain"] == ["transfer_forge_lite", "transfer_forge_lite_cal100"]
    assert zero["encoding"]["y"] == {"datum": 0} and note["encoding"]["text"]["value"] == "the target's own Lite router"
