"""What Stage 0 runs: an enumeration plan, checked, and the calls it still needs.

A plan names a host, a split, an alphabet and bounds. `EnumerationPlan.check` refuses a plan the run
would refuse, with one-line reasons (the CLI and the dashboard share it). `plan_work` lists the
missing calls of every query: arms without a non-error outcome and, with probes, the missing
probe samples; benchmarks are interleaved round-robin so that a partial run covers all of them.
`order_work` puts the work in run order: prefix-aware (a query's calls back to back, so calls that
share a prompt prefix hit the host's prompt cache) or arm-major, for comparison; `query_calls`
orders one query's calls so that each shares the longest prefix with the one before it.

The module imports no retrieval stack (scipy): `forge enumerate` reads its option defaults from
`EnumerationPlan`'s fields at start-up.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from forge_core.arms import DIRECT_NO_THINK, Arm, alphabet, thinking_modes
from forge_core.data.catalog import check_benchmarks
from forge_core.data.splits import SPLIT_SEEDS
from forge_core.errors import InvalidInput, MissingStep
from forge_core.evidence.retrievers import DEFAULT_RETRIEVER, get_retriever_config, retriever_hash
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import config_hash, get_host_config
from forge_core.records import BENCHMARKS, GREEDY_PROBE, SAMPLE_PROBES, Example, HostPrices
from forge_core.store import Store

SPLIT_CHOICES = ("train", "dev", "test", "all")
T = TypeVar("T")


@dataclass(frozen=True)
class EnumerationPlan:
    """What to enumerate and within which bounds."""

    host: str  # host name
    split: str = "train"  # train, dev, test or all
    n_arms: int = 6  # alphabet size: 3, 6 or 12
    probes: bool = False  # also run the Full-variant probes
    benchmarks: tuple[str, ...] = BENCHMARKS
    split_seed: int = 0
    limit: int | None = None  # at most this many queries in all
    per_benchmark: int | None = None  # at most this many queries per benchmark
    max_calls: int | None = None  # stop after this many host calls
    max_tokens: int | None = None  # stop after this many input + output tokens
    budget_usd: float | None = None  # refuse a plan estimated above it; stop before spend passes it
    concurrency: int = 1  # queries in flight at once (see `concurrency_for`)
    prefix_order: bool = True  # run a query's arms back to back (prompt cache reuse)
    shard: tuple[int, int] = (1, 1)  # (i, n): only every n-th query of each benchmark, from the i-th
    allow_unchecked_depths: bool = False  # 12 arms without a depth check that found every depth honoured
    queries_of: str | None = None  # only the queries this other host has every arm of (a second host, same queries)
    retriever: str = DEFAULT_RETRIEVER  # the evidence of Summary and Raw (a `forge retriever` name)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record (the jobs table's `params`, a job's request file)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, params: dict[str, Any] | str) -> EnumerationPlan:
        """The plan `to_dict` wrote (or its JSON), to run it again; fields this version does not
        know are left out."""
        values = json.loads(params) if isinstance(params, str) else dict(params)
        known = {field.name for field in dataclasses.fields(cls)}
        values = {key: value for key, value in values.items() if key in known}
        values["benchmarks"] = tuple(values.get("benchmarks", BENCHMARKS))
        values["shard"] = tuple(values.get("shard", (1, 1)))
        return cls(**values)

    def check(self, store: Store) -> None:
        """Refuse a plan the run would refuse, with one-line reasons (`ForgeError`), before any
        host is started: the CLI, the dashboard and the jobs all call it."""
        check_split(self.split, self.split_seed)
        thinking_modes(self.n_arms)
        if not self.benchmarks:
            raise InvalidInput("choose at least one benchmark")
        check_benchmarks(store, self.benchmarks)
        check_bounds({"limit": self.limit, "per-benchmark": self.per_benchmark, "max-calls": self.max_calls,
                      "max-tokens": self.max_tokens, "concurrency": self.concurrency, "budget-usd": self.budget_usd})
        _check_imported(store, self.benchmarks)
        host_config = get_host_config(store, self.host)
        if self.n_arms == 12 and not host_config.supports_thinking:
            raise InvalidInput(f"host '{self.host}' has no reasoning budget: use 6 (or 3) arms")
        if self.n_arms == 12 and not self.allow_unchecked_depths:
            from forge_core.evidence.depth_check import refuse_unchecked_depths  # imports the retrieval stack

            refuse_unchecked_depths(store, host_config, thinking_modes(12))
        check_same_configuration(store, self.host, host_config)
        get_retriever_config(store, self.retriever)
        if self.queries_of is not None and self.queries_of not in store.hosts_with_outcomes():
            raise MissingStep(f"--queries-of: host '{self.queries_of}' has no stored outcomes")
        if self.budget_usd is not None:
            budget_prices(store, self.host)


def budget_prices(store: Store, host: str) -> HostPrices:
    """The host's prices, which a dollar budget (`--budget-usd`) needs; a one-line `MissingStep`
    without them."""
    prices = store.host_prices(host)
    if prices is None:
        raise MissingStep(f"--budget-usd needs the prices of '{host}': "
                          f"`forge host edit {host} --price-in USD_PER_1M --price-out USD_PER_1M`")
    return prices


def parse_shard(text: str) -> tuple[int, int]:
    """`"i/n"` (1 <= i <= n) as (i, n): machine i of n takes queries i, i+n, i+2n, ... of each
    benchmark's planned list, so n machines enumerate disjoint parts of one plan."""
    index, _, count = text.partition("/")
    try:
        shard = int(index), int(count)
    except ValueError:
        raise InvalidInput(f"--shard must look like 1/4, not '{text}'") from None
    if not 1 <= shard[0] <= shard[1]:
        raise InvalidInput(f"--shard {text}: the part must be between 1 and {shard[1]}")
    return shard


def concurrency_for(host_config: HostConfig, requested: int | None) -> int:
    """Queries in flight: `requested`, or by default 1 on an embedded host, whose single llama.cpp
    slot is fastest with a query's arms back to back (prompt cache reuse, see
    `bench/enumeration.py`), and otherwise the host's request limit summed over its endpoints."""
    if requested is not None:
        return requested
    if host_config.kind == "embedded":
        return 1
    return host_config.max_concurrency * max(1, len(host_config.base_urls))


@dataclass(frozen=True)
class QueryWork:
    """The missing calls of one query."""

    example: Example
    arms: tuple[Arm, ...]
    samples: tuple[str, ...]
    greedy_probe: bool


def check_split(split: str, split_seed: int) -> None:
    """Refuse, in one line, a split other than `SPLIT_CHOICES` or a split seed other than `SPLIT_SEEDS`."""
    if split not in SPLIT_CHOICES:
        raise InvalidInput(f"split must be one of {', '.join(SPLIT_CHOICES)}")
    if split_seed not in SPLIT_SEEDS:
        raise InvalidInput(f"split seed must be one of {', '.join(map(str, SPLIT_SEEDS))}")


def check_bounds(bounds: dict[str, float | None]) -> None:
    """Refuse, in one line, a bound (by its flag name, None: unbounded) below 1, or below 0 for budget-usd."""
    for name, value in bounds.items():
        if value is not None and not value >= (0 if name == "budget-usd" else 1):
            raise InvalidInput(f"--{name} must be at least {0 if name == 'budget-usd' else 1}, not {value}")


def _check_imported(store: Store, benchmarks: tuple[str, ...]) -> None:
    missing = sorted(set(benchmarks) - set(store.benchmark_stats()))
    if missing:
        raise MissingStep(f"not imported: {', '.join(missing)} (run `forge data import`)")


def check_same_configuration(store: Store, host: str, host_config: HostConfig) -> None:
    """Refuse to mix two models' outcomes under one host name: resuming trusts stored rows."""
    other = set(store.host_config_hashes(host)) - {config_hash(host_config)}
    if other:
        raise InvalidInput(
            f"host '{host}' has stored outcomes from another configuration (kind, model or thinking "
            f"changed since); add this configuration under a new name with `forge host add`")


def plan_work(store: Store, plan: EnumerationPlan) -> list[QueryWork]:
    """The missing calls, one entry per query, benchmarks interleaved round-robin so that a
    partial run covers all of them. With probes, stored `direct:no_think` answers are first
    recorded as greedy probes, since they are the same request."""
    if plan.probes:
        store.record_greedy_probes_from_direct(plan.host)
    arms = alphabet(plan.n_arms)
    per_benchmark = [_benchmark_work(store, plan, benchmark, arms) for benchmark in plan.benchmarks]
    interleaved = round_robin(per_benchmark)
    return interleaved[: plan.limit] if plan.limit is not None else interleaved


def _benchmark_work(store: Store, plan: EnumerationPlan, benchmark: str, arms: tuple[Arm, ...]) -> list[QueryWork]:
    splits = ("train", "dev", "test") if plan.split == "all" else (plan.split,)
    ids = [i for split in splits for i in store.split_ids(benchmark, split, plan.split_seed)]
    if plan.queries_of is not None:
        answered = store.finished_arms(plan.queries_of, benchmark)
        ids = [i for i in ids if {arm.name for arm in arms} <= answered.get(i, set())]
    ids = ids[: plan.per_benchmark] if plan.per_benchmark is not None else ids
    index, count = plan.shard
    ids = ids[index - 1 :: count]
    finished_arms = store.finished_arms(plan.host, benchmark, plan_retriever_hash(store, plan))
    finished_probes = store.finished_probes(plan.host, benchmark) if plan.probes else {}
    examples = {e.example_id: e for e in store.examples(benchmark, ids)}
    work = []
    for example_id in ids:
        done_arms = finished_arms.get(example_id, set())
        done_probes = finished_probes.get(example_id, set())
        missing_arms = tuple(arm for arm in arms if arm.name not in done_arms)
        samples = tuple(p for p in SAMPLE_PROBES if p not in done_probes) if plan.probes else ()
        greedy = plan.probes and GREEDY_PROBE not in done_probes
        if missing_arms or samples or greedy:
            work.append(QueryWork(examples[example_id], missing_arms, samples, greedy))
    return work


def plan_retriever_hash(store: Store, plan: EnumerationPlan) -> str:
    """The configuration hash of the plan's retriever: the key its Summary and Raw outcomes get."""
    return retriever_hash(get_retriever_config(store, plan.retriever))


def round_robin(lists: Sequence[Sequence[T]]) -> list[T]:
    """The items of the lists interleaved: every list's first item, then every list's second, and so
    on (a list that runs out is skipped)."""
    longest = max((len(items) for items in lists), default=0)
    return [items[i] for i in range(longest) for items in lists if i < len(items)]


def count_calls(work: list[QueryWork]) -> int:
    """Host calls the work needs (the greedy probe reuses the direct:no_think call)."""
    return sum(len(w.arms) + len(w.samples) + (w.greedy_probe and not has_direct(w)) for w in work)


def has_direct(work: QueryWork) -> bool:
    return any(arm.name == DIRECT_NO_THINK for arm in work.arms)


def query_calls(work: QueryWork) -> list[tuple[str, bool]]:
    """The calls of one unit of work in run order, each as (arm or probe sample name, whether the
    call is also the greedy probe). Ordered for a prompt cache that keeps the previous call's
    prompt (llama.cpp's one context): first the Direct prompt's calls, `direct:no_think` (the
    greedy probe too, when asked) and the probe samples, which send the very same prompt; then the
    other arms in alphabet order (support-major), so arms of one support, which share their
    evidence and question up to the answering instruction, run back to back."""
    direct = [(arm.name, work.greedy_probe) for arm in work.arms if arm.name == DIRECT_NO_THINK]
    if work.greedy_probe and not direct:
        direct = [(DIRECT_NO_THINK, True)]  # the greedy probe alone: its arm is stored
    samples = [(probe, False) for probe in work.samples]
    others = [(arm.name, False) for arm in work.arms if arm.name != DIRECT_NO_THINK]
    return direct + samples + others


def order_work(work: list[QueryWork], n_arms: int, prefix_order: bool) -> list[QueryWork]:
    """Units of work in run order: one per query (prefix-aware), or one per (arm, query) with
    all queries' first arm before any second arm, and the probe samples last (arm-major)."""
    if prefix_order:
        return work
    units = []
    for arm in alphabet(n_arms):
        units += [dataclasses.replace(w, arms=(arm,), samples=(),
                                      greedy_probe=w.greedy_probe and arm.name == DIRECT_NO_THINK)
                  for w in work if arm in w.arms]
    units += [dataclasses.replace(w, arms=(), greedy_probe=w.greedy_probe and not has_direct(w))
              for w in work if w.samples or (w.greedy_probe and not has_direct(w))]
    return units

