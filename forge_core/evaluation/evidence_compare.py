"""Evidence measured before any host call: retrievers side by side on one benchmark.

Per retriever, over the benchmark's queries that carry gold evidence (HotpotQA and 2Wiki: the
supporting sentences; MuSiQue: the supporting paragraphs; FEVER: the gold sentences):

- gold recall at k: the share of a query's gold evidence texts found inside its top-k passages
  (matched as the grounding report matches them, `forge_core.policies.grounding.evidence_recall`:
  lowercased, whitespace collapsed), averaged over queries; and the same recall of the Summary and
  Raw prompts' evidence text (what the host would actually see under the retriever's settings);
- Summary's and Raw's input tokens: the prompt tokens of the summary:no_think and raw:no_think
  requests under the retriever's own evidence settings, counted with the embedded model's
  tokenizer (its GGUF's vocabulary and chat template: what that host reports as prompt tokens);
- retrieval latency p50/p95 per query (one query at a time, as routing retrieves).

Means carry 95% bootstrap intervals over queries (`forge_core.statistics`); each
retriever after the first also carries the paired 95% interval of its recall minus the first's
(the same queries resampled together). Nothing
calls a host: a benchmark's comparison takes seconds once its passage vectors are built.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from forge_core.arms import Arm
from forge_core.data.catalog import check_benchmarks
from forge_core.errors import InvalidInput
from forge_core.evidence.answering import Evidence
from forge_core.evidence.prompts import build_request
from forge_core.evidence.retriever_backends import AnyRetriever, open_retriever
from forge_core.evidence.retrievers import RetrieverConfig, get_retriever_config, list_retriever_configs, retriever_hash
from forge_core.evidence.support import RETRIEVE_TOP_K
from forge_core.hosts.tokenizers import prompt_tokenizer
from forge_core.policies.grounding import evidence_recall
from forge_core.records import Example, is_fever_benchmark
from forge_core.statistics import Interval, paired_bootstrap_ci
from forge_core.store import Store

SUMMARY_ARM = Arm("summary", "no_think")
RAW_ARM = Arm("raw", "no_think")
ProgressFn = Callable[[str, int, int], None]  # (what, done, total)


@dataclass(frozen=True)
class EvidenceCompareRequest:
    """Which retrievers to compare on which benchmark, at which recall depth, on how many queries."""

    benchmark: str
    retrievers: tuple[str, ...] = ()  # names; () : every configured retriever
    k: int = 3  # recall at k
    limit: int | None = None  # the first N queries with gold evidence (import order); None: all

    def check(self, store: Store) -> tuple[list[RetrieverConfig], list[Example]]:
        """The retriever configurations and the queries, refusing a bad name or number in one line."""
        check_benchmarks(store, [self.benchmark])
        if self.k < 1:
            raise InvalidInput(f"--k must be at least 1, not {self.k}")
        if self.limit is not None and self.limit < 1:
            raise InvalidInput(f"--limit must be at least 1, not {self.limit}")
        configs = ([get_retriever_config(store, name) for name in dict.fromkeys(self.retrievers)]
                   if self.retrievers else list_retriever_configs(store))
        examples = [e for e in store.examples(self.benchmark) if any(item.strip() for item in e.evidence)]
        if not examples:
            raise InvalidInput(f"{self.benchmark} carries no gold evidence to measure recall against "
                               "(hotpotqa, 2wikimultihopqa, musique and fever do)")
        return configs, examples[: self.limit]


@dataclass(frozen=True)
class MeanInterval:
    """A mean with its 95% bootstrap interval."""

    mean: float
    low: float
    high: float

    @classmethod
    def of(cls, values: np.ndarray) -> MeanInterval:
        """The mean of `values` with the percentile interval of 1,000 query resamples."""
        low, high = paired_bootstrap_ci(values, np.zeros_like(values), np.zeros(len(values)))
        return cls(float(values.mean()), low, high)

    def to_json(self) -> dict[str, float]:
        return {"mean": self.mean, "ci95": [self.low, self.high]}


@dataclass(frozen=True)
class RetrieverEvidence:
    """One retriever's evidence on one benchmark."""

    name: str
    kind: str
    config_hash: str  # "" for the default BM25 evidence
    recall: MeanInterval  # gold recall at k of the retrieved passages
    summary_recall: MeanInterval  # gold recall of the Summary prompt's evidence
    raw_recall: MeanInterval  # gold recall of the Raw prompt's evidence
    summary_tokens_in: MeanInterval
    raw_tokens_in: MeanInterval
    latency_p50_ms: float
    latency_p95_ms: float
    per_query_recall: np.ndarray  # gold recall at k of each query, in query order
    recall_vs_first: Interval | None = None  # paired 95% interval of recall minus the first's

    def to_json(self) -> dict:
        return {"name": self.name, "kind": self.kind, "config_hash": self.config_hash,
                "recall_at_k": self.recall.to_json(), "summary_recall": self.summary_recall.to_json(),
                "raw_recall": self.raw_recall.to_json(), "summary_tokens_in": self.summary_tokens_in.to_json(),
                "raw_tokens_in": self.raw_tokens_in.to_json(),
                "latency_ms": {"p50": self.latency_p50_ms, "p95": self.latency_p95_ms},
                "recall_vs_first_ci95": list(self.recall_vs_first) if self.recall_vs_first else None}


@dataclass(frozen=True)
class EvidenceComparison:
    """Every compared retriever on one benchmark."""

    benchmark: str
    k: int
    queries: int
    token_counter: str  # what the token counts are
    retrievers: tuple[RetrieverEvidence, ...]

    def to_json(self) -> dict:
        return {"benchmark": self.benchmark, "k": self.k, "queries": self.queries,
                "token_counter": self.token_counter, "retrievers": [r.to_json() for r in self.retrievers]}


def run_evidence_compare(store: Store, request: EvidenceCompareRequest,
                         on_progress: ProgressFn | None = None) -> EvidenceComparison:
    """Measure every requested retriever on the benchmark (see the module docstring) and store each
    retriever's row (`Store.save_evidence_results`: the Overview shows them without recomputing)."""
    configs, examples = request.check(store)
    tokenizer = prompt_tokenizer()
    measured = []
    for config in configs:
        vectors_progress = (lambda done, total, name=config.name: on_progress(f"{name}: embedding passages",
                                                                                done, total)) if on_progress else None
        retriever = open_retriever(store, config, request.benchmark, vectors_progress)
        row = _measure(config, retriever, examples, request, tokenizer.count, on_progress)
        if measured:
            first = measured[0].per_query_recall
            row = dataclasses.replace(row, recall_vs_first=paired_bootstrap_ci(
                row.per_query_recall, first, np.zeros(len(first))))
        measured.append(row)
    comparison = EvidenceComparison(request.benchmark, request.k, len(examples),
                                    f"{tokenizer.model_key} prompt tokens (its chat template)", tuple(measured))
    store.save_evidence_results(request.benchmark, request.k, len(examples), request.limit,
                                [row.to_json() for row in measured])
    return comparison


def _measure(config: RetrieverConfig, retriever: AnyRetriever, examples: Sequence[Example],
             request: EvidenceCompareRequest, count: Callable, on_progress: ProgressFn | None) -> RetrieverEvidence:
    is_fever = is_fever_benchmark(request.benchmark)
    depth = max(request.k, RETRIEVE_TOP_K, retriever.settings.k)
    recall, latency = [], []
    prompt_recall: dict[str, list[float]] = {"summary": [], "raw": []}
    prompt_tokens: dict[str, list[int]] = {"summary": [], "raw": []}
    for done, example in enumerate(examples, start=1):
        started = time.perf_counter()
        hits = retriever.retrieve(example.question, depth)
        latency.append((time.perf_counter() - started) * 1000.0)
        recall.append(evidence_recall(example.evidence, "\n\n".join(hit.document.text for hit in hits[: request.k])))
        evidence = Evidence(example.question, tuple(hits), retriever.settings)
        for arm in (SUMMARY_ARM, RAW_ARM):
            support_text = evidence.support_text(arm.support)
            prompt_recall[arm.support].append(evidence_recall(example.evidence, support_text))
            prompt_tokens[arm.support].append(count(build_request(example.question, support_text, arm,
                                                                  is_fever).messages))
        if on_progress and (done % 50 == 0 or done == len(examples)):
            on_progress(f"{config.name}: queries", done, len(examples))
    latencies = np.array(latency)
    return RetrieverEvidence(
        config.name, config.kind, retriever_hash(config), MeanInterval.of(np.array(recall)),
        MeanInterval.of(np.array(prompt_recall["summary"])), MeanInterval.of(np.array(prompt_recall["raw"])),
        MeanInterval.of(np.array(prompt_tokens["summary"], dtype=float)),
        MeanInterval.of(np.array(prompt_tokens["raw"], dtype=float)),
        float(np.percentile(latencies, 50)), float(np.percentile(latencies, 95)), np.array(recall))
