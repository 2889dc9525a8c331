"""BM25 retrieval: tokenizer, exact scores against rank_bm25, top-k order, persistence, caching."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from forge_core.config import benchmarks_dir
from forge_core.data.importers import BENCHMARK_FILES, read_benchmark
from forge_core.errors import InvalidInput
from forge_core.evidence import retrieval
from forge_core.evidence.answering import corpus_name, load_retriever, retrieve_evidence
from forge_core.evidence.retrieval import (
    STOPWORDS,
    BM25Index,
    BM25Params,
    Retriever,
    document_tokens,
    load_or_build,
    rank_by_bm25,
    tokenize,
    top_k,
)
from forge_core.records import Document
from forge_core.routing.features import features_for_question
from forge_core.store import Store

from support.resources import require_or_skip


def doc(title: str, text: str) -> Document:
    return Document("test", title, text)


# "common" is in 5 of 6 documents (negative raw idf, floored to epsilon * mean idf).
SMALL_CORPUS = [
    doc("Apple", "The apple is a common fruit. Apple trees are common in orchards."),
    doc("Banana", "A banana is a common, elongated fruit; bananas grow in clusters."),
    doc("Cherry", "Cherry trees flower in spring, a common sight."),
    doc("Orchard", "An orchard is a common planting of fruit trees: apple, cherry, pear."),
    doc("Pear", "Pears are common too."),
    doc("Granite", "Granite is an igneous rock."),
]


def reference_scores(documents: list[Document], queries: list[str]) -> np.ndarray:
    """rank_bm25.BM25Okapi scores on the same tokens, one row per query."""
    reference = BM25Okapi([document_tokens(document) for document in documents])
    return np.array([reference.get_scores(tokenize(query)) for query in queries])


def our_scores(index: BM25Index, queries: list[str]) -> np.ndarray:
    return np.array([index.scores(query) for query in queries])


def test_stopword_list_has_57_lowercase_words() -> None:
    assert len(STOPWORDS) == 57
    assert all(word == word.lower() and word.isalpha() for word in STOPWORDS)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Hello, World! It's 2024.", ["hello", "world", "2024"]),
        ("Who was the first U.S. president?", ["first", "u", "president"]),
        ("Café-Straße über_alles", ["café", "straße", "über", "alles"]),
        ("東京 2020 (Olympics)", ["東京", "2020", "olympics"]),
        ("  ...  ", []),
        ("", []),
    ],
)
def test_tokenize_examples(text: str, tokens: list[str]) -> None:
    assert tokenize(text) == tokens


def test_document_tokens_are_title_then_text() -> None:
    assert document_tokens(doc("Marie Curie", "Physicist.")) == ["marie", "curie", "physicist"]


def test_score_matches_hand_computation() -> None:
    documents = [doc("", "red fish"), doc("", "blue fish fish"), doc("", "green")]
    index = BM25Index.build(documents)
    # "fish": n = 2 of N = 3, idf = log(1.5) - log(2.5) < 0; mean idf over fish, red, blue, green:
    idf_once = math.log(2.5) - math.log(1.5)
    floor = 0.25 * (3 * idf_once + math.log(1.5) - math.log(2.5)) / 4
    avgdl = 6 / 3

    def term(idf: float, tf: int, dl: int) -> float:
        return idf * tf * 2.5 / (tf + 1.5 * (1 - 0.75 + 0.75 * dl / avgdl))

    expected = [term(floor, 1, 2), term(floor, 2, 3) + term(idf_once, 1, 3), 0.0]
    assert np.allclose(index.scores("fish blue"), expected, rtol=0, atol=1e-12)


def test_scores_equal_rank_bm25_on_small_corpus() -> None:
    index = BM25Index.build(SMALL_CORPUS)
    reference = BM25Okapi([document_tokens(document) for document in SMALL_CORPUS])
    assert math.log(6 - 5 + 0.5) - math.log(5 + 0.5) < 0
    assert reference.idf["common"] == pytest.approx(0.25 * reference.average_idf)
    for term, term_id in index.vocabulary.items():
        assert index.idf[term_id] == pytest.approx(reference.idf[term], rel=0, abs=1e-12)
    queries = [
        "common fruit",
        "apple apple apple trees",  # repeated tokens count each time
        "common common common",
        "cherry orchard pear granite",
        "unknownword zzz",  # out of vocabulary: all zero
        "the of and",  # stopwords only: all zero
    ]
    ours = our_scores(index, queries)
    assert np.allclose(ours, reference_scores(SMALL_CORPUS, queries), rtol=0, atol=1e-9)
    assert not ours[4].any() and not ours[5].any()


def test_repeated_query_token_counts_each_occurrence() -> None:
    index = BM25Index.build(SMALL_CORPUS)
    assert np.allclose(index.scores("apple apple"), 2 * index.scores("apple"), rtol=0, atol=1e-12)


@pytest.fixture(scope="module")
def hotpotqa_sample() -> tuple[list[Document], list[str]]:
    """300 real HotpotQA context paragraphs, 160 of them mentioning "american", and 100 questions.

    No content word is in more than half of an ordinary sample, so the sample is drawn to give
    "american" a negative raw idf (floored to epsilon * mean idf as rank_bm25 does).
    """
    path = benchmarks_dir() / BENCHMARK_FILES["hotpotqa"].relative_path
    if not path.exists():
        require_or_skip(f"HotpotQA benchmark file not found at {path} (set FORGE_BENCHMARKS_DIR)")
    hotpotqa = read_benchmark("hotpotqa", benchmarks_dir())
    wanted = {True: 160, False: 140}
    sample = []
    for document in hotpotqa.documents:
        mentions = "american" in document_tokens(document)
        if wanted[mentions] > 0:
            wanted[mentions] -= 1
            sample.append(document)
    return sample, [example.question for example in hotpotqa.examples[:100]]


def test_scores_equal_rank_bm25_on_real_hotpotqa(hotpotqa_sample) -> None:
    documents, questions = hotpotqa_sample
    assert len(documents) == 300
    index = BM25Index.build(documents)
    reference = BM25Okapi([document_tokens(document) for document in documents])
    assert reference.idf["american"] == pytest.approx(0.25 * reference.average_idf)
    queries = questions + ["American film director American", "born born in 1950"]
    assert np.allclose(
        our_scores(index, queries), reference_scores(documents, queries), rtol=0, atol=1e-9
    )


def test_search_returns_best_first_with_ties_in_corpus_order() -> None:
    documents = [
        doc("", "zebra"),
        doc("", "lion lion"),
        doc("", "zebra"),
        doc("", "lion"),
        doc("", "zebra"),
        doc("", "tiger"),
        doc("", "tiger"),
        doc("", "tiger"),
    ]
    index = BM25Index.build(documents)
    hits = index.search("zebra", k=3)
    assert [position for position, _ in hits] == [0, 2, 4]
    assert hits[0][1] == hits[1][1] == hits[2][1] > 0
    assert [position for position, _ in index.search("zebra", k=2)] == [0, 2]
    scores = [score for _, score in index.search("lion zebra", k=5)]
    assert scores == sorted(scores, reverse=True)
    assert [position for position, _ in index.search("nothing", k=3)] == [0, 1, 2]
    assert len(index.search("zebra", k=50)) == len(documents)
    assert index.search("zebra", k=0) == []


def test_top_k_handles_negative_scores_and_ties() -> None:
    scores = np.array([-1.0, 0.5, 0.5, -0.2, 0.5])
    assert top_k(scores, 4) == [(1, 0.5), (2, 0.5), (4, 0.5), (3, -0.2)]


def test_search_many_equals_search() -> None:
    # In a two-document corpus every shared term has a negative idf floor: scores go negative.
    tiny = BM25Index.build([doc("", "alpha beta"), doc("", "alpha gamma")])
    small = BM25Index.build(SMALL_CORPUS)
    queries = ["common fruit", "apple apple trees", "zzz", "", "granite", "cherry common"]
    for index in (tiny, small):
        for k in (0, 1, 3, 10):
            assert index.search_many(queries, k) == [index.search(query, k) for query in queries]
    assert tiny.search("alpha", 2)[0][1] < 0
    assert small.search_many([], 3) == []


def test_scores_are_bit_identical_to_the_sparse_product(hotpotqa_sample) -> None:
    # `scores` adds the query's columns itself; the evidence stored by earlier runs was ranked on
    # scipy's product, so the two must agree to the last bit, not just closely.
    documents, questions = hotpotqa_sample
    for index in (BM25Index.build(documents), BM25Index.build(SMALL_CORPUS)):
        for query in questions + ["common common fruit", "zzz", ""]:
            term_ids, counts = index.query_vector(query)
            sparse_product = np.asarray(index.weights[:, term_ids] @ counts, dtype=np.float64)
            assert np.array_equal(index.scores(query), sparse_product)


def test_rank_by_bm25_ranks_as_search_does() -> None:
    texts = ["zebra", "lion lion", "zebra", "lion", "tiger zebra", "tiger", "common fruit trees"]
    token_lists = [tokenize(text) for text in texts]
    index = BM25Index.from_tokens(token_lists, [str(position) for position in range(len(texts))])
    for query in ["zebra", "lion zebra", "tiger tiger lion", "nothing", "", "fruit trees zebra"]:
        expected = [position for position, _ in index.search(query, k=len(texts))]
        assert rank_by_bm25(query, token_lists) == expected
    assert rank_by_bm25("zebra", token_lists)[:3] == [0, 2, 4]  # ties in text order, then the longer one


def test_save_load_roundtrip(tmp_path: Path) -> None:
    index = BM25Index.build(SMALL_CORPUS, BM25Params(k1=1.2, b=0.5, epsilon=0.1))
    path = tmp_path / "nested" / "index.npz"
    index.save(path)
    loaded = BM25Index.load(path)
    assert sorted(path.parent.iterdir()) == [path]  # no temporary file left behind
    assert loaded.params == index.params
    assert loaded.doc_ids == index.doc_ids
    assert loaded.vocabulary == index.vocabulary
    assert loaded.avgdl == index.avgdl
    assert np.array_equal(loaded.idf, index.idf)
    for query in ["common fruit", "apple apple", "zzz"]:
        assert np.array_equal(loaded.scores(query), index.scores(query))


def test_load_or_build_builds_once_per_corpus(tmp_path: Path, monkeypatch) -> None:
    first = load_or_build(SMALL_CORPUS, tmp_path)
    assert len(list(tmp_path.glob("bm25-*.npz"))) == 1

    def refuse(*_args, **_kwargs):
        raise AssertionError("the cached index should have been loaded")

    monkeypatch.setattr(BM25Index, "build", refuse)
    again = load_or_build(SMALL_CORPUS, tmp_path)
    assert again.doc_ids == first.doc_ids
    assert np.array_equal(again.scores("common apple"), first.scores("common apple"))
    monkeypatch.undo()
    load_or_build(SMALL_CORPUS[:3], tmp_path)
    assert len(list(tmp_path.glob("bm25-*.npz"))) == 2


def test_load_or_build_rebuilds_an_unreadable_cache(tmp_path: Path, caplog) -> None:
    load_or_build(SMALL_CORPUS, tmp_path)
    (cached,) = tmp_path.glob("bm25-*.npz")
    cached.write_bytes(b"not a zip file")
    index = load_or_build(SMALL_CORPUS, tmp_path)
    assert index.doc_ids == tuple(document.doc_id for document in SMALL_CORPUS)
    assert "rebuilding" in caplog.text
    assert BM25Index.load(cached).doc_ids == index.doc_ids


def test_corpus_key_depends_on_documents_and_params() -> None:
    key = retrieval.corpus_key(SMALL_CORPUS)
    assert key == retrieval.corpus_key(list(SMALL_CORPUS))
    assert key != retrieval.corpus_key(SMALL_CORPUS[::-1])
    assert key != retrieval.corpus_key(SMALL_CORPUS, BM25Params(k1=1.2))


def test_retriever_returns_documents_with_scores(tmp_path: Path) -> None:
    retriever = Retriever.from_documents(SMALL_CORPUS, cache_dir=tmp_path)
    hits = retriever.retrieve("igneous granite", k=2)
    assert hits[0].document == SMALL_CORPUS[5]
    assert hits[0].score > hits[1].score
    assert len(Retriever.from_documents(SMALL_CORPUS).retrieve("fruit")) == 5
    with pytest.raises(ValueError, match="different corpus"):
        Retriever(SMALL_CORPUS[:2], retriever.index)


def test_empty_corpus_is_refused() -> None:
    with pytest.raises(ValueError, match="empty corpus"):
        BM25Index.build([])


def test_a_corpus_of_several_benchmarks_retrieves_from_their_union(imported_store: Store, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORGE_CACHE_DIR", str(tmp_path))
    union = load_retriever(imported_store, corpus_name(["2wikimultihopqa", "musique"]))
    parts = [imported_store.documents(name) for name in ("2wikimultihopqa", "musique")]
    assert len(union.documents) == sum(map(len, parts))
    for part in parts:  # each part's own first passage is found in the union by its own text
        best = union.retrieve(part[0].text, k=1)[0].document
        assert (best.benchmark, best.title) == (part[0].benchmark, part[0].title)
    question = parts[1][0].text  # a musique passage's text: its top passage is the union's second part
    features = features_for_question(question, union, retrieve_evidence(union, question), variant="lite")
    assert np.isfinite(features).all() and features[-1] > 0.5  # the cosine to its own passage
    with pytest.raises(InvalidInput, match="FEVER"):
        corpus_name(["hotpotqa", "fever"])
    assert corpus_name(["popqa", "popqa"]) == "popqa"
