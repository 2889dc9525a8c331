"""A Ray Stage-0 run on a two-node local cluster whose worker node is killed mid-run (run as a script by
`tests/cluster/test_node_loss.py`, since one process holds one Ray session).

Usage: python ray_node_loss.py STORE HOST KILL_AFTER_CALLS. Starts `ray.cluster_utils.Cluster` (a head
and a worker node, one CPU each), runs `enumerate_on_ray` for HOST's plan (popqa test queries), kills
the worker node without grace once KILL_AFTER_CALLS calls are stored, then, if the run ended early,
runs it again on the surviving node (a resume). Prints one JSON line: each run's calls and status."""

from __future__ import annotations

import json
import sys

import ray
from ray.cluster_utils import Cluster

from forge_core.enumeration.planning import EnumerationPlan
from forge_core.enumeration.ray_stage0 import enumerate_on_ray
from forge_core.hosts.registry import get_host_config
from forge_core.store import Store


def main() -> None:
    store_path, host, kill_after = sys.argv[1], sys.argv[2], int(sys.argv[3])
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    worker = cluster.add_node(num_cpus=1)
    ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
    store = Store(store_path)
    plan = EnumerationPlan(host=host, split="test", n_arms=6, benchmarks=("popqa",), per_benchmark=16, concurrency=4)
    killed = []

    def kill_worker_node(report) -> None:
        if report.calls >= kill_after and not killed:
            cluster.remove_node(worker, allow_graceful=False)
            killed.append(report.calls)

    runs = []
    try:
        first = enumerate_on_ray(store, plan, get_host_config(store, host), on_progress=kill_worker_node)
        runs.append({"calls": first.calls, "status": first.status})
    except Exception as error:  # the node's loss may end the run: every finished call is stored
        runs.append({"calls": None, "status": f"failed: {type(error).__name__}"})
    if runs[0]["status"] != "finished":
        again = enumerate_on_ray(store, plan, get_host_config(store, host))
        runs.append({"calls": again.calls, "status": again.status})
    print(json.dumps({"killed_after_calls": killed, "runs": runs}))
    ray.shutdown()
    cluster.shutdown()


if __name__ == "__main__":
    main()
