"""Route a new question live: retrieve, compute its features (running the four host probes for
a Full router), and read the router's probability of every arm."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import numpy as np
import torch

from forge_core.answering import Evidence, load_retriever, retrieve_evidence
from forge_core.arms import Arm, alphabet
from forge_core.checkpoints import LoadedCheckpoint, load_checkpoint
from forge_core.features import features_for_question
from forge_core.hosts.base import Host, HostError
from forge_core.prompts import GREEDY_PROBE, SAMPLE_PROBES, build_request, sample_probe_request
from forge_core.records import ProbeOutcome, is_fever_benchmark
from forge_core.store import Store, utc_now


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
    started = time.perf_counter()
    evidence = retrieve_evidence(load_retriever(store, benchmark), question)
    probes = None
    if checkpoint.variant == "full":
        if host is None:
            raise HostError("a Full router runs four host probes first: give it a host")
        probes = await run_probes(host, question, is_fever_benchmark(benchmark))
    features = features_for_question(question, evidence, probes, variant=checkpoint.variant)
    probabilities = router_probabilities(checkpoint, features)
    return RoutingDecision(
        checkpoint_id=checkpoint_id, probabilities=probabilities,
        chosen_arm=max(probabilities, key=probabilities.get), evidence=evidence,
        probe_tokens=sum(p.tokens_in + p.tokens_out for p in probes or ()),
        routing_ms=(time.perf_counter() - started) * 1000.0,
    )
