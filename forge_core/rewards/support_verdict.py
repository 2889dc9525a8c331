"""The support verdict: an evaluator host says whether the evidence a policy's prompt held supports
one stored answer (SUPPORTED), contradicts it (CONTRADICTED) or neither (NOT ENOUGH INFO).

No registry package ships usable NLI weights (checked: the one ONNX model found has two
undocumented labels and a 160-token window), so the evaluator is a judge host given the question,
the answer and the evidence: the Summary text for Summary arms, the passages for Raw arms and the
retrieved top-k passages (as Raw would see them) for Direct arms. The verdict is stored as a
reward row of source "support" whose value encodes the label (`SUPPORT_SCORES`); a reply without a
label counts as NOT ENOUGH INFO (the evaluator did not affirm support) and keeps its text.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from forge_core.hosts.base import GenerationRequest

SUPPORT_SOURCE = "support"
SUPPORTED, NOT_ENOUGH_INFO, CONTRADICTED = "SUPPORTED", "NOT ENOUGH INFO", "CONTRADICTED"
SUPPORT_SCORES: dict[str, float] = {SUPPORTED: 1.0, NOT_ENOUGH_INFO: 0.5, CONTRADICTED: 0.0}
SUPPORT_MAX_TOKENS = 8  # the label and a little slack
SUPPORT_SYSTEM = "You check answers against evidence. Use only the evidence given, not what you know."
_LABELS = "Reply with one label only: SUPPORTED, CONTRADICTED or NOT ENOUGH INFO."
SUPPORT_QA_TEMPLATE = (
    "Evidence:\n{evidence}\n\nQuestion: {question}\nAnswer given: {answer}\n\n"
    "Does the evidence support the answer given? " + _LABELS)
SUPPORT_FEVER_TEMPLATE = (
    "Evidence:\n{evidence}\n\nClaim: {question}\nVerdict given: {answer}\n\n"
    "The verdict is one of SUPPORTS, REFUTES or NOT ENOUGH INFO. Does the evidence support the verdict given? "
    + _LABELS)
NO_EVIDENCE = "(no passage was retrieved)"
# Earliest match wins; at one position the first pattern does ("not supported" before "supported").
_LABEL_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (NOT_ENOUGH_INFO, re.compile(r"not\s+enough\s+info", re.IGNORECASE)),
    (CONTRADICTED, re.compile(r"\bcontradict", re.IGNORECASE)),
    (NOT_ENOUGH_INFO, re.compile(r"\bnot\s+supported\b|\bunsupported\b", re.IGNORECASE)),
    (SUPPORTED, re.compile(r"\bsupport(?:ed|s)?\b", re.IGNORECASE)),
)


def evaluator_name(judge_host: str, judge_config_hash: str) -> str:
    """How reports name the evaluator of support verdicts: "judge:HOST@CONFIG_HASH"."""
    return f"judge:{judge_host}@{judge_config_hash}"


def verdict_counts(rewards: Iterable[float | None]) -> dict[str, int]:
    """Label -> how many of the stored verdict values carry it."""
    values = list(rewards)
    return {label: sum(value == score for value in values) for label, score in SUPPORT_SCORES.items()}


def support_prompt_hash() -> str:
    """Short sha256 of the evaluator's system message and templates: part of the verdict's identity."""
    text = "\x00".join((SUPPORT_SYSTEM, SUPPORT_QA_TEMPLATE, SUPPORT_FEVER_TEMPLATE, str(SUPPORT_MAX_TOKENS)))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def support_request(question: str, answer: str, evidence_text: str, is_fever: bool) -> GenerationRequest:
    """The greedy evaluator request for one answer against the evidence its policy's prompt held."""
    template = SUPPORT_FEVER_TEMPLATE if is_fever else SUPPORT_QA_TEMPLATE
    content = template.format(evidence=evidence_text.strip() or NO_EVIDENCE, question=question, answer=answer)
    messages = ({"role": "system", "content": SUPPORT_SYSTEM}, {"role": "user", "content": content})
    return GenerationRequest(messages=messages, max_tokens=SUPPORT_MAX_TOKENS, temperature=0.0)


def parse_support_label(reply: str) -> str | None:
    """The first label in the evaluator's reply (SUPPORTED, CONTRADICTED, NOT ENOUGH INFO); None
    without one."""
    found = [(match.start(), order, label) for order, (label, pattern) in enumerate(_LABEL_PATTERNS)
             if (match := pattern.search(reply))]
    return min(found)[2] if found else None


def parse_support_score(reply: str) -> float | None:
    """The stored value of the reply's label (`SUPPORT_SCORES`); None without a label."""
    label = parse_support_label(reply)
    return SUPPORT_SCORES[label] if label else None
