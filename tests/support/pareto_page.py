"""The Pareto page's parts drawn only while their expander is open (`on_change="rerun"`), read in AppTest."""

from __future__ import annotations

import pandas as pd
from streamlit.testing.v1 import AppTest

from support.lazy_sections import opened

POINTS_TABLE = "pareto-table"  # the expander of every point's row
MARGINS = "pareto-margins"  # the expander of the routers' reliability tables


def points_table(app: AppTest) -> pd.DataFrame:
    """The page's table of points (its first table once opened)."""
    return opened(app, POINTS_TABLE).dataframe[0].value
