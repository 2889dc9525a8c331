"""One question, live: route it with a trained router, answer it under the chosen arm on a host,
and set it beside what Always-Raw costs (and answers) for it.

`route_and_answer` is the one routing-and-answering path: the Live query page, `forge ask --route`
and `forge serve` all call it. Routing retrieves, computes the question's features (running the
four host probes for a Full router) and reads the router's probability of every arm; an explicit
arm override skips the router. The Always-Raw comparison takes the token counts of the
`raw:no_think` arm for the same question on the same host, always the host's own usage numbers:
the answer itself when the arm is `raw:no_think`; the stored outcome when the question comes from
the store, its Raw outcome on this host was enumerated and the Raw answer itself is not asked for
(no extra call); otherwise one extra `raw:no_think` call, whose answer is kept.
"""

from __future__ import annotations

import asyncio
import atexit
import dataclasses
import threading
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from forge_core.arms import Arm, alphabet, parse_arm
from forge_core.evidence.answering import ArmAnswer, Evidence, answer_with_arm, retrieve_evidence, score_arm_answer
from forge_core.evidence.prompts import build_request, sample_probe_request
from forge_core.evidence.retrieval import Retriever
from forge_core.hosts.base import Host, HostConfig
from forge_core.hosts.embedded import EmbeddedServer, running_server
from forge_core.hosts.registry import make_host
from forge_core.records import GREEDY_PROBE, SAMPLE_PROBES, Example, ProbeOutcome, is_fever_benchmark
from forge_core.routing.checkpoints import LoadedCheckpoint, latest_checkpoint
from forge_core.routing.embedders import load_embedder, spec_for_name
from forge_core.routing.features import features_for_question, needs_probes
from forge_core.routing.passage_vectors import passage_vectors
from forge_core.store import Store, utc_now

RAW_ARM = Arm("raw", "no_think")
DIRECT_ARM = Arm("direct", "no_think")
CHECK_QUESTION = "What is the capital of France?"
MAX_QUESTION_CHARS = 4_000  # benchmark questions are under 300; a small host's context is 8,192 tokens
OVERRIDE = "override"  # `RoutedAnswer.router` when the arm was picked by hand
_serving_lock = threading.Lock()


@dataclass(frozen=True)
class RawCost:
    """Tokens of the Always-Raw arm for a question, and where the numbers come from."""

    tokens_in: int
    tokens_out: int
    source: str  # "this answer", "stored outcome" or "extra call"

    @property
    def tokens(self) -> int:
        """Input plus output tokens."""
        return self.tokens_in + self.tokens_out


@dataclass(frozen=True)
class RoutedAnswer:
    """One question routed and answered live, beside Always-Raw."""

    question: str
    benchmark: str  # whose corpus the evidence comes from
    host: str
    router: str  # the checkpoint id, or OVERRIDE for a hand-picked arm
    probabilities: dict[str, float]  # arm name -> router probability (empty under an override)
    routing_ms: float  # retrieval, features (probes included) and the router's forward pass
    probe_calls: int  # host calls a Full router makes before routing (0 otherwise)
    probe_tokens_in: int  # their input tokens
    probe_tokens_out: int  # their output tokens
    evidence: Evidence
    answer: ArmAnswer  # under the chosen arm
    f1: float | None  # None for a typed question (no gold answers)
    golds: tuple[str, ...]
    raw_cost: RawCost
    raw_answer: ArmAnswer | None  # the Always-Raw answer when one was made live
    raw_f1: float | None

    @property
    def probe_tokens(self) -> int:
        """Input plus output tokens of the probes."""
        return self.probe_tokens_in + self.probe_tokens_out

    @property
    def host_tokens(self) -> tuple[int, int]:
        """(input, output) tokens of every host call made for this question: probes, the answer,
        and the extra Always-Raw call when one was made."""
        tokens_in = self.probe_tokens_in + self.answer.tokens_in
        tokens_out = self.probe_tokens_out + self.answer.tokens_out
        if self.raw_answer is not None and self.raw_answer is not self.answer:
            tokens_in += self.raw_answer.tokens_in
            tokens_out += self.raw_answer.tokens_out
        return tokens_in, tokens_out

    @property
    def arm(self) -> str:
        """The arm the question was answered with."""
        return self.answer.arm

    @property
    def tokens(self) -> int:
        """Tokens this question spent: the answer's in + out, plus the probes of a Full router."""
        return self.answer.tokens_in + self.answer.tokens_out + self.probe_tokens

    @property
    def tokens_saved(self) -> int:
        """Always-Raw's tokens minus this question's (negative: routing cost more)."""
        return self.raw_cost.tokens - self.tokens

    @property
    def saved_percent(self) -> float:
        """`tokens_saved` as a percentage of Always-Raw's tokens."""
        return 100.0 * self.tokens_saved / self.raw_cost.tokens if self.raw_cost.tokens else 0.0

    def history_row(self) -> dict[str, Any]:
        """One row of a session's history table."""
        return {"question": self.question, "benchmark": self.benchmark, "host": self.host, "router": self.router,
                "arm": self.arm, "tokens": self.tokens, "raw tokens": self.raw_cost.tokens,
                "saved": self.tokens_saved, "F1": self.f1, "raw F1": self.raw_f1,
                "latency ms": round(self.answer.latency_ms, 1), "routing ms": round(self.routing_ms, 1)}

    def to_json(self) -> dict[str, Any]:
        """The JSON view printed by `forge ask --route --json` and returned by `forge serve`."""
        answer = self.answer
        raw = self.raw_answer
        return {
            "question": self.question, "benchmark": self.benchmark, "host": self.host, "router": self.router,
            "arm": self.arm, "probabilities": {arm: round(p, 6) for arm, p in self.probabilities.items()},
            "routing_ms": round(self.routing_ms, 1), "probe_calls": self.probe_calls,
            "probe_tokens": self.probe_tokens, "answer": answer.extracted, "answer_text": answer.answer,
            "tokens_in": answer.tokens_in, "tokens_out": answer.tokens_out,
            "latency_ms": round(answer.latency_ms, 1), "f1": self.f1, "golds": list(self.golds),
            "evidence": [hit.document.title for hit in self.evidence.passages],
            "raw_cost_tokens": self.raw_cost.tokens, "raw_cost_source": self.raw_cost.source,
            "tokens_saved": self.tokens_saved, "saved_percent": round(self.saved_percent, 1),
            "always_raw": None if raw is None else {
                "answer": raw.extracted, "answer_text": raw.answer, "tokens_in": raw.tokens_in,
                "tokens_out": raw.tokens_out, "latency_ms": round(raw.latency_ms, 1), "f1": self.raw_f1},
        }


@dataclass(frozen=True)
class SessionTotals:
    """Running totals over the questions of a session."""

    questions: int
    tokens: int  # spent by the routed answers (probes included)
    raw_tokens: int  # what Always-Raw would have spent on the same questions
    mean_f1: float | None  # over the questions with gold answers
    mean_raw_f1: float | None  # over those whose Raw answer was made live

    @property
    def tokens_saved(self) -> int:
        """Always-Raw's tokens minus the routed ones."""
        return self.raw_tokens - self.tokens


def session_totals(answers: Sequence[RoutedAnswer]) -> SessionTotals:
    """Tokens spent and saved against Always-Raw, and the mean F1 of each, over `answers`."""
    f1s = [a.f1 for a in answers if a.f1 is not None]
    raw_f1s = [a.raw_f1 for a in answers if a.raw_f1 is not None]
    return SessionTotals(len(answers), sum(a.tokens for a in answers), sum(a.raw_cost.tokens for a in answers),
                         float(np.mean(f1s)) if f1s else None, float(np.mean(raw_f1s)) if raw_f1s else None)


def check_question(question: str) -> str:
    """The question stripped; an empty or blank one, one longer than `MAX_QUESTION_CHARS`, or one
    with a control character (other than tab and newline) is refused with a one-line `ValueError`."""
    stripped = (question or "").strip()
    if not stripped:
        raise ValueError("the question is empty: type a question")
    if len(stripped) > MAX_QUESTION_CHARS:
        raise ValueError(f"the question has {len(stripped):,} characters; at most {MAX_QUESTION_CHARS:,} are accepted")
    control = next((c for c in stripped if unicodedata.category(c) == "Cc" and c not in "\t\n\r"), None)
    if control is not None:
        raise ValueError(f"the question contains the control character {control!r}: remove it")
    return stripped


def default_router_id(store: Store, host: str) -> str:
    """The newest Lite checkpoint trained on `host` (the default router)."""
    found = latest_checkpoint(store, host, "lite")
    if found is None:
        raise ValueError(f"no Lite router for host '{host}': train one with "
                         f"`forge train --stage 1 --host {host} --variant lite`, or pass --router")
    return found


async def route_and_answer(store: Store, host: Host, retriever: Retriever, question: str, benchmark: str, *,
                           router: LoadedCheckpoint | None = None, arm: Arm | None = None,
                           example: Example | None = None, compare_raw: bool = False) -> RoutedAnswer:
    """Route `question` with `router` (or take the override `arm`), answer it under the chosen arm
    on `host` with evidence from `retriever`, and set it beside Always-Raw: its token cost always,
    its answer too when `compare_raw` (see the module docstring). `example` is the stored example
    the question comes from, if any (for F1 and the stored Raw cost)."""
    question = check_question(question)
    if (router is None) == (arm is None):
        raise ValueError("route with a router checkpoint or answer with an explicit arm, not both or neither")
    is_fever = is_fever_benchmark(benchmark)
    if router is not None:  # the router's own embedder, loaded once per process: routing time is not loading
        embedder = spec_for_name(router.lineage["embedder"])
        load_embedder(embedder)
        passage_vectors(retriever, embedder)
    started = time.perf_counter()
    evidence = retrieve_evidence(retriever, question)
    probabilities: dict[str, float] = {}
    probes: list[ProbeOutcome] = []
    if router is not None:
        _check_alphabet(router.record["n_arms"], host.config)
        if needs_probes(router.variant):
            probes = await run_probes(host, question, is_fever)
        features = features_for_question(question, retriever, evidence, probes or None, router.variant, embedder)
        probabilities = router_probabilities(router, features)
        arm = parse_arm(max(probabilities, key=probabilities.get))
    routing_ms = (time.perf_counter() - started) * 1000.0
    if arm.thinking_budget and not host.config.supports_thinking:
        raise ValueError(f"host '{host.config.name}' has no reasoning budget; {arm.name} needs a thinking host")
    answer = await answer_with_arm(host, evidence, arm, is_fever)
    raw_cost, raw_answer = await _always_raw(store, host, evidence, answer, example, compare_raw, is_fever)
    golds = example.answers if example else ()
    return RoutedAnswer(
        question=question, benchmark=benchmark, host=host.config.name,
        router=router.checkpoint_id if router else OVERRIDE, probabilities=probabilities, routing_ms=routing_ms,
        probe_calls=len(probes), probe_tokens_in=sum(p.tokens_in for p in probes),
        probe_tokens_out=sum(p.tokens_out for p in probes), evidence=evidence,
        answer=answer, f1=_f1(answer, golds, is_fever), golds=golds, raw_cost=raw_cost, raw_answer=raw_answer,
        raw_f1=_f1(raw_answer, golds, is_fever) if raw_answer else None,
    )


def ask_routed(store: Store, config: HostConfig, retriever: Retriever, question: str, benchmark: str, *,
               router: LoadedCheckpoint | None = None, arm: Arm | None = None, example: Example | None = None,
               compare_raw: bool = False) -> RoutedAnswer:
    """`route_and_answer` from synchronous code, on the served host `config`."""

    async def run() -> RoutedAnswer:
        host = make_host(config)
        try:
            return await route_and_answer(store, host, retriever, question, benchmark, router=router, arm=arm,
                                          example=example, compare_raw=compare_raw)
        finally:
            await host.aclose()

    return asyncio.run(run())


def serve_for_session(config: HostConfig) -> HostConfig:
    """The configuration with a live base URL. Embedded hosts reuse a running server or start
    one that lives until this process exits; remote hosts pass through unchanged."""
    if config.kind != "embedded":
        return config
    with _serving_lock:
        running = running_server(config.model)
        if running is None:
            server = EmbeddedServer(config.model)
            server.start()
            atexit.register(server.stop)
            running = server.info
    return dataclasses.replace(config, base_url=running.base_url)


def is_serving(config: HostConfig) -> bool:
    """False when a served embedded host's server has gone (the URL must be refreshed)."""
    return config.kind != "embedded" or running_server(config.model) is not None


def check_host(config: HostConfig) -> ArmAnswer:
    """A short real call to a served host: a one-line question on the Direct arm."""

    async def run() -> ArmAnswer:
        host = make_host(config)
        try:
            return await answer_with_arm(host, Evidence(CHECK_QUESTION, ()), DIRECT_ARM, False)
        finally:
            await host.aclose()

    return asyncio.run(run())


async def run_probes(host: Host, question: str, is_fever: bool) -> list[ProbeOutcome]:
    """The greedy Direct probe and three samples, concurrently."""
    requests = {GREEDY_PROBE: build_request(question, "", DIRECT_ARM, is_fever)}
    requests |= {probe: sample_probe_request(question, probe, is_fever) for probe in SAMPLE_PROBES}
    generations = await asyncio.gather(*(host.generate(r) for r in requests.values()))
    return [ProbeOutcome(host.config.name, "", "", probe, g.text, g.tokens_in, g.tokens_out, g.latency_ms,
                         None, "", utc_now()) for probe, g in zip(requests, generations)]


def router_probabilities(checkpoint: LoadedCheckpoint, features: np.ndarray) -> dict[str, float]:
    """Arm name -> probability for one feature vector."""
    x = checkpoint.standardizer.transform(features.reshape(1, -1))
    with torch.no_grad():
        probabilities = checkpoint.router.log_probs(torch.as_tensor(x)).exp()[0].numpy()
    arms = alphabet(checkpoint.record["n_arms"])
    return {arm.name: float(p) for arm, p in zip(arms, probabilities)}


def _check_alphabet(n_arms: int, config: HostConfig) -> None:
    if n_arms > 6 and not config.supports_thinking:
        raise ValueError(f"the router chooses among {n_arms} arms, but host '{config.name}' has no reasoning "
                         "budget: pick a 6-arm router")


async def _always_raw(store: Store, host: Host, evidence: Evidence, answer: ArmAnswer, example: Example | None,
                      compare_raw: bool, is_fever: bool) -> tuple[RawCost, ArmAnswer | None]:
    if answer.arm == RAW_ARM.name:
        return RawCost(answer.tokens_in, answer.tokens_out, "this answer"), answer
    stored = _stored_raw_cost(store, host.config.name, example) if example and not compare_raw else None
    if stored:
        return stored, None
    raw = await answer_with_arm(host, evidence, RAW_ARM, is_fever)
    return RawCost(raw.tokens_in, raw.tokens_out, "extra call"), raw


def _f1(answer: ArmAnswer, golds: tuple[str, ...], is_fever: bool) -> float | None:
    return score_arm_answer(answer, golds, is_fever)[0] if golds else None


def _stored_raw_cost(store: Store, host: str, example: Example) -> RawCost | None:
    outcomes = store.arm_outcomes(host, example.benchmark)
    if outcomes.empty:
        return None
    match = outcomes[(outcomes["example_id"] == example.example_id) & (outcomes["arm"] == RAW_ARM.name)
                     & outcomes["error"].isna()]
    if match.empty:
        return None
    row = match.iloc[0]
    return RawCost(int(row["tokens_in"]), int(row["tokens_out"]), "stored outcome")
