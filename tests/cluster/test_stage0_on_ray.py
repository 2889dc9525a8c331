"""Stage 0 as a Ray Data job: the in-process run's request bodies and stored rows, resumable, within
--max-calls, from the command line joining a running Ray instance."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.store import Store

from support.counting_host import CountingHost
from support.stores import copy_store

pytestmark = pytest.mark.e2e  # a local Ray cluster: scripts/test.sh runs the e2e tests after the default suite

HOST = "test-host"
ENUMERATE = ["enumerate", "--host", HOST, "--split", "test", "--benchmark", "popqa", "--benchmark", "musique",
             "--per-benchmark", "3", "--arms", "6", "--probes", "--concurrency", "4", "--json"]
WHEN = ["started_at", "finished_at", "created_at", "latency_ms"]  # when and how fast, not what


def enumerate_on(store: Store, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "forge_core.cli", *ENUMERATE, *options], capture_output=True,
                          text=True, env={**os.environ, "FORGE_STORE": str(store.path)})


def stored(store: Store) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The arm and probe rows, without the columns that say when or how fast."""
    arms = store.arm_outcomes(HOST).drop(columns=WHEN, errors="ignore")
    probes = store.probe_outcomes(HOST).drop(columns=WHEN, errors="ignore")
    return (arms.sort_values(["benchmark", "example_id", "arm"], ignore_index=True),
            probes.sort_values(["benchmark", "example_id", "probe"], ignore_index=True))


def fresh_copy(imported_store: Store, folder: Path, base_url: str) -> Store:
    store = copy_store(imported_store, folder)
    save_host_config(store, HostConfig(name=HOST, kind="openai", model="m", base_url=base_url, max_retries=0,
                                       timeout_s=10.0, max_concurrency=4))
    return store


def test_ray_stage0_stores_the_in_process_rows_and_resumes(imported_store: Store, ray_local, tmp_path) -> None:
    address = ray_local.get_runtime_context().gcs_address
    with CountingHost() as server:
        local = fresh_copy(imported_store, tmp_path / "local", server.base_url)
        on_ray = fresh_copy(imported_store, tmp_path / "ray", server.base_url)
        in_process = enumerate_on(local)
        assert in_process.returncode == 0, in_process.stderr
        sent_in_process = sorted(json.dumps(body, sort_keys=True) for _, body in server.received)
        server.received.clear()
        result = enumerate_on(on_ray, "--engine", "ray", "--address", address)
        assert result.returncode == 0, result.stderr
        sent_on_ray = sorted(json.dumps(body, sort_keys=True) for _, body in server.received)
        for ray_rows, local_rows in zip(stored(on_ray), stored(local), strict=True):
            pd.testing.assert_frame_equal(ray_rows, local_rows)
        again = enumerate_on(on_ray, "--engine", "ray", "--address", address)  # (a rerun would mend missing probes)
    assert sent_on_ray == sent_in_process  # the same request bodies, thinking fields and all
    assert json.loads(result.stdout)["calls"] == json.loads(in_process.stdout)["calls"] == len(sent_in_process)
    assert json.loads(again.stdout)["status"] == "nothing to do"  # resumable: nothing finished is sent again
    job = on_ray.jobs("enumerate").iloc[0]
    assert job["status"] == "finished" and json.loads(job["params"])["engine"] == "ray"


def test_ray_stage0_stops_at_its_limits_and_refuses_a_dollar_budget(imported_store: Store, ray_local,
                                                                     tmp_path) -> None:
    address = ray_local.get_runtime_context().gcs_address
    with CountingHost() as server:
        store = fresh_copy(imported_store, tmp_path / "calls", server.base_url)
        capped = enumerate_on(store, "--engine", "ray", "--address", address, "--max-calls", "7")
        assert capped.returncode == 0, capped.stderr
        assert len(server.received) == json.loads(capped.stdout)["calls"] == 7
        by_tokens = fresh_copy(imported_store, tmp_path / "tokens", server.base_url)
        stopped = json.loads(enumerate_on(by_tokens, "--engine", "ray", "--address", address, "--max-tokens",
                                          "1").stdout)
        assert stopped["status"] == "stopped: token limit reached"
        samples = by_tokens.probe_outcomes(HOST).query("probe != 'greedy'")  # the greedy probe rides on a call
        assert 0 < stopped["calls"] == len(by_tokens.arm_outcomes(HOST)) + len(samples) < 6 * 9  # taken: stored
        priced = enumerate_on(store, "--engine", "ray", "--budget-usd", "1")
    assert priced.returncode == 2 and "--budget-usd reserves each call" in priced.stderr
    assert "Traceback" not in priced.stderr
