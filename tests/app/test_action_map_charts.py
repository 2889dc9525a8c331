"""The Action map's Vega-Lite charts (`app.action_map_charts`): valid Vega-Lite, a point per query with every
arm's outcome in its tooltip and a click selecting its map index, and each cluster's mix of arms."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from app import action_map_charts
from app.charts import ARM_COLORS
from forge_core.arms import alphabet

from support.vega_charts import assert_valid

ALPHABETS = [tuple(arm.name for arm in alphabet(6)), tuple(arm.name for arm in alphabet(12))]


def map_points(arms: tuple[str, ...]) -> pd.DataFrame:
    """Four queries as `ActionMap.points` lays them out, the router agreeing on two."""
    return pd.DataFrame({"x": [0.1, 0.5, 0.9, 0.3], "y": [1.0, 0.2, 0.4, 0.8], "benchmark": ["popqa"] * 4,
                         "example_id": list("abcd"), "router": [arms[0], arms[1], arms[0], arms[2]],
                         "oracle": [arms[0], arms[2], arms[1], arms[2]], "agree": [True, False, False, True],
                         "agreement": ["agree", "disagree", "disagree", "agree"], "regret": [0, 0.1, 0.2, 0],
                         "cluster": [1, 2, 2, 1], "index": [0, 1, 2, 3], "question": [f"Q{i}?" for i in range(4)],
                         **{arm: [f"F1 0.{i}0, 100 tokens in / 5 out" for i in range(4)] for arm in arms}})


CENTROIDS = pd.DataFrame({"cluster": [1, 2], "x": [0.2, 0.7], "y": [0.9, 0.3]})


@pytest.mark.parametrize("arms", ALPHABETS)
def test_a_map_is_a_point_per_query_with_every_arms_outcome_and_a_click_selecting_it(arms) -> None:
    for frame, spec, column in [(*action_map_charts.action_map(map_points(arms), "router", arms, CENTROIDS), "router"),
                                (*action_map_charts.agreement_map(map_points(arms), arms, CENTROIDS), "agreement")]:
        assert_valid(frame, spec)
        dots, labels = spec["layer"]
        assert list(frame["index"]) == [0, 1, 2, 3] and set(arms) <= set(frame.columns)
        tooltip = [field["field"] for field in dots["encoding"]["tooltip"]]
        assert tooltip[0] == "question" and tooltip[-len(arms):] == list(arms)
        assert dots["params"] == [{"name": "query", "select": {"type": "point", "fields": ["index"], "on": "click"}}]
        color = dots["encoding"]["color"]
        assert color["field"] == column and len(color["scale"]["domain"]) == len(set(frame[column]))
        assert [value["cluster"] for value in labels["data"]["values"]] == ["1", "2"]
    router_colors = action_map_charts.action_map(map_points(arms), "router", arms, CENTROIDS)[1]["layer"][0]
    scale = router_colors["encoding"]["color"]["scale"]
    assert scale["domain"] == [arm for arm in arms if arm in {arms[0], arms[1], arms[2]}]  # the alphabet's order
    assert scale["range"] == [ARM_COLORS[arm] for arm in scale["domain"]]


def test_a_click_gives_the_map_index_of_its_query() -> None:
    def event(selection):
        return SimpleNamespace(selection=selection)

    assert action_map_charts.clicked_index(event({"query": [{"index": 7}]})) == 7
    assert action_map_charts.clicked_index(event({"query": []})) is None
    assert action_map_charts.clicked_index(event({})) is None and action_map_charts.clicked_index(None) is None


def mix_of(arms: tuple[str, ...], clusters: int) -> pd.DataFrame:
    """A cluster mix as `ActionMap.cluster_mix` lays it out, with distinct numbers per row."""
    rows = [{"cluster": cluster + 1, "policy": policy, "arm": arm, "share": (index + 1) / 97,
             "queries": 10 + cluster, "agreement": 0.25 + cluster / 8}
            for policy in ("oracle", "router") for cluster in range(clusters) for index, arm in enumerate(arms[::-1])]
    return pd.DataFrame(rows, columns=["cluster", "policy", "arm", "share", "queries", "agreement"])


@pytest.mark.parametrize("arms", ALPHABETS)
def test_the_cluster_mix_stacks_each_policys_arms_in_the_alphabets_order(arms) -> None:
    frame, spec = action_map_charts.cluster_mix(mix_of(arms, clusters=4), arms)
    assert_valid(frame, spec)
    assert spec["facet"]["sort"] == ["router", "oracle"]
    color = spec["spec"]["encoding"]["color"]["scale"]
    assert color["domain"] == list(arms) and color["range"] == [ARM_COLORS[arm] for arm in arms]
    assert (frame["order"] == frame["arm"].map(list(arms).index)).all() and len(frame) == 2 * 4 * len(arms)
