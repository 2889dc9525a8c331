"""Support forms: Direct, Raw (3 passages x 200 words) and Summary (<= 140 extracted words)."""

from __future__ import annotations

import pytest

from forge_core.config import benchmarks_dir
from forge_core.data.importers import BENCHMARK_FILES, read_benchmark
from forge_core.evidence.retrieval import Retriever
from forge_core.evidence.support import (
    RAW_WORDS_PER_PASSAGE,
    RETRIEVE_TOP_K,
    SUMMARY_WORD_BUDGET,
    SUPPORT_TOP_K,
    direct_support,
    raw_support,
    split_sentences,
    summary_support,
)
from forge_core.records import Document

from support.resources import require_or_skip


def doc(title: str, text: str) -> Document:
    return Document("test", title, text)


def filler(prefix: str, n_words: int) -> str:
    """A capitalized sentence of n distinct non-stopword words ending with a period."""
    words = [f"{prefix}{index}" for index in range(n_words)]
    return " ".join([words[0].capitalize(), *words[1:]]) + "."


def test_constants_match_the_paper() -> None:
    assert (SUPPORT_TOP_K, RAW_WORDS_PER_PASSAGE, SUMMARY_WORD_BUDGET, RETRIEVE_TOP_K) == (
        3,
        200,
        140,
        5,
    )


def test_direct_support_is_empty() -> None:
    assert direct_support() == ""


def test_raw_support_keeps_three_titled_passages_of_200_words() -> None:
    passages = [doc(f"Title {index}", filler(f"p{index}w", 250)) for index in range(4)]
    raw = raw_support(passages)
    blocks = raw.split("\n\n")
    assert len(blocks) == 3
    for rank, block in enumerate(blocks, start=1):
        header, body = block.split("\n")
        assert header == f"[{rank}] Title {rank - 1}"
        assert body.split() == passages[rank - 1].text.split()[:200]
    assert "Title 3" not in raw


def test_raw_support_keeps_short_passages_whole() -> None:
    raw = raw_support([doc("Paris", "Paris is the capital\nof France.")])
    assert raw == "[1] Paris\nParis is the capital of France."
    assert raw_support([]) == ""


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        (
            "Thomas E. Draper was traded to the St. Louis Blues. He left the U.S. in 1991!",
            ["Thomas E. Draper was traded to the St. Louis Blues.", "He left the U.S. in 1991!"],
        ),
        (
            'Is it "Sponge-Cano!" or not? "Yes." 2012 was a year.',
            ['Is it "Sponge-Cano!" or not?', '"Yes."', "2012 was a year."],
        ),
        ("Born c. 1900 in Lyon (Dr. Paul's home).", ["Born c. 1900 in Lyon (Dr. Paul's home)."]),
        ("No final period", ["No final period"]),
        ("   ", []),
    ],
)
def test_split_sentences(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


def test_summary_puts_the_matching_sentence_first() -> None:
    target = "The zebra herd crossed the Mara river in July."
    passages = [
        doc("Savanna", f"{filler('grass', 12)} {filler('tree', 9)}"),
        doc("Herds", f"{filler('cloud', 10)} {target} {filler('rock', 8)}"),
    ]
    summary = summary_support("When did the zebra herd cross the river?", passages)
    assert summary.startswith(target)
    assert set(split_sentences(summary)) == set(split_sentences(passages[0].text)) | set(
        split_sentences(passages[1].text)
    )


def test_summary_skips_an_overflowing_sentence_and_keeps_later_shorter_ones() -> None:
    best = "Alpha beta " + " ".join(f"best{index}" for index in range(98)) + "."  # 100 words
    too_long = filler("long", 60)
    short = filler("short", 30)
    summary = summary_support("alpha beta", [doc("T", f"{best} {too_long} {short}")])
    assert split_sentences(summary) == [best, short]
    assert len(summary.split()) == 130


def test_summary_truncates_an_oversized_best_sentence() -> None:
    long_sentence = "Quokka " + " ".join(f"word{index}" for index in range(299)) + "."
    summary = summary_support("quokka", [doc("Q", f"{long_sentence} {filler('other', 20)}")])
    assert summary.split() == long_sentence.split()[:SUMMARY_WORD_BUDGET]


def test_summary_drops_duplicate_sentences() -> None:
    sentence = "The Eiffel Tower is in Paris."
    passages = [
        doc("A", f"{sentence} {filler('a', 5)}"),
        doc("B", f"the  eiffel tower is in PARIS. {filler('b', 5)}"),
        doc("C", sentence),
    ]
    found = split_sentences(summary_support("Where is the Eiffel Tower?", passages))
    normalized = [" ".join(item.lower().split()) for item in found]
    assert len(normalized) == len(set(normalized)) == 3


def test_summary_uses_only_the_top_three_passages() -> None:
    passages = [doc(f"P{index}", filler(f"p{index}w", 5)) for index in range(3)]
    passages.append(doc("Fourth", "The okapi lives in the Congo."))
    assert "okapi" not in summary_support("Where does the okapi live?", passages)


def test_summary_edge_cases() -> None:
    assert summary_support("anything", []) == ""
    assert summary_support("anything", [doc("Empty", "   ")]) == ""
    assert summary_support("zzz", [doc("One", "Just one sentence.")]) == "Just one sentence."


@pytest.fixture(scope="module")
def hotpotqa_cases() -> list[tuple[str, list[Document]]]:
    """The first 150 HotpotQA questions with their BM25 top-3 passages from the full corpus."""
    path = benchmarks_dir() / BENCHMARK_FILES["hotpotqa"].relative_path
    if not path.exists():
        require_or_skip(f"HotpotQA benchmark file not found at {path} (set FORGE_BENCHMARKS_DIR)")
    hotpotqa = read_benchmark("hotpotqa", benchmarks_dir())
    retriever = Retriever.from_documents(hotpotqa.documents)
    cases = []
    for example in hotpotqa.examples[:150]:
        hits = retriever.retrieve(example.question, k=RETRIEVE_TOP_K)
        cases.append((example.question, [hit.document for hit in hits[:SUPPORT_TOP_K]]))
    return cases


def test_summary_on_real_passages_is_bounded_unique_nonempty_deterministic(hotpotqa_cases) -> None:
    for question, passages in hotpotqa_cases:
        summary = summary_support(question, passages)
        assert 0 < len(summary.split()) <= SUMMARY_WORD_BUDGET
        assert summary == summary_support(question, passages)
        found = [" ".join(item.lower().split()) for item in split_sentences(summary)]
        assert len(found) == len(set(found))
        for block in raw_support(passages).split("\n\n"):
            assert len(block.split("\n", 1)[1].split()) <= RAW_WORDS_PER_PASSAGE


def test_evidence_builds_each_support_form_once(monkeypatch) -> None:
    # A query's summary:no_think and summary:cot calls share one summary (built once per query).
    from forge_core.evidence import answering
    from forge_core.evidence.retrieval import ScoredDocument

    built = []
    monkeypatch.setattr(answering, "summary_support",
                        lambda question, passages, settings: built.append(question) or "s")
    evidence = answering.Evidence("Where is the orchard?", (ScoredDocument(doc("Orchard", "An orchard."), 1.0),))
    assert [evidence.support_text("summary") for _ in range(3)] == ["s", "s", "s"]
    assert built == ["Where is the orchard?"]
    assert evidence.support_text("raw") == "[1] Orchard\nAn orchard."
    assert evidence.support_text("direct") == ""
