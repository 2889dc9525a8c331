"""How much evidence a support form takes: passages, Raw's words a passage, Summary's word budget.

The defaults are the paper's (top 3 passages, Raw 200 words a passage, Summary at most 140 words);
a retriever configuration (`forge_core.evidence.retrievers`) may set its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from forge_core.errors import InvalidInput

SUPPORT_TOP_K = 3  # passages the Summary and Raw forms draw on
RAW_WORDS_PER_PASSAGE = 200  # Raw keeps this many leading words of each passage
SUMMARY_WORD_BUDGET = 140  # Summary never exceeds this many words


@dataclass(frozen=True)
class SupportSettings:
    """The evidence settings of Summary and Raw."""

    k: int = SUPPORT_TOP_K  # passages Summary and Raw draw on
    raw_words: int = RAW_WORDS_PER_PASSAGE  # Raw's leading words of each passage
    summary_words: int = SUMMARY_WORD_BUDGET  # Summary's word budget

    def __post_init__(self) -> None:
        for label, value in (("k", self.k), ("raw words", self.raw_words), ("summary words", self.summary_words)):
            if not isinstance(value, int) or value < 1:
                raise InvalidInput(f"evidence setting {label} must be a whole number of at least 1, not {value!r}")


DEFAULT_SUPPORT = SupportSettings()
