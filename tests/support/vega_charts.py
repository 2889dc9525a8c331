"""The Vega-Lite charts a page drew under AppTest, read back as their spec and the frame they draw, and a
chart builder's spec checked against Vega-Lite's schema."""

from __future__ import annotations

import json

import altair as alt
import pandas as pd
import pyarrow as pa
from streamlit.testing.v1 import AppTest


def assert_valid(frame: pd.DataFrame, spec: dict) -> None:
    """Raises where Vega-Lite's schema rejects the spec with its frame inline as data."""
    alt.Chart.from_dict({**spec, "data": {"values": json.loads(frame.to_json(orient="records"))}}, validate=True)


def vega_charts(app: AppTest) -> list[tuple[dict, pd.DataFrame]]:
    """Every `st.vega_lite_chart` of the run, in order: its spec and its data (the Arrow frame Streamlit sent)."""
    return [(json.loads(chart.proto.spec), pa.ipc.open_stream(chart.proto.data.data).read_pandas())
            for chart in app.get("vega_lite_chart")]


def layers(spec: dict) -> list[dict]:
    """The layers of a layered spec, or of a faceted spec's inner spec."""
    return spec["spec"]["layer"] if "facet" in spec else spec["layer"]


def layer_drawing(spec: dict, flag: str) -> dict:
    """The layer of a spec (or of its facets' spec) whose points are filtered on `flag` (a line's)."""
    return next(layer for layer in layers(spec)
                if {"filter": {"field": flag, "equal": True}} in layer.get("transform", []))
