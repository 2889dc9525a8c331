"""The consensus reward: how much an arm's answer agrees with the query's other stored answers.

For each (query, arm): the mean token F1 (label equality on FEVER, where arms store the label) of
the arm's scored answer against the scored answers of the query's other arms and of its self-consistency samples (the
greedy probe is the `direct:no_think` arm itself, so it is not counted twice). No host call: it is
computed from the stored outcomes when asked (a few seconds), so it is never stale and needs no
table. A query whose answers all agree gives every arm 1.0; a lone answer gets 0.0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from forge_core.arms import DIRECT_NO_THINK, parse_arm
from forge_core.evidence.answering import extract_answer
from forge_core.evidence.scoring import counts_f1, token_counts, token_f1
from forge_core.records import SAMPLE_PROBES, is_fever_benchmark
from forge_core.store import Store

_SAMPLE_ARM = parse_arm(DIRECT_NO_THINK)  # samples are drawn on the Direct prompt: scored as its answer


def agreement(answer: str, others: Sequence[str], is_fever: bool) -> float:
    """Mean token F1 of `answer` against each of `others` (on FEVER: the same non-empty label
    scores 1); 0.0 when there is none."""
    if not others:
        return 0.0
    if is_fever:
        return float(np.mean([float(bool(answer) and answer == other) for other in others]))
    return float(np.mean([token_f1(answer, (other,)) for other in others]))


def query_consensus(arm_answers: dict[str, str], sample_answers: Sequence[str], is_fever: bool) -> dict[str, float]:
    """Arm -> consensus reward of one query, from its arms' scored answers and its sample answers
    (`agreement` of each arm's answer with all the others; each answer is normalized once)."""
    if is_fever:
        return {arm: agreement(answer, [other for name, other in arm_answers.items() if name != arm]
                               + list(sample_answers), is_fever) for arm, answer in arm_answers.items()}
    tokens = {arm: token_counts(answer) for arm, answer in arm_answers.items()}
    sampled = [token_counts(answer) for answer in sample_answers]
    rewards = {}
    for arm, answer in tokens.items():
        others = [other for name, other in tokens.items() if name != arm] + sampled
        rewards[arm] = float(np.mean([counts_f1(answer, other) for other in others])) if others else 0.0
    return rewards


def consensus_rewards(store: Store, host: str, arms: Sequence[str], retriever_hash: str = "") -> pd.DataFrame:
    """benchmark, example_id, arm, reward for every query of `host` with all `arms` answered under one
    retriever configuration (its hash; default: the BM25 evidence): its answers agree only with each
    other's and the samples' (which, on the Direct prompt, use no evidence)."""
    outcomes = store.arm_outcomes(host, retriever_hash=retriever_hash)
    outcomes = outcomes[outcomes["error"].isna() & outcomes["arm"].isin(arms)]
    samples = _sample_answers(store, host)
    rows = []
    for (benchmark, example_id), group in outcomes.groupby(["benchmark", "example_id"], sort=True):
        if len(group) < len(arms):
            continue
        is_fever = is_fever_benchmark(benchmark)
        answers = dict(zip(group["arm"], group["extracted"].fillna("")))
        sampled = [extract_answer(text, _SAMPLE_ARM, is_fever) for text in samples.get((benchmark, example_id), ())]
        for arm, reward in query_consensus(answers, sampled, is_fever).items():
            rows.append((benchmark, example_id, arm, reward))
    return pd.DataFrame(rows, columns=["benchmark", "example_id", "arm", "reward"])


def _sample_answers(store: Store, host: str) -> dict[tuple[str, str], list[str]]:
    probes = store.probe_outcomes(host)
    if probes.empty:
        return {}
    probes = probes[probes["error"].isna() & probes["probe"].isin(SAMPLE_PROBES)]
    return {key: list(group["answer"].fillna("")) for key, group in probes.groupby(["benchmark", "example_id"])}
