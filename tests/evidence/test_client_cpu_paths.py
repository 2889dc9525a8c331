"""The cheaper per-call paths of Stage 0's client (#51) give exactly what the plain ones gave: the
Summary's sentence ranking, the tokenizer, BM25's query terms and SQuAD scoring (exact equality)."""

from __future__ import annotations

import random
import re
import string
from collections import Counter

import numpy as np

from forge_core.evidence.retrieval import STOPWORDS, BM25Index, rank_by_bm25, tokenize
from forge_core.evidence.scoring import counts_f1, exact_match, token_counts, token_f1

WORDS = ["lion", "zebra", "tiger", "fruit", "tree", "river", "stone", "common", "king", "war"]


def _random_sentences(rng: random.Random) -> list[list[str]]:
    """A handful of short token lists over a small vocabulary: repeated terms, terms in more than
    half of the texts (negative raw idf), empty texts and many equal scores."""
    return [[rng.choice(WORDS) for _ in range(rng.randint(0, 6))] for _ in range(rng.randint(1, 12))]


def test_rank_by_bm25_equals_the_index_search_on_random_sentences() -> None:
    rng = random.Random(51)
    for _ in range(400):
        token_lists = _random_sentences(rng)
        index = BM25Index.from_tokens(token_lists, [str(position) for position in range(len(token_lists))])
        query = " ".join(rng.choice(WORDS + ["unknown"]) for _ in range(rng.randint(0, 5)))
        scores = index.scores(query)
        expected = sorted(range(len(token_lists)), key=lambda position: (-scores[position], position))
        assert rank_by_bm25(query, token_lists) == expected, (query, token_lists)


def _split_tokenize(text: str) -> list[str]:
    """The tokenizer as first written: non-alphanumeric runs to spaces, split, drop stopwords."""
    return [word for word in re.sub(r"[\W_]+", " ", text.lower()).split() if word not in STOPWORDS]


def test_tokenize_equals_substitute_and_split() -> None:
    every_character = "".join(chr(code) for code in range(0x110000) if not 0xD800 <= code < 0xE000)
    texts = [every_character, "İstanbul's ΣΟΦΟΣ snake_case x²+y³ 1,000.5 — don't\u00a0stop\u2028here",
             "The U.S. Army's 3rd Division", "", "   ", "___", "a_b__c"]
    for text in texts:
        assert tokenize(text) == _split_tokenize(text)


def test_query_terms_are_sorted_unique_ids_with_counts() -> None:
    index = BM25Index.from_tokens([["lion", "zebra"], ["tiger"], ["zebra", "river"]], ["a", "b", "c"])
    for query in ["zebra lion zebra river river river", "nothing here", "", "tiger"]:
        ids = [index.vocabulary[token] for token in tokenize(query) if token in index.vocabulary]
        expected_ids, expected_counts = np.unique(np.array(ids, dtype=np.int64), return_counts=True)
        term_ids, counts = index.query_vector(query)
        assert term_ids.dtype == np.int64 and counts.dtype == np.float64
        assert term_ids.tolist() == expected_ids.tolist()
        assert counts.tolist() == expected_counts.astype(np.float64).tolist()


# The official SQuAD v1.1 evaluation script's functions, verbatim in substance.
def _squad_normalize(s: str) -> str:
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def _squad_f1(prediction: str, ground_truth: str) -> float:
    prediction_tokens = _squad_normalize(prediction).split()
    ground_truth_tokens = _squad_normalize(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


PREDICTIONS = ["Paris", "the city of Paris, France", "", "The", "New York New York", "U.S.A.", "Ünïcode—dash",
               "a b c d e f g", "paris paris paris", "“Quoted” answer!", "1,000", "an apple a day", "new york"]
GOLDS = [("Paris",), ("Paris, France", "paris"), ("the",), ("New York",), ("USA", "U.S.A."), ("Ünïcode dash",),
         ("b c d", "a"), ("1000",), ("apple day", "An Apple"), ("New York New York", "York York")]


def test_squad_scores_equal_the_official_script_and_repeat_exactly() -> None:
    for _ in range(2):  # the second round reads the cached golds
        for prediction in PREDICTIONS:
            for golds in GOLDS:
                expected_f1 = max(_squad_f1(prediction, gold) for gold in golds)
                expected_em = float(any(_squad_normalize(prediction) == _squad_normalize(gold) for gold in golds))
                assert token_f1(prediction, golds) == expected_f1, (prediction, golds)
                assert exact_match(prediction, golds) == expected_em, (prediction, golds)


def test_counts_f1_equals_the_counter_intersection() -> None:
    for prediction in PREDICTIONS:
        for golds in GOLDS:
            for gold in golds:
                assert counts_f1(token_counts(prediction), token_counts(gold)) == _squad_f1(prediction, gold)
