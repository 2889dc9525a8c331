"""One question, live: route it with a trained router, answer it under an arm on a host, and say
what Always-Raw costs for it.

Routing retrieves, computes the question's features (running the four host probes for a Full
router) and reads the router's probability of every arm. The Always-Raw comparison takes the
token counts of the `raw:no_think` arm for the same question on the same host, always the host's
own usage numbers: the answer itself when the arm is `raw:no_think`; the stored outcome when the
question comes from the store and its Raw outcome on this host was enumerated (no extra call);
otherwise one extra `raw:no_think` call.
"""

from __future__ import annotations

import asyncio
import atexit
import dataclasses
import threading
import time
from dataclasses import dataclass

import numpy as np
import torch

from forge_core.arms import Arm, alphabet
from forge_core.evidence.answering import (
    ArmAnswer,
    Evidence,
    answer_with_arm,
    load_retriever,
    retrieve_evidence,
    score_arm_answer,
)
from forge_core.evidence.prompts import build_request, sample_probe_request
from forge_core.evidence.retrieval import Retriever
from forge_core.hosts.base import Host, HostConfig, HostError
from forge_core.hosts.embedded import EmbeddedServer, running_server
from forge_core.hosts.registry import make_host
from forge_core.records import GREEDY_PROBE, SAMPLE_PROBES, Example, ProbeOutcome, is_fever_benchmark
from forge_core.routing.checkpoints import LoadedCheckpoint, load_checkpoint
from forge_core.routing.embedders import spec_for_name
from forge_core.routing.features import features_for_question
from forge_core.store import Store, utc_now

RAW_ARM = Arm("raw", "no_think")
CHECK_QUESTION = "What is the capital of France?"
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
class LiveAnswer:
    """A live answer with its evidence, its score when the question has gold answers, and the
    Always-Raw cost of the same question."""

    answer: ArmAnswer
    evidence: Evidence
    raw: RawCost
    f1: float | None  # None for a typed question (no gold answers)
    golds: tuple[str, ...]

    @property
    def tokens(self) -> int:
        """Input plus output tokens of the answer."""
        return self.answer.tokens_in + self.answer.tokens_out

    @property
    def tokens_vs_raw(self) -> int:
        """Tokens of the answer minus those of Always-Raw (negative: this arm was cheaper)."""
        return self.tokens - self.raw.tokens


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


def ask_live(store: Store, config: HostConfig, retriever: Retriever, question: str, benchmark: str,
             arm: Arm, example: Example | None = None) -> LiveAnswer:
    """Answer `question` under `arm` on a served host, with evidence from `retriever`; `example`
    is the stored example the question comes from, if any (for its score and stored Raw cost)."""
    if arm.thinking_budget and not config.supports_thinking:
        raise ValueError(f"host '{config.name}' has no reasoning budget; {arm.name} needs a thinking host")
    is_fever = is_fever_benchmark(benchmark)
    evidence = retrieve_evidence(retriever, question)
    stored_raw = _stored_raw_cost(store, config.name, example) if example and arm != RAW_ARM else None
    arms = [arm] if arm == RAW_ARM or stored_raw else [arm, RAW_ARM]
    answers = asyncio.run(_answer_all(config, evidence, arms, is_fever))
    if arm == RAW_ARM:
        raw = RawCost(answers[0].tokens_in, answers[0].tokens_out, "this answer")
    else:
        raw = stored_raw or RawCost(answers[1].tokens_in, answers[1].tokens_out, "extra call")
    f1 = score_arm_answer(answers[0], example.answers, is_fever)[0] if example else None
    return LiveAnswer(answers[0], evidence, raw, f1, example.answers if example else ())


def route_live(store: Store, checkpoint_id: str, question: str, benchmark: str,
               config: HostConfig | None = None) -> RoutingDecision:
    """A trained router's `RoutingDecision` for a question; a Full router runs its four probes on
    the served host `config`."""

    async def route() -> RoutingDecision:
        host = make_host(config) if config else None
        try:
            return await route_question(store, checkpoint_id, question, benchmark, host)
        finally:
            if host:
                await host.aclose()

    return asyncio.run(route())


def check_host(config: HostConfig) -> ArmAnswer:
    """A short real call to a served host: a one-line question on the Direct arm."""
    return asyncio.run(_answer_all(config, Evidence(CHECK_QUESTION, ()), [Arm("direct", "no_think")], False))[0]


async def _answer_all(config: HostConfig, evidence: Evidence, arms: list[Arm], is_fever: bool) -> list[ArmAnswer]:
    host = make_host(config)
    try:
        return [await answer_with_arm(host, evidence, arm, is_fever) for arm in arms]
    finally:
        await host.aclose()


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


@dataclass(frozen=True)
class RoutingDecision:
    """The router's view of one question."""

    checkpoint_id: str
    probabilities: dict[str, float]  # arm name -> probability
    chosen_arm: str  # the argmax
    evidence: Evidence
    probe_tokens: int  # tokens the Full variant's probes spent (0 for Lite and BGE)
    routing_ms: float  # features (probes included) and MLP


async def run_probes(host: Host, question: str, is_fever: bool) -> list[ProbeOutcome]:
    """The greedy Direct probe and three samples, concurrently."""
    requests = {GREEDY_PROBE: build_request(question, "", Arm("direct", "no_think"), is_fever)}
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


async def route_question(store: Store, checkpoint_id: str, question: str, benchmark: str,
                         host: Host | None = None) -> RoutingDecision:
    """Route one question; a Full router needs `host` for its probes."""
    checkpoint = load_checkpoint(store, checkpoint_id)
    embedder = spec_for_name(checkpoint.lineage["embedder"])  # features of the router's own embedder
    started = time.perf_counter()
    retriever = load_retriever(store, benchmark)
    evidence = retrieve_evidence(retriever, question)
    probes = None
    if checkpoint.variant == "full":
        if host is None:
            raise HostError("a Full router runs four host probes first: give it a host")
        probes = await run_probes(host, question, is_fever_benchmark(benchmark))
    features = features_for_question(question, retriever, evidence, probes, checkpoint.variant, embedder)
    probabilities = router_probabilities(checkpoint, features)
    return RoutingDecision(
        checkpoint_id=checkpoint_id, probabilities=probabilities,
        chosen_arm=max(probabilities, key=probabilities.get), evidence=evidence,
        probe_tokens=sum(p.tokens_in + p.tokens_out for p in probes or ()),
        routing_ms=(time.perf_counter() - started) * 1000.0,
    )
