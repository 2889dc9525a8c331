"""Fault suite, host faults: an enumeration of 1,200 calls against a server that fails on purpose.

The mix (see `fault_server.FAULTS`): 429 with and without Retry-After, 500/502/503, read
timeouts, connections reset in the middle of a body, truncated and non-JSON bodies, bodies without
usage, empty choices, a wrong content type, and a server that goes away and comes back. The run
must not crash, must honour Retry-After, must never store a score from a failed call, and a
second run must finish every error row. With FORGE_FAULT_REPORT set, the figures are written
there as JSON (the Reliability table of docs/reliability.md).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from forge_core.data.importing import import_benchmarks
from forge_core.enumeration.planning import EnumerationPlan, count_calls, plan_work
from forge_core.enumeration.runner import enumerate_arms
from forge_core.hosts.base import HostConfig
from forge_core.hosts.openai_compat import OpenAICompatibleHost
from forge_core.store import Store

from support.fault_server import RETRY_AFTER_S, FaultServer

pytestmark = pytest.mark.faults

HOST = "fault-host"
PLAN = EnumerationPlan(host=HOST, split="train", benchmarks=("fever", "popqa"), per_benchmark=100, concurrency=16)


def enumerate_once(store: Store, base_url: str):
    config = HostConfig(name=HOST, kind="openai", model="m", base_url=base_url, max_retries=5, timeout_s=2.0,
                        max_concurrency=16)

    async def go():
        async with OpenAICompatibleHost(config, retry_base_delay_s=0.05, retry_max_delay_s=1.0) as client:
            return await enumerate_arms(store, PLAN, client)

    return asyncio.run(go())


def test_enumeration_survives_every_host_fault(tmp_path: Path, benchmarks_root: Path) -> None:
    store = Store(tmp_path / "faults.duckdb")
    import_benchmarks(store, benchmarks_root, ["fever", "popqa"])
    planned = count_calls(plan_work(store, PLAN))
    assert planned == 1200
    with FaultServer(seed=7) as server:
        first = enumerate_once(store, server.base_url)  # a crash fails the test here
        outcomes = store.arm_outcomes(HOST)
        requests_first = sum(server.counts.values())
        faults_seen = dict(server.counts)
        ok = outcomes[outcomes["error"].isna()]
        errors = outcomes[outcomes["error"].notna()]
        scored_from_failed = int((~ok["answer"].isin(server.good_answers)).sum()
                                 + ok["answer"].str.contains("FAULTY").sum())
        assert errors["f1"].isna().all() and errors["em"].isna().all()  # error rows carry no score

        server.set_faults((("ok", 1.0),))
        second = enumerate_once(store, server.base_url)
        final = store.arm_outcomes(HOST)

    figures = {
        "planned_calls": planned, "requests_received": requests_first, "faults_served": faults_seen,
        "calls_first_run": first.calls, "retried_to_success": int((ok["attempts"] > 1).sum()),
        "error_rows_first_run": len(errors), "crashes": 0, "scored_from_failed_call": scored_from_failed,
        "retry_after_honoured": sum(gap >= RETRY_AFTER_S - 0.01 for gap in server.retry_after_gaps),
        "retry_after_seen": len(server.retry_after_gaps), "second_run_calls": second.calls,
        "error_rows_after_second_run": int(final["error"].notna().sum()), "outcomes_after_second_run": len(final),
    }
    if os.environ.get("FORGE_FAULT_REPORT"):
        Path(os.environ["FORGE_FAULT_REPORT"]).write_text(json.dumps(figures, indent=1))
    print(json.dumps(figures))

    assert first.calls == planned and len(outcomes) == planned  # every call answered or stored as an error
    assert requests_first > planned  # faults made it retry
    assert set(faults_seen) >= {"429_retry_after", "429", "500", "502", "503", "read_timeout", "reset_mid_body",
                                "truncated_json", "not_json", "no_usage", "empty_choices", "away_and_back"}
    assert figures["retried_to_success"] > 100
    assert scored_from_failed == 0
    assert figures["retry_after_seen"] > 0 and figures["retry_after_honoured"] == figures["retry_after_seen"]
    assert second.calls == len(errors)  # the second run redoes exactly the error rows ...
    assert figures["error_rows_after_second_run"] == 0 and len(final) == planned  # ... and finishes them
