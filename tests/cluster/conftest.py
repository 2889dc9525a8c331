"""One local Ray instance for the cluster tests of a worker (started once: about 10 s)."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest

from support.resources import require_module


@pytest.fixture(scope="session")
def ray_local() -> Iterator[ModuleType]:
    """Ray started on this machine's two cores, as `forge_core.engines.ray_session` would without
    an address; shut down at the end of the session."""
    ray = require_module("ray", "Ray is not installed: pip install 'forge-core[ray]' (scripts/setup.sh does)")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()
