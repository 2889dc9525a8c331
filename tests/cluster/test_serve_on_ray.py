"""`forge serve --engine ray`: the app in two Ray Serve replicas behind one ingress, one traffic record
per request whichever replica answered, and a token budget held by the replicas' pacers together."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.server.app import ServeSettings
from forge_core.server.deployment import WeightsRequest
from forge_core.server.ray_serve import APP_NAME, run_replicas
from forge_core.store import Store
from forge_core.traffic_log import SEGMENT_GLOB, read_traffic

from support.counting_host import CountingHost, replay_questions
from support.resources import require_module
from support.stores import copy_store

pytestmark = pytest.mark.e2e  # a local Ray cluster: scripts/test.sh runs the e2e tests after the default suite

openai = require_module("openai", "the openai client is a test extra: pip install -e '.[test]'")
BENCHMARK = "musique"
REPLICAS = 2


@pytest.fixture(scope="module")
def serve_port(ray_local) -> Iterator[int]:
    """The port of Serve's ingress for this module (Serve keeps the first one it was started on)."""
    from ray import serve

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    yield port
    serve.shutdown()


def served(store: Store, settings: ServeSettings, port: int) -> str:
    """The replicas started behind the ingress; the base URL the `openai` client takes."""
    run_replicas(store, settings, REPLICAS, "127.0.0.1", port, until_interrupted=False)
    return f"http://127.0.0.1:{port}/v1"


def ask(url: str, questions: list[str], model: str = "forge") -> list[int]:
    """Each question through the `openai` client; each reply's total tokens."""
    client = openai.OpenAI(base_url=url, api_key="unused")
    return [client.chat.completions.create(model=model, messages=[{"role": "user", "content": q}]).usage.total_tokens
            for q in questions]


def with_host(store: Store, folder: Path, host: CountingHost) -> Store:
    copy = copy_store(store, folder)
    save_host_config(copy, HostConfig(name="counting", kind="openai", model="m", base_url=host.base_url,
                                      max_retries=0, timeout_s=10.0))
    return copy


def test_two_replicas_log_one_record_per_request(imported_store: Store, serve_port: int, tmp_path: Path) -> None:
    from ray import serve

    with CountingHost() as host:
        store = with_host(imported_store, tmp_path / "store", host)
        settings = ServeSettings(host="counting", benchmark=BENCHMARK, arm="summary:no_think",
                                 traffic_dir=tmp_path / "traffic")
        try:
            url = served(store, settings, serve_port)
            questions = [e.question for e in store.examples(BENCHMARK)[:40]]
            tokens = ask(url, questions, model="forge-arm-summary:no_think")
        finally:
            serve.delete(APP_NAME)
        assert len(host.received) == len(questions)  # one host call a request, whichever replica routed it
    records = read_traffic(tmp_path / "traffic").requests
    answered = [r for r in records if r["status"] == 200]
    assert len(answered) == len({r["id"] for r in answered}) == len(questions)
    assert {r["status"] for r in records} <= {200, 503}  # a 503 only from a replica still loading (retried)
    assert sorted(r["tokens"] for r in answered) == sorted(tokens)
    assert len(list((tmp_path / "traffic").glob(SEGMENT_GLOB))) == REPLICAS  # a segment per replica, one folder


@pytest.mark.slow  # a 1,000-request replay; the default suite's replicas test covers the serving path
def test_two_replicas_hold_a_token_budget_together(conditioned_store: tuple[Store, str], serve_port: int,
                                                   tmp_path: Path) -> None:
    from ray import serve

    with CountingHost() as host:
        store = with_host(conditioned_store[0], tmp_path / "store", host)
        questions = replay_questions(store, 1000)
        settings = ServeSettings(host="counting", benchmark=BENCHMARK, router=conditioned_store[1],
                                 traffic_dir=tmp_path / "traffic")
        try:
            url = served(store, settings, serve_port)
            low = np.mean(ask(url, questions[:100], model="forge-arm-direct:no_think"))
            high = np.mean(ask(url, questions[:100], model="forge-arm-raw:no_think"))
            serve.delete(APP_NAME)
            target = float((low + high) / 2)
            budgeted = ServeSettings(host="counting", benchmark=BENCHMARK, router=conditioned_store[1],
                                     traffic_dir=tmp_path / "budget", weights=WeightsRequest(budget_tokens=target))
            url = served(store, budgeted, serve_port)
            tokens = ask(url, questions)
        finally:
            serve.delete(APP_NAME)
    realized = float(np.mean(tokens[500:]))
    assert abs(realized - target) <= 0.05 * target, (realized, target)
    assert len(read_traffic(tmp_path / "budget").requests) == len(questions)


def test_replicas_need_the_ray_engine(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "forge_core.cli", "serve", "--replicas", "2"], capture_output=True,
                            text=True, env={**os.environ, "FORGE_STORE": str(tmp_path / "empty.duckdb")})
    assert result.returncode == 2 and "--replicas are Ray Serve replicas: give them with --engine ray" in result.stderr
    assert "Traceback" not in result.stderr
