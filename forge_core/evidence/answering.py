"""From a question and an arm to a scored host answer: retrieve, build the support, prompt, call.

This is the one path every caller takes (`forge ask`, enumeration, live routing), so an answer
is produced and scored the same way everywhere.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from forge_core import config, telemetry
from forge_core.arms import Arm
from forge_core.errors import InvalidInput, MissingStep
from forge_core.evidence.answers import extract_final_answer, extract_plain_answer
from forge_core.evidence.prompts import ClientChat, build_request
from forge_core.evidence.retrieval import Retriever, ScoredDocument
from forge_core.evidence.scoring import extract_fever_label, score_answer
from forge_core.evidence.settings import DEFAULT_SUPPORT, SupportSettings
from forge_core.evidence.support import RETRIEVE_TOP_K, raw_support, summary_support
from forge_core.hosts.base import REASONING_NONE, Generation, GenerationRequest, Host
from forge_core.records import is_fever_benchmark
from forge_core.store import Store


@dataclass(frozen=True)
class Evidence:
    """The top-5 passages for one question (BM25 unless another retriever is configured); Summary
    and Raw draw on the top 3 under the default settings, on the retriever's own otherwise."""

    question: str
    passages: tuple[ScoredDocument, ...]
    settings: SupportSettings = DEFAULT_SUPPORT

    def support_text(self, support: str) -> str:
        """The evidence text of a support form ("" for direct); built once per form, since a
        query's arms share it (summary:no_think and summary:cot send the same summary)."""
        if support == "raw":
            return self._raw_text
        if support == "summary":
            return self._summary_text
        return ""

    @functools.cached_property
    def _raw_text(self) -> str:
        return raw_support([hit.document for hit in self.passages[: self.settings.k]], self.settings)

    @functools.cached_property
    def _summary_text(self) -> str:
        return summary_support(self.question, [hit.document for hit in self.passages[: self.settings.k]],
                               self.settings)


@dataclass(frozen=True)
class ArmAnswer:
    """A host's answer under one arm, with exact token accounting."""

    arm: str  # e.g. "raw:no_think"
    answer: str  # the full generated text
    extracted: str  # the scored answer (final line for CoT, label for FEVER)
    tokens_in: int
    tokens_out: int
    tokens_reasoning: int  # the reasoning part of tokens_out
    latency_ms: float
    support_text: str
    attempts: int = 1  # requests sent, retries included
    reasoning_method: str = REASONING_NONE  # how tokens_reasoning was obtained


CORPUS_SEPARATOR = "+"  # joins benchmarks into one served corpus: "hotpotqa+popqa" is their corpora's union


def corpus_name(benchmarks: Sequence[str]) -> str:
    """The corpus of several benchmarks' passages (`forge serve --benchmark A --benchmark B`): FEVER
    only on its own, since its claims take their own prompt."""
    names = list(dict.fromkeys(benchmarks))
    if not names:
        raise InvalidInput("name at least one benchmark whose corpus to retrieve from")
    if len(names) > 1 and any(is_fever_benchmark(name) for name in names):
        raise InvalidInput("FEVER's claims take their own prompt: serve FEVER's corpus on its own")
    return CORPUS_SEPARATOR.join(names)


@functools.lru_cache(maxsize=8)
def _cached_retriever(store_path: str, benchmark: str) -> Retriever:
    store, documents = Store(store_path), []
    for name in benchmark.split(CORPUS_SEPARATOR):
        found = store.documents(name)
        if not found:
            raise MissingStep(f"no corpus for '{name}' in the store: run `forge data import`")
        documents += found
    return Retriever.from_documents(documents, cache_dir=config.cache_dir() / "bm25")


def load_retriever(store: Store, benchmark: str) -> Retriever:
    """The benchmark's BM25 retriever (index cached on disk and in memory); a `corpus_name` of
    several benchmarks retrieves over the union of their corpora."""
    return _cached_retriever(str(store.path), benchmark)


def retrieve_evidence(retriever: Retriever, question: str) -> Evidence:
    """The top-5 passages for a question (more when the retriever's settings draw on more), with
    the retriever's evidence settings."""
    settings = retriever.settings
    top_k = max(RETRIEVE_TOP_K, settings.k)
    with telemetry.span("retrieval", telemetry.retrieval_attributes(retriever_kind(retriever), top_k)) as span:
        hits = tuple(retriever.retrieve(question, top_k))
        if span is not None:
            telemetry.set_attributes(span, telemetry.retrieved_attributes([hit.document.doc_id for hit in hits],
                                                                          [hit.score for hit in hits]))
    return Evidence(question, hits, settings)


RETRIEVER_KINDS = {"Retriever": "bm25", "DenseRetriever": "dense", "HybridRetriever": "hybrid",
                   "HttpRetriever": "http"}


def retriever_kind(retriever: Retriever) -> str:
    """The retriever's kind (bm25, dense, hybrid, http), as its traces name the data source."""
    name = type(retriever).__name__
    return RETRIEVER_KINDS.get(name, name)


def extract_answer(text: str, arm: Arm, is_fever: bool) -> str:
    """The part of the generated text that is scored (see `forge_core.evidence.answers`)."""
    answer = extract_final_answer(text) if arm.thinking == "cot" else extract_plain_answer(text)
    if is_fever:
        return extract_fever_label(answer) or ""
    return answer


def arm_request(evidence: Evidence, arm: Arm, is_fever: bool, chat: ClientChat | None = None) -> GenerationRequest:
    """The host request of one arm on one question, with a chat client's additions if any."""
    request = build_request(evidence.question, evidence.support_text(arm.support), arm, is_fever)
    return chat.apply(request) if chat else request


def arm_answer(arm: Arm, generation: Generation, support_text: str, is_fever: bool) -> ArmAnswer:
    """The `ArmAnswer` of one generation under `arm`."""
    return ArmAnswer(
        arm=arm.name,
        answer=generation.text,
        extracted=extract_answer(generation.text, arm, is_fever),
        tokens_in=generation.tokens_in,
        tokens_out=generation.tokens_out,
        tokens_reasoning=generation.tokens_reasoning,
        latency_ms=generation.latency_ms,
        support_text=support_text,
        attempts=generation.attempts,
        reasoning_method=generation.reasoning_method,
    )


async def answer_with_arm(client: Host, evidence: Evidence, arm: Arm, is_fever: bool,
                          chat: ClientChat | None = None) -> ArmAnswer:
    """Ask the host one question under one arm (in a chat client's conversation, if any)."""
    request = arm_request(evidence, arm, is_fever, chat)
    generation = await telemetry.traced_generate(client, request, {"forge.arm": arm.name})
    return arm_answer(arm, generation, evidence.support_text(arm.support), is_fever)


def score_arm_answer(answer: ArmAnswer, golds: tuple[str, ...], is_fever: bool) -> tuple[float, float]:
    """(F1, EM) of an extracted answer against the gold answers (or the FEVER label)."""
    return score_answer(answer.extracted, golds, is_fever)
