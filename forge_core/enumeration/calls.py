"""The host calls a plan still needs, each as the exact request the online run would send.

A call is keyed by host, benchmark, example and what it runs: an arm, or a probe sample; the
`direct:no_think` call that also serves as the greedy probe says so (`greedy_probe`). The key's
text form, `custom_id`, names all of it (`host/benchmark/example/arm`, each part percent-encoded,
`+greedy` after the arm when the call is the greedy probe too), so a batch result can be scored
and stored from its `custom_id` alone. The estimate, the batch files and the batch ingestion all
build their requests here, through the online path's own request builders.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import quote, unquote

from forge_core.arms import DIRECT_NO_THINK, Arm, parse_arm
from forge_core.enumeration.planning import EnumerationPlan, QueryWork, order_work, plan_work, query_calls
from forge_core.errors import InvalidInput
from forge_core.evidence.answering import Evidence, arm_request, retrieve_evidence
from forge_core.evidence.prompts import sample_probe_request
from forge_core.evidence.retriever_backends import open_retriever
from forge_core.evidence.retrievers import get_retriever_config
from forge_core.hosts.base import GenerationRequest
from forge_core.records import SAMPLE_PROBES, Example
from forge_core.store import Store

GREEDY_SUFFIX = "+greedy"  # after `direct:no_think` in a custom_id: the call is also the greedy probe
_SAFE = ":-_.+"  # characters kept as they are in a custom_id's parts


@dataclass(frozen=True)
class CallKey:
    """What one host call is for."""

    host: str
    benchmark: str
    example_id: str
    name: str  # an arm ("raw:no_think") or a probe sample ("sample1")
    greedy_probe: bool = False  # the direct:no_think call, stored as the greedy probe too

    @property
    def is_probe(self) -> bool:
        """True for a self-consistency sample, False for an arm."""
        return self.name in SAMPLE_PROBES

    @property
    def custom_id(self) -> str:
        """The key as one string (a batch line's `custom_id`)."""
        parts = (self.host, self.benchmark, self.example_id, self.name + (GREEDY_SUFFIX if self.greedy_probe else ""))
        return "/".join(quote(part, safe=_SAFE) for part in parts)


def parse_custom_id(custom_id: str) -> CallKey:
    """The key a `custom_id` names; a foreign one is refused with its text."""
    parts = custom_id.split("/") if isinstance(custom_id, str) else []
    if len(parts) != 4:
        raise InvalidInput(f"custom_id '{custom_id}' is not one FORGE wrote (host/benchmark/example/arm)")
    host, benchmark, example_id, name = (unquote(part) for part in parts)
    greedy = name.endswith(GREEDY_SUFFIX)
    name = name.removesuffix(GREEDY_SUFFIX)
    if name not in SAMPLE_PROBES:
        _arm(name, custom_id)
    if greedy and name != DIRECT_NO_THINK:
        raise InvalidInput(f"custom_id '{custom_id}': only direct:no_think is also the greedy probe")
    return CallKey(host, benchmark, example_id, name, greedy)


def _arm(name: str, custom_id: str) -> Arm:
    try:
        return parse_arm(name)
    except InvalidInput:
        raise InvalidInput(f"custom_id '{custom_id}': unknown arm '{name}'") from None


@dataclass(frozen=True)
class PlannedCall:
    """One missing host call with the request the online run would send for it."""

    key: CallKey
    example: Example
    evidence: Evidence
    request: GenerationRequest

    @property
    def arm(self) -> Arm | None:
        """The arm of an arm call (None for a probe sample)."""
        return None if self.key.is_probe else _arm(self.key.name, self.key.custom_id)


def call_request(key: CallKey, example: Example, evidence: Evidence) -> GenerationRequest:
    """The request of one call, built exactly as the online run builds it."""
    if key.is_probe:
        return sample_probe_request(evidence.question, key.name, example.is_fever)
    return arm_request(evidence, _arm(key.name, key.custom_id), example.is_fever)


def planned_calls(store: Store, plan: EnumerationPlan, work: list[QueryWork] | None = None) -> Iterator[PlannedCall]:
    """Every missing call of the plan, in the online run's order (see `order_work`)."""
    work = plan_work(store, plan) if work is None else work
    config = get_retriever_config(store, plan.retriever)
    retrievers = {benchmark: open_retriever(store, config, benchmark) for benchmark in plan.benchmarks}
    for unit in order_work(work, plan.n_arms, plan.prefix_order):
        example = unit.example
        evidence = retrieve_evidence(retrievers[example.benchmark], example.question)
        for name, greedy in query_calls(unit):
            key = CallKey(plan.host, example.benchmark, example.example_id, name, greedy)
            yield PlannedCall(key, example, evidence, call_request(key, example, evidence))
