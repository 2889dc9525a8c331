"""Grounding: how much of a query's annotated gold evidence the chosen arm's prompt holds.

`gold_recall` of a (query, arm) is the share of the benchmark's annotated supporting sentences
(HotpotQA and 2WikiMultihopQA supporting facts, MuSiQue's supporting paragraphs, FEVER's evidence,
as `examples.evidence` stores them) found in the prompt's evidence text, compared after
lowercasing and collapsing whitespace. Direct prompts hold no evidence (recall 0); a query whose
benchmark has no annotation (PopQA) has none (NaN), and benchmarks without any annotation are left
out of the report. It needs no host call: the prompt's evidence is rebuilt from the outcome
table's retriever (BM25 by default) exactly as the arms built it.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from forge_core.arms import parse_arm
from forge_core.evidence.answering import load_retriever, retrieve_evidence
from forge_core.evidence.retrievers import RetrieverConfig, retriever_config_for_hash
from forge_core.records import Example
from forge_core.routing.outcome_table import OutcomeTable
from forge_core.routing.retriever_backends import open_retriever
from forge_core.statistics import known_per_benchmark
from forge_core.store import Store

GROUNDED_SUPPORTS = ("summary", "raw")


def _normalized(text: str) -> str:
    return " ".join(text.lower().split())


def evidence_recall(evidence: tuple[str, ...], prompt_text: str) -> float:
    """Share of the annotated evidence texts found in the prompt text (NaN without annotation)."""
    wanted = [_normalized(item) for item in evidence if item.strip()]
    if not wanted:
        return float("nan")
    held = _normalized(prompt_text)
    return sum(item in held for item in wanted) / len(wanted)


def query_recall(store: Store, example: Example, retriever: RetrieverConfig | None = None) -> dict[str, float]:
    """Support form -> gold recall of its prompt for one query (direct 0, NaN without annotation),
    the evidence from `retriever` (default: the built-in BM25)."""
    if not any(item.strip() for item in example.evidence):
        return {"direct": float("nan"), "summary": float("nan"), "raw": float("nan")}
    opened = (load_retriever(store, example.benchmark) if retriever is None
              else open_retriever(store, retriever, example.benchmark))
    evidence = retrieve_evidence(opened, example.question)
    recall = {support: evidence_recall(example.evidence, evidence.support_text(support))
              for support in GROUNDED_SUPPORTS}
    return {"direct": 0.0, **recall}


def gold_recall_matrix(store: Store, table: OutcomeTable) -> np.ndarray:
    """[N, K] gold recall of every row's arm prompts under the table's retriever (NaN where the
    benchmark has no annotation), computed once per store, queries, alphabet and retriever (the
    last few are kept in memory)."""
    return _recall_matrix(str(store.path), tuple(table.keys), tuple(table.arms), table.retriever_hash)


@functools.lru_cache(maxsize=4)
def _recall_matrix(store_path: str, keys: tuple[tuple[str, str], ...], arms: tuple[str, ...],
                   evidence_hash: str) -> np.ndarray:
    store = Store(store_path)
    retriever = retriever_config_for_hash(store, evidence_hash) if evidence_hash else None
    supports = [parse_arm(arm).support for arm in arms]
    matrix = np.full((len(keys), len(arms)), np.nan)
    position = {key: row for row, key in enumerate(keys)}
    for benchmark in sorted({benchmark for benchmark, _ in keys}):
        ids = [example_id for name, example_id in keys if name == benchmark]
        for example in store.examples(benchmark, ids):
            recall = query_recall(store, example, retriever)
            matrix[position[(benchmark, example.example_id)]] = [recall[support] for support in supports]
    return matrix


def gold_recall_frame(store: Store, table: OutcomeTable) -> pd.DataFrame:
    """Mean gold recall of each support form's prompt per annotated benchmark, and their macro
    mean: rows direct, summary, raw; columns the benchmarks and "macro" (empty without annotation)."""
    recall = gold_recall_matrix(store, table)
    supports = [parse_arm(arm).support for arm in table.arms]
    columns = {}
    for benchmark in np.unique(table.benchmarks):
        rows = recall[table.benchmarks == benchmark]
        if not np.isnan(rows).all():
            columns[str(benchmark)] = {support: float(np.nanmean(rows[:, supports.index(support)]))
                                       for support in ("direct", *GROUNDED_SUPPORTS)}
    frame = pd.DataFrame(columns)
    if not frame.empty:
        frame["macro"] = frame.mean(axis=1)
    return frame.rename_axis("support").reset_index()


def grounding_summary(recall: np.ndarray, actions: np.ndarray, benchmarks: np.ndarray) -> dict:
    """A policy's gold recall: macro over the annotated benchmarks and per benchmark (absent
    where a benchmark has no annotation)."""
    chosen = recall[np.arange(len(actions)), actions]
    per_benchmark = {benchmark: float(values.mean())
                     for benchmark, (values, _) in known_per_benchmark(chosen, benchmarks).items()}
    return {"gold_recall": float(np.mean(list(per_benchmark.values()))) if per_benchmark else None,
            "gold_recall_per_benchmark": per_benchmark}
