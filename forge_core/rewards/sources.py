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
from forge_core.evidence.retrievers import DEFAULT_RETRIEVER
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


def latest_judge_key(store: Store, host: str) -> str:
    """The reward key of the host's most recently written judge rewards."""
    keys = store.reward_keys(host)
    if keys.empty:
        raise MissingStep(f"host '{host}' has no judge rewards: run `forge rewards judge --host {host}`")
    return str(keys.iloc[0]["reward_key"])


def check_judged_evidence(retriever: str) -> None:
    """Refuse, in one line, judge rewards under a retriever other than the default bm25: the judge
    rated the answers made under bm25 evidence, not that retriever's Summary and Raw answers."""
    if retriever != DEFAULT_RETRIEVER:
        raise InvalidInput(f"judge rewards rate the answers made under bm25 evidence, not those under retriever "
                           f"'{retriever}': use --reward consensus under it")


def reward_matrix(store: Store, table: OutcomeTable, source: str, judge_key: str | None = None) -> np.ndarray:
    """[N, K] rewards of the table's rows and arms under the proxy `source` (judge or consensus), NaN
    where one is missing (judge rows not yet judged, or judged with an error). Gold needs no matrix:
    it is the table's own F1. Consensus agrees the table's own answers (under its retriever); judge
    rewards rate the answers made under the default BM25 evidence only, and are refused under
    another retriever."""
    check_reward_source(source, proxies_only=True)
    if source == CONSENSUS:
        from forge_core.rewards.consensus import consensus_rewards  # imports the retrieval stack (scipy)

        rows = consensus_rewards(store, table.host, table.arms, table.retriever_hash)
    else:
        check_judged_evidence(table.retriever)
        rows = store.reward_outcomes(table.host, judge_key or latest_judge_key(store, table.host))
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
                              f"run `forge rewards judge --host {table.host} --split {split}`")
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
