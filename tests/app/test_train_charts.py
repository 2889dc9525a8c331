"""The Train page's training curves as Vega-Lite (`app.train_charts`): valid, one panel per curve in the
log's order with its own axes, a run's series coloured apart, two runs overlaid in a colour each."""

from __future__ import annotations

import pandas as pd
import pytest

from app.train_charts import training_curves
from forge_core.reports.checkpoint_views import compare_curves
from forge_core.reports.checkpoint_views import training_curves as curves_of

from support.vega_charts import assert_valid

LOG = [{"epoch": epoch, "train_loss": 1.0 / epoch, "dev_loss": 1.2 / epoch, "dev_oracle_agreement": 0.3 + epoch / 10}
       for epoch in (1, 2, 3)]


@pytest.mark.parametrize("overlay", [False, True])
def test_one_panel_per_curve_each_with_its_own_axes(overlay: bool) -> None:
    curves = compare_curves({"A: first": LOG, "B: second": LOG[:2]}) if overlay else curves_of(LOG)
    frame, spec = training_curves(curves, overlay)
    assert_valid(frame, spec)
    assert spec["facet"]["sort"] == list(dict.fromkeys(curves["panel"])) and len(spec["facet"]["sort"]) >= 2
    assert spec["resolve"]["scale"] == {"x": "independent", "y": "independent"}
    encoding = spec["spec"]["encoding"]
    assert encoding["color"]["field"] == ("run" if overlay else "series")
    assert ("strokeDash" in encoding) == overlay and encoding["x"]["title"] == "epoch"
    pd.testing.assert_frame_equal(frame, curves.reset_index(drop=True))
