"""Figures built from graph objects instead of plotly express (express took a fifth of the Action map's
first render to assemble one) are the figures express made: compared trace by trace and in layout."""

from __future__ import annotations

import json

import pandas as pd
import plotly.express as px
import pytest

from app import charts
from forge_core.arms import alphabet


def express_cluster_mix(mix: pd.DataFrame, arms: tuple[str, ...]):
    """The Action map's cluster mix as plotly express made it before (the reference)."""
    figure = px.bar(mix, x="cluster", y="share", color="arm", facet_col="policy", barmode="stack",
                    category_orders={"arm": list(arms), "policy": ["router", "oracle"]},
                    color_discrete_map=charts.ARM_COLORS, hover_data={"queries": True, "agreement": ":.2f"},
                    labels={"share": "share of the cluster's queries"})
    figure.for_each_annotation(lambda a: a.update(text=a.text.split("=", 1)[-1]))
    figure.update_xaxes(dtick=1)
    figure.update_layout(height=360, margin={"t": 40}, legend_title_text="arm")
    return figure


def mix_of(arms: tuple[str, ...], clusters: int) -> pd.DataFrame:
    """A cluster mix as `ActionMap.cluster_mix` lays it out, with distinct numbers per row."""
    rows = [{"cluster": cluster + 1, "policy": policy, "arm": arm, "share": (index + 1) / 97,
             "queries": 10 + cluster, "agreement": 0.25 + cluster / 8}
            for policy in ("router", "oracle") for cluster in range(clusters) for index, arm in enumerate(arms)]
    return pd.DataFrame(rows, columns=["cluster", "policy", "arm", "share", "queries", "agreement"])


def as_json(figure) -> dict:
    """The figure as the browser receives it, without empty settings (express writes an empty font on
    each facet label, which sets nothing; graph objects drop it)."""
    return _without_empty(json.loads(figure.to_json()))


def _without_empty(value):
    if isinstance(value, dict):
        return {key: _without_empty(item) for key, item in value.items() if item != {}}
    if isinstance(value, list):
        return [_without_empty(item) for item in value]
    return value


ALPHABETS = [tuple(arm.name for arm in alphabet(6)), tuple(arm.name for arm in alphabet(12))]


@pytest.mark.parametrize("arms", ALPHABETS)
def test_cluster_mix_is_the_figure_express_made(arms):
    mix = mix_of(arms, clusters=4)
    assert as_json(charts.cluster_mix(mix, arms)) == as_json(express_cluster_mix(mix, arms))
