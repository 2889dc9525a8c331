"""What a Stage-0 plan will cost before any call: calls, tokens and US dollars.

- Calls: every missing call of the plan (`forge_core.enumeration.calls`), by arm and probe.
- Input tokens: counted on the very requests the run would send. On an embedded host, exactly,
  with its model's own tokenizer and chat template (what its server reports in `usage`). On an
  OpenAI-compatible host that serves vLLM's `/tokenize`, exactly, by the host itself. On any
  other host, with a named tokenizer (an embedded model's, `forge_core.hosts.tokenizers`) scaled
  by the ratio of the host's own `usage` to that tokenizer on its stored calls (up to
  `RATIO_SAMPLE` of them); without stored calls, unscaled, and the method says so.
- Output tokens: the host's mean over its stored answered calls of that arm (or probe) on the same
  benchmark, else on any benchmark, else the request's cap (answer cap plus any reasoning budget):
  an upper bound.
- Price: at the host's prices (`forge host edit NAME --price-in ... --price-out ...`); the batch
  price is `BATCH_DISCOUNT` of it (OpenAI's Batch API and Anthropic's Message Batches both charge
  half).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass

from forge_core.enumeration.calls import CallKey, PlannedCall, call_request, planned_calls
from forge_core.enumeration.planning import EnumerationPlan, QueryWork
from forge_core.errors import InvalidInput
from forge_core.evidence.answering import load_retriever, retrieve_evidence
from forge_core.hosts.base import GenerationRequest, HostConfig
from forge_core.hosts.openai_compat import chat_completion_body
from forge_core.hosts.registry import get_host_config
from forge_core.hosts.tokenizers import PromptTokenizer, prompt_tokenizer, server_tokenizer
from forge_core.records import HostPrices
from forge_core.store import Store

BATCH_DISCOUNT = 0.5  # batch price / online price at OpenAI and Anthropic
PROBE_REQUEST = GenerationRequest(messages=({"role": "user", "content": "How many tokens?"},), max_tokens=1)
RATIO_SAMPLE = 200  # stored calls used to measure a remote host's tokens per named-tokenizer token


@dataclass(frozen=True)
class CallGroup:
    """The calls of one arm (or probe sample) in a plan."""

    name: str  # arm or probe name
    calls: int
    tokens_in: int
    tokens_out: float  # expected
    output_source: str  # "stored mean" or "cap"


@dataclass(frozen=True)
class StageZeroEstimate:
    """A plan's missing calls, their tokens and their price, with how the tokens were counted."""

    host: str
    groups: tuple[CallGroup, ...]
    input_method: str  # how input tokens were counted
    prices: HostPrices | None  # None: the host has no prices (no USD figures)

    @property
    def calls(self) -> int:
        """Host calls the plan still needs."""
        return sum(group.calls for group in self.groups)

    @property
    def tokens_in(self) -> int:
        """Input tokens of those calls."""
        return sum(group.tokens_in for group in self.groups)

    @property
    def tokens_out(self) -> float:
        """Expected output tokens of those calls."""
        return sum(group.tokens_out for group in self.groups)

    @property
    def usd(self) -> float | None:
        """The price at the host's rates, or None without prices."""
        return self.prices.usd(self.tokens_in, self.tokens_out) if self.prices else None

    @property
    def batch_usd(self) -> float | None:
        """The price through a provider's Batch API."""
        return None if self.usd is None else self.usd * BATCH_DISCOUNT

    def as_dict(self) -> dict:
        """The estimate as JSON-ready values (`--estimate --json`)."""
        return {
            "host": self.host, "calls": self.calls, "tokens_in": self.tokens_in,
            "tokens_out": round(self.tokens_out), "input_method": self.input_method,
            "calls_by_kind": {group.name: asdict(group) for group in self.groups},
            "usd_per_million_in": self.prices.usd_per_million_in if self.prices else None,
            "usd_per_million_out": self.prices.usd_per_million_out if self.prices else None,
            "usd": self.usd, "batch_usd": self.batch_usd,
        }


def estimate_plan(store: Store, plan: EnumerationPlan, on_call: Callable[[int], object] | None = None,
                  work: list[QueryWork] | None = None, host_config: HostConfig | None = None) -> StageZeroEstimate:
    """The estimate of a (validated) plan's missing calls; `on_call(n)` after each counted call.
    `work` (the plan's `plan_work`) and `host_config` (its host's) are looked up when not given."""
    host_config = get_host_config(store, plan.host) if host_config is None else host_config
    count, input_method = input_counter(store, host_config, ask_server=True)
    return estimate_calls(store, host_config, planned_calls(store, plan, work), count, input_method, on_call)


def estimate_calls(store: Store, host_config: HostConfig, calls: Iterable[PlannedCall],
                   count: Callable[[GenerationRequest], int], input_method: str,
                   on_call: Callable[[int], object] | None = None) -> StageZeroEstimate:
    """The estimate of these calls, their input counted by `count`."""
    stored_out = store.mean_tokens_out(host_config.name)
    totals: dict[str, list] = {}
    for done, call in enumerate(calls, start=1):
        name = call.key.name
        group = totals.setdefault(name, [0, 0, 0.0, "stored mean" if (None, name) in stored_out else "cap"])
        group[0] += 1
        group[1] += count(call.request)
        group[2] += stored_out.get((call.key.benchmark, name), stored_out.get((None, name), output_cap(call.request)))
        if on_call is not None:
            on_call(done)
    groups = tuple(CallGroup(name, calls, tokens_in, round(tokens_out, 1), source)
                   for name, (calls, tokens_in, tokens_out, source) in sorted(totals.items(), key=_group_order))
    return StageZeroEstimate(host_config.name, groups, input_method, store.host_prices(host_config.name))


def check_budget(estimate: StageZeroEstimate, budget_usd: float, through_batch: bool = False) -> None:
    """Refuse a plan whose estimate (at the batch price through a Batch API) is above the budget."""
    usd = estimate.batch_usd if through_batch else estimate.usd
    if usd is not None and usd > budget_usd:
        raise InvalidInput(f"the plan is estimated at {usd:.2f} USD{' through a Batch API' if through_batch else ''}, "
                           f"above --budget-usd {budget_usd:g} ({estimate.calls:,} calls; see --estimate)")


def _group_order(item: tuple[str, list]) -> tuple[int, str]:
    """Arms first, then probe samples, each by name."""
    return (1 if ":" not in item[0] else 0, item[0])


def output_cap(request: GenerationRequest) -> int:
    """The most output tokens a request can cost: its answer cap plus any reasoning budget."""
    return request.max_tokens + (request.thinking_budget or 0)


def input_counter(store: Store, host_config: HostConfig,
                  ask_server: bool = False) -> tuple[Callable[[GenerationRequest], int], str]:
    """How to count a request's input tokens on this host, and that method in words. With
    `ask_server`, an OpenAI-compatible host that has vLLM's `/tokenize` counts them itself."""
    if host_config.kind == "embedded":
        tokenizer = PromptTokenizer(host_config.model)
        return (lambda request: tokenizer.count(request.messages),
                f"exact: {host_config.model}'s own tokenizer and chat template (what its server reports)")
    server = server_tokenizer(host_config, chat_completion_body(host_config, PROBE_REQUEST)) if ask_server else None
    if server is not None:
        return (lambda request: server.count(chat_completion_body(host_config, request)),
                f"exact: the host's own /tokenize ({server.url})")
    tokenizer = prompt_tokenizer()
    ratio, measured = _usage_ratio(store, host_config.name, tokenizer)
    if not measured:
        return (lambda request: tokenizer.count(request.messages),
                f"{tokenizer.model_key} tokenizer, unscaled: no stored calls of '{host_config.name}' "
                f"to measure its ratio")
    return (lambda request: round(tokenizer.count(request.messages) * ratio),
            f"{tokenizer.model_key} tokenizer x {ratio:.3f} (this host's usage / that tokenizer on "
            f"{measured} stored calls)")


def _usage_ratio(store: Store, host: str, tokenizer: PromptTokenizer) -> tuple[float, int]:
    """(the host's stored prompt tokens / the tokenizer's count of the same requests, calls measured)."""
    sample = store.answered_arm_tokens_in(host, RATIO_SAMPLE)
    reported = counted = 0
    for benchmark, rows in itertools.groupby(sample, key=lambda row: row[0]):
        rows = list(rows)
        retriever = load_retriever(store, benchmark)
        examples = {e.example_id: e for e in store.examples(benchmark, [example_id for _, example_id, _, _ in rows])}
        for _, example_id, arm, tokens_in in rows:
            example = examples[example_id]
            evidence = retrieve_evidence(retriever, example.question)
            request = call_request(CallKey(host, benchmark, example_id, arm), example, evidence)
            reported += int(tokens_in)
            counted += tokenizer.count(request.messages)
    return (reported / counted, len(sample)) if counted else (1.0, 0)
