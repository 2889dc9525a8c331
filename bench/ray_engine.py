"""FORGE on Ray against FORGE in one process, as ratios in one run (issue #52).

Four comparisons, each against its reference in the same run, on this machine:
- **Stage 0** (`enumerate_on_host` against `enumerate_on_ray`): the fixed-latency test server of
  `bench/client_throughput.py` stands in for the host (its own process; default 200 ms an answer).
  On real imported train queries, the same plan (`--calls` calls, six arms a query, `--concurrency`
  queries in flight) runs into fresh stores: in process, as a Ray Data job on a local instance of
  this machine's cores, and as the same job on a two-node `ray.cluster_utils.Cluster` (both nodes
  on this machine, each given this machine's core count: the second node adds worker processes,
  not cores). Ray's start-up is timed apart and not counted. Each run's calls, seconds (first
  call to last row) and calls a second; `ray_over_in_process` (the issue's goal: at least 0.8)
  and `two_nodes_over_one_node`. Each run also gives `first_row_s` (from the start to the first
  query's rows: for Ray, its pipeline's start-up, paid once a job) and its rate after that row;
  `stage0_ray_over_in_process_after_first_row` is the ratio of those rates. `whole_job_s` times the
  whole call (planning, retrieval and, on Ray, the workers' warm-up that overlaps them);
  `stage0_ray_over_in_process_whole_job` is in-process seconds over Ray's (a throughput ratio).
- **What a call costs the driver**, in each Ray run: the queries the driver plans and ships
  (`query_tasks`: question, evidence, calls), pickled (Ray's object store holds as much while the
  job runs) and on the driver's heap (`tracemalloc`: what freeing them gives back), a call.
- **Serve** (`serving_in_thread` against `run_replicas` with one replica): the same `httpx` client
  sends `--requests` chat completions one at a time (after 20 unmeasured) to the app serving the
  Summary arm, its host the counting test double of tests/support (answering at once); p50 and
  p95 latency of each, the overhead a request (Ray's p50 minus the single server's) and the ratio;
  beside them, the same client against a one-route Starlette app in one Serve replica (Serve's own
  path, no FORGE in it).
- **Crossfit** (`run_crossfit` in process against `engine="ray"`): a Stage-1 crossfit of the demo
  store's embedded host at weights it has no stored run of (`--crossfit-folds` folds), into two
  copies of the store; wall seconds of each and `ray_over_in_process` (below 1: Ray is faster).
Prints one JSON line with the load average before and after.
Run: `.venv/bin/python bench/ray_engine.py [--latency 0.2] [--calls 1200] [--concurrency 32] [--requests 200]`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import pickle
import socket
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from client_throughput import ARMS, BENCHMARKS, fixed_latency_server, test_host  # noqa: E402

from forge_core import config  # noqa: E402
from forge_core.data.importing import import_benchmarks  # noqa: E402
from forge_core.engines import ray_session  # noqa: E402
from forge_core.enumeration.planning import EnumerationPlan, plan_work  # noqa: E402
from forge_core.enumeration.ray_stage0 import enumerate_on_ray, query_tasks  # noqa: E402
from forge_core.enumeration.runner import enumerate_on_host  # noqa: E402
from forge_core.evaluation.crossfit import CrossfitSettings, run_crossfit  # noqa: E402
from forge_core.hosts.base import HostConfig  # noqa: E402
from forge_core.hosts.registry import save_host_config  # noqa: E402
from forge_core.server.app import ServeSettings, serving_in_thread  # noqa: E402
from forge_core.server.ray_serve import APP_NAME, run_replicas  # noqa: E402
from forge_core.store import Store  # noqa: E402

from support.counting_host import CountingHost  # noqa: E402  (the test double, as the host a server calls)

SERVE_BENCHMARK = "musique"
SERVE_MODEL = "forge-arm-summary:no_think"
WARM_UP = 20  # requests sent before the measured ones


def imported_store(path: Path) -> Store:
    store = Store(path)
    import_benchmarks(store, config.benchmarks_dir(), list(BENCHMARKS))
    return store


class FirstRow:
    """An `on_progress` that notes when the first query's rows were taken and how many calls then."""

    def __init__(self) -> None:
        self.at: float | None = None
        self.calls = 0

    def __call__(self, report) -> None:
        if self.at is None:
            self.at, self.calls = time.monotonic(), report.calls


def rate(report, first: FirstRow) -> dict:
    """Calls, seconds (first call started to last row) and calls a second; `first_row_s`, from the
    start to the first query's rows (Ray: its pipeline's start-up), and the rate after it."""
    if report.errors:
        raise SystemExit(f"{len(report.errors)} calls failed, e.g. {report.errors[0]}")
    after = report.started_at + report.seconds - first.at
    return {"calls": report.calls, "seconds": round(report.seconds, 2),
            "calls_per_s": round(report.calls / report.seconds, 1),
            "first_row_s": round(first.at - report.started_at, 2),
            "after_first_row_calls_per_s": round((report.calls - first.calls) / after, 1)}


def stage0_on_ray(store: Store, plan: EnumerationPlan, host: HostConfig) -> dict:
    """The plan on the Ray instance this process is connected to, with what the driver holds a call
    (the queries it ships: pickled, and on its heap by `tracemalloc`)."""
    tracemalloc.start()
    tasks = query_tasks(store, plan, plan_work(store, plan))
    with_tasks = tracemalloc.get_traced_memory()[0]
    shipped = len(pickle.dumps(tasks))
    del tasks
    gc.collect()
    heap = with_tasks - tracemalloc.get_traced_memory()[0]  # what the queries alone held (not the retrievers)
    tracemalloc.stop()
    first, started = FirstRow(), time.monotonic()
    result = rate(enumerate_on_ray(store, plan, host, on_progress=first), first)
    result["whole_job_s"] = round(time.monotonic() - started, 2)
    result["driver_pickled_bytes_per_call"] = round(shipped / result["calls"])
    result["driver_heap_bytes_per_call"] = round(heap / result["calls"])
    return result


def stage0(folder: Path, args: argparse.Namespace, result: dict) -> None:
    """In process, on one local node and on two; Ray is shut down at the end."""
    with fixed_latency_server(args.latency) as ([port], _):
        host = test_host("ray-bench", [port], args.concurrency)
        plan = EnumerationPlan(host=host.name, split="train", n_arms=ARMS, benchmarks=BENCHMARKS,
                               limit=max(1, args.calls // ARMS), concurrency=args.concurrency)
        stores = {}
        for name in ("local", "one_node", "two_nodes"):
            stores[name] = imported_store(folder / f"{name}.duckdb")
            save_host_config(stores[name], host)
        result["stage0_ideal_calls_per_s"] = args.concurrency / args.latency
        first, started = FirstRow(), time.monotonic()
        result["stage0_in_process"] = rate(asyncio.run(enumerate_on_host(stores["local"], plan, host, first)), first)
        result["stage0_in_process"]["whole_job_s"] = round(time.monotonic() - started, 2)
        started = time.monotonic()
        ray_session()
        result["ray_start_s"] = round(time.monotonic() - started, 2)
        result["stage0_ray_one_node"] = stage0_on_ray(stores["one_node"], plan, host)
        result["stage0_ray_two_nodes"] = two_nodes(lambda: stage0_on_ray(stores["two_nodes"], plan, host))
    result["stage0_ray_over_in_process"] = ratio(result["stage0_ray_one_node"], result["stage0_in_process"])
    result["stage0_ray_over_in_process_whole_job"] = round(
        result["stage0_in_process"]["whole_job_s"] / result["stage0_ray_one_node"]["whole_job_s"], 3)
    result["stage0_ray_over_in_process_after_first_row"] = ratio(
        result["stage0_ray_one_node"], result["stage0_in_process"], "after_first_row_calls_per_s")
    result["stage0_two_nodes_over_one_node"] = ratio(result["stage0_ray_two_nodes"], result["stage0_ray_one_node"])


def ratio(numerator: dict, denominator: dict, key: str = "calls_per_s") -> float:
    return round(numerator[key] / denominator[key], 3)


def latencies_ms(url: str, questions: list[str]) -> dict:
    """p50 and p95 of one request at a time through one keep-alive client, after `WARM_UP`."""
    with httpx.Client(base_url=url, timeout=60.0) as client:
        measured = []
        for index, question in enumerate(questions):
            started = time.perf_counter()
            reply = client.post("/v1/chat/completions",
                                json={"model": SERVE_MODEL, "messages": [{"role": "user", "content": question}]})
            reply.raise_for_status()
            if index >= WARM_UP:
                measured.append((time.perf_counter() - started) * 1000.0)
    return {"requests": len(measured), "p50_ms": round(float(np.percentile(measured, 50)), 2),
            "p95_ms": round(float(np.percentile(measured, 95)), 2)}


def serve_overhead(folder: Path, args: argparse.Namespace) -> dict:
    """One request at a time to the single-process server and to one Ray Serve replica."""
    from ray import serve

    with CountingHost() as host:
        store = imported_store(folder / "serve.duckdb")
        save_host_config(store, HostConfig(name="counting", kind="openai", model="m", base_url=host.base_url,
                                           max_retries=0, timeout_s=10.0))
        settings = ServeSettings(host="counting", benchmark=SERVE_BENCHMARK, arm="summary:no_think",
                                 traffic_dir=folder / "traffic")
        examples = store.examples(SERVE_BENCHMARK)
        questions = [examples[i % len(examples)].question for i in range(WARM_UP + args.requests)]
        with serving_in_thread(store, settings) as url:
            single = latencies_ms(url, questions)
        port = free_port()
        try:
            run_replicas(store, settings, 1, "127.0.0.1", port, until_interrupted=False)
            on_ray = latencies_ms(f"http://127.0.0.1:{port}", questions)
            serve.delete(APP_NAME)
            serve.run(serve.deployment(num_replicas=1)(serve.ingress(bare_app)(BareApp)).bind(), name="bare",
                      route_prefix="/")
            bare = latencies_ms(f"http://127.0.0.1:{port}", questions)
        finally:
            serve.shutdown()
        host_calls = len(host.received)
    return {"single_process": single, "ray_serve_one_replica": on_ray, "ray_serve_bare_app": bare,
            "host_calls": host_calls,
            "overhead_ms_per_request": round(on_ray["p50_ms"] - single["p50_ms"], 2),
            "ray_over_single_p50": ratio(on_ray, single, "p50_ms")}


class BareApp:
    """A Serve deployment of `bare_app` and nothing else."""


def bare_app() -> Starlette:
    """One route answering every chat completion with the same JSON: Serve's own path, no FORGE."""
    async def answer(request: Request) -> JSONResponse:
        return JSONResponse({"choices": [{"message": {"role": "assistant", "content": "a"}}]})

    return Starlette(routes=[Route("/v1/chat/completions", answer, methods=["POST"])])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def crossfit_times(folder: Path, args: argparse.Namespace) -> dict:
    """A Stage-1 crossfit of the demo store in process and as Ray tasks, each into its own copy."""
    settings = CrossfitSettings("embedded", lambda_in=0.3, lambda_out=0.5, folds=args.crossfit_folds, stage=1)
    seconds = {}
    for engine in ("local", "ray"):
        store = imported_store(folder / f"crossfit-{engine}.duckdb")
        store.load_export_once(config.demo_dir())
        seconds[engine] = timed(lambda: run_crossfit(store, settings, engine=engine))
    return {"folds": args.crossfit_folds, "stage": 1, "in_process_s": seconds["local"], "ray_s": seconds["ray"],
            "ray_over_in_process": round(seconds["ray"] / seconds["local"], 3)}


def timed(work: Callable[[], object]) -> float:
    started = time.monotonic()
    work()
    return round(time.monotonic() - started, 2)


def two_nodes(run: Callable[[], dict]) -> dict:
    """`run` on a two-node local cluster (this machine's cores on each node), then torn down."""
    import ray
    from ray.cluster_utils import Cluster

    ray.shutdown()  # the one-node instance
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": os.cpu_count()})
    cluster.add_node(num_cpus=os.cpu_count())
    try:
        ray_session(cluster.address)
        return run()
    finally:
        ray.shutdown()
        cluster.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="the test server's answer time in seconds")
    parser.add_argument("--calls", type=int, default=1200, help="Stage-0 calls per run")
    parser.add_argument("--concurrency", type=int, default=32, help="Stage-0 queries in flight")
    parser.add_argument("--requests", type=int, default=200, help="measured requests to each server")
    parser.add_argument("--crossfit-folds", type=int, default=4, help="folds of the crossfit compared")
    args = parser.parse_args()
    result = {"cpus": os.cpu_count(), "load_average_before": os.getloadavg(), "latency_s": args.latency,
              "concurrency": args.concurrency}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        stage0(folder, args, result)
        result["serve"] = serve_overhead(folder, args)  # on a local instance started afresh
        result["crossfit"] = crossfit_times(folder, args)
    result["load_average_after"] = os.getloadavg()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
