"""The Fresh Online protocol: policies answer queries with real host calls, every call counted.

The Cached protocol (`forge_core.evaluation`) reads the enumeration table. Fresh Online deploys
each policy as a user would run it on a new query: retrieve, compute the live features (the Full
router and Self-Routing first run their four probes concurrently), decide, and call the host
(a cascade stage by stage). It counts every host call and its tokens, and times the whole path
from question to answer (latency p50/p95). Stored outcomes are never read for a decision.

Policies run one after another over the queries, so the host's prompt cache holds what a
deployment of that one policy would hold. Within one query a policy never makes the same call
twice: the greedy probe is the Direct answer's own request.

Each finished (policy, query) is stored at once under a run id, a hash of the settings; a rerun
with the same settings (after Ctrl-C or a host failure) continues where it stopped.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from forge_core.answering import ArmAnswer, Evidence, answer_with_arm, load_retriever, retrieve_evidence, score_arm_answer
from forge_core.arms import parse_arm
from forge_core.evaluation import (
    EvaluationSettings, EvaluationSetup, action_distribution, evaluation_setup, macro, paired_bootstrap_ci, policy_outcomes)
from forge_core.features import features_for_question, load_embedder, needs_probes
from forge_core.hosts.base import Host, HostConfig
from forge_core.hosts.registry import config_hash, get_host_config, make_host, serving
from forge_core.policies import EvalContext, Policy
from forge_core.prompts import GREEDY_PROBE, SAMPLE_PROBES, sample_probe_request
from forge_core.records import Example, FreshResult, ProbeOutcome
from forge_core.retrieval import Retriever
from forge_core.store import Store, utc_now

log = logging.getLogger(__name__)

DEFAULT_PER_BENCHMARK = 10  # queries per benchmark: every call is a real one, so keep runs short
DIRECT_ARM = "direct:no_think"


@dataclass
class LiveContext(EvalContext):
    """A fitted context whose single row (index 0) is a new query's live features."""

    def features(self, variant: str) -> np.ndarray:
        if variant not in self._features:
            raise ValueError(f"no live {variant} features for this query")
        return self._features[variant]


class LiveQuery:
    """One query answered by one policy: its evidence, live features and every host call."""

    def __init__(self, example: Example, host: Host, retriever: Retriever, fitted: EvalContext) -> None:
        self.example = example
        self.host = host
        self.retriever = retriever
        self.fitted = fitted
        self.calls = 0
        self.tokens_in = 0
        self.tokens_out = 0
        self._answers: dict[str, ArmAnswer] = {}
        self._evidence: Evidence | None = None

    @property
    def benchmark(self) -> str:
        """The query's benchmark."""
        return self.example.benchmark

    @property
    def evidence(self) -> Evidence:
        """The BM25 passages of the question, retrieved once."""
        if self._evidence is None:
            self._evidence = retrieve_evidence(self.retriever, self.example.question)
        return self._evidence

    async def answer(self, arm: str) -> ArmAnswer:
        """The host's answer under an arm: one counted call, made at most once per query."""
        if arm not in self._answers:
            answer = await answer_with_arm(self.host, self.evidence, parse_arm(arm), self.example.is_fever)
            self._count(answer.tokens_in, answer.tokens_out)
            self._answers[arm] = answer
        return self._answers[arm]

    async def probes(self) -> list[ProbeOutcome]:
        """The four probes, concurrently; the greedy probe is the Direct answer."""
        question, host_name = self.example.question, self.host.config.name
        requests = [sample_probe_request(question, probe, self.example.is_fever) for probe in SAMPLE_PROBES]
        direct, *samples = await asyncio.gather(self.answer(DIRECT_ARM), *map(self.host.generate, requests))
        now = utc_now()
        outcomes = [ProbeOutcome(host_name, self.benchmark, self.example.example_id, GREEDY_PROBE, direct.answer,
                                 direct.tokens_in, direct.tokens_out, direct.latency_ms, None, "", now)]
        for probe, sample in zip(SAMPLE_PROBES, samples):
            self._count(sample.tokens_in, sample.tokens_out)
            outcomes.append(ProbeOutcome(host_name, self.benchmark, self.example.example_id, probe, sample.text,
                                         sample.tokens_in, sample.tokens_out, sample.latency_ms, None, "", now))
        return outcomes

    async def context(self, variant: str) -> LiveContext:
        """The fitted context with this query's live features of `variant` as its only row."""
        probes = await self.probes() if needs_probes(variant) else None
        row = features_for_question(self.example.question, self.evidence, probes, variant)
        fitted = self.fitted
        return LiveContext(fitted.store, fitted.table, fitted.normalizer, fitted.lambda_in, fitted.lambda_out,
                           {variant: row[None, :]})

    def _count(self, tokens_in: int, tokens_out: int) -> None:
        self.calls += 1
        self.tokens_in += tokens_in
        self.tokens_out += tokens_out


async def answer_fresh(policy: Policy, query: LiveQuery, run_id: str) -> FreshResult:
    """One policy's timed, scored live answer to one query."""
    started = time.perf_counter()
    answer = await policy.answer_live(query)
    latency_ms = (time.perf_counter() - started) * 1000.0
    f1, em = score_arm_answer(answer, query.example.answers, query.example.is_fever)
    example = query.example
    return FreshResult(run_id, policy.name, example.benchmark, example.example_id, answer.arm, f1, em, query.calls,
                       query.tokens_in, query.tokens_out, latency_ms, utc_now())


def fresh_online_evaluation(
    store: Store,
    settings: EvaluationSettings = EvaluationSettings(),
    per_benchmark: int = DEFAULT_PER_BENCHMARK,
    on_result: Callable[[FreshResult, int], None] | None = None,
) -> dict:
    """Run every deployable policy live on the first `per_benchmark` complete queries of each
    benchmark in the split and report F1, EM, tokens, calls and latency per policy.
    `on_result(result, remaining)` follows progress."""
    if per_benchmark < 1:
        raise ValueError("--per-benchmark must be at least 1")
    setup = evaluation_setup(store, settings)
    rows = first_rows_per_benchmark(setup.context, setup.rows, per_benchmark)
    setup = dataclasses.replace(setup, rows=rows)
    cached = policy_outcomes(setup.context, rows, setup.policies)  # fits every policy
    live = [p for p in setup.policies if p.deployable]
    config = get_host_config(store, settings.host)
    run_id = fresh_run_id(config, setup, settings)
    todo = _missing(store, run_id, live, _examples(store, setup.context, rows))
    if todo:
        log.info("fresh online run %s: %d policy-query answers to make", run_id, len(todo))
        with serving(config) as served:
            asyncio.run(_answer_all(store, served, setup.context, run_id, todo, on_result))
    results = store.fresh_results(run_id)
    report = fresh_report(results, setup, live, {name: o.f1 for name, o in cached.items()})
    skipped = {p.name: "descriptive: it needs every arm's outcome" for p in setup.policies if not p.deployable}
    return {"host": settings.host, "split": settings.split, "protocol": "fresh", "run_id": run_id,
            "queries": int(len(rows)), "lambda_in": settings.lambda_in, "lambda_out": settings.lambda_out,
            "arms": list(setup.context.table.arms), "policies": report, "not_run": skipped}


def first_rows_per_benchmark(context: EvalContext, rows: np.ndarray, per_benchmark: int) -> np.ndarray:
    """The first `per_benchmark` rows of each benchmark (rows are sorted by benchmark and id)."""
    benchmarks = context.table.benchmarks[rows]
    chosen = [rows[benchmarks == b][:per_benchmark] for b in np.unique(benchmarks)]
    return np.concatenate(chosen)


def fresh_run_id(config: HostConfig, setup: EvaluationSetup, settings: EvaluationSettings) -> str:
    """A hash of what the run's answers depend on: the host configuration, the queries the
    policies were fitted on and are evaluated on, the cost weights, seeds and router checkpoints
    (not the policy names: a run of a subset of policies reuses the same answers)."""
    table = setup.context.table
    settings = {
        "host": config_hash(config), "keys": [list(k) for k in table.keys], "splits": table.splits.tolist(),
        "rows": setup.rows.tolist(), "lambda_in": settings.lambda_in, "lambda_out": settings.lambda_out,
        "split_seed": settings.split_seed, "seed": settings.seed, "routers": setup.router_checkpoints,
    }
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


def _examples(store: Store, context: EvalContext, rows: np.ndarray) -> list[Example]:
    keys = [context.table.keys[i] for i in rows]
    by_key: dict[tuple[str, str], Example] = {}
    for benchmark in dict.fromkeys(b for b, _ in keys):
        ids = [example_id for b, example_id in keys if b == benchmark]
        by_key |= {(e.benchmark, e.example_id): e for e in store.examples(benchmark, ids)}
    return [by_key[key] for key in keys]


def _missing(store: Store, run_id: str, policies: list[Policy], examples: list[Example]) -> list[tuple[Policy, Example]]:
    done = store.fresh_results(run_id)
    finished = set(zip(done["policy"], done["benchmark"], done["example_id"]))
    return [(policy, example) for policy in policies for example in examples
            if (policy.name, example.benchmark, example.example_id) not in finished]


async def _answer_all(store: Store, config: HostConfig, context: EvalContext, run_id: str,
                      todo: list[tuple[Policy, Example]], on_result: Callable[[FreshResult, int], None] | None) -> None:
    retrievers = {b: load_retriever(store, b) for b in dict.fromkeys(e.benchmark for _, e in todo)}
    load_embedder()  # loaded before the first timed query
    host = make_host(config)
    try:
        for done, (policy, example) in enumerate(todo, start=1):
            query = LiveQuery(example, host, retrievers[example.benchmark], context)
            result = await answer_fresh(policy, query, run_id)
            store.write_fresh_result(result)
            if on_result:
                on_result(result, len(todo) - done)
    finally:
        await host.aclose()


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
    return {name: _policy_summary(frame, benchmarks, setup.context.table.arms, raw, cached_f1[name])
            for name, frame in frames.items()}


def _policy_summary(frame: pd.DataFrame, benchmarks: np.ndarray, arms: Sequence[str],
                    raw: pd.DataFrame | None, cached_f1: np.ndarray) -> dict:
    f1, em = frame["f1"].to_numpy(float), frame["em"].to_numpy(float)
    tokens = (frame["tokens_in"] + frame["tokens_out"]).to_numpy(float)
    calls, latency = frame["calls"].to_numpy(float), frame["latency_ms"].to_numpy(float)
    actions = np.array([arms.index(arm) for arm in frame["arm"]])
    return {
        "macro_f1": macro(f1, benchmarks),
        "macro_em": macro(em, benchmarks),
        "cost_k": macro(tokens, benchmarks) / 1000.0,
        "calls_per_query": float(calls.mean()),
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
