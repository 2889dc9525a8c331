"""Frozen records shared across FORGE: benchmark examples and corpus documents."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

BENCHMARKS: tuple[str, ...] = ("hotpotqa", "2wikimultihopqa", "musique", "popqa", "fever")


GREEDY_PROBE = "greedy"  # the greedy probe: the direct:no_think request itself
SAMPLE_PROBES: tuple[str, ...] = ("sample1", "sample2", "sample3")  # self-consistency samples


def is_fever_benchmark(benchmark: str) -> bool:
    """True for FEVER, the claim-verification benchmark: labels instead of short answers."""
    return benchmark == "fever"


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
        return is_fever_benchmark(self.benchmark)


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


@dataclass(frozen=True)
class SplitAssignment:
    """The split of every example of one benchmark under one split seed."""

    benchmark: str
    split_seed: int
    source_sha256: str
    splits: dict[str, str]  # example_id -> "train" | "dev" | "test"


@dataclass(frozen=True)
class ArmOutcome:
    """One (query, arm) run on a host, as stored; an error row has no score (f1 and em None)."""

    host: str
    benchmark: str
    example_id: str
    arm: str  # e.g. "raw:no_think"
    answer: str  # the full generated text
    extracted: str  # the scored answer
    f1: float | None
    em: float | None
    tokens_in: int
    tokens_out: int  # every output token, reasoning included (accounting charges them all)
    tokens_reasoning: int  # the reasoning part of tokens_out
    latency_ms: float | None  # None: answered through a batch, which reports no latency
    error: str | None  # one-line reason when the call failed after its retries
    attempts: int
    host_config_hash: str
    started_at: datetime
    finished_at: datetime
    reasoning_method: str | None = None  # how tokens_reasoning was obtained (usage, estimated, none)
    retriever_hash: str = ""  # the evidence it was made under ("": the default BM25, and every Direct arm)


@dataclass(frozen=True)
class ProbeOutcome:
    """One probe call before routing (greedy Direct answer or a self-consistency sample)."""

    host: str
    benchmark: str
    example_id: str
    probe: str  # "greedy", "sample1", "sample2", "sample3"
    answer: str
    tokens_in: int
    tokens_out: int
    latency_ms: float | None  # None: answered through a batch, which reports no latency
    error: str | None
    host_config_hash: str
    finished_at: datetime
    tokens_reasoning: int | None = None  # the reasoning part of tokens_out (None: not recorded)
    reasoning_method: str | None = None  # how tokens_reasoning was obtained (usage, estimated, none)


@dataclass(frozen=True)
class DraftLogprobs:
    """The no-context Direct draft (greedy, Stage 0's answer cap) with, per output token, the
    logprobs of its two most likely tokens: the probe of the training-free gates (TARG, the ladder)."""

    host: str
    benchmark: str
    example_id: str
    answer: str
    tokens_in: int
    tokens_out: int
    top1: tuple[float, ...]  # per output token, the most likely token's logprob
    top2: tuple[float, ...]  # per output token, the second's (-inf where the host gave one only)
    latency_ms: float | None
    error: str | None  # one-line reason when the call failed after its retries
    host_config_hash: str
    finished_at: datetime


@dataclass(frozen=True)
class FreshResult:
    """One policy's live answer to one query in a Fresh Online run, with every call it made."""

    run_id: str  # the run's settings hash (`forge_core.evaluation.fresh_online`)
    policy: str
    benchmark: str
    example_id: str
    arm: str  # the answering arm
    f1: float
    em: float
    calls: int  # host calls for this query: probes, earlier cascade stages and the answer
    tokens_in: int  # over all those calls
    tokens_out: int
    latency_ms: float  # end to end: retrieval, features, probes, routing and every call
    finished_at: datetime
    answer_tokens_in: int  # of the answering call alone
    answer_tokens_out: int
    checkpoint_id: str | None  # the router checkpoint the policy decided with (None: a baseline)


@dataclass(frozen=True)
class LiveTrace:
    """One question asked on the Live query page, kept in the store (table `live_traces`)."""

    trace_id: str  # a digest of the question, its settings and the time it was asked
    asked_at: datetime
    question: str
    benchmark: str  # whose corpus the evidence came from
    example_id: str | None  # the stored example, for a benchmark question
    host: str
    router: str  # the router's checkpoint id, or "override" for a hand-picked arm
    lambda_in: float | None  # the weights a cost-conditioned router decided at (None: its own)
    lambda_out: float | None
    arm: str
    margin: float | None  # the chosen arm's router probability minus the next one's (None: override)
    answer: str
    tokens_in: int  # every host call made for the answer (probes and the answer)
    tokens_out: int
    latency_ms: float  # of the answering call
    routing_ms: float  # retrieval, features and the router's forward pass
    f1: float | None  # against the gold answers of a benchmark question
    support_verdict: str | None  # an evaluator host's verdict on the answer's support (None: not judged)
    evaluator: str | None
    retriever: str  # the retriever whose evidence the prompt held (its name when asked)
    retriever_hash: str  # its configuration hash ("": the default BM25)


@dataclass(frozen=True)
class RewardOutcome:
    """A judge host's rating of one stored (query, arm) outcome; an error row has no reward."""

    host: str  # the host whose answer was judged
    benchmark: str
    example_id: str
    arm: str
    reward_key: str  # identity of the reward: source, judge prompt and judge host configuration
    source: str  # "judge"
    judge_host: str
    judge_config_hash: str
    prompt_hash: str  # of the judge prompt template
    reward: float | None  # in [0, 1]
    verdict: str  # the judge's raw reply
    tokens_in: int
    tokens_out: int
    latency_ms: float
    error: str | None
    finished_at: datetime


@dataclass(frozen=True)
class HostPrices:
    """What a host charges, in US dollars per million tokens (kept apart from its configuration,
    so prices never change a configuration's hash)."""

    host: str
    usd_per_million_in: float
    usd_per_million_out: float

    def usd(self, tokens_in: float, tokens_out: float) -> float:
        """The price of these many input and output tokens."""
        return (tokens_in * self.usd_per_million_in + tokens_out * self.usd_per_million_out) / 1e6


@dataclass(frozen=True)
class SubmittedBatch:
    """A batch of Stage-0 requests submitted to a provider's Batch API, as stored."""

    batch_id: str  # the provider's id
    provider: str  # "openai" or "anthropic"
    host: str
    requests_sha256: str  # of the request lines, so a rerun of the same plan finds this batch
    requests: int
    status: str  # the provider's status, or "ingested" once its results are stored
    completed: int
    failed: int
    estimated_usd: float | None  # at the host's batch price when it was submitted
    created_at: datetime
    updated_at: datetime
    ingested_at: datetime | None
