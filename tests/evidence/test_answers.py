"""Exact-value tests for final-answer extraction from CoT and direct host outputs."""

from __future__ import annotations

import pytest

from forge_core.evidence.answers import extract_final_answer, extract_plain_answer

COT_OUTPUT = """Let us think step by step.
1. The Eiffel Tower is in Paris.
2. Paris is the capital of France.
So the tower stands in the French capital.
Answer: Paris"""


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        (COT_OUTPUT, "Paris"),
        ("Step 1: find the director.\nStep 2: find his birth year.\nAnswer: 1946.", "1946"),
        ("First, X.\nFinal answer: Christopher Nolan", "Christopher Nolan"),
        ("Reasoning here.\n\n**Answer:** Barack Obama", "Barack Obama"),
        ("Reasoning here.\n\n**Answer**: Barack Obama", "Barack Obama"),
        ("Reasoning.\n**Final Answer:** **\"The Beatles\".**", "The Beatles"),
        ("The band formed in 1960 in Liverpool. The answer is The Beatles.", "The Beatles"),
        ("Thinking...\nThe final answer is: 42", "42"),
        ("answer: lowercase marker works", "lowercase marker works"),
        ("ANSWER: Upper", "Upper"),
        ("Answer:\nParis\nExplanation: it is the capital.", "Paris"),
        ("Answer: Paris\n\nExplanation: the tower is there.", "Paris"),
        ("The answer is Lyon, I think.\nWait, re-check.\nAnswer: Paris", "Paris"),  # last wins
        ("Answer: The answer is Paris", "Paris"),
        ("Answer: `SUPPORTS`", "SUPPORTS"),
        ("Answer: \u201cMoby-Dick\u201d", "Moby-Dick"),
        ("Answer: Washington, D.C.", "Washington, D.C"),  # trailing period always stripped
    ],
)
def test_extract_final_answer_with_marker(text: str, answer: str) -> None:
    assert extract_final_answer(text) == answer


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("Let us think step by step.\nThe tower is in Paris.\nParis\n\n", "Paris"),
        ("He was born in 1946.", "He was born in 1946"),
        ("Reasoning first.\n- London\n", "London"),
        # cut at the token cap before any marker: the last line is all there is
        (
            "Let us think step by step. The director of",
            "Let us think step by step. The director of",
        ),
        ("", ""),
        ("  \n \n", ""),
    ],
)
def test_extract_final_answer_falls_back_to_last_line(text: str, answer: str) -> None:
    assert extract_final_answer(text) == answer


def test_extract_final_answer_marker_with_nothing_after_is_empty() -> None:
    assert extract_final_answer("Reasoning about the claim.\nAnswer:") == ""
    assert extract_final_answer("Reasoning.\nAnswer:   \n\n") == ""


def test_extract_final_answer_needs_a_colon_after_answer() -> None:
    # "answer" as a plain word is no marker: the last line is the answer
    assert extract_final_answer("We need to answer carefully.\nParis") == "Paris"


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("Paris", "Paris"),
        ("Answer: Paris", "Paris"),
        ("  **Answer:** Paris.", "Paris"),
        ("Final answer: 1946", "1946"),
        ("The answer is Paris.", "Paris"),
        ("\n\nParis\nIt is the capital of France.", "Paris"),
        ("Answer:\nParis\nMore text.", "Paris"),
        ("\"Barack Obama\"", "Barack Obama"),
        ("Paris. Answer: London", "Paris. Answer: London"),  # only a leading marker is removed
        ("", ""),
    ],
)
def test_extract_plain_answer(text: str, answer: str) -> None:
    assert extract_plain_answer(text) == answer
