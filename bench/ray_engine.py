"""Stage 0 on Ray against the in-process client, as a ratio in one run.

The fixed-latency test server of `bench/client_throughput.py` stands in for the host (its own
process; default 200 ms an answer). On real imported train queries, the same plan (`--calls`
calls, six arms a query, `--concurrency` queries in flight) runs twice into two fresh stores: in
process (`enumerate_on_host`) and as a Ray Data job on a local Ray instance (`enumerate_on_ray`;
Ray's start-up is timed apart and not counted). Prints one JSON line: each run's calls, seconds
(first call to last row) and calls a second, the ideal rate (concurrency / latency), and
`ray_over_in_process`, the ratio of the two rates (the issue's goal: at least 0.8 on a 2-core
machine), with the load average before and after.
Run: `.venv/bin/python bench/ray_engine.py [--latency 0.2] [--calls 1200] [--concurrency 32]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from client_throughput import ARMS, BENCHMARKS, fixed_latency_server, test_host  # noqa: E402

from forge_core import config  # noqa: E402
from forge_core.data.importing import import_benchmarks  # noqa: E402
from forge_core.engines import ray_session  # noqa: E402
from forge_core.enumeration.planning import EnumerationPlan  # noqa: E402
from forge_core.enumeration.ray_stage0 import enumerate_on_ray  # noqa: E402
from forge_core.enumeration.runner import enumerate_on_host  # noqa: E402
from forge_core.hosts.registry import save_host_config  # noqa: E402
from forge_core.store import Store  # noqa: E402


def fresh_store(folder: Path, name: str, host_name: str, port: int, concurrency: int) -> Store:
    store = Store(folder / f"{name}.duckdb")
    import_benchmarks(store, config.benchmarks_dir(), list(BENCHMARKS))
    save_host_config(store, test_host(host_name, [port], concurrency))
    return store


def rate(report) -> dict:
    if report.errors:
        raise SystemExit(f"{len(report.errors)} calls failed, e.g. {report.errors[0]}")
    return {"calls": report.calls, "seconds": round(report.seconds, 2),
            "calls_per_s": round(report.calls / report.seconds, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="the test server's answer time in seconds")
    parser.add_argument("--calls", type=int, default=1200, help="calls per run")
    parser.add_argument("--concurrency", type=int, default=32, help="queries in flight")
    args = parser.parse_args()
    with fixed_latency_server(args.latency) as ([port], _):
        result = {"latency_s": args.latency, "concurrency": args.concurrency, "cpus": os.cpu_count(),
                  "load_average_before": os.getloadavg(), "ideal_calls_per_s": args.concurrency / args.latency}
        host = test_host("ray-bench", [port], args.concurrency)
        plan = EnumerationPlan(host=host.name, split="train", n_arms=ARMS, benchmarks=BENCHMARKS,
                               limit=max(1, args.calls // ARMS), concurrency=args.concurrency)
        with tempfile.TemporaryDirectory() as scratch:
            local = fresh_store(Path(scratch), "local", host.name, port, args.concurrency)
            result["in_process"] = rate(asyncio.run(enumerate_on_host(local, plan, host)))
            started = time.monotonic()
            ray_session()
            result["ray_start_s"] = round(time.monotonic() - started, 2)
            on_ray = fresh_store(Path(scratch), "ray", host.name, port, args.concurrency)
            result["ray"] = rate(enumerate_on_ray(on_ray, plan, host))
        result["ray_over_in_process"] = round(result["ray"]["calls_per_s"] / result["in_process"]["calls_per_s"], 3)
        result["load_average_after"] = os.getloadavg()
        print(json.dumps(result))


if __name__ == "__main__":
    main()
