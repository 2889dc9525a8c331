"""Exact-value tests for SQuAD v1.1 token F1 / EM and FEVER label extraction."""

from __future__ import annotations

import pytest

from forge_core.evidence.scoring import exact_match, extract_fever_label, normalize_answer, score_answer, token_f1


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("The Theater", "theater"),  # article removed, "the" inside "theater" kept
        ("An apple a day", "apple day"),
        ("Another anthem", "another anthem"),  # "an" inside words kept
        ("Hello, World!", "hello world"),
        ("U.S.A.", "usa"),
        ("rock 'n' roll", "rock n roll"),
        ("the-cat", "thecat"),  # punctuation goes before articles, so "the" is glued on
        ("  multiple   spaces\tand\nnewlines ", "multiple spaces and newlines"),
        ("Café MÜLLER", "café müller"),  # non-ASCII letters lowercased and kept
        # as v1.1: only ASCII punctuation goes, curly quotes and dashes stay
        ("\u201cquoted\u201d \u2014 dash", "\u201cquoted\u201d \u2014 dash"),
        ("the a an", ""),
        ("A.", ""),
        ("", ""),
        ("1,000 km", "1000 km"),
    ],
)
def test_normalize_answer(raw: str, normalized: str) -> None:
    assert normalize_answer(raw) == normalized


def test_token_f1_partial_overlap_is_two_thirds() -> None:
    # prediction tokens [cat, sat], gold [cat, sat, on, mat]: precision 2/2, recall 2/4
    assert token_f1("the cat sat", ["cat sat on mat"]) == 2 / 3


def test_token_f1_counts_repeated_tokens_once_per_gold_occurrence() -> None:
    # common = min(3, 1) = 1: precision 1/3, recall 1/1, F1 = 0.5
    assert token_f1("cat cat cat", ["cat"]) == 0.5


def test_token_f1_identical_after_normalization_is_one() -> None:
    assert token_f1("The Eiffel Tower.", ["eiffel tower"]) == 1.0


def test_token_f1_no_common_token_is_zero() -> None:
    assert token_f1("London", ["Paris"]) == 0.0


def test_token_f1_takes_max_over_aliases() -> None:
    # "obama": P 1/2, R 1 -> 2/3; "president barack obama": P 1, R 2/3 -> 4/5
    assert token_f1("Barack Obama", ["Obama", "President Barack Obama"]) == pytest.approx(0.8)
    assert token_f1("Barack Obama", ["London", "Barack Obama"]) == 1.0


@pytest.mark.parametrize(
    ("prediction", "gold", "f1", "em"),
    [
        ("", "Paris", 0.0, 0.0),  # empty prediction
        ("Paris", "", 0.0, 0.0),  # empty gold
        ("", "", 0.0, 1.0),  # both empty: v1.1 F1 is 0 (no common token), EM is 1
        ("the", "a", 0.0, 1.0),  # both normalize to ""
        ("!!!", "Paris", 0.0, 0.0),
    ],
)
def test_empty_strings_follow_squad_v11(prediction: str, gold: str, f1: float, em: float) -> None:
    assert token_f1(prediction, [gold]) == f1
    assert exact_match(prediction, [gold]) == em


def test_exact_match_values() -> None:
    assert exact_match("The Eiffel Tower.", ["eiffel tower"]) == 1.0
    assert exact_match("Eiffel", ["eiffel tower"]) == 0.0
    assert exact_match("NYC", ["New York City", "nyc"]) == 1.0
    assert exact_match("theater", ["the ater"]) == 0.0


def test_golds_must_be_a_non_empty_sequence() -> None:
    with pytest.raises(ValueError):
        token_f1("Paris", [])
    with pytest.raises(ValueError):
        exact_match("Paris", ())
    with pytest.raises(TypeError):
        token_f1("Paris", "Paris")


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("Supported.", "SUPPORTS"),
        ("SUPPORTS", "SUPPORTS"),
        ("Answer: SUPPORTS", "SUPPORTS"),
        ("**SUPPORTS**", "SUPPORTS"),
        ("The evidence supports the claim.", "SUPPORTS"),
        ("True", "SUPPORTS"),
        ("It is true.", "SUPPORTS"),
        ("correct", "SUPPORTS"),
        ("The claim is accurate.", "SUPPORTS"),
        ("The claim is not refuted.", "SUPPORTS"),
        ("That is not false", "SUPPORTS"),
        ("The claim is refuted", "REFUTES"),
        ("refutes", "REFUTES"),
        ("REFUTES.", "REFUTES"),
        ("False.", "REFUTES"),
        ("Incorrect", "REFUTES"),
        ("The evidence contradicts the claim.", "REFUTES"),
        ("The claim is wrong.", "REFUTES"),
        ("Not supported", "REFUTES"),
        ("The claim is not supported by the evidence", "REFUTES"),
        ("The claim is not fully supported.", "REFUTES"),
        ("The evidence does not support the claim.", "REFUTES"),
        ("The evidence doesn\u2019t support this claim.", "REFUTES"),  # curly apostrophe
        ("This is not true.", "REFUTES"),
        ("The claim isn't correct.", "REFUTES"),
        ("The claim is unsupported.", "REFUTES"),
        ("The correct label is REFUTES.", "REFUTES"),  # "correct label" is no verdict
        ("The supporting evidence shows the claim is false.", "REFUTES"),
        ("not enough information", "NOT ENOUGH INFO"),
        ("NOT ENOUGH INFO", "NOT ENOUGH INFO"),
        ("NOT_ENOUGH_INFO", "NOT ENOUGH INFO"),
        ("Not-enough-info", "NOT ENOUGH INFO"),
        ("insufficient information", "NOT ENOUGH INFO"),
        ("The evidence is insufficient.", "NOT ENOUGH INFO"),
        ("It cannot be determined from the evidence.", "NOT ENOUGH INFO"),
        ("Unverifiable", "NOT ENOUGH INFO"),
        ("I can't verify this claim.", "NOT ENOUGH INFO"),
        ("There is no evidence to support or refute the claim.", "NOT ENOUGH INFO"),
        ("The claim is neither supported nor refuted.", "NOT ENOUGH INFO"),
        ("There is not enough evidence to refute it.", "NOT ENOUGH INFO"),
        ("NEI", "NOT ENOUGH INFO"),
    ],
)
def test_extract_fever_label(text: str, label: str) -> None:
    assert extract_fever_label(text) == label


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("Refuted. The claim is true in part, but the date is wrong.", "REFUTES"),
        ("SUPPORTS. Nothing refutes it.", "SUPPORTS"),
        ("True, though some sources call it false.", "SUPPORTS"),
        ("Not supported; the record shows otherwise, so the claim is false.", "REFUTES"),
    ],
)
def test_extract_fever_label_first_phrase_wins(text: str, label: str) -> None:
    assert extract_fever_label(text) == label


@pytest.mark.parametrize(
    "text",
    ["Paris", "", "   ", "I don't know", "Yes", "the theater is nice", "The supporting evidence"],
)
def test_extract_fever_label_none_when_no_label(text: str) -> None:
    assert extract_fever_label(text) is None


def test_score_answer_squad() -> None:
    assert score_answer("Paris", ["paris", "Paris, France"], is_fever=False) == (1.0, 1.0)
    assert score_answer("the cat sat", ["cat sat on mat"], is_fever=False) == (2 / 3, 0.0)
    assert score_answer("", ["Paris"], is_fever=False) == (0.0, 0.0)


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        ("The claim is not supported by the evidence", "REFUTES", (1.0, 1.0)),
        ("Supported.", "SUPPORTS", (1.0, 1.0)),
        ("Supported.", "REFUTES", (0.0, 0.0)),
        ("not enough information", "NOT ENOUGH INFO", (1.0, 1.0)),
        ("true", "supports", (1.0, 1.0)),  # gold label case is forgiven
        ("Paris", "SUPPORTS", (0.0, 0.0)),  # no label named scores 0
        ("", "NOT ENOUGH INFO", (0.0, 0.0)),
    ],
)
def test_score_answer_fever(prediction: str, gold: str, expected: tuple[float, float]) -> None:
    assert score_answer(prediction, [gold], is_fever=True) == expected


def test_score_answer_fever_rejects_unknown_gold() -> None:
    with pytest.raises(ValueError):
        score_answer("SUPPORTS", ["maybe"], is_fever=True)
