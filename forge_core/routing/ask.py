"""One question asked on a host: the request `forge ask` and the Live query page build.

An `AskRequest` names everything by name (host, benchmark, arm, checkpoint, stored example);
`check` resolves and validates those names in one place, and `run_ask` answers through the one
routing-and-answering path, `forge_core.routing.live.route_and_answer`: under the arm a router
picks, under a hand-picked arm, and beside Always-Raw when asked.
"""

from __future__ import annotations

from dataclasses import dataclass

from forge_core.arms import Arm, parse_arm
from forge_core.data.catalog import check_benchmarks
from forge_core.errors import InvalidInput
from forge_core.evidence.retriever_backends import AnyRetriever, open_retriever
from forge_core.evidence.retrievers import (
    DEFAULT_RETRIEVER,
    RetrieverConfig,
    check_router_retriever,
    get_retriever_config,
)
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import get_host_config
from forge_core.records import Example
from forge_core.routing.checkpoints import LoadedCheckpoint, load_checkpoint
from forge_core.routing.guard import Guard
from forge_core.routing.live import (
    ALWAYS_RAW_MODES,
    RoutedAnswer,
    ask_routed,
    check_arm,
    check_question,
    default_router_id,
)
from forge_core.routing.utility import CostWeights
from forge_core.store import Store


@dataclass(frozen=True)
class AskRequest:
    """One question for a host: routed by a checkpoint unless an arm is picked by hand."""

    question: str = ""  # the question (or the claim, for fever); ignored with `example_id`
    benchmark: str = "hotpotqa"  # whose corpus the evidence is retrieved from
    host_name: str = "embedded"  # a configured host
    arm: str | None = None  # a hand-picked arm, e.g. "raw:no_think"; None: a router picks
    checkpoint_id: str | None = None  # the router when no arm is picked (default: the host's default router)
    example_id: str | None = None  # a stored example of `benchmark`: its question, scored against its answers
    always_raw: str = "off"  # Always-Raw beside the answer: "off", "cost" (its tokens) or "answer" (its answer too)
    weights: CostWeights = CostWeights()  # the cost weights a cost-conditioned router decides at (others ignore them)
    retriever: str = DEFAULT_RETRIEVER  # a configured retriever (`forge retriever list`): the evidence's source

    def __post_init__(self) -> None:
        if self.always_raw not in ALWAYS_RAW_MODES:
            raise InvalidInput(f"always_raw is one of {', '.join(ALWAYS_RAW_MODES)}, not {self.always_raw!r}")
        if self.arm is not None and self.checkpoint_id is not None:
            raise InvalidInput("pick an arm by hand or name a router checkpoint, not both")

    def check(self, store: Store) -> AskInputs:
        """Resolve every name of the request, refusing a bad one with a one-line `ForgeError`
        before any host is started."""
        check_benchmarks(store, [self.benchmark])
        example = _stored_example(store, self.benchmark, self.example_id) if self.example_id else None
        question = check_question(example.question if example else self.question)
        host_config = get_host_config(store, self.host_name)
        arm = parse_arm(self.arm) if self.arm else None
        if arm is not None:
            check_arm(arm, host_config)
        checkpoint_id = None if arm else self.checkpoint_id or default_router_id(store, self.host_name)
        retriever_config = get_retriever_config(store, self.retriever)
        return AskInputs(question, example, host_config, arm, checkpoint_id, retriever_config)


@dataclass(frozen=True)
class AskInputs:
    """An `AskRequest`'s names resolved against the store."""

    question: str
    example: Example | None
    host_config: HostConfig
    arm: Arm | None  # the hand-picked arm, or None when `checkpoint_id` routes
    checkpoint_id: str | None
    retriever_config: RetrieverConfig  # where the evidence comes from


def run_ask(store: Store, request: AskRequest, *, inputs: AskInputs | None = None,
            host_config: HostConfig | None = None, retriever: AnyRetriever | None = None,
            checkpoint: LoadedCheckpoint | None = None, guard: Guard | None = None) -> RoutedAnswer:
    """Answer the request's question. A caller that checked the request already passes what
    `request.check` returned as `inputs` (else it is checked here); a caller that keeps them loaded
    (the dashboard) passes the served host configuration, the benchmark's opened retriever and the
    loaded router checkpoint; `guard` (`forge ask --guard`) may hold the router's query at its
    fallback arm. A router trained under other evidence than the request's retriever is refused."""
    inputs = inputs or request.check(store)
    if inputs.checkpoint_id is not None and (checkpoint is None or checkpoint.checkpoint_id != inputs.checkpoint_id):
        checkpoint = load_checkpoint(store, inputs.checkpoint_id)
    if inputs.arm is None and checkpoint is not None:
        check_router_retriever(checkpoint.checkpoint_id, checkpoint.lineage, inputs.retriever_config)
    retriever = retriever or open_retriever(store, inputs.retriever_config, request.benchmark)
    return ask_routed(store, host_config or inputs.host_config, retriever,
                      inputs.question, request.benchmark, checkpoint=checkpoint if inputs.arm is None else None,
                      arm=inputs.arm, example=inputs.example, always_raw=request.always_raw,
                      weights=request.weights, guard=guard)


def _stored_example(store: Store, benchmark: str, example_id: str) -> Example:
    found = store.examples(benchmark, [example_id])
    if not found:
        raise InvalidInput(f"no example '{example_id}' in {benchmark}")
    return found[0]
