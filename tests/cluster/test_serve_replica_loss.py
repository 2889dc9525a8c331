"""One Ray Serve replica killed in the middle of a replay, as a cluster loses one: every request a
client saw answered has its traffic record, and no request is refused beyond those in flight when
the replica went down (the kills suite: `pytest -m kills`, run apart from the default suite)."""

from __future__ import annotations

import socket
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.server.app import ServeSettings
from forge_core.server.ray_serve import APP_NAME, run_replicas
from forge_core.store import Store
from forge_core.traffic_log import read_traffic

from support.counting_host import CountingHost
from support.stores import copy_store

BENCHMARK = "musique"
MODEL = "forge-arm-summary:no_think"  # one host call a request
REQUESTS, CLIENTS, KILL_AFTER = 160, 4, 60  # the replay, the requests in flight at most, answers before the kill


class Replay:
    """The replay's requests from `CLIENTS` threads; one replica killed once `KILL_AFTER` are answered."""

    def __init__(self, url: str, kill) -> None:  # noqa: ANN001 (a function of no argument)
        self.url, self.kill = url, kill
        self.lock = threading.Lock()
        self.in_flight = self.answered = 0
        self.in_flight_at_kill: int | None = None

    def ask(self, question: str) -> tuple[int, int | None]:
        """One request: its status (0: no response) and, answered, its total tokens."""
        with self.lock:
            self.in_flight += 1
        try:
            reply = httpx.post(f"{self.url}/v1/chat/completions", timeout=60.0,
                               json={"model": MODEL, "messages": [{"role": "user", "content": question}]})
            status, tokens = reply.status_code, reply.json()["usage"]["total_tokens"] if reply.is_success else None
        except httpx.HTTPError:
            status, tokens = 0, None
        with self.lock:
            self.in_flight -= 1
            self.answered += status == 200
            if self.answered >= KILL_AFTER and self.in_flight_at_kill is None:
                self.in_flight_at_kill = self.in_flight  # every request sent and not yet back, on either replica
                self.kill()
        return status, tokens


def kill_one_replica() -> None:
    """Kill one of the app's replica actors without grace (its process ends; Serve starts another)."""
    import ray

    replicas = [actor for actor in ray.util.list_named_actors(all_namespaces=True)
                if actor["name"].startswith("SERVE_REPLICA::") and "ForgeRouter" in actor["name"]]
    assert len(replicas) == 2, replicas
    ray.kill(ray.get_actor(replicas[0]["name"], namespace=replicas[0]["namespace"]), no_restart=True)


@pytest.mark.kills
def test_a_replica_killed_mid_replay_loses_no_record_and_refuses_only_its_requests_in_flight(
        imported_store: Store, ray_local, tmp_path: Path) -> None:
    from ray import serve

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with CountingHost(delay_s=0.05) as host:  # a replica answers several requests in a flusher interval
        store = copy_store(imported_store, tmp_path / "store")
        save_host_config(store, HostConfig(name="counting", kind="openai", model="m", base_url=host.base_url,
                                           max_retries=0, timeout_s=10.0))
        settings = ServeSettings(host="counting", benchmark=BENCHMARK, arm="summary:no_think",
                                 traffic_dir=tmp_path / "traffic")
        questions = [example.question for example in store.examples(BENCHMARK)[:REQUESTS]]
        try:
            run_replicas(store, settings, 2, "127.0.0.1", port, until_interrupted=False)
            replay = Replay(f"http://127.0.0.1:{port}", kill_one_replica)
            with ThreadPoolExecutor(CLIENTS) as pool:
                results = list(pool.map(replay.ask, questions))
        finally:
            serve.delete(APP_NAME)
            serve.shutdown()
    assert replay.in_flight_at_kill is not None  # the replica went down mid-replay
    refused = [status for status, _ in results if status != 200]
    assert len(refused) <= replay.in_flight_at_kill, (Counter(refused), replay.in_flight_at_kill)
    records = [r for r in read_traffic(tmp_path / "traffic").requests if r["status"] == 200]
    answered = Counter(tokens for status, tokens in results if status == 200)
    assert not answered - Counter(r["tokens"] for r in records)  # every answer the clients got has its record
    assert len(records) <= len(questions) - len(refused) + replay.in_flight_at_kill
