"""The Pareto page's parts drawn only while their expander is open (`on_change="rerun"`), read in AppTest."""

from __future__ import annotations

import pandas as pd
from streamlit.testing.v1 import AppTest

from support.lazy_sections import opened

POINTS_TABLE = "pareto-table"  # the expander of every point's row
MARGINS = "pareto-margins"  # the expander of the routers' reliability tables
HULL_TABLE = "pareto-hull"  # the expander of every policy against the mix of fixed arms
CALIBRATION = "pareto-calibrate"  # the expander of "Calibrate to a budget"


def points_table(app: AppTest) -> pd.DataFrame:
    """The page's table of points (its first table once opened)."""
    return opened(app, POINTS_TABLE).dataframe[0].value


def hull_table(app: AppTest) -> pd.DataFrame:
    """The page's table of every policy against the mix of fixed arms (the one with a verdict column), opened."""
    return next(frame.value for frame in opened(app, HULL_TABLE).dataframe if "verdict" in frame.value.columns)
