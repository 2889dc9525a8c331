"""One question, live: route it with a trained router, answer it under the chosen arm on a host,
and, when asked, set it beside what Always-Raw costs (and answers) for it.

`route_and_answer` is the one routing-and-answering path: the Live query page, `forge ask --route`
and `forge serve` all call it. Routing retrieves, computes the question's features (running the
four host probes for a Full router) and reads the router's probability of every arm (a
cost-conditioned router at the cost weights given, `lambda_in` and `lambda_out`); an explicit arm
override skips the router. The answer makes only the calls the decision needs: one for a
Lite or BGE+BM25 router or a fixed arm; the four probes and the answer for a Full router, whose
greedy Direct probe is the answer itself (no fifth call) when the chosen arm's request is that
probe's request (`direct:no_think`, with no chat client changing the request).

The Always-Raw comparison (`always_raw`) is a demonstration, never needed for routing: "off" (the
default, and `forge serve`'s) makes none; "cost" takes the token counts of the `raw:no_think` arm
for the same question on the same host, always the host's own usage numbers: the answer itself
when the arm is `raw:no_think`, the stored outcome when the question comes from the store and its
Raw outcome on this host was enumerated (no extra call), otherwise one extra `raw:no_think` call;
"answer" always has the Raw answer itself (one extra call unless the arm is `raw:no_think`).
"""

from __future__ import annotations

import asyncio
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from forge_core import telemetry
from forge_core.arms import Arm, alphabet, parse_arm
from forge_core.errors import InvalidInput, MissingStep
from forge_core.evidence.answering import (
    ArmAnswer,
    Evidence,
    answer_with_arm,
    arm_answer,
    arm_request,
    retrieve_evidence,
    score_arm_answer,
)
from forge_core.evidence.embedders import load_embedder, spec_for_name
from forge_core.evidence.passage_vectors import passage_vectors
from forge_core.evidence.prompts import ClientChat, greedy_probe_request, sample_probe_request
from forge_core.evidence.retrieval import Retriever
from forge_core.hosts.base import Generation, Host, HostConfig, estimate_tokens
from forge_core.hosts.lifetime import hosted
from forge_core.records import GREEDY_PROBE, SAMPLE_PROBES, Example, ProbeOutcome, is_fever_benchmark
from forge_core.routing.checkpoints import LoadedCheckpoint, default_router
from forge_core.routing.confidence import TAU, Confidence, checkpoint_tau, confidence
from forge_core.routing.features import features_for_question, needs_probes
from forge_core.routing.guard import Guard, guard_attributes, guard_record, guarded_arm
from forge_core.routing.utility import CostWeights
from forge_core.store import Store, utc_now

RAW_ARM = Arm("raw", "no_think")
MAX_QUESTION_CHARS = 4_000  # benchmark questions are under 300; a small host's context is 8,192 tokens
OVERRIDE = "override"  # `RoutedAnswer.checkpoint_id` when the arm was picked by hand
AlwaysRaw = Literal["off", "cost", "answer"]  # the Always-Raw comparison asked for (module docstring)
ALWAYS_RAW_MODES: tuple[str, ...] = ("off", "cost", "answer")
EXTRA_CALL = "extra call"  # `RawCost.source` of a raw:no_think call made only for the comparison


@dataclass(frozen=True)
class RawCost:
    """Tokens of the Always-Raw arm for a question, and where the numbers come from."""

    tokens_in: int
    tokens_out: int
    source: str  # "this answer", "stored outcome" or EXTRA_CALL

    @property
    def tokens(self) -> int:
        """Input plus output tokens."""
        return self.tokens_in + self.tokens_out


EXACT_MATCH = "exact match"  # F1 1: the normalized answer is a gold answer's words
SOME_OVERLAP = "some token overlap"  # 0 < F1 < 1: shares words with a gold answer (right or wrong)
NO_OVERLAP = "no token overlap"  # F1 0
UNSCORED = "unscored"  # no gold answers (a typed question)


def answer_verdict(f1: float | None) -> str:
    """What the answer's lexical F1 against the gold answers says, in its own terms: `EXACT_MATCH`
    (F1 1), `SOME_OVERLAP` (0 < F1 < 1: shared words, which a wrong answer can have too),
    `NO_OVERLAP` (F1 0), or `UNSCORED` without gold answers."""
    if f1 is None:
        return UNSCORED
    if f1 >= 1.0:
        return EXACT_MATCH
    return SOME_OVERLAP if f1 > 0.0 else NO_OVERLAP


def verdict_sentence(f1: float | None) -> str:
    """The verdict as a sentence that says what lexical F1 measures, e.g. "Some token overlap with
    the gold answer (F1 0.33): F1 counts shared words, not whether the answer is right." ("" unscored)."""
    verdict = answer_verdict(f1)
    if verdict == UNSCORED:
        return ""
    if verdict == EXACT_MATCH:
        return f"Exact match with a gold answer (F1 {f1:.2f}), after SQuAD normalization."
    if verdict == NO_OVERLAP:
        return f"No token overlap with the gold answer (F1 {f1:.2f})."
    return (f"Some token overlap with the gold answer (F1 {f1:.2f}): lexical F1 counts shared words, not whether "
            "the answer is right.")


@dataclass(frozen=True)
class RoutedAnswer:
    """One question routed and answered live, beside Always-Raw when the comparison was asked for."""

    question: str
    benchmark: str  # whose corpus the evidence comes from
    host: str
    checkpoint_id: str  # the router's checkpoint id, or OVERRIDE for a hand-picked arm
    probabilities: dict[str, float]  # arm name -> router probability (empty under an override)
    routing_ms: float  # retrieval, features (probes included) and the router's forward pass
    probe_calls: int  # host calls a Full router makes before routing (0 otherwise)
    probe_tokens_in: int  # their input tokens
    probe_tokens_out: int  # their output tokens
    evidence: Evidence
    answer: ArmAnswer  # under the chosen arm
    answer_is_probe: bool  # the greedy Direct probe was the answer: no host call of its own
    f1: float | None  # None for a typed question (no gold answers)
    golds: tuple[str, ...]
    raw_cost: RawCost | None  # None when no Always-Raw comparison was asked for
    raw_answer: ArmAnswer | None  # the Always-Raw answer when one was made live
    raw_f1: float | None
    weights: tuple[float, float] | None = None  # (lambda_in, lambda_out) a cost-conditioned router decided at
    tau: float = TAU  # the router's Boltzmann temperature (its lineage's): tau * log-probability gaps are utility
    guard: Guard | None = None  # the guard that held the query at its fallback or let the router's arm through

    @property
    def probe_tokens(self) -> int:
        """Input plus output tokens of the probes."""
        return self.probe_tokens_in + self.probe_tokens_out

    @property
    def host_calls(self) -> int:
        """Host calls made for the answer: the probes, and the answer unless it was the greedy probe."""
        return self.probe_calls + (0 if self.answer_is_probe else 1)

    @property
    def host_tokens(self) -> tuple[int, int]:
        """(input, output) tokens of every host call made for the answer (probes and answer; the
        Always-Raw comparison's extra call is not one of them)."""
        if self.answer_is_probe:
            return self.probe_tokens_in, self.probe_tokens_out
        return self.probe_tokens_in + self.answer.tokens_in, self.probe_tokens_out + self.answer.tokens_out

    @property
    def arm(self) -> str:
        """The arm the question was answered with (the guard's fallback where the guard held it)."""
        return self.answer.arm

    @property
    def router_arm(self) -> str | None:
        """The router's own choice, the most probable arm; None under an override."""
        return max(self.probabilities, key=self.probabilities.get) if self.probabilities else None

    @property
    def tokens(self) -> int:
        """Tokens this question spent: every host call made for the answer, in + out."""
        return sum(self.host_tokens)

    @property
    def raw_tokens(self) -> int | None:
        """Always-Raw's tokens for this question; None without the comparison."""
        return None if self.raw_cost is None else self.raw_cost.tokens

    @property
    def tokens_saved(self) -> int | None:
        """Always-Raw's tokens minus this question's (negative: routing cost more); None without
        the comparison."""
        return None if self.raw_cost is None else self.raw_cost.tokens - self.tokens

    @property
    def confidence(self) -> Confidence | None:
        """The chosen arm's implied utility over every other arm and its margin over the runner-up,
        in utility units (`forge_core.routing.confidence`); None under an override."""
        return confidence(self.probabilities, self.router_arm, self.tau) if self.probabilities else None

    @property
    def margin(self) -> float | None:
        """The router's margin for its arm over the runner-up in utility units (`confidence`); None
        under an override or with no other arm."""
        return self.confidence.margin if self.probabilities else None

    @property
    def nothing_to_compare(self) -> bool:
        """True when the answer is Always-Raw's own arm: the comparison is this very call."""
        return self.arm == RAW_ARM.name

    @property
    def saved_percent(self) -> float | None:
        """`tokens_saved` as a percentage of Always-Raw's tokens; None without the comparison."""
        if self.raw_cost is None:
            return None
        return 100.0 * self.tokens_saved / self.raw_cost.tokens if self.raw_cost.tokens else 0.0

    def history_row(self) -> dict[str, Any]:
        """One row of a session's history table."""
        return {"question": self.question, "benchmark": self.benchmark, "host": self.host, "router": self.checkpoint_id,
                "weights": "" if self.weights is None else f"{self.weights[0]:g} / {self.weights[1]:g}",
                "arm": self.arm, "tokens": self.tokens, "raw tokens": self.raw_tokens,
                "saved": self.tokens_saved, "F1": self.f1, "raw F1": self.raw_f1,
                "latency ms": round(self.answer.latency_ms, 1), "routing ms": round(self.routing_ms, 1)}

    def to_json(self) -> dict[str, Any]:
        """The JSON view printed by `forge ask --route --json` and returned by `forge serve`."""
        answer = self.answer
        raw = self.raw_answer
        saved = self.saved_percent
        return {
            "question": self.question, "benchmark": self.benchmark, "host": self.host, "router": self.checkpoint_id,
            "arm": self.arm, "router_arm": self.router_arm,
            "probabilities": {arm: round(p, 6) for arm, p in self.probabilities.items()},
            "confidence": None if self.confidence is None else self.confidence.to_json(),
            "guard": self.guard_record(),
            "routing_ms": round(self.routing_ms, 1), "probe_calls": self.probe_calls,
            "probe_tokens": self.probe_tokens, "answer_is_probe": self.answer_is_probe,
            "host_calls": self.host_calls, "tokens": self.tokens, "answer": answer.extracted,
            "answer_text": answer.answer,
            "tokens_in": answer.tokens_in, "tokens_out": answer.tokens_out,
            "latency_ms": round(answer.latency_ms, 1), "f1": self.f1, "golds": list(self.golds),
            "evidence": [hit.document.title for hit in self.evidence.passages],
            "raw_cost_tokens": self.raw_tokens,
            "raw_cost_source": None if self.raw_cost is None else self.raw_cost.source,
            "tokens_saved": self.tokens_saved, "saved_percent": None if saved is None else round(saved, 1),
            "always_raw": None if raw is None else {
                "answer": raw.extracted, "answer_text": raw.answer, "tokens_in": raw.tokens_in,
                "tokens_out": raw.tokens_out, "latency_ms": round(raw.latency_ms, 1), "f1": self.raw_f1},
        }

    def span_attributes(self) -> dict[str, Any]:
        """The request span's attributes (`forge_core.telemetry`): every host call's usage and the decision."""
        tokens_in, tokens_out = self.host_tokens
        reasoning = 0 if self.answer_is_probe else self.answer.tokens_reasoning
        weights = self.weights or (None, None)
        return {**telemetry.usage_attributes(tokens_in, tokens_out, reasoning), "forge.arm": self.arm,
                "forge.router": self.checkpoint_id, "forge.margin": self.margin, "forge.lambda_in": weights[0],
                "forge.lambda_out": weights[1], "forge.evidence_tokens": estimate_tokens(self.answer.support_text),
                "forge.host": self.host, "forge.host_calls": self.host_calls,
                "forge.routing_ms": round(self.routing_ms, 3)} | guard_attributes(self.guard_record())

    def guard_record(self) -> dict[str, Any] | None:
        """What the guard did to this query (`Guard.to_json`); None without a guard."""
        return guard_record(self.guard, self.probabilities, self.tau)


@dataclass(frozen=True)
class SessionTotals:
    """Running totals over the questions of a session; F1 compared only over the same questions."""

    questions: int
    tokens: int  # spent by the routed answers (probes included)
    raw_tokens: int  # what Always-Raw would have spent on the questions compared with it
    tokens_saved: int  # Always-Raw's tokens minus the routed ones, on those questions
    scored: int  # questions with gold answers
    mean_f1: float | None  # the routed answers' mean F1 over the `scored` questions
    both_scored: int  # questions whose routed and Always-Raw answers were both scored (Raw made live)
    both_f1: float | None  # the routed answers' mean F1 over the `both_scored` questions
    both_raw_f1: float | None  # Always-Raw's mean F1 over the same `both_scored` questions


def session_totals(answers: Sequence[RoutedAnswer]) -> SessionTotals:
    """Tokens spent, and saved against Always-Raw (on the questions compared with it), the routed
    answers' mean F1, and routed against Always-Raw F1 over only the questions both were scored on."""
    scored = [a.f1 for a in answers if a.f1 is not None]
    both = [(a.f1, a.raw_f1) for a in answers if a.f1 is not None and a.raw_f1 is not None]
    compared = [a for a in answers if a.raw_cost is not None]
    return SessionTotals(len(answers), sum(a.tokens for a in answers), sum(a.raw_cost.tokens for a in compared),
                         sum(a.tokens_saved for a in compared), len(scored),
                         float(np.mean(scored)) if scored else None, len(both),
                         float(np.mean([f1 for f1, _ in both])) if both else None,
                         float(np.mean([raw for _, raw in both])) if both else None)


def check_question(question: str) -> str:
    """The question stripped; an empty or blank one, one longer than `MAX_QUESTION_CHARS`, or one
    with a control character (other than tab and newline) is refused with a one-line `ValueError`."""
    stripped = (question or "").strip()
    if not stripped:
        raise InvalidInput("the question is empty: type a question")
    if len(stripped) > MAX_QUESTION_CHARS:
        raise InvalidInput(f"the question has {len(stripped):,} characters; "
                           f"at most {MAX_QUESTION_CHARS:,} are accepted")
    control = next((c for c in stripped if unicodedata.category(c) == "Cc" and c not in "\t\n\r"), None)
    if control is not None:
        raise InvalidInput(f"the question contains the control character {control!r}: remove it")
    return stripped


def check_arm(arm: Arm, host_config: HostConfig) -> None:
    """Refuse a thinking arm on a host without a reasoning budget."""
    if arm.thinking_budget and not host_config.supports_thinking:
        raise InvalidInput(f"host '{host_config.name}' has no reasoning budget; {arm.name} needs a thinking host")


def default_router_id(store: Store, host: str) -> str:
    """The host's default router (`forge_core.routing.checkpoints.default_router`: the marked
    checkpoint, else the newest cost-conditioned Lite one, else the newest Lite one); `MissingStep`
    without any."""
    found = default_router(store, host)
    if found is None:
        raise MissingStep(f"no Lite router for host '{host}': train one with "
                         f"`forge train --stage 1 --host {host} --variant lite`, or pass --router")
    return found


async def route_and_answer(store: Store, client: Host, retriever: Retriever, question: str, benchmark: str, *,
                           checkpoint: LoadedCheckpoint | None = None, arm: Arm | None = None,
                           example: Example | None = None, always_raw: AlwaysRaw = "off",
                           chat: ClientChat | None = None, weights: CostWeights = CostWeights(),
                           guard: Guard | None = None) -> RoutedAnswer:
    """Route `question` with the router of `checkpoint` (or take the override `arm`; a cost-conditioned
    router decides at `weights`, which any other ignores; a `guard` may hold it at its fallback arm), answer
    it under the chosen arm
    on the host `client` with evidence from `retriever` (inside a chat client's conversation `chat`, if any),
    and set it beside Always-Raw as `always_raw` asks (see the module docstring). `example` is the
    stored example the question comes from, if any (for F1 and the stored Raw cost)."""
    question = check_question(question)
    if (checkpoint is None) == (arm is None):
        raise InvalidInput("route with a router checkpoint or answer with an explicit arm, not both or neither")
    if always_raw not in ALWAYS_RAW_MODES:
        raise InvalidInput(f"always_raw must be one of {', '.join(ALWAYS_RAW_MODES)}, not {always_raw!r}")
    is_fever = is_fever_benchmark(benchmark)
    if checkpoint is not None:
        _prepare_router(checkpoint, retriever)
    started = time.perf_counter()
    evidence = retrieve_evidence(retriever, question)
    probabilities: dict[str, float] = {}
    probes: dict[str, Generation] = {}
    if checkpoint is not None:
        _check_alphabet(checkpoint.record["n_arms"], client.config)
        if needs_probes(checkpoint.variant):
            probes = await run_probes(client, question, is_fever)
        probabilities = _probabilities(checkpoint, question, retriever, evidence,
                                       probe_outcomes(client.config.name, probes), weights)
        arm = parse_arm(guarded_arm(probabilities, checkpoint_tau(checkpoint.lineage), guard))
    routing_ms = (time.perf_counter() - started) * 1000.0
    check_arm(arm, client.config)
    greedy = probes.get(GREEDY_PROBE)
    answer_is_probe = greedy is not None and arm_request(evidence, arm, is_fever, chat) == greedy_probe_request(
        question, is_fever)
    if answer_is_probe:
        answer = arm_answer(arm, greedy, "", is_fever)
    else:
        answer = await answer_with_arm(client, evidence, arm, is_fever, chat)
    raw_cost, raw_answer = await _always_raw(store, client, evidence, answer, example, always_raw, is_fever, chat)
    golds = example.answers if example else ()
    return RoutedAnswer(
        question=question, benchmark=benchmark, host=client.config.name,
        checkpoint_id=checkpoint.checkpoint_id if checkpoint else OVERRIDE, probabilities=probabilities,
        routing_ms=routing_ms,
        probe_calls=len(probes), probe_tokens_in=sum(p.tokens_in for p in probes.values()),
        probe_tokens_out=sum(p.tokens_out for p in probes.values()), evidence=evidence, answer=answer,
        answer_is_probe=answer_is_probe, f1=_f1(answer, golds, is_fever), golds=golds, raw_cost=raw_cost,
        raw_answer=raw_answer, raw_f1=_f1(raw_answer, golds, is_fever) if raw_answer else None,
        weights=((weights.lambda_in, weights.lambda_out)
                 if checkpoint is not None and checkpoint.conditioning is not None else None),
        tau=checkpoint_tau(checkpoint.lineage) if checkpoint is not None else TAU,
        guard=guard if checkpoint is not None else None,
    )


@dataclass(frozen=True)
class DryRoute:
    """A routing decision made without any host call (`POST /v1/route`)."""

    arm: str  # the arm chosen (the guard's fallback where the guard held the query)
    probabilities: dict[str, float]  # arm name -> router probability
    evidence: Evidence
    routing_ms: float
    tau: float = TAU  # the router's Boltzmann temperature (its lineage's)
    guard: Guard | None = None  # the guard that held the query at its fallback or let the router's arm through

    @property
    def margin(self) -> float | None:
        """The router's margin for its own arm over the runner-up in utility units (`confidence`)."""
        return confidence(self.probabilities, max(self.probabilities, key=self.probabilities.get), self.tau).margin

    def guard_record(self) -> dict[str, Any] | None:
        """What the guard did to this query (`Guard.to_json`); None without a guard."""
        return guard_record(self.guard, self.probabilities, self.tau)

    def span_attributes(self, weights: tuple[float, float]) -> dict[str, Any]:
        """A dry route's span attributes (`forge_core.telemetry`): the decision, no host call."""
        return {"forge.arm": self.arm, "forge.margin": self.margin, "forge.lambda_in": weights[0],
                "forge.lambda_out": weights[1], "forge.host_calls": 0,
                "forge.evidence_tokens": estimate_tokens(self.evidence.support_text(parse_arm(self.arm).support)),
                "forge.routing_ms": round(self.routing_ms, 3)} | guard_attributes(self.guard_record())


def dry_route(retriever: Retriever, question: str, checkpoint: LoadedCheckpoint,
              weights: CostWeights = CostWeights(), guard: Guard | None = None) -> DryRoute:
    """Route `question` with a router that needs no host probe (Lite or BGE+BM25), calling no host
    (a `guard` may hold it at its fallback arm); a Full router is refused (its features are four host calls)."""
    question = check_question(question)
    if needs_probes(checkpoint.variant):
        raise InvalidInput(f"router {checkpoint.checkpoint_id} is a Full router: its features need four host "
                           "probes, so it cannot route without calling the host (serve a Lite router)")
    _prepare_router(checkpoint, retriever)
    started = time.perf_counter()
    evidence = retrieve_evidence(retriever, question)
    probabilities = _probabilities(checkpoint, question, retriever, evidence, [], weights)
    tau = checkpoint_tau(checkpoint.lineage)
    return DryRoute(guarded_arm(probabilities, tau, guard), probabilities, evidence,
                    (time.perf_counter() - started) * 1000.0, tau, guard)


def _prepare_router(checkpoint: LoadedCheckpoint, retriever: Retriever) -> None:
    """The router's own embedder and passage vectors, loaded once per process: routing time is not loading."""
    embedder = spec_for_name(checkpoint.lineage["embedder"])
    load_embedder(embedder)
    passage_vectors(retriever, embedder)


def _probabilities(checkpoint: LoadedCheckpoint, question: str, retriever: Retriever, evidence: Evidence,
                   outcomes: list[ProbeOutcome], weights: CostWeights) -> dict[str, float]:
    embedder = spec_for_name(checkpoint.lineage["embedder"])
    features = features_for_question(question, retriever, evidence, outcomes or None, checkpoint.variant, embedder)
    return router_probabilities(checkpoint, features, weights)


def ask_routed(store: Store, config: HostConfig, retriever: Retriever, question: str, benchmark: str, *,
               checkpoint: LoadedCheckpoint | None = None, arm: Arm | None = None, example: Example | None = None,
               always_raw: AlwaysRaw = "off", weights: CostWeights = CostWeights(),
               guard: Guard | None = None) -> RoutedAnswer:
    """`route_and_answer` from synchronous code, on the host `config` (served first when it needs
    an embedded server)."""

    async def run() -> RoutedAnswer:
        async with hosted(config) as client:
            with telemetry.span(telemetry.REQUEST_SPAN, telemetry.request_attributes("forge")) as span:
                result = await route_and_answer(store, client, retriever, question, benchmark, checkpoint=checkpoint,
                                                arm=arm, example=example, always_raw=always_raw, weights=weights,
                                                guard=guard)
                telemetry.set_attributes(span, result.span_attributes())
            return result

    return asyncio.run(run())


async def run_probes(client: Host, question: str, is_fever: bool) -> dict[str, Generation]:
    """The greedy Direct probe and three samples, concurrently, by probe name."""
    requests = {GREEDY_PROBE: greedy_probe_request(question, is_fever)}
    requests |= {probe: sample_probe_request(question, probe, is_fever) for probe in SAMPLE_PROBES}
    generations = await asyncio.gather(*(telemetry.traced_generate(client, r, {"forge.probe": probe})
                                         for probe, r in requests.items()))
    return dict(zip(requests, generations))


def probe_outcomes(host: str, probes: dict[str, Generation]) -> list[ProbeOutcome]:
    """The probes as the records the features are computed from."""
    return [ProbeOutcome(host, "", "", probe, g.text, g.tokens_in, g.tokens_out, g.latency_ms, None, "", utc_now(),
                         g.tokens_reasoning, g.reasoning_method)
            for probe, g in probes.items()]


def router_probabilities(checkpoint: LoadedCheckpoint, features: np.ndarray,
                         weights: CostWeights = CostWeights()) -> dict[str, float]:
    """Arm name -> probability for one feature vector (a cost-conditioned router's at these weights)."""
    probabilities = checkpoint.probabilities(features.reshape(1, -1), weights)[0]
    arms = alphabet(checkpoint.record["n_arms"])
    return {arm.name: float(p) for arm, p in zip(arms, probabilities)}


def _check_alphabet(n_arms: int, config: HostConfig) -> None:
    if n_arms > 6 and not config.supports_thinking:
        raise InvalidInput(f"the router chooses among {n_arms} arms, but host '{config.name}' has no reasoning "
                         "budget: pick a 6-arm router")


async def raw_comparison(client: Host, evidence: Evidence, answer: ArmAnswer, is_fever: bool,
                         chat: ClientChat | None = None) -> tuple[RawCost, ArmAnswer]:
    """Always-Raw's cost and answer for the question of `answer`: that answer itself when it is
    Raw's, else one extra `raw:no_think` call (in the same chat, if any) that routing does not need."""
    if answer.arm == RAW_ARM.name:
        return RawCost(answer.tokens_in, answer.tokens_out, "this answer"), answer
    raw = await answer_with_arm(client, evidence, RAW_ARM, is_fever, chat)
    return RawCost(raw.tokens_in, raw.tokens_out, EXTRA_CALL), raw


async def _always_raw(store: Store, client: Host, evidence: Evidence, answer: ArmAnswer, example: Example | None,
                      always_raw: AlwaysRaw, is_fever: bool,
                      chat: ClientChat | None) -> tuple[RawCost | None, ArmAnswer | None]:
    if always_raw == "off":
        return None, None
    if always_raw == "cost" and example and answer.arm != RAW_ARM.name:
        stored = _stored_raw_cost(store, client.config.name, example)
        if stored:
            return stored, None
    return await raw_comparison(client, evidence, answer, is_fever, chat)


def _f1(answer: ArmAnswer, golds: tuple[str, ...], is_fever: bool) -> float | None:
    return score_arm_answer(answer, golds, is_fever)[0] if golds else None


def _stored_raw_cost(store: Store, host: str, example: Example) -> RawCost | None:
    outcome = store.arm_outcome(host, example.benchmark, example.example_id, RAW_ARM.name)
    if outcome is None or outcome.error is not None:
        return None
    return RawCost(outcome.tokens_in, outcome.tokens_out, "stored outcome")
