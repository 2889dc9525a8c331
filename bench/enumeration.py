"""Enumeration throughput on the embedded host: query-arms per hour at concurrency 1, 2 and 4,
with and without prefix-aware ordering, all on the same queries in the same run.

Each configuration enumerates the same dev queries (6 arms, no probes) into its own temporary
store, against one shared embedded server. Prints one JSON line last with query-arms per hour
per configuration and each one's ratio to concurrency 1 with prefix-aware ordering.
Run: `.venv/bin/python bench/enumeration.py [--host embedded] [--queries 4]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

from forge_core import config
from forge_core.data.importing import import_benchmarks
from forge_core.enumeration.planning import EnumerationPlan
from forge_core.enumeration.runner import enumerate_arms
from forge_core.hosts.lifetime import hosted
from forge_core.hosts.registry import get_host_config, serving
from forge_core.store import Store

CONFIGURATIONS = [(c, p) for c in (1, 2, 4) for p in (True, False)]


async def run_one(store: Store, plan: EnumerationPlan, served) -> float:
    async with hosted(served) as client:
        started = time.perf_counter()
        report = await enumerate_arms(store, plan, client)
        seconds = time.perf_counter() - started
    if report.errors:
        raise RuntimeError(f"{len(report.errors)} failed calls: {report.errors[0]}")
    return report.calls * 3600.0 / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="embedded")
    parser.add_argument("--queries", type=int, default=4, help="dev queries per configuration")
    args = parser.parse_args()
    results = {}
    host_config = get_host_config(Store(config.store_path()), args.host)
    with tempfile.TemporaryDirectory() as scratch, serving(host_config) as served:
        for concurrency, prefix_order in CONFIGURATIONS:
            store = Store(Path(scratch) / f"c{concurrency}-{prefix_order}.duckdb")
            import_benchmarks(store, config.benchmarks_dir(), ["hotpotqa", "popqa"])
            served_config = served.__class__(**{**served.__dict__, "max_concurrency": concurrency})
            plan = EnumerationPlan(host=args.host, split="dev", n_arms=6, benchmarks=("hotpotqa", "popqa"),
                                   limit=args.queries, concurrency=concurrency, prefix_order=prefix_order)
            rate = asyncio.run(run_one(store, plan, served_config))
            results[f"c{concurrency}_{'prefix' if prefix_order else 'arm_major'}"] = round(rate, 1)
    reference = results["c1_prefix"]
    print(json.dumps({"host": args.host, "queries": args.queries, "query_arms_per_hour": results,
                      "ratio_to_c1_prefix": {k: round(v / reference, 3) for k, v in results.items()}}))


if __name__ == "__main__":
    main()
