"""`forge serve` as a deployment is used: a cost-conditioned router at chosen weights, a dry route,
a token budget held by moving the weights (a replay through the official `openai` client against a
counting test-double host, the benchmark mix shifting half-way), the traffic log (one record per
request, readable while serving, surviving kill -9), a shadow candidate under a token cap, and
`forge traffic`."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

from forge_core.cli.serve import serve_command
from forge_core.errors import InvalidInput
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.policies.arm_mix import parse_mix
from forge_core.reports.checkpoint_guard import checkpoint_guard
from forge_core.routing.utility import CostWeights
from forge_core.server.app import ServeSettings, build_app, serving_in_thread
from forge_core.server.deployment import WeightsRequest
from forge_core.store import Store
from forge_core.traffic_log import read_traffic

from support.counting_host import CountingHost, replay_questions
from support.resources import require_module
from support.stores import copy_store

openai = require_module("openai", "the openai client is a test extra: pip install -e '.[test]'")
BENCHMARK = "musique"


@pytest.fixture(scope="module")
def host() -> Iterator[CountingHost]:
    """The counting test-double host."""
    with CountingHost() as server:
        yield server


@pytest.fixture(scope="module")
def deploy_store(tmp_path_factory: pytest.TempPathFactory, conditioned_store: tuple[Store, str],
                 host: CountingHost) -> tuple[Store, str, str]:
    """A copy of the conditioned store with the double as host `counting`: (store, conditioned
    checkpoint, per-weight checkpoint)."""
    store = copy_store(conditioned_store[0], tmp_path_factory.mktemp("deploy"))
    save_host_config(store, HostConfig(name="counting", kind="openai", model="m", base_url=host.base_url,
                                       max_retries=0, timeout_s=10.0))
    checkpoints = store.find_checkpoints("synthetic-host", variant="lite")
    per_weight = str(checkpoints[~checkpoints["conditioned"]]["checkpoint_id"].iloc[0])
    return store, conditioned_store[1], per_weight


def arm_costs(url: str, questions: list[str], arm: str) -> float:
    """Mean tokens a request of a fixed arm over `questions` (distinct ones asked once)."""
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
    cost = {}
    for question in set(questions):
        reply = client.chat.completions.create(model=f"forge-arm-{arm}",
                                               messages=[{"role": "user", "content": question}])
        cost[question] = reply.usage.total_tokens
    return float(np.mean([cost[q] for q in questions]))


def test_serves_at_chosen_weights_and_routes_dry(deploy_store: tuple[Store, str, str], host: CountingHost,
                                                 tmp_path: Path) -> None:
    store, conditioned, _ = deploy_store
    questions = replay_questions(store, 24)
    decisions = {}
    for weights in ((0.02, 0.04), (1.5, 3.0)):
        settings = ServeSettings(host="counting", benchmark=BENCHMARK, router=conditioned, traffic_dir=tmp_path,
                                 weights=WeightsRequest(lambda_in=weights[0], lambda_out=weights[1]))
        with serving_in_thread(store, settings) as url:
            calls = len(host.received)
            routes = [httpx.post(f"{url}/v1/route", json={"question": q}, timeout=30).json() for q in questions]
            assert len(host.received) == calls  # a dry route calls no host
        for route in routes:
            assert route["weights"] == {"lambda_in": weights[0], "lambda_out": weights[1]}
            chosen = route["probabilities"][route["arm"]]
            twin = f"{route['arm'].split(':')[0]}:cot"  # the paper's warm start: an untrained twin, never the runner-up
            ranked = sorted((p for arm, p in route["probabilities"].items() if arm not in (route["arm"], twin)),
                            reverse=True)
            assert route["margin"] == pytest.approx(math.log(chosen) - math.log(ranked[0]), abs=1e-4)
            assert route["arm"] == max(route["probabilities"], key=route["probabilities"].get)
            assert route["evidence"] and route["host_calls"] == 0
        decisions[weights] = [route["arm"] for route in routes]
    costly = sum(arm.startswith("raw") for arm in decisions[(0.02, 0.04)])
    assert costly > sum(arm.startswith("raw") for arm in decisions[(1.5, 3.0)])  # the weights move the decisions
    records = read_traffic(tmp_path).requests
    assert len(records) == 2 * len(questions) and {r["endpoint"] for r in records} == {"route"}


def test_a_per_weight_router_refuses_other_weights_in_one_line(deploy_store: tuple[Store, str, str]) -> None:
    store, conditioned, per_weight = deploy_store
    for weights, message in [(WeightsRequest(lambda_in=0.5), "serves only those"),
                             (WeightsRequest(budget_tokens=300.0), "needs a cost-conditioned router")]:
        with pytest.raises(InvalidInput, match=message):
            build_app(store, ServeSettings(host="counting", benchmark=BENCHMARK, router=per_weight, weights=weights))
    build_app(store, ServeSettings(host="counting", benchmark=BENCHMARK, router=per_weight,  # its own weights
                                   weights=WeightsRequest(lambda_in=0.1, lambda_out=0.2)))
    env = {**os.environ, "FORGE_STORE": str(store.path)}
    result = subprocess.run([sys.executable, "-m", "forge_core.cli", "serve", "--host", "counting", "--router",
                             per_weight, "--lambda-in", "0.5"], capture_output=True, text=True, env=env, timeout=120,
                            check=False)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "serves only those" in result.stderr.strip().splitlines()[-1]  # the error is one line


def test_serves_a_fixed_arm_and_refuses_what_needs_a_router_in_one_line(
        deploy_store: tuple[Store, str, str], host: CountingHost, tmp_path: Path) -> None:
    store, conditioned, _ = deploy_store
    for settings, message in [
            (ServeSettings(host="counting", arm="summary:no_think", weights=WeightsRequest(budget_tokens=300.0)),
             "--budget-tokens needs a router"),
            (ServeSettings(host="counting", arm="summary:no_think", candidate=conditioned), "--candidate needs"),
            (ServeSettings(host="counting", arm="summary:think_high"), "not in the 6-arm alphabet")]:
        with pytest.raises(InvalidInput, match=message):
            build_app(store, settings)
    settings = ServeSettings(host="counting", benchmark=BENCHMARK, arm="summary:no_think", traffic_dir=tmp_path)
    with serving_in_thread(store, settings) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
        reply = client.chat.completions.create(model="forge", messages=[{"role": "user", "content": "Who?"}])
        route = httpx.post(f"{url}/v1/route", json={"question": "Who?"}, timeout=30)
    assert reply.model_extra["forge"]["arm"] == "summary:no_think" and reply.model_extra["forge"]["host_calls"] == 1
    decided = route.json()
    assert (decided["arm"], decided["router"], decided["weights"]) == ("summary:no_think", "override", None)
    assert route.headers["x-forge-router"] == "override" and "x-forge-weights" not in route.headers
    record, routed = read_traffic(tmp_path).requests
    assert (routed["endpoint"], routed["arm"], routed["lambda_in"]) == ("route", "summary:no_think", None)
    assert record["arm"] == "summary:no_think" and record["lambda_in"] is None and record["budget"] is None
    assert (record["retriever"], record["retriever_hash"]) == ("bm25", "")  # the default evidence's name and hash
    with pytest.raises(InvalidInput, match="--router needs routing"):  # the CLI's exit 2 with this line
        serve_command(arm="summary:no_think", router=conditioned, host="counting")


def test_serves_a_mix_of_fixed_arms_by_the_questions_draw_and_refuses_bad_mixes_in_one_line(
        deploy_store: tuple[Store, str, str], host: CountingHost, tmp_path: Path) -> None:
    """`--mix`: each question answered under the arm its hash draws (the same question, the same arm),
    named in the `forge` object, the headers, the dry route, /metrics and the traffic log as drawn
    from the mix; weights, a router, an arm or a bad mix refused in one line."""
    store, conditioned, _ = deploy_store
    option = "direct:no_think=0.4,raw:no_think=0.6"
    for settings, message in [
            (ServeSettings(host="counting", mix=option, weights=WeightsRequest(lambda_in=0.5)), "--lambda-in needs"),
            (ServeSettings(host="counting", mix=option, arm="raw:no_think"), "--arm raw:no_think serves one"),
            (ServeSettings(host="counting", mix="direct:no_think=0.4,raw:no_think=0.5"), "must sum to 1")]:
        with pytest.raises(InvalidInput, match=message):
            build_app(store, settings)
    with pytest.raises(InvalidInput, match="--router needs routing"):
        serve_command(mix=option, router=conditioned, host="counting")
    mix = parse_mix(option, 6)
    questions = replay_questions(store, 12)
    settings = ServeSettings(host="counting", benchmark=BENCHMARK, mix=option, traffic_dir=tmp_path)
    with serving_in_thread(store, settings) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
        replies = [client.chat.completions.with_raw_response.create(
            model="forge", messages=[{"role": "user", "content": q}]) for q in questions + questions[:2]]
        route = httpx.post(f"{url}/v1/route", json={"question": questions[0]}, timeout=30)
        metrics = httpx.get(f"{url}/metrics", timeout=30).text
    expected = [mix.arm_for(q)[0].name for q in questions + questions[:2]]
    assert len(set(expected)) == 2  # both arms drawn
    for reply, arm in zip(replies, expected):
        forge = reply.parse().model_extra["forge"]
        assert (forge["arm"], forge["mix_arm"], forge["mix"]) == (arm, arm, option) and forge["host_calls"] == 1
        assert (reply.headers["x-forge-arm"], reply.headers["x-forge-mix"]) == (arm, option)
    assert route.json()["arm"] == expected[0] and route.json()["router"] == "mix" and route.json()["weights"] is None
    assert route.headers["x-forge-mix"] == option and route.json()["host_calls"] == 0
    for arm in set(expected):
        assert f'forge_mix_arm_drawn_total{{arm="{arm}"}} {expected.count(arm)}' in metrics
    records = read_traffic(tmp_path).requests
    assert [r["arm"] for r in records if r["endpoint"] == "chat"] == expected
    assert all(r["mix"] == option and r["mix_arm"] == r["arm"] and r["lambda_in"] is None for r in records)


def test_serves_a_guarded_router_that_holds_low_margin_queries_at_its_fallback(
        deploy_store: tuple[Store, str, str], host: CountingHost, tmp_path: Path) -> None:
    """`--guard`: the router's arm where its margin clears the guard's threshold (fitted on the
    checkpoint's dev queries at the served weights, as the Live query's), the fallback arm elsewhere;
    the answer, the dry route, the headers and the traffic log say which; a bad risk, budgets or a
    fixed arm beside it are refused in one line."""
    store, conditioned, _ = deploy_store
    for settings, message in [
            (ServeSettings(host="counting", router=conditioned, guard=1.5), "a share in \\(0, 1\\)"),
            (ServeSettings(host="counting", router=conditioned, guard=0.2, weights=WeightsRequest(budget_tokens=300.0)),
             "a token budget moves them"),
            (ServeSettings(host="counting", arm="summary:no_think", guard=0.2), "--guard needs a router")]:
        with pytest.raises(InvalidInput, match=message):
            build_app(store, settings)
    weights = WeightsRequest(lambda_in=0.1, lambda_out=0.2)
    guard = checkpoint_guard(store, conditioned, CostWeights(0.1, 0.2), 0.2)
    questions = replay_questions(store, 24)
    settings = ServeSettings(host="counting", benchmark=BENCHMARK, router=conditioned, weights=weights, guard=0.2,
                             traffic_dir=tmp_path)
    with serving_in_thread(store, settings) as url:
        routes = [httpx.post(f"{url}/v1/route", json={"question": q}, timeout=30) for q in questions]
        held = [q for q, route in zip(questions, routes) if route.json()["guard"]["held"]]
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
        reply = client.chat.completions.create(model="forge", messages=[{"role": "user", "content": held[0]}])
    verdicts = []
    for route in routes:
        decided = route.json()
        router_arm = max(decided["probabilities"], key=decided["probabilities"].get)
        holds = guard.holds(router_arm, decided["margin"])
        assert decided["arm"] == (guard.fallback_arm if holds else router_arm)
        assert decided["guard"]["held"] == holds and decided["guard"]["fallback_arm"] == guard.fallback_arm
        assert route.headers["x-forge-guard"] == ("held" if holds else "deviated")
        verdicts.append(holds)
    assert any(verdicts) and not all(verdicts)  # some queries held at the fallback, some not
    forge = reply.model_extra["forge"]
    assert forge["arm"] == guard.fallback_arm != forge["router_arm"] and forge["guard"]["held"]
    chat = [r for r in read_traffic(tmp_path).requests if r["endpoint"] == "chat"]
    assert [(r["arm"], r["guard"]["held"]) for r in chat] == [(guard.fallback_arm, True)]


def test_a_guard_can_fall_back_to_the_cost_matched_mix(deploy_store: tuple[Store, str, str], host: CountingHost,
                                                       tmp_path: Path) -> None:
    """`--guard-fallback mix`: a held query falls back to the arm the guard's mix (the cost-matched mix
    on the checkpoint's train and dev queries) draws for its question; the fallback without a guard,
    or another fallback, is refused in one line."""
    store, conditioned, _ = deploy_store
    for settings, message in [(ServeSettings(host="counting", router=conditioned, guard_fallback="mix"),
                               "give --guard"),
                              (ServeSettings(host="counting", router=conditioned, guard=0.2, guard_fallback="oracle"),
                               "--guard-fallback is arm or mix")]:
        with pytest.raises(InvalidInput, match=message):
            build_app(store, settings)
    guard = checkpoint_guard(store, conditioned, CostWeights(0.02, 0.04), 0.2, "mix")
    mix = parse_mix(guard.mix, 6)
    questions = replay_questions(store, 24)
    settings = ServeSettings(host="counting", benchmark=BENCHMARK, router=conditioned, guard=0.2, guard_fallback="mix",
                             weights=WeightsRequest(lambda_in=0.02, lambda_out=0.04), traffic_dir=tmp_path)
    with serving_in_thread(store, settings) as url:
        routes = [httpx.post(f"{url}/v1/route", json={"question": q}, timeout=30).json() for q in questions]
    held = []
    for question, route in zip(questions, routes):
        router_arm = max(route["probabilities"], key=route["probabilities"].get)
        fallback = mix.arm_for(question)[0].name
        holds = router_arm != fallback and route["margin"] < guard.threshold
        assert route["arm"] == (fallback if holds else router_arm) and route["guard"]["mix"] == guard.mix
        assert route["guard"]["fallback_arm"] == fallback and route["guard"]["held"] == holds
        held.append(route["arm"] if holds else None)
    assert len(set(filter(None, held))) == 2  # held queries fell back to both of the mix's arms


def replay(url: str, questions: list[str], client_name: str = "replay") -> list[dict]:
    """Send every question through the `openai` client as model `forge`; each reply's usage and arm."""
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="replay-key", default_headers={"X-Forge-Client": client_name})
    replies = []
    for question in questions:
        reply = client.chat.completions.create(model="forge", messages=[{"role": "user", "content": question}])
        replies.append({"tokens": reply.usage.total_tokens, "arm": reply.model_extra["forge"]["arm"]})
    return replies


@pytest.mark.slow
def test_a_replay_holds_the_token_budget_logs_every_request_and_caps_the_shadow(
        deploy_store: tuple[Store, str, str], host: CountingHost, tmp_path: Path) -> None:
    store, conditioned, per_weight = deploy_store
    questions = replay_questions(store, 1000)
    reference = ServeSettings(host="counting", benchmark=BENCHMARK, router=conditioned, traffic_log=False)
    with serving_in_thread(store, reference) as url:
        target = (arm_costs(url, questions, "direct:no_think") + arm_costs(url, questions, "raw:no_think")) / 2
    cap = 3000
    settings = ServeSettings(host="counting", benchmark=BENCHMARK, router=conditioned, traffic_dir=tmp_path,
                             weights=WeightsRequest(budget_tokens=target), candidate=per_weight, candidate_rate=0.2,
                             candidate_max_tokens=cap)
    with serving_in_thread(store, settings) as url:
        calls = len(host.received)
        replies = replay(url, questions)
        time.sleep(1.0)  # the last shadow answers
        metrics = httpx.get(f"{url}/metrics").text
    realized = np.mean([r["tokens"] for r in replies[500:]])
    assert abs(realized - target) <= 0.05 * target, (realized, target)
    assert f'forge_budget_target_tokens{{budget="default"}} {target:.6f}' in metrics
    records = read_traffic(tmp_path)
    assert len(records.requests) == len(questions) and {r["status"] for r in records.requests} == {200}
    assert len({r["id"] for r in records.requests}) == len(questions)
    shadows = [s for group in records.shadows.values() for s in group]
    assert len(shadows) == 200  # every 5th request
    spent = sum(s["tokens_spent"] for s in shadows)
    answered = [s for s in shadows if s["status"] == "answered"]
    assert answered and any(s["status"] == "capped" for s in shadows)
    assert spent - max(s["tokens_spent"] for s in answered) < cap <= spent  # the call reaching the cap is the last
    routed_tokens = sum(r["tokens"] for r in replies)
    assert len(host.received) - calls == len(questions) + len(answered)  # one call a request, plus the shadow's
    assert routed_tokens == sum(r["tokens"] for r in records.requests)


@pytest.mark.kills
def test_kill_9_mid_replay_loses_at_most_the_last_second(deploy_store: tuple[Store, str, str], tmp_path: Path) -> None:
    store, conditioned, _ = deploy_store
    env = {**os.environ, "FORGE_STORE": str(store.path)}
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "forge_core.cli", "serve", "--host", "counting", "--router",
                               conditioned, "--benchmark", BENCHMARK, "--port", str(port), "--budget-tokens", "200",
                               "--traffic-dir", str(tmp_path)], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        while httpx_status(url) != "ok":  # until it serves, or it exits (a hang ends at pytest's --timeout)
            assert server.poll() is None
            time.sleep(0.5)
        answered_at: list[float] = []
        sender = threading.Thread(target=send_until_gone, args=(url, replay_questions(store, 400), answered_at),
                                  daemon=True)
        sender.start()
        while len(answered_at) < 40:  # mid-replay: requests in flight when the kill comes
            assert sender.is_alive()
            time.sleep(0.05)
        server.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        server.wait(timeout=30)
        sender.join(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
    logged = len(read_traffic(tmp_path).requests)
    before_last_second = sum(t < killed_at - 1.0 for t in answered_at)
    assert before_last_second <= logged <= len(answered_at)


def send_until_gone(url: str, questions: list[str], answered_at: list[float]) -> None:
    """Send the questions one by one, noting when each answer arrived, until the server is gone."""
    for question in questions:
        try:
            httpx.post(f"{url}/v1/chat/completions", timeout=30,
                       json={"model": "forge", "messages": [{"role": "user", "content": question}]}).raise_for_status()
        except httpx.HTTPError:
            return
        answered_at.append(time.monotonic())


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def httpx_status(url: str) -> str | None:
    try:
        return httpx.get(f"{url}/health", timeout=5).json()["status"]
    except (httpx.HTTPError, ValueError, KeyError):
        return None
