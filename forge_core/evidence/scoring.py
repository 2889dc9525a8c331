"""Answer scoring: SQuAD v1.1 token F1 and exact match, and FEVER label matching.

Token F1 and EM follow the official SQuAD v1.1 evaluation script exactly, so numbers stay
comparable with published results:

- ``normalize_answer`` lowercases, removes ASCII punctuation (``string.punctuation``), removes
  the whole words "a", "an", "the" and collapses whitespace. Non-ASCII punctuation (curly
  quotes, dashes) is kept, as in the official script; non-ASCII letters are lowercased and kept.
- ``exact_match`` is 1.0 when the normalized prediction equals a normalized gold, else 0.0.
- ``token_f1`` is the harmonic mean of token precision and recall on normalized tokens, with
  zero common tokens giving 0.0. Empty inputs follow v1.1 (not v2.0): an empty prediction, an
  empty gold, or both empty score F1 0.0, because they share no token. EM of two strings that
  both normalize to "" is 1.0 (e.g. prediction "" against gold "the").
- Both take the maximum over the gold aliases; an empty alias list is a caller error.

FEVER examples are scored on their label. ``extract_fever_label`` reads the label a model
named in free text; the rule is documented on that function. ``score_answer`` dispatches.
Scoring is done on the final answer: for chain-of-thought outputs, extract it first with
``forge_core.evidence.answers.extract_final_answer``.
"""

from __future__ import annotations

import functools
import re
import string
from collections import Counter
from collections.abc import Sequence

from forge_core.records import FEVER_LABELS

SUPPORTS, REFUTES, NOT_ENOUGH_INFO = FEVER_LABELS

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_DROP_PUNCTUATION = str.maketrans("", "", string.punctuation)  # deletes ASCII punctuation

# Words that negate a following verdict, and the fillers allowed between them
# ("is not fully supported", "cannot be confirmed", "doesn't support").
_NEGATION = r"(?:\bnot|n't|\bnever|\bcannot|\bno\s+longer)\s+"
_FILLERS = (
    r"(?:(?:be|been|being|fully|entirely|completely|really|actually|directly|strictly|quite"
    r"|necessarily|exactly|totally)\s+){0,2}"
)
_SUPPORT = r"support(?:s|ed|ive)?\b"  # not "supporting": "supporting evidence" is no verdict
_REFUTE = r"(?:refut(?:e|es|ed|ing)|contradict(?:s|ed|ing)?|disprov(?:e|es|ed|en))\b"
_NOT_A_VERDICT = r"(?!\s+(?:answer|label|verdict|classification|option|choice|response)\b)"
_TRUE = r"(?:true|correct|accurate)\b" + _NOT_A_VERDICT  # not "the correct label is ..."
_FALSE = r"(?:false|incorrect|inaccurate|wrong|untrue|unsupported)\b" + _NOT_A_VERDICT
_INFO = r"(?:info|information|evidence|context|data|details)\b"
_VERIFY = r"(?:determined?|verified|verify|confirmed|confirm|decided?|established|assessed)\b"

# Label-bearing phrases in priority order. Earlier entries win when two phrases start at the
# same place; otherwise the phrase that starts first in the text wins. "Not enough info" style
# phrases come first, then negated verdicts, then plain verdicts.
_FEVER_PHRASES: tuple[tuple[str, str], ...] = (
    (NOT_ENOUGH_INFO, r"\bneither\s+" + _SUPPORT + r"\s+nor\s+" + _REFUTE),
    (NOT_ENOUGH_INFO, r"\bneither\s+" + _TRUE + r"\s+nor\s+" + _FALSE),
    (NOT_ENOUGH_INFO, r"\bnot\s+enough\b"),
    (NOT_ENOUGH_INFO, r"\b(?:insufficient|inconclusive)\b"),
    (NOT_ENOUGH_INFO, r"\b(?:lack|lacks|lacking)\s+(?:of\s+)?(?:\w+\s+)?" + _INFO),
    (NOT_ENOUGH_INFO, r"\bno\s+(?:\w+\s+)?" + _INFO),
    (NOT_ENOUGH_INFO, r"(?:\bcannot|\bcan\s+not|n't|\bunable\s+to|\bimpossible\s+to)\s+"
                      r"(?:be\s+)?" + _VERIFY),
    (NOT_ENOUGH_INFO, r"\bnot\s+(?:be\s+)?(?:verifiable|determinable|verified|determined)\b"),
    (NOT_ENOUGH_INFO, r"\b(?:unverifiable|unverified|undeterminable|undetermined)\b"),
    (NOT_ENOUGH_INFO, r"\bindeterminate\b"),
    (NOT_ENOUGH_INFO, r"\bnei\b"),
    (REFUTES, _NEGATION + _FILLERS + _SUPPORT),
    (SUPPORTS, _NEGATION + _FILLERS + _REFUTE),
    (REFUTES, _NEGATION + _FILLERS + _TRUE),
    (SUPPORTS, _NEGATION + _FILLERS + _FALSE),
    (REFUTES, r"\b" + _REFUTE),
    (SUPPORTS, r"\b" + _SUPPORT),
    (REFUTES, r"\b" + _FALSE),
    (SUPPORTS, r"\b" + _TRUE),
)
_FEVER_PATTERN = re.compile(
    "|".join(f"(?P<p{index}>{phrase})" for index, (_, phrase) in enumerate(_FEVER_PHRASES))
)
_FEVER_SEPARATORS = re.compile(r"[_\-]+")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


def normalize_answer(s: str) -> str:
    """Normalize an answer as the SQuAD v1.1 script does.

    Lowercase, drop ASCII punctuation, drop the words a/an/the, collapse whitespace.
    """
    text = s.lower().translate(_DROP_PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


@functools.lru_cache(maxsize=65536)
def _normalized_gold(gold: str) -> tuple[str, Counter[str]]:
    """A gold alias normalized and its tokens counted, once per alias: a query's arms (and probes)
    are all scored against the same golds. The Counter is shared: read it, never change it."""
    normalized = normalize_answer(gold)
    return normalized, Counter(normalized.split())


def _check_golds(golds: Sequence[str]) -> None:
    """Refuse a bare string (it would be read as one alias per character) and an empty list."""
    if isinstance(golds, str):
        raise TypeError("golds must be a sequence of gold strings, not a single string")
    if len(golds) == 0:
        raise ValueError("golds must hold at least one gold answer")


def token_counts(text: str) -> Counter[str]:
    """The tokens token F1 compares, counted: the SQuAD-normalized text split on whitespace."""
    return Counter(normalize_answer(text).split())


def counts_f1(prediction: Counter[str], gold: Counter[str]) -> float:
    """Token F1 of one prediction against one gold from their `token_counts` (SQuAD v1.1): the
    number `token_f1` gives for one gold, for callers that compare each text with many."""
    num_same = 0  # the total of `prediction & gold`, without building it
    for token, count in prediction.items():
        common = min(count, gold.get(token, 0))
        if common > 0:
            num_same += common
    if num_same == 0:
        return 0.0
    precision = num_same / prediction.total()
    recall = num_same / gold.total()
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    """1.0 if the normalized prediction equals any normalized gold alias, else 0.0."""
    _check_golds(golds)
    normalized = normalize_answer(prediction)
    return float(any(normalized == _normalized_gold(gold)[0] for gold in golds))


def token_f1(prediction: str, golds: Sequence[str]) -> float:
    """SQuAD v1.1 token F1 (a fraction in [0, 1]), maximized over gold aliases.

    No common token gives 0.0; that includes an empty prediction or gold, even both empty.
    """
    _check_golds(golds)
    prediction_counts = token_counts(prediction)
    return max(counts_f1(prediction_counts, _normalized_gold(gold)[1]) for gold in golds)


def extract_fever_label(text: str) -> str | None:
    """Read the FEVER label a model named in free text, or None when it named none.

    Matching ignores case, punctuation, markdown, underscores and hyphens
    ("NOT_ENOUGH_INFO"). The recognised wordings, by label:

    - NOT ENOUGH INFO: "not enough (information)", "insufficient (evidence)", "inconclusive",
      "no (clear) evidence", "lack of evidence", "cannot be determined/verified", "unable to
      verify", "unverifiable", "not verifiable", "neither supported nor refuted", "NEI".
    - REFUTES: "refutes/refuted", "contradicts", "disproved", "false", "incorrect", "wrong",
      "untrue", "unsupported", and negated support: "not supported", "does not support",
      "isn't true", "not correct".
    - SUPPORTS: "supports/supported", "true", "correct", "accurate", and negated refutation:
      "not refuted", "not false".

    "Supporting evidence" and "the correct answer/label is ..." are not verdicts and are skipped.
    Rule when several appear: the label-bearing phrase that starts first in the text wins.
    A negated phrase starts at its negation, so "not supported" wins over the "supported"
    inside it; at the same start, not-enough-info phrases beat negated verdicts, which beat
    plain ones. "Not supported" maps to REFUTES: small models use it to reject a claim, and
    they say "not enough information" when they mean NOT ENOUGH INFO. "Yes"/"no" are not
    read as labels, since their meaning depends on how the question was phrased.
    """
    lowered = _FEVER_SEPARATORS.sub(" ", text.translate(_APOSTROPHES).lower())
    match = _FEVER_PATTERN.search(lowered)
    if match is None:
        return None
    index = int(match.lastgroup[1:])
    return _FEVER_PHRASES[index][0]


def _fever_gold(golds: Sequence[str]) -> str:
    """The canonical gold label of a FEVER example; refuses anything outside FEVER_LABELS."""
    _check_golds(golds)
    gold = golds[0].strip().upper()
    if gold not in FEVER_LABELS:
        raise ValueError(f"FEVER gold must be one of {FEVER_LABELS}, got {golds[0]!r}")
    return gold


def score_answer(prediction: str, golds: Sequence[str], is_fever: bool) -> tuple[float, float]:
    """Score one final answer as (f1, em), both fractions in [0, 1].

    FEVER: both are 1.0 when the label read from the prediction equals the gold label, else
    0.0 (a prediction naming no label scores 0.0). Otherwise SQuAD v1.1 token F1 and EM.
    """
    if is_fever:
        hit = float(extract_fever_label(prediction) == _fever_gold(golds))
        return hit, hit
    return token_f1(prediction, golds), exact_match(prediction, golds)
