"""Grounding: how much of a query's annotated gold evidence the chosen arm's prompt holds.

`gold_recall` of a (query, arm) is the share of the benchmark's annotated supporting sentences
(HotpotQA and 2WikiMultihopQA supporting facts, MuSiQue's supporting paragraphs, FEVER's evidence,
as `examples.evidence` stores them) found in the prompt's evidence text, compared after
lowercasing and collapsing whitespace. Direct prompts hold no evidence (recall 0); a query whose
benchmark has no annotation (PopQA) has none (NaN), and benchmarks without any annotation are left
out of the report. It needs no host call: the prompt's evidence is rebuilt from the outcome
table's retriever (BM25 by default) exactly as the arms built it. Rebuilding it takes a few
milliseconds a query, so each query's recall is kept on disk under the cache directory
(`gold_recall/`, one file per benchmark and retriever, named by the benchmark's example and document
counts: a re-imported corpus is never read from an old file); `forge store load-demo` fills it.
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from forge_core import config
from forge_core.arms import parse_arm
from forge_core.evidence.answering import load_retriever, retrieve_evidence
from forge_core.evidence.retriever_backends import open_retriever
from forge_core.evidence.retrievers import RetrieverConfig, retriever_config_for_hash
from forge_core.records import Example
from forge_core.routing.outcome_table import OutcomeTable
from forge_core.statistics import known_per_benchmark
from forge_core.store import Store

GROUNDED_SUPPORTS = ("summary", "raw")
RECALL_SUPPORTS = ("direct", *GROUNDED_SUPPORTS)  # the order of a query's recalls in the cache files
RECALL_CACHE = "gold_recall"  # under the cache directory: per-query recall files
RECALL_CACHE_VERSION = 1  # bumped when the evidence or the recall rule changes


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
    supports = [parse_arm(arm).support for arm in arms]
    matrix = np.full((len(keys), len(arms)), np.nan)
    position = {key: row for row, key in enumerate(keys)}
    for benchmark in sorted({benchmark for benchmark, _ in keys}):
        ids = [example_id for name, example_id in keys if name == benchmark]
        for example_id, recall in benchmark_recall(store, benchmark, ids, evidence_hash).items():
            matrix[position[(benchmark, example_id)]] = [recall[support] for support in supports]
    return matrix


def benchmark_recall(store: Store, benchmark: str, example_ids: Sequence[str],
                     evidence_hash: str = "") -> dict[str, dict[str, float]]:
    """Example id -> support form -> gold recall (`query_recall`) of the benchmark's queries under
    the retriever of `evidence_hash` ("": the built-in BM25), read from the cache file where kept,
    the others computed and added to it."""
    path = _recall_file(store, benchmark, evidence_hash)
    kept = json.loads(path.read_text()) if path.exists() else {}
    missing = [example_id for example_id in dict.fromkeys(example_ids) if example_id not in kept]
    if missing:
        retriever = retriever_config_for_hash(store, evidence_hash) if evidence_hash else None
        for example in store.examples(benchmark, missing):
            recall = query_recall(store, example, retriever)
            kept[example.example_id] = [None if math.isnan(recall[s]) else recall[s] for s in RECALL_SUPPORTS]
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        partial.write_text(json.dumps(kept))
        os.replace(partial, path)  # atomic: a reader never sees half a file
    return {example_id: {support: float("nan") if value is None else value
                         for support, value in zip(RECALL_SUPPORTS, kept[example_id])}
            for example_id in example_ids if example_id in kept}


def _recall_file(store: Store, benchmark: str, evidence_hash: str) -> Path:
    """The cache file of a benchmark's recalls, named by its example and document counts."""
    counts = store.benchmark_stats().get(benchmark, {})
    name = (f"{benchmark}.{evidence_hash or 'bm25'}.{counts.get('examples', 0)}-{counts.get('documents', 0)}"
            f".v{RECALL_CACHE_VERSION}.json")
    return config.cache_dir() / RECALL_CACHE / name


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
