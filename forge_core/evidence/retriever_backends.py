"""A retriever configuration opened over a benchmark: the object that answers `retrieve(query, k)`.

Opened once per process for each (store, benchmark, configuration): the BM25 index is cached on
disk (`load_retriever`); dense and hybrid retrievers embed every passage of the corpus the first
time (kept on disk under the cache directory, `on_progress(done, total)` following the embedding)
and reuse the vectors afterwards.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Protocol

from forge_core.data.catalog import check_benchmarks
from forge_core.errors import ForgeError
from forge_core.evidence.answering import load_retriever
from forge_core.evidence.dense_retrieval import DenseRetriever, HybridRetriever
from forge_core.evidence.embedders import load_embedder, spec_for_name
from forge_core.evidence.passage_vectors import passage_vectors
from forge_core.evidence.retrieval import ScoredDocument
from forge_core.evidence.retrievers import RetrieverConfig, get_retriever_config
from forge_core.evidence.settings import SupportSettings
from forge_core.records import Document
from forge_core.store import Store

ProgressFn = Callable[[int, int], None]


class AnyRetriever(Protocol):
    """What every retriever offers (BM25's `Retriever`, dense, hybrid, http)."""

    documents: tuple[Document, ...]
    settings: SupportSettings

    def retrieve(self, query: str, k: int = 5) -> list[ScoredDocument]:
        """The k best passages for the query, best first."""
        ...


def open_retriever(store: Store, config: RetrieverConfig, benchmark: str,
                   on_progress: ProgressFn | None = None) -> AnyRetriever:
    """The retriever `config` describes over `benchmark`'s corpus (an http one ignores the corpus)."""
    if config.kind == "http":
        from forge_core.evidence.http_retriever import HttpRetriever

        return HttpRetriever(config, benchmark)
    return _opened(str(store.path), benchmark, config, on_progress)


def _opened(store_path: str, benchmark: str, config: RetrieverConfig, on_progress: ProgressFn | None) -> AnyRetriever:
    if on_progress is not None and config.kind in ("dense", "hybrid"):  # build the vectors with progress first
        store = Store(store_path)
        passage_vectors(load_retriever(store, benchmark), spec_for_name(config.embedder)).ensure_all(on_progress)
    return _open_local(store_path, benchmark, config)


@functools.lru_cache(maxsize=16)
def _open_local(store_path: str, benchmark: str, config: RetrieverConfig) -> AnyRetriever:
    bm25 = load_retriever(Store(store_path), benchmark)
    if config.kind == "bm25":
        if config.settings == bm25.settings:
            return bm25
        configured = type(bm25)(bm25.documents, bm25.index)
        configured.settings = config.settings
        return configured
    spec = spec_for_name(config.embedder)
    vectors = passage_vectors(bm25, spec)
    vectors.ensure_all()
    dense = DenseRetriever(vectors, load_embedder(spec), config.settings)
    if config.kind == "dense":
        return dense
    return HybridRetriever(bm25, dense, config.fusion_k, config.settings)





def check_retriever(store: Store, name: str, benchmark: str, query: str | None = None) -> dict:
    """One query (default: the benchmark's first question) through a retriever: its passages and
    latency, or its one-line error (`forge retriever check`, the Hosts page)."""
    config = get_retriever_config(store, name)
    check_benchmarks(store, [benchmark])
    if query is None:
        examples = store.examples(benchmark)[:1]
        query = examples[0].question if examples else "test"
    try:
        retriever = open_retriever(store, config, benchmark)
        started = time.perf_counter()
        hits = retriever.retrieve(query, config.k)
        latency_ms = (time.perf_counter() - started) * 1000.0
    except ForgeError as error:
        return {"retriever": name, "query": query, "ok": False, "error": str(error)}
    return {"retriever": name, "query": query, "ok": True, "latency_ms": latency_ms,
            "passages": [{"title": h.document.title, "text": h.document.text, "score": h.score} for h in hits]}
