"""The local Ray instance FORGE starts (`forge_core.engines.ray_session`) runs its tasks at the
driver's priority (Ray's default niceness of 15 lets any busy process starve them), and it is a new
instance even where a `ray start` left the address of its cluster behind."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e  # a local Ray cluster: scripts/test.sh runs the e2e tests after the default suite


def test_tasks_run_at_the_drivers_priority(ray_local) -> None:
    task = ray_local.remote(num_cpus=1)(lambda: os.nice(0))  # a lambda travels by value, this file not
    assert ray_local.get(task.remote()) == os.nice(0)


def test_a_cluster_address_left_in_rays_temp_dir_does_not_stop_the_local_instance() -> None:
    # What a `ray start` leaves in /tmp/ray when its cluster is gone (killed, or the machine restarted):
    # Ray's own `ray.init()` reads it and refuses the local instance's cores. A short temp dir: Ray's
    # socket paths must fit in 107 bytes.
    with tempfile.TemporaryDirectory(prefix="fr", dir="/tmp") as temp_dir:
        (Path(temp_dir) / "ray").mkdir()
        (Path(temp_dir) / "ray" / "ray_current_cluster").write_text("192.0.2.2:37669")
        started = subprocess.run(
            [sys.executable, "-c", "from forge_core.engines import ray_session; ray = ray_session(); "
             "print(int(ray.cluster_resources()['CPU'])); ray.shutdown()"],
            env={**os.environ, "RAY_TMPDIR": temp_dir, "RAY_ADDRESS": ""}, capture_output=True, text=True)
    assert started.returncode == 0, started.stderr[-2000:]
    assert started.stdout.split()[-1] == str(os.cpu_count())
