"""Support rates: the share of a policy's answers that the evidence its prompt held supports
(`support_rate`) or contradicts (`unsupported_rate`), by the verdicts `forge rewards support`
stored (`forge_core.rewards.support_verdict`).

Rates count only the queries whose chosen arm has a verdict, and `support_coverage` says what share
that is, so a partial run is never read as a full one; a benchmark without any verdict is left out
and rates are None where no verdict exists at all. The newest support verdicts of the host are used,
and every report names their evaluator (`support_evaluator`: "judge:HOST@CONFIG_HASH").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from forge_core.rewards.sources import aligned_rewards, rating_keys
from forge_core.rewards.support_verdict import CONTRADICTED, SUPPORT_SCORES, SUPPORT_SOURCE, SUPPORTED, evaluator_name
from forge_core.routing.outcome_table import OutcomeTable
from forge_core.statistics import known_per_benchmark, macro, paired_bootstrap_ci
from forge_core.store import Store


@dataclass(frozen=True)
class SupportVerdicts:
    """A host's support verdicts aligned with an outcome table."""

    scores: np.ndarray  # [N, K] SUPPORT_SCORES values, NaN where an arm has no verdict
    evaluator: str | None  # "judge:HOST@CONFIG_HASH", None without verdicts
    reward_key: str | None  # the verdicts' key in reward_outcomes


def newest_support_key(store: Store, host: str, retriever_hash: str = "") -> tuple[str, str] | None:
    """(reward key, evaluator name) of the host's newest support verdicts of the answers made under
    one retriever configuration ("": the default BM25); None without any."""
    keys = rating_keys(store, host, SUPPORT_SOURCE, retriever_hash)
    if keys.empty:
        return None
    newest = keys.iloc[0]
    return str(newest["reward_key"]), evaluator_name(newest["judge_host"], newest["judge_config_hash"])


def support_verdicts(store: Store, table: OutcomeTable) -> SupportVerdicts:
    """The newest support verdicts of the table's host of the answers under its retriever, aligned
    with its rows and arms (verdicts of another retriever's answers never count)."""
    newest = newest_support_key(store, table.host, table.retriever_hash)
    if newest is None:
        return SupportVerdicts(np.full(table.f1.shape, np.nan), None, None)
    reward_key, evaluator = newest
    rows = store.reward_outcomes(table.host, reward_key)
    rows = rows[rows["error"].isna()][["benchmark", "example_id", "arm", "reward"]]
    return SupportVerdicts(aligned_rewards(rows, table), evaluator, reward_key)


RATE_VERDICTS = {"support_rate": SUPPORTED, "unsupported_rate": CONTRADICTED}  # each rate's verdict


def support_summary(scores: np.ndarray, actions: np.ndarray, benchmarks: np.ndarray, intervals: bool = True) -> dict:
    """A policy's support rates over the queries whose chosen arm has a verdict: macro over the
    benchmarks with verdicts (with bootstrap 95% intervals unless `intervals` is off: the Pareto
    page's points show none) and per benchmark, with the share of queries covered."""
    chosen = scores[np.arange(len(actions)), actions]
    per_benchmark = {benchmark: _rates(judged, queries)
                     for benchmark, (judged, queries) in known_per_benchmark(chosen, benchmarks).items()}
    judged = ~np.isnan(chosen)
    summary: dict = {}
    for name, label in RATE_VERDICTS.items():
        hits = (chosen[judged] == SUPPORT_SCORES[label]).astype(np.float64)
        summary[name] = macro(hits, benchmarks[judged]) if judged.any() else None
        if intervals:
            summary[f"ci_{name}"] = list(paired_bootstrap_ci(hits, np.zeros_like(hits), benchmarks[judged])) \
                if judged.any() else None
    coverage = float(np.mean(judged)) if len(chosen) else 0.0
    return summary | {"support_coverage": coverage, "support_per_benchmark": per_benchmark}


def _rates(judged: np.ndarray, queries: int) -> dict[str, float]:
    return {name: float(np.mean(judged == SUPPORT_SCORES[label])) for name, label in RATE_VERDICTS.items()} \
        | {"support_coverage": len(judged) / queries}


def support_rate_frame(verdicts: SupportVerdicts, table: OutcomeTable) -> pd.DataFrame:
    """Per arm and benchmark with verdicts (and "macro"): support_rate, unsupported_rate and
    support_coverage of always taking that arm; empty without verdicts."""
    rows = []
    for column, arm in enumerate(table.arms):
        summary = support_summary(verdicts.scores, np.full(len(table.keys), column), table.benchmarks, intervals=False)
        for benchmark, rates in summary["support_per_benchmark"].items():
            rows.append({"arm": arm, "benchmark": benchmark, **rates})
        if summary["support_per_benchmark"]:
            rows.append({"arm": arm, "benchmark": "macro", "support_rate": summary["support_rate"],
                         "unsupported_rate": summary["unsupported_rate"],
                         "support_coverage": summary["support_coverage"]})
    return pd.DataFrame(rows, columns=["arm", "benchmark", "support_rate", "unsupported_rate", "support_coverage"])
