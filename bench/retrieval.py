"""Benchmark FORGE's sparse BM25 against rank_bm25.BM25Okapi on the HotpotQA distractor corpus.

Run from the repository root:

    .venv/bin/python bench/retrieval.py [--benchmarks-dir DIR] [--n-queries 1000]

The corpus is the union of the HotpotQA records' context paragraphs as the project's importer
reads it (each paragraph's sentences joined with "", as upstream HotpotQA does: every sentence
after the first carries its leading space), deduplicated by `Document.doc_id`. Both indexes are
built from the same tokens in the same run. Our per-query time is a loop of single `search`
calls on the raw question text (tokenization included); rank_bm25 gets pre-tokenized queries and
ranks as its `get_top_n` does. Progress goes to stderr; the last stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from rank_bm25 import BM25Okapi

from forge_core.config import benchmarks_dir
from forge_core.data.importers import read_benchmark
from forge_core.evidence.retrieval import BM25Index, document_tokens, tokenize

logger = logging.getLogger("bench.retrieval")

TOP_K = 5  # depth timed for both implementations
AGREEMENT_K = 3  # depth compared for agreement
SCORE_TOLERANCE = 1e-9  # top-3 score sets closer than this count as agreeing
RANK_BM25_TIME_BUDGET_S = 300.0  # beyond this projected time, rank_bm25 runs on a subset
RANK_BM25_SUBSET = 200  # queries timed for rank_bm25 when the full set would exceed the budget
RANK_BM25_PROBE = 20  # queries timed first to project rank_bm25's total time


def time_ours(index: BM25Index, queries: Sequence[str]) -> tuple[list, float]:
    """Top-k of every query by single `search` calls, and the mean ms per query."""
    start = time.perf_counter()
    hits = [index.search(query, TOP_K) for query in queries]
    return hits, (time.perf_counter() - start) * 1e3 / len(queries)


def time_ours_batched(index: BM25Index, queries: Sequence[str]) -> tuple[list, float]:
    """Top-k of every query by one `search_many` call, and the mean ms per query."""
    start = time.perf_counter()
    hits = index.search_many(queries, TOP_K)
    return hits, (time.perf_counter() - start) * 1e3 / len(queries)


def rank_bm25_top_k(reference: BM25Okapi, query_tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """rank_bm25's top-k indices (as its `get_top_n` orders them) and all its scores."""
    scores = reference.get_scores(query_tokens)
    return np.argsort(scores)[::-1][:TOP_K], scores


def time_rank_bm25(
    reference: BM25Okapi, query_tokens: Sequence[list[str]]
) -> tuple[list[np.ndarray], list[np.ndarray], float]:
    """rank_bm25 top-k and scores of the queries (a subset if all would take too long), ms/query."""
    probe = min(RANK_BM25_PROBE, len(query_tokens))
    start = time.perf_counter()
    results = [rank_bm25_top_k(reference, tokens) for tokens in query_tokens[:probe]]
    projected_s = (time.perf_counter() - start) / probe * len(query_tokens)
    n_timed = len(query_tokens)
    if projected_s > RANK_BM25_TIME_BUDGET_S:
        n_timed = min(RANK_BM25_SUBSET, len(query_tokens))
        logger.info("rank_bm25 projected %.0f s: timing %d queries only", projected_s, n_timed)
    for position in range(probe, n_timed):
        results.append(rank_bm25_top_k(reference, query_tokens[position]))
        if (position + 1) % 200 == 0:
            logger.info("rank_bm25: %d / %d queries", position + 1, n_timed)
    elapsed_ms = (time.perf_counter() - start) * 1e3
    top, scores = zip(*results)
    return list(top), list(scores), elapsed_ms / n_timed


def top3_agreement(
    ours: Sequence[list[tuple[int, float]]],
    reference_top: Sequence[np.ndarray],
    reference_scores: Sequence[np.ndarray],
) -> tuple[float, float]:
    """Share of queries whose top-3 score sets match (ties aside), and whose top-3 ids match."""
    score_matches = 0
    id_matches = 0
    for hits, top, scores in zip(ours, reference_top, reference_scores):
        our_ids = [index for index, _ in hits[:AGREEMENT_K]]
        reference_ids = [int(index) for index in top[:AGREEMENT_K]]
        our_top = np.array([score for _, score in hits[:AGREEMENT_K]])
        reference_top = np.sort(scores)[::-1][:AGREEMENT_K]
        score_matches += bool(np.allclose(our_top, reference_top, rtol=0, atol=SCORE_TOLERANCE))
        id_matches += our_ids == reference_ids
    return score_matches / len(reference_scores), id_matches / len(reference_scores)


def cache_roundtrip_seconds(index: BM25Index) -> tuple[float, float]:
    """Seconds to save the index and to load it back."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "index.npz"
        start = time.perf_counter()
        index.save(path)
        saved = time.perf_counter()
        BM25Index.load(path)
        return saved - start, time.perf_counter() - saved


def run(benchmarks_root: Path, n_queries: int) -> dict:
    """Build both indexes, time both on the same queries, compare their rankings."""
    hotpotqa = read_benchmark("hotpotqa", benchmarks_root)
    documents = hotpotqa.documents
    queries = [example.question for example in hotpotqa.examples[:n_queries]]
    logger.info("%d documents, %d queries", len(documents), len(queries))

    start = time.perf_counter()
    corpus_tokens = [document_tokens(document) for document in documents]
    tokenize_s = time.perf_counter() - start
    doc_ids = [document.doc_id for document in documents]
    start = time.perf_counter()
    index = BM25Index.from_tokens(corpus_tokens, doc_ids)
    ours_build_s = time.perf_counter() - start
    start = time.perf_counter()
    reference = BM25Okapi(corpus_tokens)
    reference_build_s = time.perf_counter() - start
    save_s, load_s = cache_roundtrip_seconds(index)

    time_ours(index, queries[:20])  # warm-up
    ours_hits, ours_ms = time_ours(index, queries)
    batched_hits, batched_ms = time_ours_batched(index, queries)
    logger.info("ours: %.3f ms/query single, %.3f ms/query batched", ours_ms, batched_ms)
    query_tokens = [tokenize(query) for query in queries]
    reference_top, reference_scores, reference_ms = time_rank_bm25(reference, query_tokens)
    n_compared = len(reference_scores)
    agreement, id_agreement = top3_agreement(
        ours_hits[:n_compared], reference_top, reference_scores
    )
    max_diff = max(
        float(np.abs(index.scores(query) - scores).max())
        for query, scores in zip(queries, reference_scores)
    )
    return {
        "n_docs": len(documents),
        "n_queries": len(queries),
        "rank_bm25_queries": n_compared,
        "speedup_vs_rank_bm25": round(reference_ms / ours_ms, 1),
        "speedup_batched_vs_rank_bm25": round(reference_ms / batched_ms, 1),
        "top3_agreement": agreement,
        "top3_id_agreement": id_agreement,
        "max_abs_score_diff": max_diff,
        "batched_equals_single": batched_hits == ours_hits,
        "ours_ms_per_query": round(ours_ms, 4),
        "ours_batched_ms_per_query": round(batched_ms, 4),
        "rank_bm25_ms_per_query": round(reference_ms, 3),
        "ours_times_include_tokenization": True,
        "tokenize_corpus_seconds": round(tokenize_s, 3),
        "ours_build_seconds": round(ours_build_s, 3),
        "rank_bm25_build_seconds": round(reference_build_s, 3),
        "cache_save_seconds": round(save_s, 3),
        "cache_load_seconds": round(load_s, 3),
    }


def main(argv: Sequence[str] | None = None) -> None:
    """Parse arguments, run the benchmark, print the JSON result as the last line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--benchmarks-dir",
        type=Path,
        default=benchmarks_dir(),
        help="default: $FORGE_BENCHMARKS_DIR or ../shared/benchmarks beside the repository",
    )
    parser.add_argument("--n-queries", type=int, default=1000)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    print(json.dumps(run(args.benchmarks_dir, args.n_queries)))


if __name__ == "__main__":
    main()
