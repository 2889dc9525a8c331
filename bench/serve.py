"""`forge serve` overhead: what the server adds to the host calls of a request (client-measured
latency minus the host calls' own latency, from the `forge` object) at p50 and p95, and requests
per second with many in flight. The host is the test double of tests/support/answering_server.py (an
OpenAI-compatible server answering at once), so the figures are FORGE's: HTTP, parsing, BM25,
embedding, features, the router, the host client and the response. Runs on a copy of the store
(FORGE_STORE), with the router given (default: the embedded host's newest Lite checkpoint).
Prints one JSON line last.
Run: `.venv/bin/python bench/serve.py [--router lite] [--benchmark hotpotqa] [--requests 200] [--in-flight 16]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from forge_core import config
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.routing.checkpoints import latest_checkpoint
from forge_core.server.app import ServeSettings, serving_in_thread
from forge_core.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from support.answering_server import AnsweringServer  # the test double, as the fast host

DOUBLE = "bench-double"


async def one(client: httpx.AsyncClient, url: str, question: str) -> float:
    started = time.perf_counter()
    response = await client.post(f"{url}/v1/chat/completions",
                                 json={"model": "forge", "messages": [{"role": "user", "content": question}]})
    response.raise_for_status()
    return (time.perf_counter() - started) * 1000.0 - response.json()["forge"]["latency_ms"]  # the one host call


async def sequential(url: str, questions: list[str]) -> list[float]:
    async with httpx.AsyncClient(timeout=120) as client:
        return [await one(client, url, q) for q in questions]


async def concurrent(url: str, questions: list[str], in_flight: int) -> float:
    limit = asyncio.Semaphore(in_flight)
    async with httpx.AsyncClient(timeout=300) as client:

        async def bounded(question: str) -> float:
            async with limit:
                return await one(client, url, question)

        started = time.perf_counter()
        await asyncio.gather(*(bounded(q) for q in questions))
        return len(questions) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--router", default=None, help="a checkpoint id (default: embedded's newest Lite)")
    parser.add_argument("--benchmark", default="hotpotqa")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--in-flight", type=int, default=16)
    args = parser.parse_args()
    load_before = os.getloadavg()  # the figures mean something only on an idle machine
    source = Store(config.store_path())
    router = args.router or latest_checkpoint(source, "embedded", "lite")
    if router is None:
        raise SystemExit("no Lite checkpoint of the embedded host in the store: pass --router")
    with tempfile.TemporaryDirectory() as directory, AnsweringServer() as double:
        shutil.copyfile(source.path, Path(directory) / "store.duckdb")
        store = Store(Path(directory) / "store.duckdb")
        save_host_config(store, HostConfig(name=DOUBLE, kind="openai", model="m", base_url=double.base_url,
                                           max_retries=0, max_concurrency=args.in_flight))
        ids = store.split_ids(args.benchmark, "test")[: args.requests]
        questions = [example.question for example in store.examples(args.benchmark, ids)]
        with serving_in_thread(store, ServeSettings(host=DOUBLE, benchmark=args.benchmark, router=router)) as url:
            asyncio.run(sequential(url, questions[:5]))  # warm-up
            overhead = asyncio.run(sequential(url, questions))
            rps = asyncio.run(concurrent(url, questions, args.in_flight))
    result = {"router": router, "requests": len(questions),
              "overhead_p50_ms": round(float(np.percentile(overhead, 50)), 2),
              "overhead_p95_ms": round(float(np.percentile(overhead, 95)), 2), "requests_per_s": round(rps, 1),
              "in_flight": args.in_flight, "load_average_before": load_before, "load_average_after": os.getloadavg()}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
