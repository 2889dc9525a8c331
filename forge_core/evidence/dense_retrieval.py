"""Dense and hybrid retrieval over a benchmark's corpus, from the embedder's kept passage vectors.

- `DenseRetriever`: the question is embedded and every passage scored by cosine (vectors are
  L2-normalized, so a dot product); the passage vectors are those the cosine feature already keeps
  (`forge_core.evidence.passage_vectors`), built once per corpus and embedder.
- `HybridRetriever`: reciprocal-rank fusion of the BM25 and dense rankings: a passage scores
  `sum over the two rankings of 1 / (fusion_k + rank)` (rank from 1), over the top `FUSION_DEPTH`
  of each; ties keep corpus order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from forge_core.evidence.embedders import Embedder
from forge_core.evidence.passage_vectors import PassageVectors
from forge_core.evidence.retrieval import Retriever, ScoredDocument, top_k
from forge_core.evidence.settings import SupportSettings

FUSION_DEPTH = 100  # passages of each ranking that enter the fusion


class DenseRetriever:
    """Cosine top-k over complete passage vectors."""

    def __init__(self, vectors: PassageVectors, embedder: Embedder, settings: SupportSettings) -> None:
        """`vectors` must be complete (`PassageVectors.ensure_all`)."""
        if not vectors.complete:
            raise ValueError("dense retrieval needs every passage embedded (PassageVectors.ensure_all)")
        self.documents = vectors.documents
        self.vectors = vectors
        self.embedder = embedder
        self.settings = settings

    def scores(self, query: str) -> np.ndarray:
        """Cosine of the query with every passage, in corpus order."""
        return self.vectors.vectors @ self.embedder.embed([query])[0]

    def retrieve(self, query: str, k: int = 5) -> list[ScoredDocument]:
        """The k passages nearest the query, best first."""
        return [ScoredDocument(self.documents[i], score) for i, score in top_k(self.scores(query), k)]


class HybridRetriever:
    """Reciprocal-rank fusion of a BM25 and a dense retriever over the same corpus."""

    def __init__(self, bm25: Retriever, dense: DenseRetriever, fusion_k: int, settings: SupportSettings) -> None:
        if bm25.documents != dense.documents:
            raise ValueError("hybrid retrieval needs the BM25 and dense retrievers over the same corpus")
        self.documents = bm25.documents
        self.bm25 = bm25
        self.dense = dense
        self.fusion_k = fusion_k
        self.settings = settings

    def retrieve(self, query: str, k: int = 5) -> list[ScoredDocument]:
        """The k passages with the highest fused score, best first."""
        depth = max(FUSION_DEPTH, k)
        rankings = (self.bm25.index.search(query, depth), top_k(self.dense.scores(query), depth))
        fused = reciprocal_rank_fusion([[index for index, _ in ranking] for ranking in rankings],
                                       len(self.documents), self.fusion_k)
        return [ScoredDocument(self.documents[i], score) for i, score in top_k(fused, k)]


def reciprocal_rank_fusion(rankings: Sequence[Sequence[int]], n_documents: int, fusion_k: int) -> np.ndarray:
    """Per document, the sum over rankings of `1 / (fusion_k + rank)` (rank from 1; 0 where absent)."""
    fused = np.zeros(n_documents)
    for ranking in rankings:
        for rank, index in enumerate(ranking, start=1):
            fused[index] += 1.0 / (fusion_k + rank)
    return fused
