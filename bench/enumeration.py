"""Stage 0 on the embedded host against the runtime's own limit, measured in the same run.

Default run: Stage 0 over `--queries` dev queries (one per benchmark, round-robin) x 6 arms with
the Full features' probes (the greedy probe is the `direct:no_think` call; 3 self-consistency
samples), as `forge enumerate --probes` runs it at its embedded default (concurrency 1), into a
scratch store, against a server this script starts itself (a scratch `FORGE_CACHE_DIR`, so no
other process's server or traffic is reused). It times the run and counts prompt and completion
tokens (the server's `usage`) and the prompt tokens the runtime reused from its context: the
llama-cpp-python server reports no cached tokens in `usage` (it has `prompt_tokens`,
`completion_tokens` and `total_tokens` only), but its log says, for each call, `Llama.generate: N
prefix-match hit, remaining M prompt tokens to eval`; the script reads those lines.

The limit, measured on the same server in the same run. The machine is shared, so the queries are
enumerated one at a time (for each of the plan's queries, the plan narrowed to its benchmark and
its place in that benchmark's list: the earlier ones are stored, so each run does its 9 calls),
and the runtime's speed is measured before the first query and after each one; a query's limit
uses the mean time per token of the measurements just before and just after it:
- prefill speed: a fresh prompt (a nonce opens the system message, so nothing is reused) of the
  start of the plan's longest Raw evidence block (1,200 characters, about 300 tokens), 1 output
  token; prompt tokens evaluated (from the log) over the call's time less one decoded token;
- decode speed: the same prompt again (all of it cached) asking for a long retelling, 32 output
  tokens at most; output tokens over the call's time.
A query's limit is the time its own calls would take if they prefilled only what no earlier call
of the query already had (the number of nodes of the token trie of the query's prompts: every
shared prefix reused, whatever the order) at the prefill speed, plus each call's own output tokens
at the decode speed. `ratio` = sum of limits / sum of seconds (goal >= 0.9); `reuse_ratio` =
prompt tokens the runtime reused / prompt tokens reusable in that ideal (the runtime's count also
holds what a query's first call reused of the speed measurement before it, a few tokens of chat
template, which the ideal does not count). Between queries the measurement replaces the previous
query's prompt in the server's context: a query's first call shares only the chat template's
opening with it, as it would share only the system message with the previous query's last call.

Prints one JSON line last (also the load average before and after). `--threads N` serves the model
with N llama.cpp threads instead of the embedded host's one per CPU: on a machine loaded past its
cores, two threads that wait for each other at every layer's barrier spin while the other is
descheduled (measured here at load 11 on 2 cores: 0.25 generated tokens a second with 2 threads,
3 with 1).
`--sweep` runs the older comparison instead: query-arms per hour at concurrency 1, 2 and 4, with
and without prefix-aware ordering (6 arms, no probes).
Run: `.venv/bin/python bench/enumeration.py [--host embedded] [--queries 5] [--threads N] [--sweep]`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import re
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from forge_core import config
from forge_core.data.importing import import_benchmarks
from forge_core.enumeration.calls import planned_calls
from forge_core.enumeration.planning import EnumerationPlan, plan_work
from forge_core.enumeration.runner import enumerate_arms
from forge_core.hosts.base import Generation, GenerationRequest
from forge_core.hosts.embedded import EmbeddedServer
from forge_core.hosts.lifetime import hosted
from forge_core.hosts.models import model_path
from forge_core.hosts.registry import get_host_config, serving
from forge_core.hosts.tokenizers import _loaded  # the GGUF's tokenizer and chat template (as the server renders)
from forge_core.records import BENCHMARKS
from forge_core.store import Store

GOAL = 0.9
DECODE_TOKENS = 32
PREFILL_CHARS = 1200  # the speed probe's evidence: the start of the longest Raw block, about 300 tokens
PREFIX_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")
FULL_HIT = "Llama.generate: full prompt already cached"
CALL_END = '"POST /v1/chat/completions HTTP/1.1"'
SWEEP = [(c, p) for c in (1, 2, 4) for p in (True, False)]


# ------------------------------------------------------------------ recording the run's calls

class RecordingHost:
    """The run's client, recording each request and its generation in the order they finish."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.config = inner.config
        self.calls: list[tuple[GenerationRequest, Generation]] = []

    async def generate(self, request: GenerationRequest) -> Generation:
        generation = await self.inner.generate(request)
        self.calls.append((request, generation))
        return generation

    async def aclose(self) -> None:
        await self.inner.aclose()


def server_log_calls(text: str) -> list[dict]:
    """One entry per chat completion the server answered, in order: the prompt tokens it reused
    from its context (`reused`) and evaluated (`evaluated`, None when it logged no prefix line:
    nothing reused), from the lines between two access-log lines."""
    calls, current = [], {"reused": 0, "evaluated": None}
    for line in text.splitlines():
        if match := PREFIX_HIT.search(line):
            current = {"reused": int(match.group(1)), "evaluated": int(match.group(2))}
        elif FULL_HIT in line:
            current = {"reused": -1, "evaluated": 0}  # the whole prompt (its length is the call's)
        elif CALL_END in line:
            calls.append(current)
            current = {"reused": 0, "evaluated": None}
    return calls


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def trie_size(prompts: list[list[int]]) -> int:
    """Tokens a runtime must prefill for these prompts when every shared prefix is reused: the
    nodes of their token trie (sum of each prompt's length less its longest common prefix with
    any earlier one; the same in every order)."""
    total = 0
    for i, prompt in enumerate(prompts):
        total += len(prompt) - max((common_prefix(prompt, prompts[j]) for j in range(i)), default=0)
    return total


# ------------------------------------------------------------------ the runtime's own speed

class SpeedProbe:
    """Prefill and decode speed of the served model, measured by direct requests."""

    def __init__(self, base_url: str, model: str, log_path: Path, evidence: str) -> None:
        self.url = base_url + "/chat/completions"
        self.model, self.log_path, self.evidence = model, log_path, evidence

    def _post(self, messages: list[dict], max_tokens: int) -> tuple[float, dict]:
        body = {"model": self.model, "messages": messages, "max_tokens": max_tokens, "temperature": 0.0}
        started = time.perf_counter()
        response = httpx.post(self.url, json=body, timeout=600)
        seconds = time.perf_counter() - started
        response.raise_for_status()
        return seconds, response.json()["usage"]

    def measure(self) -> dict:
        messages = [
            {"role": "system", "content": f"[{uuid.uuid4().hex}] You are a careful assistant."},
            {"role": "user", "content": f"Evidence:\n{self.evidence}\n\nRetell the evidence above in detail, "
                                        "sentence by sentence, in at least 300 words."},
        ]
        log_offset = self.log_path.stat().st_size
        prefill_s, prefill_usage = self._post(messages, 1)
        decode_s, decode_usage = self._post(messages, DECODE_TOKENS)
        with self.log_path.open(errors="replace") as log_file:
            log_file.seek(log_offset)
            logged = server_log_calls(log_file.read())
        evaluated = logged[0]["evaluated"] if logged and logged[0]["evaluated"] is not None \
            else prefill_usage["prompt_tokens"]
        decode_tps = decode_usage["completion_tokens"] / decode_s
        prefill_tps = evaluated / max(1e-6, prefill_s - 1.0 / decode_tps)
        return {"prefill_tokens": evaluated, "prefill_s": round(prefill_s, 3),
                "prefill_tok_per_s": round(prefill_tps, 1),
                "decode_tokens": decode_usage["completion_tokens"], "decode_s": round(decode_s, 3),
                "decode_tok_per_s": round(decode_tps, 2)}


def mean_speed(measurements: list[dict], key: str) -> float:
    """Tokens per second at the mean time per token of the measurements."""
    return len(measurements) / sum(1.0 / m[key] for m in measurements)


# ------------------------------------------------------------------ the run

def stage0_at_the_limit(host: str, queries: int, threads: int | None) -> dict:
    with tempfile.TemporaryDirectory(prefix="forge-bench-enum-") as scratch:
        return _stage0_at_the_limit(host, queries, threads, Path(scratch))


@contextlib.contextmanager
def _served(host_config, threads: int | None):
    """The host's configuration with a live server: as `forge enumerate` serves it, or with
    `threads` llama.cpp threads."""
    if threads is None:
        with serving(host_config) as served:
            yield served
        return
    with EmbeddedServer(host_config.model, threads=threads) as server:
        yield dataclasses.replace(host_config, base_url=server.info.base_url)


def _stage0_at_the_limit(host: str, queries: int, threads: int | None, scratch: Path) -> dict:
    os.environ["FORGE_CACHE_DIR"] = str(scratch / "cache")  # our own server, log and caches
    store = Store(scratch / "stage0.duckdb")
    import_benchmarks(store, config.benchmarks_dir(), BENCHMARKS)
    host_config = get_host_config(store, host)
    plan = EnumerationPlan(host=host, split="dev", n_arms=6, probes=True, benchmarks=BENCHMARKS, limit=queries,
                           concurrency=1)
    plan.check(store)
    planned = list(planned_calls(store, plan, plan_work(store, plan)))
    query_of = {json.dumps(call.request.messages): (call.example.benchmark, call.example.example_id)
                for call in planned}
    queries_planned: dict[tuple[str, str], int] = {}  # each query's place in its benchmark's planned list
    for call in planned:
        key = (call.example.benchmark, call.example.example_id)
        if key not in queries_planned:
            queries_planned[key] = 1 + sum(benchmark == key[0] for benchmark, _ in queries_planned)
    raw = max((call.evidence.support_text("raw") for call in planned), key=len)[:PREFILL_CHARS]
    vocabulary, formatter = _loaded(str(model_path(host_config.model, config.models_dir())))

    def prompt_tokens(request: GenerationRequest) -> list[int]:
        rendered = formatter(messages=[dict(m) for m in request.messages])
        return vocabulary.tokenize(rendered.prompt.encode(), add_bos=not rendered.added_special, special=True)

    result: dict = {"host": host, "model": host_config.model, "queries": queries, "arms": 6, "probes": True,
                    "concurrency": plan.concurrency, "prefix_order": plan.prefix_order, "cpus": os.cpu_count(),
                    "server_threads": threads or os.cpu_count(),
                    "load_average_before": [round(x, 2) for x in os.getloadavg()]}
    per_query = []
    with _served(host_config, threads) as served:
        log_path = config.cache_dir() / "servers" / f"{host_config.model}.log"
        probe = SpeedProbe(served.base_url, served.model, log_path, raw)
        probe.measure()  # warm-up: first-call costs (buffers, page faults) are nobody's limit
        speeds = [probe.measure()]
        for (benchmark, _), place in queries_planned.items():  # one query at a time
            log_offset = log_path.stat().st_size
            one_query = dataclasses.replace(plan, benchmarks=(benchmark,), limit=None, per_benchmark=place)
            report, calls = asyncio.run(_enumerate(store, one_query, served))
            with log_path.open(errors="replace") as log_file:
                log_file.seek(log_offset)
                logged = server_log_calls(log_file.read())
            speeds.append(probe.measure())  # after this query, before the next
            per_query.append(_query_figures(report, calls, logged, prompt_tokens, query_of,
                                             speeds[-2:], load=os.getloadavg()[0]))
            print(json.dumps(per_query[-1]), file=sys.stderr, flush=True)
    result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    seconds = sum(q["seconds"] for q in per_query)
    limit = sum(q["limit_seconds"] for q in per_query)
    totals = {key: sum(q[key] for q in per_query)
              for key in ("calls", "prompt_tokens", "completion_tokens", "prompt_tokens_reused",
                          "prompt_tokens_ideal_prefill", "prompt_tokens_reusable")}
    result.update({
        "calls": totals["calls"], "seconds": round(seconds, 2), "limit_seconds": round(limit, 2),
        "ratio": round(limit / seconds, 3), "goal": GOAL, "goal_met": limit / seconds >= GOAL,
        **{key: value for key, value in totals.items() if key != "calls"},
        "prompt_tokens_prefilled": totals["prompt_tokens"] - totals["prompt_tokens_reused"],
        "reuse_ratio": round(totals["prompt_tokens_reused"] / totals["prompt_tokens_reusable"], 3),
        "prefill_tok_per_s_mean": round(mean_speed(speeds, "prefill_tok_per_s"), 1),
        "decode_tok_per_s_mean": round(mean_speed(speeds, "decode_tok_per_s"), 2),
        "per_query": per_query, "speed_measurements": speeds,
    })
    return result


async def _enumerate(store: Store, plan: EnumerationPlan, served) -> tuple:
    async with hosted(served) as client:
        recording = RecordingHost(client)
        report = await enumerate_arms(store, plan, recording)
    if report.errors:
        raise SystemExit(f"{len(report.errors)} calls failed, e.g. {report.errors[0]}")
    return report, recording.calls


def _query_figures(report, calls: list, logged: list[dict], prompt_tokens, query_of: dict, speeds: list[dict],
                   load: float) -> dict:
    """One query's run against its limit, at the speeds measured just before and just after it."""
    if len(logged) != len(calls):
        raise SystemExit(f"the server logged {len(logged)} calls, the client made {len(calls)}")
    tokens = [prompt_tokens(request) for request, _ in calls]
    if any(len(t) != generation.tokens_in for t, (_, generation) in zip(tokens, calls)):
        raise SystemExit("prompt tokens counted here differ from the server's usage")
    queries = {query_of[json.dumps(request.messages)] for request, _ in calls}
    if len(queries) != 1:
        raise SystemExit(f"one query per run expected, got {sorted(queries)}")
    prompt_total = sum(len(t) for t in tokens)
    ideal_prefill = trie_size(tokens)
    reused = sum(len(t) if entry["reused"] < 0 else entry["reused"] for t, entry in zip(tokens, logged))
    completion_total = sum(generation.tokens_out for _, generation in calls)
    prefill_tps, decode_tps = mean_speed(speeds, "prefill_tok_per_s"), mean_speed(speeds, "decode_tok_per_s")
    limit = ideal_prefill / prefill_tps + completion_total / decode_tps
    return {"query": "/".join(queries.pop()), "calls": report.calls, "seconds": round(report.seconds, 2),
            "limit_seconds": round(limit, 2), "ratio": round(limit / report.seconds, 3),
            "prompt_tokens": prompt_total, "completion_tokens": completion_total, "prompt_tokens_reused": reused,
            "prompt_tokens_ideal_prefill": ideal_prefill, "prompt_tokens_reusable": prompt_total - ideal_prefill,
            "prefill_tok_per_s": round(prefill_tps, 1), "decode_tok_per_s": round(decode_tps, 2),
            "load_average_1min": round(load, 2)}


# ------------------------------------------------------------------ the older sweep

async def _sweep_one(store: Store, plan: EnumerationPlan, served) -> float:
    async with hosted(served) as client:
        started = time.perf_counter()
        report = await enumerate_arms(store, plan, client)
        seconds = time.perf_counter() - started
    if report.errors:
        raise RuntimeError(f"{len(report.errors)} failed calls: {report.errors[0]}")
    return report.calls * 3600.0 / seconds


def sweep(host: str, queries: int) -> dict:
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["FORGE_CACHE_DIR"] = str(Path(scratch) / "cache")
        host_config = get_host_config(Store(Path(scratch) / "hosts.duckdb"), host)
        with serving(host_config) as served:
            for concurrency, prefix_order in SWEEP:
                store = Store(Path(scratch) / f"c{concurrency}-{prefix_order}.duckdb")
                import_benchmarks(store, config.benchmarks_dir(), ["hotpotqa", "popqa"])
                served_config = dataclasses.replace(served, max_concurrency=concurrency)
                plan = EnumerationPlan(host=host, split="dev", n_arms=6, benchmarks=("hotpotqa", "popqa"),
                                       limit=queries, concurrency=concurrency, prefix_order=prefix_order)
                rate = asyncio.run(_sweep_one(store, plan, served_config))
                results[f"c{concurrency}_{'prefix' if prefix_order else 'arm_major'}"] = round(rate, 1)
    reference = results["c1_prefix"]
    return {"host": host, "queries": queries, "query_arms_per_hour": results,
            "ratio_to_c1_prefix": {k: round(v / reference, 3) for k, v in results.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="embedded")
    parser.add_argument("--queries", type=int, default=5, help="dev queries (round-robin over the benchmarks)")
    parser.add_argument("--threads", type=int, default=None,
                        help="llama.cpp threads of the server (default: the embedded host's, one per CPU)")
    parser.add_argument("--sweep", action="store_true", help="the concurrency x order sweep instead (no probes)")
    args = parser.parse_args()
    if args.sweep:
        result = sweep(args.host, args.queries)
    else:
        result = stage0_at_the_limit(args.host, args.queries, args.threads)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
