"""The per-query explorer's table: every evaluated query of an action map with the router's arm,
the oracle's arm set (every arm within `ORACLE_TOLERANCE` of the best utility), the router's
regret (the oracle's utility minus the chosen arm's, in utility units at the map's weights), each
arm's F1 and tokens in and out, benchmark and cluster; with the filters the explorer offers. No
Streamlit here: the page renders this frame."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from forge_core.errors import InvalidInput
from forge_core.reports.action_map import ActionMap
from forge_core.routing.utility import oracle_sets, regret

ORACLE_SEPARATOR = " | "


def query_key(benchmark: str, example_id: str) -> str:
    """A query's key in a URL, e.g. "musique/2hop__123"."""
    return f"{benchmark}/{example_id}"


def parse_query_key(key: str) -> tuple[str, str]:
    """(benchmark, example_id) of a `query_key`; a malformed key is a user error."""
    benchmark, separator, example_id = key.partition("/")
    if not separator or not benchmark or not example_id:
        raise InvalidInput(f"a query is named benchmark/example_id, not '{key}'")
    return benchmark, example_id


def query_table(action_map: ActionMap) -> pd.DataFrame:
    """One row per query of the map, worst regret first (ties: map order): index (its position in
    the map), query (its `query_key`), benchmark, example_id, cluster (1-based), question, router
    (its arm), oracle (the oracle's arm set, joined by " | "), router_in_oracle, regret, and per arm
    "F1 <arm>", "in <arm>", "out <arm>"."""
    arms = np.array(action_map.arms)
    router = action_map.router_actions
    sets = oracle_sets(action_map.utility)
    frame = pd.DataFrame({
        "index": np.arange(len(action_map.keys)),
        "query": [query_key(*key) for key in action_map.keys],
        "benchmark": [key[0] for key in action_map.keys], "example_id": [key[1] for key in action_map.keys],
        "cluster": action_map.clusters + 1, "question": list(action_map.questions),
        "router": arms[router], "oracle": [ORACLE_SEPARATOR.join(arms[row]) for row in sets],
        "router_in_oracle": sets[np.arange(len(router)), router],
        "regret": regret(action_map.utility, router)})
    for position, arm in enumerate(action_map.arms):
        frame[f"F1 {arm}"] = action_map.f1[:, position]
        frame[f"in {arm}"] = action_map.tokens_in[:, position].astype(int)
        frame[f"out {arm}"] = action_map.tokens_out[:, position].astype(int)
    return frame.sort_values("regret", ascending=False, kind="stable").reset_index(drop=True)


def with_comparison(frame: pd.DataFrame, name: str, arms: pd.DataFrame) -> pd.DataFrame:
    """The table with a column `name` holding another policy's arm per query (`arms`: benchmark,
    example_id, arm; a query it did not decide gets None)."""
    compared = arms.rename(columns={"arm": name})[["benchmark", "example_id", name]]
    return frame.drop(columns=[name], errors="ignore").merge(compared, on=["benchmark", "example_id"], how="left")


def fixed_arm(frame: pd.DataFrame, arm: str) -> pd.DataFrame:
    """`arms` for `with_comparison` of always answering with `arm`."""
    return frame[["benchmark", "example_id"]].assign(arm=arm)


@dataclass(frozen=True)
class QueryFilter:
    """What the explorer shows: these benchmarks and router arms (empty: all), and only the queries
    where the router's arm differs from the `disagree_with` column's (None: every query)."""

    benchmarks: Sequence[str] = ()
    router_arms: Sequence[str] = ()
    disagree_with: str | None = None

    def apply(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The rows of `frame` this filter keeps, in their order."""
        keep = np.ones(len(frame), dtype=bool)
        if self.benchmarks:
            keep &= frame["benchmark"].isin(self.benchmarks).to_numpy()
        if self.router_arms:
            keep &= frame["router"].isin(self.router_arms).to_numpy()
        if self.disagree_with is not None:
            if self.disagree_with not in frame.columns:
                raise InvalidInput(f"no column '{self.disagree_with}' to compare the router with")
            other = frame[self.disagree_with]
            keep &= (other.notna() & (frame["router"] != other)).to_numpy()  # a query it did not decide is kept out
        return frame[keep]
