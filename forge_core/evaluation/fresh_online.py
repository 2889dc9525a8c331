"""The Fresh Online protocol: policies answer queries with real host calls, every call counted
(`deploy_cost_k`; `answer_cost_k` is the answering call's tokens alone, and `cost_k` and the
utility follow the settings' accounting).

The Cached protocol (`forge_core.evaluation.cached`) reads the enumeration table. Fresh Online deploys
each policy as a user would run it on a new query: retrieve, compute the live features (the Full
router and Self-Routing first run their four probes concurrently), decide, and call the host
(a cascade stage by stage). It counts every host call and its tokens, and times the whole path
from question to answer (latency p50/p95). Stored outcomes are never read for a decision.

Policies run one after another over the queries, so the host's prompt cache holds what a
deployment of that one policy would hold. One query of one policy is a `LiveQuery`
(`forge_core.policies.live_query`).

Each finished (policy, query) is stored at once under a run id, a hash of a canonical form of the
settings, with the router checkpoint it was answered with; a rerun with the same settings (after
Ctrl-C or a host failure) continues where it stopped, and a policy added since answers only its
own queries.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from forge_core.errors import InvalidInput
from forge_core.evaluation.cached import retriever_fields
from forge_core.evaluation.settings import DEFAULT_PER_BENCHMARK, EvaluationSettings
from forge_core.evaluation.setup import EvaluationSetup, check_evaluation, evaluation_setup
from forge_core.evidence.answering import load_retriever, score_arm_answer
from forge_core.evidence.passage_vectors import passage_vectors
from forge_core.evidence.retriever_backends import open_retriever
from forge_core.evidence.retrievers import retriever_config_for_hash
from forge_core.hosts.base import HostConfig
from forge_core.hosts.lifetime import hosted
from forge_core.hosts.registry import config_hash, get_host_config
from forge_core.identity import canonical_hash
from forge_core.policies.base import Policy
from forge_core.policies.context import EvalContext
from forge_core.policies.live_query import LiveQuery
from forge_core.policies.outcomes import policy_outcomes
from forge_core.policies.routers import FallbackPolicy
from forge_core.records import Example, FreshResult
from forge_core.statistics import action_distribution, macro, paired_bootstrap_ci
from forge_core.store import Store, utc_now

log = logging.getLogger(__name__)

RUN_ID_VERSION = 1  # layout of the identity `fresh_run_id` hashes: bump when it changes


async def answer_fresh(policy: Policy, query: LiveQuery, run_id: str, checkpoint_id: str | None) -> FreshResult:
    """One policy's timed, scored live answer to one query (`checkpoint_id`: the router checkpoint
    it decides with, None for a baseline)."""
    started = time.perf_counter()
    answer = await policy.answer_live(query)
    latency_ms = (time.perf_counter() - started) * 1000.0
    f1, em = score_arm_answer(answer, query.example.answers, query.example.is_fever)
    example = query.example
    return FreshResult(run_id, policy.name, example.benchmark, example.example_id, answer.arm, f1, em, query.calls,
                       query.tokens_in, query.tokens_out, latency_ms, utc_now(), answer.tokens_in, answer.tokens_out,
                       checkpoint_id)


@dataclass(frozen=True)
class FreshRequest:
    """`forge eval fresh`: every deployable policy answers the first `per_benchmark` complete
    queries of each benchmark in the split live on the host."""

    settings: EvaluationSettings = EvaluationSettings()
    per_benchmark: int = DEFAULT_PER_BENCHMARK  # queries per benchmark, each answered live by every policy

    def __post_init__(self) -> None:
        if self.per_benchmark < 1:
            raise InvalidInput(f"--per-benchmark must be at least 1, not {self.per_benchmark}")

    def check(self, store: Store) -> HostConfig:
        """Refuse, with a one-line `ForgeError`, a request the store cannot answer (the host must
        be configured: its answers are made live); returns the host's configuration."""
        check_evaluation(store, self.settings)
        return get_host_config(store, self.settings.host)


def run_fresh(store: Store, request: FreshRequest,
              on_result: Callable[[FreshResult, int], None] | None = None) -> dict:
    """Run every deployable policy of the request live and report F1, EM, tokens, calls and
    latency per policy; `on_result(result, remaining)` follows progress."""
    config = request.check(store)
    settings, per_benchmark = request.settings, request.per_benchmark
    setup = evaluation_setup(store, settings)
    rows = first_rows_per_benchmark(setup.context, setup.rows, per_benchmark)
    setup = dataclasses.replace(setup, rows=rows)
    cached = policy_outcomes(setup.context, rows, setup.policies)  # fits every policy
    live = fresh_policies(setup.policies, settings.policy_names)
    run_id = fresh_run_id(config, setup, settings)
    checkpoints = policy_checkpoints(live, setup.router_checkpoints)
    todo = _missing(store, run_id, checkpoints, live, _examples(store, setup.context, rows))
    if todo:
        log.info("fresh online run %s: %d policy-query answers to make", run_id, len(todo))
        asyncio.run(_answer_all(store, config, setup.context, run_id, checkpoints, todo, on_result))
    results = store.fresh_results(run_id)
    report = fresh_report(results, setup, live, {name: o.f1 for name, o in cached.items()})
    skipped = {p.name: FRESH_ON_REQUEST if p.deployable else "descriptive: it needs every arm's outcome"
               for p in setup.policies if p not in live}
    return {"host": settings.host, "split": settings.split, "protocol": "fresh", "accounting": settings.accounting,
            "run_id": run_id,
            "queries": int(len(rows)), **settings.weights.to_dict(),
            "arms": list(setup.context.table.arms), "policies": report, "not_run": skipped,
            } | retriever_fields(settings.retriever, setup.context.table.retriever_hash)


FRESH_ON_REQUEST = "answered live only when named (--policy): measured on its stored probes (forge gate-probes)"


def fresh_policies(policies: list[Policy], named: tuple[str, ...] | None) -> list[Policy]:
    """The policies a Fresh Online run answers live: the deployable ones, less those answered only
    on request (`Policy.fresh_by_default`: the training-free gates) unless `named` names them."""
    return [p for p in policies if p.deployable and (p.fresh_by_default or p.name in (named or ()))]


def first_rows_per_benchmark(context: EvalContext, rows: np.ndarray, per_benchmark: int) -> np.ndarray:
    """The first `per_benchmark` rows of each benchmark (rows are sorted by benchmark and id)."""
    benchmarks = context.table.benchmarks[rows]
    chosen = [rows[benchmarks == b][:per_benchmark] for b in np.unique(benchmarks)]
    return np.concatenate(chosen)


def fresh_run_id(config: HostConfig, setup: EvaluationSetup, settings: EvaluationSettings) -> str:
    """A hash of a canonical form of what the run's answers depend on: the host configuration,
    the data the policies were fitted on and the queries they answer, the cost weights, seeds and
    accounting, and the retriever's configuration hash (omitted for the default BM25, so runs stored
    before retrievers existed keep their ids). Not the policies: each row records the router
    checkpoint it was answered with, so an added policy answers its own rows only and a retrained
    router redoes its own."""
    table = setup.context.table
    data = hashlib.sha256(repr(table.keys).encode() + repr(table.splits.tolist()).encode())
    identity = {
        "host": config_hash(config), "data": data.hexdigest(), "rows": setup.rows.tolist(),
        **settings.weights.to_dict(), "split_seed": settings.split_seed,
        "seed": settings.seed, "accounting": settings.accounting,
    }
    if table.retriever_hash:
        identity["retriever_hash"] = table.retriever_hash
    return canonical_hash("fresh", RUN_ID_VERSION, identity)[:16]


def policy_checkpoints(policies: list[Policy], router_checkpoints: dict[str, str]) -> dict[str, str | None]:
    """The router checkpoint each policy decides with: a router's own, a fallback rule's router's,
    None for a baseline."""
    def router_name(policy: Policy) -> str:
        return policy.router.name if isinstance(policy, FallbackPolicy) else policy.name
    return {policy.name: router_checkpoints.get(router_name(policy)) for policy in policies}


def _examples(store: Store, context: EvalContext, rows: np.ndarray) -> list[Example]:
    keys = [context.table.keys[i] for i in rows]
    by_key: dict[tuple[str, str], Example] = {}
    for benchmark in dict.fromkeys(b for b, _ in keys):
        ids = [example_id for b, example_id in keys if b == benchmark]
        by_key |= {(e.benchmark, e.example_id): e for e in store.examples(benchmark, ids)}
    return [by_key[key] for key in keys]


def _missing(store: Store, run_id: str, checkpoints: dict[str, str | None], policies: list[Policy],
             examples: list[Example]) -> list[tuple[Policy, Example]]:
    """The (policy, query) pairs without a stored answer from the policy's current checkpoint."""
    done = store.fresh_results(run_id)
    current = done["checkpoint_id"].fillna("").to_numpy() == done["policy"].map(checkpoints).fillna("").to_numpy()
    finished = set(zip(done["policy"][current], done["benchmark"][current], done["example_id"][current]))
    return [(policy, example) for policy in policies for example in examples
            if (policy.name, example.benchmark, example.example_id) not in finished]


async def _answer_all(store: Store, config: HostConfig, context: EvalContext, run_id: str,
                      checkpoints: dict[str, str | None], todo: list[tuple[Policy, Example]],
                      on_result: Callable[[FreshResult, int], None] | None) -> None:
    evidence = retriever_config_for_hash(store, context.table.retriever_hash)  # the outcomes' retriever
    benchmarks = list(dict.fromkeys(e.benchmark for _, e in todo))
    retrievers = {b: open_retriever(store, evidence, b) for b in benchmarks}
    for benchmark in benchmarks:  # the embedder and the corpus's passage vectors before the first timed query
        passage_vectors(load_retriever(store, benchmark))
    async with hosted(config) as client:
        for done, (policy, example) in enumerate(todo, start=1):
            query = LiveQuery(example, client, retrievers[example.benchmark], context)
            result = await answer_fresh(policy, query, run_id, checkpoints[policy.name])
            store.write_fresh_result(result)
            if on_result:
                on_result(result, len(todo) - done)


def fresh_report(results: pd.DataFrame, setup: EvaluationSetup, policies: list[Policy],
                 cached_f1: dict[str, np.ndarray]) -> dict:
    """Per policy: macro F1/EM, tokens of every call (k), calls per query, end-to-end latency
    p50/p95, per-benchmark numbers, the answering arms, the paired CI of F1 against Always-Raw
    (when it ran) and the Cached protocol's macro F1 on the same queries."""
    keys = pd.MultiIndex.from_tuples([setup.context.table.keys[i] for i in setup.rows],
                                     names=["benchmark", "example_id"])
    benchmarks = keys.get_level_values("benchmark").to_numpy()
    frames = {p.name: results[results["policy"] == p.name].set_index(["benchmark", "example_id"]).reindex(keys)
              for p in policies}
    raw = frames.get("always_raw")
    kinds = {p.name: p.kind for p in policies}
    return {name: {"kind": kinds[name], **_policy_summary(frame, benchmarks, setup.context, raw, cached_f1[name])}
            for name, frame in frames.items()}


def _policy_summary(frame: pd.DataFrame, benchmarks: np.ndarray, context: EvalContext,
                    raw: pd.DataFrame | None, cached_f1: np.ndarray) -> dict:
    f1, em = frame["f1"].to_numpy(float), frame["em"].to_numpy(float)
    tokens = (frame["tokens_in"] + frame["tokens_out"]).to_numpy(float)
    answer_tokens = (frame["answer_tokens_in"] + frame["answer_tokens_out"]).to_numpy(float)
    calls, latency = frame["calls"].to_numpy(float), frame["latency_ms"].to_numpy(float)
    arms = context.table.arms
    actions = np.array([arms.index(arm) for arm in frame["arm"]])
    if context.accounting == "deploy":
        charged = ("tokens_in", "tokens_out")
    else:
        charged = ("answer_tokens_in", "answer_tokens_out")
    utility = f1 - context.call_cost(*(frame[column].to_numpy(float) for column in charged))
    return {
        "macro_f1": macro(f1, benchmarks),
        "macro_em": macro(em, benchmarks),
        "macro_utility": macro(utility, benchmarks),
        "cost_k": macro(tokens if context.accounting == "deploy" else answer_tokens, benchmarks) / 1000.0,
        "deploy_cost_k": macro(tokens, benchmarks) / 1000.0,
        "answer_cost_k": macro(answer_tokens, benchmarks) / 1000.0,
        "calls_per_query": macro(calls, benchmarks),
        "latency_p50_ms": float(np.percentile(latency, 50)),
        "latency_p95_ms": float(np.percentile(latency, 95)),
        "per_benchmark": {
            b: {"f1": float(f1[benchmarks == b].mean()), "em": float(em[benchmarks == b].mean()),
                "cost_k": float(tokens[benchmarks == b].mean() / 1000.0),
                "calls_per_query": float(calls[benchmarks == b].mean()), "queries": int((benchmarks == b).sum())}
            for b in np.unique(benchmarks)
        },
        "action_distribution": dict(zip(arms, action_distribution(actions, len(arms)).round(4).tolist())),
        "ci_vs_always_raw": (list(paired_bootstrap_ci(f1, raw["f1"].to_numpy(float), benchmarks))
                             if raw is not None else None),
        "cached_macro_f1": macro(cached_f1, benchmarks),
    }
