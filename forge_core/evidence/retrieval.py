"""BM25 retrieval over a benchmark corpus: tokenizer, sparse Okapi BM25 index, on-disk cache.

Scores equal `rank_bm25.BM25Okapi` (k1 = 1.5, b = 0.75, epsilon = 0.25) to floating-point
rounding. Every (term, document) weight is precomputed at build time into a sparse matrix
`W[doc, term] = idf(term) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))`, so a query is a
sum of the columns of its tokens (each occurrence of a repeated token counts once more).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from itertools import chain
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from forge_core.errors import InvalidInput
from forge_core.evidence.settings import DEFAULT_SUPPORT, SupportSettings
from forge_core.records import Document

logger = logging.getLogger(__name__)

STOPWORDS: frozenset[str] = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "been", "being", "but",
        "by", "did", "do", "does", "for", "from", "had", "has", "have", "he",
        "her", "his", "how", "if", "in", "into", "is", "it", "its", "no",
        "not", "of", "on", "or", "s", "she", "such", "that", "the", "their",
        "then", "there", "these", "they", "this", "those", "to", "was", "were", "what",
        "when", "where", "which", "who", "whom", "will", "with",
    }
)  # 57 words; "s" is the remnant of a possessive "'s" once punctuation is removed

_ALPHANUMERIC_RUN = re.compile(r"[^\W_]+")  # a run of Unicode letters and digits (\w less "_")
_INDEX_FORMAT = 1  # bump when the tokenizer or the file layout changes: old caches are rebuilt
_QUERY_BATCH = 256  # queries scored per sparse product in `search_many`


def tokenize(text: str) -> list[str]:
    """Lowercase, turn every non-alphanumeric character into a space, split, drop stopwords.

    Found as the runs of alphanumeric characters of the lowercased text: the same words, since
    every whitespace character is non-alphanumeric and no alphanumeric one is whitespace."""
    words = _ALPHANUMERIC_RUN.findall(text.lower())
    return [word for word in words if word not in STOPWORDS]


def document_tokens(document: Document) -> list[str]:
    """The tokens a document is indexed under: its title followed by its text."""
    return tokenize(f"{document.title} {document.text}")


@dataclass(frozen=True)
class BM25Params:
    """Okapi BM25 hyperparameters (the `rank_bm25.BM25Okapi` defaults)."""

    k1: float = 1.5  # term-frequency saturation
    b: float = 0.75  # strength of document-length normalization
    epsilon: float = 0.25  # negative idfs become epsilon * mean idf


@dataclass(frozen=True)
class ScoredDocument:
    """A retrieved document with its BM25 score for the query."""

    document: Document
    score: float


class BM25Index:
    """Okapi BM25 over a fixed corpus, stored as a sparse (document x term) weight matrix."""

    def __init__(
        self,
        weights: sp.csc_matrix,
        vocabulary: dict[str, int],
        idf: np.ndarray,
        avgdl: float,
        doc_ids: tuple[str, ...],
        params: BM25Params,
    ) -> None:
        """Wrap precomputed parts; use `build` or `load` rather than calling this directly."""
        self.weights = weights  # (n_docs, n_terms) CSC matrix of per-(doc, term) BM25 weights
        self.vocabulary = vocabulary  # term -> column of `weights`
        self.idf = idf  # per-term idf after the epsilon floor, indexed like `vocabulary`
        self.avgdl = avgdl  # mean document length in tokens
        self.doc_ids = doc_ids  # `Document.doc_id` of each row, in corpus order
        self.params = params

    @classmethod
    def build(
        cls, documents: Sequence[Document], params: BM25Params = BM25Params()
    ) -> BM25Index:
        """Index documents, each tokenized as title + " " + text."""
        token_lists = [document_tokens(document) for document in documents]
        doc_ids = tuple(document.doc_id for document in documents)
        return cls.from_tokens(token_lists, doc_ids, params)

    @classmethod
    def from_tokens(
        cls,
        token_lists: Sequence[Sequence[str]],
        doc_ids: Sequence[str],
        params: BM25Params = BM25Params(),
    ) -> BM25Index:
        """Index pre-tokenized documents; `doc_ids` names them in the same order."""
        if len(token_lists) != len(doc_ids):
            raise ValueError(f"{len(token_lists)} token lists but {len(doc_ids)} doc ids")
        weights = _BM25Weights.compute(token_lists, params)
        shape = (len(token_lists), len(weights.vocabulary))
        entries = (weights.values, (weights.rows, weights.columns))
        matrix = sp.csc_matrix(entries, shape=shape)
        return cls(matrix, weights.vocabulary, weights.idf, weights.avgdl, tuple(doc_ids), params)

    def __len__(self) -> int:
        """Number of indexed documents."""
        return self.weights.shape[0]

    def query_vector(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """Known term ids of the query and how often each occurs; unknown tokens are dropped."""
        term_ids, counts = self._query_terms(query)
        return np.array(term_ids, dtype=np.int64), np.array(counts, dtype=np.float64)

    def _query_terms(self, query: str) -> tuple[list[int], list[float]]:
        """`query_vector` as lists: known term ids in increasing order, and their counts."""
        found = Counter(self.vocabulary[token] for token in tokenize(query) if token in self.vocabulary)
        term_ids = sorted(found)
        return term_ids, [float(found[term]) for term in term_ids]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for the query, in corpus order.

        Reads the query's columns straight from the CSC arrays (no sparse slicing, which costs
        more than the sum on a short query) and adds them up in term order, exactly as scipy's
        sparse product does: the same floating-point result."""
        term_ids, counts = self._query_terms(query)
        if not term_ids:
            return np.zeros(len(self))
        indptr = self.weights.indptr
        columns = [slice(indptr[term], indptr[term + 1]) for term in term_ids]
        rows = np.concatenate([self.weights.indices[column] for column in columns])
        values = np.concatenate([self.weights.data[column] * count for column, count in zip(columns, counts)])
        return np.bincount(rows, weights=values, minlength=len(self))

    def search(self, query: str, k: int = 5) -> list[tuple[int, float]]:
        """Top-k (document index, score), best first; equal scores keep corpus order."""
        return top_k(self.scores(query), k)

    def search_many(self, queries: Sequence[str], k: int = 5) -> list[list[tuple[int, float]]]:
        """`search` for many queries at once, scored by sparse (query x term) matrix products."""
        results: list[list[tuple[int, float]]] = []
        for start in range(0, len(queries), _QUERY_BATCH):
            batch_scores = self._score_batch(queries[start : start + _QUERY_BATCH])
            for row in range(batch_scores.shape[0]):
                results.append(self._sparse_row_top_k(batch_scores, row, k))
        return results

    def _score_batch(self, queries: Sequence[str]) -> sp.csr_matrix:
        """Sparse (query x document) scores of a batch of queries."""
        rows: list[np.ndarray] = []
        columns: list[np.ndarray] = []
        values: list[np.ndarray] = []
        for row, query in enumerate(queries):
            term_ids, counts = self.query_vector(query)
            rows.append(np.full(term_ids.size, row, dtype=np.int64))
            columns.append(term_ids)
            values.append(counts)
        query_terms = sp.csr_matrix(
            (np.concatenate(values), (np.concatenate(rows), np.concatenate(columns))),
            shape=(len(queries), self.weights.shape[1]),
        )
        return sp.csr_matrix(query_terms @ self.weights.T)

    def _sparse_row_top_k(
        self, batch_scores: sp.csr_matrix, row: int, k: int
    ) -> list[tuple[int, float]]:
        """Top-k of one row of `_score_batch`, densified only when unscored documents can rank."""
        start, end = batch_scores.indptr[row], batch_scores.indptr[row + 1]
        doc_indices = batch_scores.indices[start:end]
        values = batch_scores.data[start:end]
        best = _best_positions(values, k, tie_labels=doc_indices)
        if best.size < min(k, len(self)) or (best.size and values[best[-1]] <= 0):
            dense = np.zeros(len(self))
            dense[doc_indices] = values
            return top_k(dense, k)
        return [(int(doc_indices[position]), float(values[position])) for position in best]

    def save(self, path: str | Path) -> None:
        """Write the index to one .npz file (arrays plus JSON metadata), atomically."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        meta = {
            "format": _INDEX_FORMAT,
            "vocabulary": list(self.vocabulary),
            "doc_ids": list(self.doc_ids),
            "avgdl": self.avgdl,
            "params": asdict(self.params),
        }
        handle = tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", delete=False)
        try:
            with handle:
                np.savez(
                    handle,
                    data=self.weights.data,
                    indices=self.weights.indices,
                    indptr=self.weights.indptr,
                    shape=np.array(self.weights.shape, dtype=np.int64),
                    idf=self.idf,
                    meta=np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8),
                )
            os.replace(handle.name, path)
        except BaseException:
            Path(handle.name).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: str | Path) -> BM25Index:
        """Read an index written by `save`."""
        with np.load(Path(path), allow_pickle=False) as arrays:
            meta = json.loads(arrays["meta"].tobytes().decode("utf-8"))
            if meta["format"] != _INDEX_FORMAT:
                raise ValueError(f"{path}: index format {meta['format']}, expected {_INDEX_FORMAT}")
            shape = tuple(int(size) for size in arrays["shape"])
            parts = (arrays["data"], arrays["indices"], arrays["indptr"])
            weights = sp.csc_matrix(parts, shape=shape)
            idf = arrays["idf"]
        vocabulary = {term: term_id for term_id, term in enumerate(meta["vocabulary"])}
        params = BM25Params(**meta["params"])
        return cls(weights, vocabulary, idf, meta["avgdl"], tuple(meta["doc_ids"]), params)


@dataclass(frozen=True)
class _BM25Weights:
    """Every (document, term) BM25 weight of a corpus, as coordinate lists."""

    vocabulary: dict[str, int]  # term -> term id
    rows: np.ndarray  # document of each entry
    columns: np.ndarray  # term id of each entry
    values: np.ndarray  # idf(term) * saturated term frequency
    idf: np.ndarray  # per term id, after the epsilon floor
    avgdl: float

    @classmethod
    def compute(cls, token_lists: Sequence[Sequence[str]], params: BM25Params) -> _BM25Weights:
        if not token_lists:
            raise InvalidInput("cannot build a BM25 index over an empty corpus")
        vocabulary: dict[str, int] = {}
        rows: list[int] = []
        columns: list[int] = []
        term_freqs: list[int] = []
        for row, tokens in enumerate(token_lists):
            for term, count in Counter(tokens).items():
                rows.append(row)
                columns.append(vocabulary.setdefault(term, len(vocabulary)))
                term_freqs.append(count)
        doc_len = np.array([len(tokens) for tokens in token_lists], dtype=np.int64)
        avgdl = int(doc_len.sum()) / len(token_lists)
        row_array = np.array(rows, dtype=np.int64)
        column_array = np.array(columns, dtype=np.int64)
        doc_freq = np.bincount(column_array, minlength=len(vocabulary))
        idf = _okapi_idf(doc_freq, len(token_lists), params)
        tf = np.array(term_freqs, dtype=np.float64)
        saturation = tf * (params.k1 + 1) / (
            tf + params.k1 * (1 - params.b + params.b * doc_len[row_array] / avgdl)
        )
        return cls(vocabulary, row_array, column_array, idf[column_array] * saturation, idf, avgdl)


def rank_by_bm25(query: str, token_lists: Sequence[Sequence[str]], params: BM25Params = BM25Params()) -> list[int]:
    """Positions of a handful of texts (a summary's sentences) by BM25 score against the query,
    best first, ties in text order.

    The same weights and the same sums, in the same order, as `BM25Index.search` over the same
    texts (so the same floating-point scores and ranking), in plain Python and for the query's
    terms only: the idf of every term (its epsilon floor is a mean over all of them) comes from
    `_okapi_idf` over the vocabulary in first-appearance order, as `_BM25Weights.compute` orders
    it, and each (text, query term) weight is the same operations in the same order on floats."""
    if not token_lists:
        raise InvalidInput("cannot build a BM25 index over an empty corpus")
    term_counts = [Counter(tokens) for tokens in token_lists]
    doc_freq = Counter(chain.from_iterable(term_counts))  # terms in first-appearance order
    term_ids = {term: term_id for term_id, term in enumerate(doc_freq)}
    query_counts = Counter(term_ids[token] for token in tokenize(query) if token in term_ids)
    scores = [0.0] * len(token_lists)
    if not query_counts:
        return list(range(len(scores)))
    idf = _okapi_idf(np.fromiter(doc_freq.values(), dtype=np.int64, count=len(doc_freq)), len(token_lists),
                     params).tolist()
    doc_len = [len(tokens) for tokens in token_lists]
    avgdl = sum(doc_len) / len(token_lists)
    k1, b = params.k1, params.b
    vocabulary = list(doc_freq)
    for term_id in sorted(query_counts):  # term order, as the sparse product adds columns
        term, count = vocabulary[term_id], float(query_counts[term_id])
        for row, counts in enumerate(term_counts):
            tf = counts.get(term)
            if tf:
                value = idf[term_id] * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * doc_len[row] / avgdl)))
                scores[row] += value * count
    return sorted(range(len(scores)), key=lambda position: (-scores[position], position))


def _okapi_idf(doc_freq: np.ndarray, n_docs: int, params: BM25Params) -> np.ndarray:
    """rank_bm25's idf: log(N - n + 0.5) - log(n + 0.5), negatives set to epsilon * mean idf."""
    idf = np.log(n_docs - doc_freq + 0.5) - np.log(doc_freq + 0.5)
    if idf.size == 0:
        return idf
    floor = params.epsilon * (idf.sum() / idf.size)
    return np.where(idf < 0, floor, idf)


def top_k(scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The k best (index, score) pairs, best first; equal scores are ordered by index."""
    return [(int(index), float(scores[index])) for index in _best_positions(scores, k)]


def _best_positions(
    values: np.ndarray, k: int, tie_labels: np.ndarray | None = None
) -> np.ndarray:
    """Positions of the k largest values, best first; ties go to the smaller label (or position)."""
    k = min(k, values.size)
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    kth_best = values[np.argpartition(-values, k - 1)[:k]].min()
    candidates = np.flatnonzero(values >= kth_best)
    labels = candidates if tie_labels is None else tie_labels[candidates]
    return candidates[np.lexsort((labels, -values[candidates]))[:k]]


def corpus_key(documents: Sequence[Document], params: BM25Params = BM25Params()) -> str:
    """Hash of everything an index depends on: doc ids, parameters, stopwords, file format."""
    payload = {
        "format": _INDEX_FORMAT,
        "params": asdict(params),
        "stopwords": sorted(STOPWORDS),
        "doc_ids": [document.doc_id for document in documents],
    }
    return hashlib.sha256(json.dumps(payload).encode("utf-8")).hexdigest()[:20]


def load_or_build(
    documents: Sequence[Document], cache_dir: str | Path, params: BM25Params = BM25Params()
) -> BM25Index:
    """The cached index of this exact corpus if there is one, else build it and cache it."""
    path = Path(cache_dir) / f"bm25-{corpus_key(documents, params)}.npz"
    if path.exists():
        try:
            return BM25Index.load(path)
        except (OSError, ValueError, KeyError) as error:
            logger.warning("unreadable BM25 cache %s (%s); rebuilding", path, error)
    logger.info("building BM25 index over %d documents", len(documents))
    index = BM25Index.build(documents, params)
    index.save(path)
    logger.info("cached BM25 index at %s", path)
    return index


class Retriever:
    """A corpus and its BM25 index: query in, top-k documents with scores out.

    Every retriever (this one, and the configured kinds of `forge_core.evidence.retrievers`) has
    `documents` (its corpus, empty for a remote service), `settings` (the evidence Summary and
    Raw take) and `retrieve(query, k)`."""

    settings: SupportSettings = DEFAULT_SUPPORT

    def __init__(self, documents: Sequence[Document], index: BM25Index) -> None:
        """Pair documents with the index built over them (same order)."""
        if index.doc_ids != tuple(document.doc_id for document in documents):
            raise ValueError("the index was built over a different corpus")
        self.documents = tuple(documents)
        self.index = index

    @classmethod
    def from_documents(
        cls, documents: Sequence[Document], cache_dir: str | Path | None = None
    ) -> Retriever:
        """Build the index (or reuse the cached one when `cache_dir` is given)."""
        if cache_dir is None:
            return cls(documents, BM25Index.build(documents))
        return cls(documents, load_or_build(documents, cache_dir))

    def retrieve(self, query: str, k: int = 5) -> list[ScoredDocument]:
        """The k best documents for the query, best first."""
        hits = self.index.search(query, k)
        return [ScoredDocument(self.documents[index], score) for index, score in hits]
