"""Tracing's cost per request in `forge serve`: the client-measured latency of a routed request with
OpenTelemetry on (OTEL_EXPORTER_OTLP_ENDPOINT set, spans batched and exported over OTLP/HTTP to a
local receiver) as a ratio to tracing off, in the same process, server and run. Rounds alternate
off and on (so the machine's load drifts over both alike); each round sends the same questions
one at a time. The host is the test double of tests/support/answering_server.py (answering at
once), so the figure is the share of FORGE's own per-request time. Runs on a copy of the store
(FORGE_STORE) with the router given (default: the embedded host's newest Lite checkpoint).
Prints one JSON line last.
Run: `.venv/bin/python bench/tracing.py [--router lite] [--benchmark hotpotqa] [--requests 40] [--rounds 6]`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from forge_core import config, telemetry
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.routing.checkpoints import latest_checkpoint
from forge_core.server.app import ServeSettings, serving_in_thread
from forge_core.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from ratios import ratio  # noqa: E402

from support.answering_server import AnsweringServer  # noqa: E402  (the test double, as the fast host)
from support.otlp_receiver import OtlpReceiver  # noqa: E402

DOUBLE = "bench-double"


def timed(client: httpx.Client, url: str, questions: list[str]) -> list[float]:
    """Milliseconds of each request, sent one at a time."""
    times = []
    for question in questions:
        started = time.perf_counter()
        client.post(f"{url}/v1/chat/completions", json={"messages": [{"role": "user", "content": question}]},
                    timeout=120).raise_for_status()
        times.append((time.perf_counter() - started) * 1000.0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--router", default=None, help="a checkpoint id (default: embedded's newest Lite)")
    parser.add_argument("--benchmark", default="hotpotqa")
    parser.add_argument("--requests", type=int, default=40, help="questions a round")
    parser.add_argument("--rounds", type=int, default=6, help="rounds of each mode, alternating")
    args = parser.parse_args()
    os.environ.pop(telemetry.ENDPOINT_ENV, None)
    load_before = os.getloadavg()
    source = Store(config.store_path())
    router = args.router or latest_checkpoint(source, "embedded", "lite")
    if router is None:
        raise SystemExit("no Lite checkpoint of the embedded host in the store: pass --router")
    times: dict[str, list[float]] = {"off": [], "on": []}
    with tempfile.TemporaryDirectory() as directory, AnsweringServer() as double, OtlpReceiver() as receiver:
        shutil.copyfile(source.path, Path(directory) / "store.duckdb")
        store = Store(Path(directory) / "store.duckdb")
        save_host_config(store, HostConfig(name=DOUBLE, kind="openai", model="m", base_url=double.base_url,
                                           max_retries=0))
        ids = store.split_ids(args.benchmark, "test")[: args.requests]
        questions = [example.question for example in store.examples(args.benchmark, ids)]
        settings = ServeSettings(host=DOUBLE, benchmark=args.benchmark, router=router, traffic_log=False)
        with serving_in_thread(store, settings) as url, httpx.Client() as client:
            timed(client, url, questions[:5])  # warm-up
            for _ in range(args.rounds):
                for mode in ("off", "on"):
                    if mode == "on":
                        os.environ[telemetry.ENDPOINT_ENV] = receiver.endpoint
                    times[mode] += timed(client, url, questions)
                    os.environ.pop(telemetry.ENDPOINT_ENV, None)
        telemetry.flush()
        spans = len([span for span in receiver.spans() if span.name == telemetry.REQUEST_SPAN])
    p50 = {mode: float(np.percentile(values, 50)) for mode, values in times.items()}
    mean = {mode: float(np.mean(values)) for mode, values in times.items()}
    print(json.dumps({"router": router, "requests_each": len(times["on"]), "request_spans_received": spans,
                      "p50_ms_off": round(p50["off"], 2), "p50_ms_on": round(p50["on"], 2),
                      "p50_ratio_on_to_off": ratio(p50["on"], p50["off"]),
                      "mean_ratio_on_to_off": ratio(mean["on"], mean["off"]),
                      "load_average_before": load_before, "load_average_after": os.getloadavg()}))


if __name__ == "__main__":
    main()
