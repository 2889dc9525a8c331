"""The three support forms a host answers from: Direct, Summary and Raw (all deterministic).

- Direct: no evidence, the question only.
- Raw: the top 3 retrieved passages, each cut to its first 200 words, under its title.
- Summary: query-aware extractive compression of the top 3 passages to at most 140 words. The
  passages are split into sentences, duplicates dropped, the sentences ranked by BM25 against the
  question (same tokenizer and parameters as passage retrieval), and whole sentences kept greedily
  in rank order while they fit the budget (one that would overflow is skipped, later shorter ones
  may still fit). The output lists them in rank order, the most relevant first. When the best
  sentence alone exceeds the budget, its first 140 words are the summary, so it is never empty
  while the passages have text. Words are whitespace-separated words throughout.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from forge_core.evidence.retrieval import rank_by_bm25, tokenize
from forge_core.evidence.settings import (
    DEFAULT_SUPPORT,
    RAW_WORDS_PER_PASSAGE,
    SUMMARY_WORD_BUDGET,
    SUPPORT_TOP_K,
    SupportSettings,
)
from forge_core.records import Document

RETRIEVE_TOP_K = 5  # passages retrieved per query (the retrieval features use all five)
__all__ = ["RAW_WORDS_PER_PASSAGE", "RETRIEVE_TOP_K", "SUMMARY_WORD_BUDGET", "SUPPORT_TOP_K", "raw_support",
           "summary_support", "direct_support", "split_sentences"]

# A sentence ends at . ! or ? (plus closing quotes or brackets) followed by whitespace and
# a capital letter, a digit or an opening quote or bracket.
_SENTENCE_END = re.compile(r"""[.!?]+["'”’)\]]*\s+(?=["'“‘(\[]?[A-Z0-9])""")
_DOTTED_ABBREVIATION = re.compile(r"(?:\w\.)+\w")  # "U.S", "e.g" before their final period
_ABBREVIATIONS = frozenset(
    {
        "mr", "mrs", "ms", "dr", "prof", "st", "mt", "ft", "jr", "sr", "sen", "rep", "gov",
        "gen", "col", "lt", "sgt", "capt", "cmdr", "adm", "rev", "hon", "no", "vol", "vs",
        "inc", "ltd", "co", "corp", "bros", "approx", "ca", "c", "etc", "al",
        "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    }
)


def direct_support() -> str:
    """Direct support: no evidence at all, the host sees the question only."""
    return ""


def raw_support(passages: Sequence[Document], settings: SupportSettings = DEFAULT_SUPPORT) -> str:
    """Raw support: the top passages, each as "[i] Title" then its first 200 words (by default)."""
    blocks = []
    for rank, passage in enumerate(passages[: settings.k], start=1):
        words = passage.text.split()[: settings.raw_words]
        blocks.append(f"[{rank}] {passage.title}\n{' '.join(words)}")
    return "\n\n".join(blocks)


def summary_support(question: str, passages: Sequence[Document], settings: SupportSettings = DEFAULT_SUPPORT) -> str:
    """Summary support: the question's best sentences from the top passages, <= 140 words (by default)."""
    sentences = _unique_sentences(passages[: settings.k])
    if not sentences:
        return ""
    ranked = [sentences[index] for index in _rank_sentences(question, sentences)]
    best_words = ranked[0].split()
    if len(best_words) > settings.summary_words:
        return " ".join(best_words[: settings.summary_words])
    return " ".join(_fill_budget(ranked, settings.summary_words))


def split_sentences(text: str) -> list[str]:
    """Split text into sentences; abbreviations and initials ("St.", "J.") do not end one."""
    sentences = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        if _is_abbreviation(text[start : match.start()], text[match.start()]):
            continue
        sentences.append(text[start : match.end()].strip())
        start = match.end()
    sentences.append(text[start:].strip())
    return [sentence for sentence in sentences if sentence]


def _is_abbreviation(before: str, mark: str) -> bool:
    """True when the period after `before` ends an abbreviation or an initial, not a sentence."""
    if mark != ".":
        return False
    last = before.rsplit(None, 1)  # [] when there is no word before the period
    if not last:
        return False
    word = last[-1].lstrip("\"'“‘([")
    is_initial = len(word) == 1 and word.isupper()
    is_dotted = _DOTTED_ABBREVIATION.fullmatch(word) is not None
    return is_initial or is_dotted or word.lower() in _ABBREVIATIONS


def _unique_sentences(passages: Sequence[Document]) -> list[str]:
    """All sentences of the passages in order, each kept once (compared on case and spacing)."""
    seen: set[str] = set()
    unique = []
    for passage in passages:
        for sentence in split_sentences(passage.text):
            key = " ".join(sentence.lower().split())
            if key not in seen:
                seen.add(key)
                unique.append(sentence)
    return unique


def _rank_sentences(question: str, sentences: Sequence[str]) -> list[int]:
    """Sentence positions by BM25 score against the question, best first, ties in text order."""
    return rank_by_bm25(question, [tokenize(sentence) for sentence in sentences])


def _fill_budget(ranked: Sequence[str], budget: int) -> list[str]:
    """Whole sentences in rank order while they fit; one that would overflow is skipped."""
    kept = []
    used = 0
    for sentence in ranked:
        length = len(sentence.split())
        if used + length <= budget:
            kept.append(sentence)
            used += length
    return kept
