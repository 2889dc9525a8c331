"""`POST /v1/route` as a gateway calls it: a full chat body (system text, history, settings) routed
without a host call, answered with every arm's probability, the margin, the weights, the evidence
the arm adds and the exact host request it becomes; tools refused as in a chat."""

from __future__ import annotations

import math
from collections.abc import Iterator

import httpx
import pytest

from forge_core.arms import alphabet
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.server.app import ServeSettings, serving_in_thread
from forge_core.store import Store

from support.counting_host import CountingHost
from support.stores import copy_store

BENCHMARK = "musique"
CHAT = {"model": "forge", "max_tokens": 40, "temperature": 0.3,
        "messages": [{"role": "system", "content": "Answer in English."},
                     {"role": "user", "content": "I am reading about Italy."},
                     {"role": "assistant", "content": "Nice."},
                     {"role": "user", "content": "Who founded the city of Rome?"}]}


@pytest.fixture(scope="module")
def host() -> Iterator[CountingHost]:
    """The counting test-double host."""
    with CountingHost() as server:
        yield server


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory, trained_store: tuple[Store, str],
        host: CountingHost) -> Iterator[str]:
    store = copy_store(trained_store[0], tmp_path_factory.mktemp("route"))
    save_host_config(store, HostConfig(name="counting", kind="openai", model="m", base_url=host.base_url,
                                       max_retries=0, timeout_s=10.0))
    settings = ServeSettings(host="counting", benchmark=BENCHMARK, router=trained_store[1],
                             traffic_dir=tmp_path_factory.mktemp("route-traffic"))
    with serving_in_thread(store, settings) as served:
        yield served


def test_a_chat_body_routes_dry_to_the_request_the_host_would_get(url: str, host: CountingHost) -> None:
    calls = len(host.received)
    response = httpx.post(f"{url}/v1/route", json=CHAT, timeout=60)
    route = response.json()
    assert response.status_code == 200 and len(host.received) == calls  # no host call
    assert set(route["probabilities"]) == {arm.name for arm in alphabet(6)}
    assert math.isclose(sum(route["probabilities"].values()), 1.0, abs_tol=1e-4)
    assert route["arm"] == max(route["probabilities"], key=route["probabilities"].get)
    assert route["weights"] == {"lambda_in": 0.1, "lambda_out": 0.2} and route["margin"] >= 0
    assert response.headers["x-forge-arm"] == route["arm"] and response.headers["x-forge-weights"] == "0.1,0.2"
    assert float(response.headers["x-forge-margin"]) == pytest.approx(route["margin"], abs=1e-6)
    assert len(route["passages"]) == 5 and [p["title"] for p in route["passages"]] == route["evidence"]
    user = route["request"]["messages"][-1]["content"]
    assert route["evidence_text"] in user
    assert bool(route["evidence_text"]) == (not route["arm"].startswith("direct"))
    assert route["request"]["messages"][0]["content"].endswith("\n\nAnswer in English.")
    assert route["request"]["messages"][1:3] == CHAT["messages"][1:3]
    assert route["settings"]["max_tokens"] == 40 and route["settings"]["temperature"] == 0.3

    httpx.post(f"{url}/v1/chat/completions", json=CHAT, timeout=60).raise_for_status()
    assert host.received[-1][1] == route["request"]  # exactly what the host got for the same chat


def test_the_dry_route_refuses_tools_and_fixed_arms(url: str) -> None:
    tools = CHAT | {"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]}
    refused = httpx.post(f"{url}/v1/route", json=tools, timeout=60)
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "tools"
    fixed = httpx.post(f"{url}/v1/route", json=CHAT | {"model": "forge-arm-raw:no_think"}, timeout=60)
    assert fixed.status_code == 400 and fixed.json()["error"]["param"] == "model"
