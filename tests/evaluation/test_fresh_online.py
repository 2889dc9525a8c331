"""The Fresh Online protocol: policies answer with real calls to a host, every call counted."""

from __future__ import annotations

import dataclasses

import pytest

from forge_core.evaluation.fresh_online import FreshRequest, run_fresh
from forge_core.evaluation.settings import EvaluationSettings
from forge_core.evaluation.setup import prepare_evaluation
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.routing.utility import CostWeights
from forge_core.store import Store

from support.answering_server import AnsweringServer
from support.stores import copy_store

HOST = "synthetic-host"
POLICIES = ["always_raw", "forge_lite", "forge_full", "self_routing", "frugal_cascade", "oracle"]
CASCADE_CALLS = {"direct:no_think": 1, "summary:no_think": 2, "raw:no_think": 3}


def settings(policies: list[str]) -> EvaluationSettings:
    """Evaluation settings for the test host and these policies, defaults otherwise."""
    return EvaluationSettings(HOST, policy_names=tuple(policies))


@pytest.fixture(scope="module")
def routed_store(outcome_store: Store, tmp_path_factory: pytest.TempPathFactory) -> Store:
    """A copy of the synthetic-outcome store with its features and Stage-1 routers (read-only)."""
    store = copy_store(outcome_store, tmp_path_factory.mktemp("routed"))
    prepare_evaluation(store, EvaluationSettings(HOST))
    return store


def served_store(routed_store: Store, tmp_path, base_url: str) -> Store:
    """A copy of `routed_store` whose host is reachable at `base_url`."""
    store = copy_store(routed_store, tmp_path / "fresh")
    save_host_config(store, HostConfig(name=HOST, kind="openai", model="test", base_url=base_url, max_retries=0))
    return store


def server_calls(server: AnsweringServer) -> int:
    return sum(server.attempts.values())


def test_fresh_online_counts_every_call_the_host_received(routed_store: Store, tmp_path) -> None:
    with AnsweringServer() as server:
        store = served_store(routed_store, tmp_path, server.base_url)
        report = run_fresh(store, FreshRequest(settings(POLICIES), 2))
    assert report["queries"] == 6 and report["protocol"] == "fresh"
    assert "oracle" in report["not_run"] and "oracle" not in report["policies"]
    results = store.fresh_results(report["run_id"])
    assert len(results) == 5 * 6  # five live policies x six queries, no duplicates
    assert results["calls"].sum() == server_calls(server)
    by_policy = {name: results[results["policy"] == name] for name in POLICIES[:-1]}
    assert (by_policy["always_raw"]["calls"] == 1).all() and (by_policy["forge_lite"]["calls"] == 1).all()
    for policy in ("forge_full", "self_routing"):  # four probes, the greedy one doubling as a Direct answer
        frame = by_policy[policy]
        assert (frame["calls"] == 4 + (frame["arm"] != "direct:no_think")).all()
    cascade = by_policy["frugal_cascade"]
    assert (cascade["calls"] == cascade["arm"].map(CASCADE_CALLS)).all()
    summary = report["policies"]["forge_full"]
    assert summary["calls_per_query"] == by_policy["forge_full"]["calls"].mean()
    assert summary["latency_p95_ms"] >= summary["latency_p50_ms"] > 0
    assert report["policies"]["always_raw"]["ci_vs_always_raw"] == [0.0, 0.0]


def test_fresh_online_resumes_without_repeating_a_call(routed_store: Store, tmp_path) -> None:
    policies = ["always_raw", "forge_lite"]

    def interrupt_after_three(result, remaining) -> None:
        if remaining == 3:
            raise KeyboardInterrupt

    with AnsweringServer() as server:
        store = served_store(routed_store, tmp_path, server.base_url)
        with pytest.raises(KeyboardInterrupt):
            run_fresh(store, FreshRequest(settings(policies), 1), on_result=interrupt_after_three)
        assert server_calls(server) == 3  # six answers planned, three finished and stored
        report = run_fresh(store, FreshRequest(settings(policies), 1))
        assert server_calls(server) == 6
        subset = run_fresh(store, FreshRequest(settings(["always_raw"]), 1))
        assert subset["run_id"] == report["run_id"] and server_calls(server) == 6  # nothing run twice
    assert len(store.fresh_results(report["run_id"])) == 6
    assert report["policies"]["always_raw"]["calls_per_query"] == 1.0


def test_fresh_online_rejects_bad_settings(routed_store: Store, tmp_path) -> None:
    store = served_store(routed_store, tmp_path, "http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="at least 1"):
        run_fresh(store, FreshRequest(EvaluationSettings(HOST), 0))
    with pytest.raises(ValueError, match="unknown policies: always_magic"):
        run_fresh(store, FreshRequest(settings(["always_magic"])))


@pytest.mark.slow  # the default suite runs Fresh Online on the answering double (calls counted, resumed)
def test_fresh_online_on_the_real_tiny_host(routed_store: Store, tmp_path, tiny_server: HostConfig) -> None:
    store = served_store(routed_store, tmp_path, tiny_server.base_url)
    report = run_fresh(store, FreshRequest(settings(["always_direct", "always_raw"]), 1))
    direct, raw = report["policies"]["always_direct"], report["policies"]["always_raw"]
    assert direct["calls_per_query"] == raw["calls_per_query"] == 1.0
    assert raw["cost_k"] > direct["cost_k"] > 0  # real usage counts: Raw carries three passages
    assert raw["latency_p50_ms"] > 0
    results = store.fresh_results(report["run_id"])
    assert set(results["arm"]) == {"direct:no_think", "raw:no_think"}


def test_live_context_refuses_features_it_was_not_given(outcome_store: Store) -> None:
    from forge_core.policies.context import evaluation_context
    from forge_core.policies.live_query import LiveContext

    fitted = evaluation_context(outcome_store, HOST, 6, CostWeights(0.1, 0.2))
    live = LiveContext(**{f.name: getattr(fitted, f.name) for f in dataclasses.fields(fitted)} | {"_features": {}})
    with pytest.raises(ValueError, match="no live lite features"):
        live.features("lite")


def test_eval_cli_json_both_protocols_and_user_errors(routed_store: Store, tmp_path) -> None:
    import json
    import os
    import subprocess
    import sys

    def forge(*args: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "FORGE_STORE": str(store.path)}
        return subprocess.run([sys.executable, "-m", "forge_core.cli", "eval", "--host", HOST, *args],
                              capture_output=True, text=True, env=env)

    with AnsweringServer() as server:
        store = served_store(routed_store, tmp_path, server.base_url)
        result = forge("--protocol", "fresh", "--per-benchmark", "1", "--policy", "always_raw", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["protocol"] == "fresh" and report["policies"]["always_raw"]["calls_per_query"] == 1.0
    cached = json.loads(forge("--policy", "always_raw", "--policy", "oracle", "--json").stdout)
    assert cached["protocol"] == "cached" and set(cached["policies"]) == {"always_raw", "oracle"}
    refused = forge("--protocol", "fresh", "--repeats")
    assert refused.returncode != 0 and "--repeats does not apply to `forge eval fresh`" in refused.stderr
    assert "Traceback" not in refused.stderr
