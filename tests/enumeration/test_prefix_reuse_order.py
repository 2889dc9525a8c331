"""Stage 0's call order for prompt-cache reuse: each query's calls (probes and arms) one after
another, ordered so that each call shares the longest prompt prefix with the one before it, never
interleaved with another query's at concurrency 1; the batch files list the same order."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from forge_core.arms import DIRECT_NO_THINK, alphabet
from forge_core.data.importing import import_benchmarks
from forge_core.enumeration.calls import planned_calls
from forge_core.enumeration.planning import EnumerationPlan, QueryWork, order_work, plan_work, query_calls
from forge_core.hosts.openai_compat import chat_completion_body
from forge_core.records import SAMPLE_PROBES
from forge_core.store import Store

from support.answering_server import AnsweringServer
from support.enumeration import host_config, run

DIRECT_FIRST = ["direct:no_think", "sample1", "sample2", "sample3", "direct:cot",
                "summary:no_think", "summary:cot", "raw:no_think", "raw:cot"]


@pytest.fixture
def store(benchmarks_root: Path) -> Store:
    store = Store(os.environ["FORGE_STORE"])
    import_benchmarks(store, benchmarks_root, ["musique", "fever"])
    return store


def _plan(**fields) -> EnumerationPlan:
    values = {"host": "test-host", "split": "test", "benchmarks": ("musique", "fever"), "per_benchmark": 2,
              "probes": True, "concurrency": 1, **fields}
    return EnumerationPlan(**values)


class _InFlight:
    """A delay rule for `AnsweringServer` that counts the requests being answered at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = self.most = 0

    def __call__(self, body: dict) -> float:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(0.005)  # long enough for a concurrent request of the same client to arrive
        with self.lock:
            self.now -= 1
        return 0.0


def _prompt_text(body: dict) -> str:
    return json.dumps(body["messages"])


def _common_prefix(a: str, b: str) -> int:
    return len(os.path.commonprefix([a, b]))


def test_a_querys_calls_start_with_the_direct_prompt_then_go_support_by_support(store: Store) -> None:
    work = plan_work(store, _plan())[0]
    assert [name for name, _ in query_calls(work)] == DIRECT_FIRST
    assert [greedy for _, greedy in query_calls(work)] == [True] + [False] * 8
    twelve = QueryWork(work.example, alphabet(12), SAMPLE_PROBES, True)
    names = [name for name, _ in query_calls(twelve)]
    assert names[:4] == [DIRECT_NO_THINK, *SAMPLE_PROBES]
    assert names[4:] == [arm.name for arm in alphabet(12) if arm.name != DIRECT_NO_THINK]
    # the greedy probe alone (its arm stored) still opens the Direct group, before the samples
    probe_only = QueryWork(work.example, (), SAMPLE_PROBES, True)
    assert query_calls(probe_only) == [(DIRECT_NO_THINK, True)] + [(p, False) for p in SAMPLE_PROBES]
    # arm-major units keep their one call each
    units = order_work([work], 6, prefix_order=False)
    assert [query_calls(unit) for unit in units][:2] == [[(DIRECT_NO_THINK, True)], [("direct:cot", False)]]


def test_at_concurrency_1_the_host_sees_one_call_at_a_time_in_prefix_order(store: Store) -> None:
    plan = _plan()
    config = host_config("http://unused")
    expected = [chat_completion_body(config, call.request) for call in planned_calls(store, plan)]
    query_of = [(call.example.benchmark, call.example.example_id) for call in planned_calls(store, plan)]
    in_flight = _InFlight()
    with AnsweringServer(delay_s=in_flight) as server:
        report = run(store, plan, host_config(server.base_url))  # the client would allow 4 in flight
    assert report.calls == 4 * 9 and report.errors == []
    received = [body for _, body in server.received]
    assert in_flight.most == 1  # the probe samples too run one after another: one stream per query
    assert received == [{**body, "model": "m"} for body in expected]  # the batch files' order is the online one
    runs = [q for i, q in enumerate(query_of) if i == 0 or query_of[i - 1] != q]
    assert len(runs) == len(set(query_of)) == 4  # a query's calls are never interleaved with another's
    # each call shares with the call just before it the longest prefix it shares with any earlier
    # call of its query: what a prompt cache holding only the previous call's prompt can reuse
    for i in range(1, len(received)):
        earlier = [j for j in range(i) if query_of[j] == query_of[i]]
        if earlier:
            best = max(_common_prefix(_prompt_text(received[i]), _prompt_text(received[j])) for j in earlier)
            assert _common_prefix(_prompt_text(received[i]), _prompt_text(received[i - 1])) == best


def test_at_higher_concurrency_each_query_keeps_its_own_order(store: Store) -> None:
    plan = _plan(concurrency=3, per_benchmark=3)
    names = {}
    for call in planned_calls(store, plan):
        key = json.dumps(call.request.messages) + str(call.request.seed)
        names[key] = (call.example.example_id, call.key.name)
    with AnsweringServer() as server:
        report = run(store, plan, host_config(server.base_url))
    assert report.calls == 6 * 9 and report.errors == []
    seen: dict[str, list[str]] = {}
    for _, body in server.received:
        example_id, name = names[json.dumps(body["messages"]) + str(body.get("seed"))]
        seen.setdefault(example_id, []).append(name)
    assert len(seen) == 6 and all(order == DIRECT_FIRST for order in seen.values())
