"""The Live query's bar charts (`app.live_charts`) are valid Vega-Lite, the chosen arm in its own colour."""

from __future__ import annotations

import pytest

from app import live_charts

from support.vega_charts import assert_valid

VALUES = {"direct:no_think": -0.2, "summary:no_think": 0.0, "raw:no_think": -0.05}


@pytest.mark.parametrize("chart", [live_charts.arm_implied_utilities, live_charts.arm_probabilities])
def test_a_bar_per_arm_in_the_routers_order_the_chosen_one_apart(chart) -> None:
    frame, spec = chart(VALUES, "summary:no_think")
    assert_valid(frame, spec)
    assert list(frame["arm"]) == list(VALUES) and list(frame["chosen"]) == [False, True, False]
    bars = spec["layer"][0] if "layer" in spec else spec
    assert bars["encoding"]["color"]["scale"] == {"domain": [True, False], "range": ["#e45756", "#4c78a8"]}
