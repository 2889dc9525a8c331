"""The local Ray instance FORGE starts (`forge_core.engines.ray_session`) runs its tasks at the
driver's priority: Ray's default niceness of 15 lets any busy process starve them."""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.e2e  # a local Ray cluster: scripts/test.sh runs the e2e tests after the default suite


def test_tasks_run_at_the_drivers_priority(ray_local) -> None:
    task = ray_local.remote(num_cpus=1)(lambda: os.nice(0))  # a lambda travels by value, this file not
    assert ray_local.get(task.remote()) == os.nice(0)
