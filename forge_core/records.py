"""Frozen records shared across FORGE: benchmark examples and corpus documents."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

BENCHMARKS: tuple[str, ...] = ("hotpotqa", "2wikimultihopqa", "musique", "popqa", "fever")
FEVER_LABELS: tuple[str, ...] = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")


@dataclass(frozen=True)
class Example:
    """One labeled query of a benchmark."""

    benchmark: str  # e.g. "hotpotqa"
    example_id: str  # the upstream id (or row number), unique within the benchmark
    question: str  # the question, or the claim for FEVER
    answers: tuple[str, ...]  # gold answer and its aliases; for FEVER the single label
    evidence: tuple[str, ...] = ()  # supporting evidence where the benchmark gives it

    @property
    def is_fever(self) -> bool:
        """True for claim-verification examples scored on their label."""
        return self.benchmark == "fever"


@dataclass(frozen=True)
class Document:
    """One passage of a benchmark's retrieval corpus."""

    benchmark: str
    title: str
    text: str

    @property
    def doc_id(self) -> str:
        """Content hash of title and whitespace-normalized text: copies share one id."""
        key = f"{' '.join(self.title.split())}\x00{' '.join(self.text.split())}"
        digest = hashlib.sha1(key.encode("utf-8")).hexdigest()
        return digest[:16]
