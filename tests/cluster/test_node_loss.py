"""A node lost in the middle of a Ray Stage-0 job, as a cluster loses one: on a two-node local cluster
(`ray.cluster_utils.Cluster`, in a process of its own) the worker node is killed without grace after
some calls are stored; every finished outcome is kept and none is stored twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.store import Store

from support.answering_server import AnsweringServer
from support.resources import require_module
from support.stores import copy_store

PLANNED = 16 * 6  # 16 popqa test queries x 6 arms (tests/support/ray_node_loss.py's plan)
SCRIPT = Path(__file__).parent.parent / "support" / "ray_node_loss.py"


@pytest.mark.kills
def test_a_worker_node_killed_mid_job_loses_no_outcome_and_stores_none_twice(imported_store: Store,
                                                                                tmp_path: Path) -> None:
    require_module("ray", "Ray is not installed: pip install 'forge-core[ray]' (scripts/setup.sh does)")
    store = copy_store(imported_store, tmp_path)
    with AnsweringServer(delay_s=0.3) as server:
        save_host_config(store, HostConfig(name="slow", kind="openai", model="m", base_url=server.base_url,
                                           max_retries=0, timeout_s=10.0, max_concurrency=4))
        run = subprocess.run([sys.executable, str(SCRIPT), str(store.path), "slow", "20"], capture_output=True,
                             text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(SCRIPT.parent.parent)})
        sent = len(server.received)
    assert run.returncode == 0, run.stderr[-3000:]
    # Ray's own processes print to the same stdout (a raylet's retry notice can come last): take the report line
    report = json.loads(next(line for line in reversed(run.stdout.splitlines()) if line.startswith('{"killed')))
    assert report["killed_after_calls"], report  # the node went down mid-job
    assert report["runs"][-1]["status"] == "finished", report  # on the surviving node, or by a resume
    rows = store.arm_outcomes("slow")
    assert len(rows) == PLANNED and not rows.duplicated(["example_id", "arm"]).any()
    assert rows["error"].isna().all()
    assert sent >= PLANNED  # the calls in flight on the lost node were sent again, and stored once
