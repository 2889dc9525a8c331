"""Reward sources: `gold` (token F1, the outcome table's own) and the proxies `consensus` and `judge`,
as matrices aligned with an outcome table. Training and the audit read proxy rewards only through
`reward_matrix` (and `proxy_rewards`, the rows a proxy can train on).

The names and checks import no retrieval stack (scipy): `forge train` reads its defaults through
`forge_core.training.request`, which imports them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from forge_core.errors import InvalidInput, MissingStep
from forge_core.evidence.retrievers import DEFAULT_RETRIEVER, retriever_option, retriever_phrase
from forge_core.rewards.judge import rating_key
from forge_core.routing.outcome_table import OutcomeTable
from forge_core.store import Store

GOLD, JUDGE, CONSENSUS = "gold", "judge", "consensus"
REWARD_SOURCES: tuple[str, ...] = (GOLD, JUDGE, CONSENSUS)
PROXY_SOURCES: tuple[str, ...] = (JUDGE, CONSENSUS)


def check_reward_source(source: str, proxies_only: bool = False) -> str:
    """`source` if it names a reward source (a proxy when `proxies_only`), else `InvalidInput`."""
    known = PROXY_SOURCES if proxies_only else REWARD_SOURCES
    if source not in known:
        raise InvalidInput(f"unknown reward '{source}' (known: {', '.join(known)})")
    return source


def rating_keys(store: Store, host: str, source: str, retriever_hash: str) -> pd.DataFrame:
    """The host's stored ratings of one source (`Store.reward_keys`, newest first) that rate the
    answers made under one retriever configuration ("": the default BM25): the key names it."""
    keys = store.reward_keys(host, source)
    under = [rating_key(source, row.judge_config_hash, row.prompt_hash, retriever_hash) == row.reward_key
             for row in keys.itertuples()]
    return keys[under] if len(keys) else keys


def latest_judge_key(store: Store, host: str, retriever_hash: str = "", retriever: str = DEFAULT_RETRIEVER) -> str:
    """The reward key of the host's most recently written judge rewards of the answers made under
    the retriever (`retriever_hash`, named `retriever` in the message when there is none)."""
    keys = rating_keys(store, host, JUDGE, retriever_hash)
    if keys.empty:
        raise MissingStep(f"host '{host}' has no judge rewards{retriever_phrase(retriever)}: run "
                          f"`forge rewards judge --host {host}{retriever_option(retriever)}`")
    return str(keys.iloc[0]["reward_key"])


def reward_matrix(store: Store, table: OutcomeTable, source: str, judge_key: str | None = None) -> np.ndarray:
    """[N, K] rewards of the table's rows and arms under the proxy `source` (judge or consensus), NaN
    where one is missing (judge rows not yet judged, or judged with an error). Gold needs no matrix:
    it is the table's own F1. Both proxies read the table's own answers (under its retriever): judge
    rewards of the newest key rating them unless `judge_key` names one."""
    check_reward_source(source, proxies_only=True)
    if source == CONSENSUS:
        from forge_core.rewards.consensus import consensus_rewards  # imports the retrieval stack (scipy)

        rows = consensus_rewards(store, table.host, table.arms, table.retriever_hash)
    else:
        judge_key = judge_key or latest_judge_key(store, table.host, table.retriever_hash, table.retriever)
        rows = store.reward_outcomes(table.host, judge_key)
        rows = rows[rows["error"].isna()][["benchmark", "example_id", "arm", "reward"]]
    return aligned_rewards(rows, table)


def proxy_rewards(store: Store, table: OutcomeTable, source: str) -> tuple[np.ndarray, np.ndarray]:
    """[N, K] rewards of `source` for the table and [N] the rows with every arm's reward; refuses
    a reward that no train or no dev row has on every arm."""
    rewards = reward_matrix(store, table, source)
    complete = ~np.isnan(rewards).any(axis=1)
    for split in ("train", "dev"):
        if not (complete & (table.splits == split)).any():
            raise MissingStep(f"no {split} query of host '{table.host}' has a {source} reward on every arm: "
                              f"run `forge rewards judge --host {table.host} --split {split}"
                              f"{retriever_option(table.retriever)}`")
    return rewards, complete


def aligned_rewards(rows: pd.DataFrame, table: OutcomeTable) -> np.ndarray:
    """[N, K] the `reward` of (benchmark, example_id, arm, reward) rows at their place in `table`, NaN
    where a row is missing or has no reward."""
    matrix = np.full(table.f1.shape, np.nan)
    if rows.empty:
        return matrix
    position = {key: index for index, key in enumerate(table.keys)}
    column = {arm: index for index, arm in enumerate(table.arms)}
    for benchmark, example_id, arm, reward in rows.itertuples(index=False):
        row, col = position.get((benchmark, example_id)), column.get(arm)
        if row is not None and col is not None and reward is not None:
            matrix[row, col] = reward
    return matrix
