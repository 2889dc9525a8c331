"""One local Ray instance for the cluster tests of a worker (started once: about 10 s)."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest

from forge_core.engines import ray_session

from support.resources import require_module


@pytest.fixture(scope="session")
def ray_local() -> Iterator[ModuleType]:
    """A local Ray instance on this machine's cores, started by `forge_core.engines.ray_session` as
    the commands start it; shut down at the end of the session."""
    require_module("ray", "Ray is not installed: pip install 'forge-core[ray]' (scripts/setup.sh does)")
    ray = ray_session()
    yield ray
    ray.shutdown()
