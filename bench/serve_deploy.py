"""`forge serve` with a token budget's controller and the traffic log on, against the same server
without them (fixed weights, no log), in the same run: the overhead the server adds to a request's
host call (client-measured latency minus the host call's own, from the `forge` object), median and
p95, and the ratio of the medians. The host is the test double of tests/support/answering_server.py
(answering at once), the router a cost-conditioned Lite checkpoint (default: the embedded host's
newest); the two servers alternate in rounds so drift on a shared machine hits both alike. Runs on
a copy of the store (FORGE_STORE). Prints one JSON line last.
Run: `.venv/bin/python bench/serve_deploy.py [--router CKPT] [--benchmark hotpotqa] [--requests 100] [--rounds 3]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

from forge_core import config
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.routing.checkpoints import default_router
from forge_core.server.app import ServeSettings, serving_in_thread
from forge_core.server.deployment import WeightsRequest
from forge_core.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from serve import sequential  # the same client-side measurement as bench/serve.py  # noqa: E402

from support.answering_server import AnsweringServer  # the test double, as the fast host  # noqa: E402

DOUBLE = "bench-double"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--router", default=None, help="a cost-conditioned checkpoint id (default: embedded's)")
    parser.add_argument("--benchmark", default="hotpotqa")
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    load_before = os.getloadavg()
    source = Store(config.store_path())
    router = args.router or default_router(source, "embedded")
    if router is None:
        raise SystemExit("no router of the embedded host in the store: pass --router")
    overhead: dict[str, list[float]] = {"plain": [], "deployed": []}
    with tempfile.TemporaryDirectory() as directory, AnsweringServer() as double:
        shutil.copyfile(source.path, Path(directory) / "store.duckdb")
        store = Store(Path(directory) / "store.duckdb")
        save_host_config(store, HostConfig(name=DOUBLE, kind="openai", model="m", base_url=double.base_url,
                                           max_retries=0))
        ids = store.split_ids(args.benchmark, "test")[: args.requests]
        questions = [example.question for example in store.examples(args.benchmark, ids)]
        if not questions:
            raise SystemExit(f"no {args.benchmark} test question in the store: `forge data import` first")
        settings = {
            "plain": ServeSettings(host=DOUBLE, benchmark=args.benchmark, router=router, traffic_log=False),
            "deployed": ServeSettings(host=DOUBLE, benchmark=args.benchmark, router=router,
                                      traffic_dir=Path(directory) / "traffic",
                                      weights=WeightsRequest(budget_tokens=300.0, lambda_in=0.1, lambda_out=0.2)),
        }
        for _ in range(args.rounds):
            for name, setting in settings.items():
                with serving_in_thread(store, setting) as url:
                    asyncio.run(sequential(url, questions[:5]))  # warm-up
                    overhead[name] += asyncio.run(sequential(url, questions))
    medians = {name: float(np.median(values)) for name, values in overhead.items()}
    result = {"router": router, "requests": len(questions) * args.rounds,
              **{f"{name}_overhead_p50_ms": round(value, 2) for name, value in medians.items()},
              **{f"{name}_overhead_p95_ms": round(float(np.percentile(values, 95)), 2)
                 for name, values in overhead.items()},
              "deployed_over_plain_p50": round(medians["deployed"] / medians["plain"], 3),
              "load_average_before": load_before, "load_average_after": os.getloadavg()}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
