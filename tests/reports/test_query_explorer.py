"""The Queries page's table: regret and the oracle set per query, worst first, its filters and links."""

import numpy as np
import pandas as pd
import pytest

from forge_core.errors import InvalidInput
from forge_core.reports.action_map import ActionMap
from forge_core.reports.query_explorer import (
    QueryFilter,
    fixed_arm,
    parse_query_key,
    query_key,
    query_table,
    with_comparison,
)
from forge_core.routing.utility import CostWeights

ARMS = ("direct:no_think", "summary:no_think", "raw:no_think")


def three_queries() -> ActionMap:
    """q0: the router picks the oracle arm; q1: it loses 0.5; q2: every arm ties (all in the oracle set)."""
    utility = np.array([[0.1, 0.9, 0.2], [0.8, 0.3, 0.1], [0.0, 0.0, 0.0]])
    probabilities = np.array([[0.1, 0.8, 0.1], [0.2, 0.7, 0.1], [0.1, 0.1, 0.8]])
    return ActionMap("ckpt-a", "h", "test", ARMS, (("musique", "a"), ("popqa", "b"), ("fever", "c")),
                     ("Q0?", "Q1?", "Q2?"), np.zeros((3, 2)), np.array([0, 1, 1]), probabilities,
                     utility, np.ones((3, 3)), np.full((3, 3), 100.0), np.full((3, 3), 5.0), CostWeights())


def test_the_table_puts_the_worst_regret_first_with_the_oracle_set() -> None:
    table = query_table(three_queries())
    assert list(table["query"]) == ["popqa/b", "musique/a", "fever/c"]
    assert table["regret"].tolist() == pytest.approx([0.5, 0.0, 0.0])
    assert table.loc[2, "oracle"] == " | ".join(ARMS) and table.loc[2, "router_in_oracle"]  # a tie: every arm
    assert list(table.loc[0, ["router", "oracle", "cluster"]]) == ["summary:no_think", "direct:no_think", 2]
    assert table.loc[0, "in raw:no_think"] == 100 and table.loc[0, "out raw:no_think"] == 5


def test_filters_keep_benchmarks_arms_and_disagreements() -> None:
    table = query_table(three_queries())
    assert list(QueryFilter(benchmarks=["popqa", "fever"]).apply(table)["query"]) == ["popqa/b", "fever/c"]
    assert list(QueryFilter(router_arms=["raw:no_think"]).apply(table)["query"]) == ["fever/c"]
    compared = with_comparison(table, "compared", fixed_arm(table, "summary:no_think"))
    assert list(QueryFilter(disagree_with="compared").apply(compared)["query"]) == ["fever/c"]
    other = pd.DataFrame({"benchmark": ["popqa"], "example_id": ["b"], "arm": ["direct:no_think"]})
    partial = with_comparison(table, "compared", other)  # a router that decided one query only
    assert list(QueryFilter(disagree_with="compared").apply(partial)["query"]) == ["popqa/b"]
    with pytest.raises(InvalidInput):
        QueryFilter(disagree_with="nothing").apply(table)


def test_a_query_key_round_trips_and_a_bad_one_is_a_user_error() -> None:
    assert parse_query_key(query_key("musique", "2hop__1/x")) == ("musique", "2hop__1/x")
    with pytest.raises(InvalidInput):
        parse_query_key("musique")
