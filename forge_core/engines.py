"""Where FORGE's long work runs: in this process (`local`, the default) or on Ray (`ray`).

With `ray`, the work joins the cluster at `--address` (or `RAY_ADDRESS`, as Ray reads it), else it
starts a new local Ray instance sized to this machine (never the cluster a `ray start` on this machine
left behind, which Ray itself would join). Ray is an extra (`pip install 'forge-core[ray]'`,
which `scripts/setup.sh` installs); nothing imports it until an engine asks for it. Whatever runs on
Ray, the store is written by one process only: the driver, as results arrive.
"""

from __future__ import annotations

import logging
import os
from types import ModuleType

from forge_core.errors import InvalidInput, MissingStep

log = logging.getLogger(__name__)

ENGINES = ("local", "ray")
DEFAULT_ENGINE = "local"
# What a local instance started here is given unless the environment already sets it (a cluster FORGE
# joins keeps its own settings):
# - Ray runs its workers at niceness 15, below every other process: beside anything busy (a browser, a
#   test suite, a build) the work FORGE sends them all but stops (beside two busy loops, fold tasks ran
#   at 5% of a core and a crossfit grid took over 860 s against 63 s quiet). The in-process engine
#   runs at the user's priority, and so do a local instance's workers.
# - Serve's proxy must answer its readiness and health checks within 5 and 10 s, or Serve kills and
#   restarts it; on a laptop whose cores are busy it often cannot: 120 s to start, 60 s a health check.
LOCAL_RAY_SETTINGS = {"RAY_worker_niceness": "0", "RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S": "120",
                      "RAY_SERVE_PROXY_HEALTH_CHECK_TIMEOUT_S": "60"}


def check_engine(engine: str, address: str | None = None) -> None:
    """Refuse an unknown engine, and an address without Ray to join, in one line."""
    if engine not in ENGINES:
        raise InvalidInput(f"--engine is {' or '.join(ENGINES)}, not '{engine}'")
    if address is not None and engine != "ray":
        raise InvalidInput("--address names a Ray cluster: give it with --engine ray")


def ray_session(address: str | None = None) -> ModuleType:
    """The `ray` module, connected: to the cluster at `address` (else `RAY_ADDRESS`), or to a local
    instance with this machine's cores, started once per process."""
    try:
        import ray
    except ImportError as error:
        raise MissingStep("--engine ray needs Ray: pip install 'forge-core[ray]' (scripts/setup.sh installs it)") \
            from error
    if not ray.is_initialized():
        address = address or os.environ.get("RAY_ADDRESS") or None
        log.info("Ray: %s", f"joining the cluster at {address}" if address else "starting a local instance")
        if not address:
            for name, value in LOCAL_RAY_SETTINGS.items():
                os.environ.setdefault(name, value)  # the local instance's processes inherit them
        try:  # "local": a new instance, never the last one `ray start` left in /tmp/ray, live or not
            ray.init(address=address or "local", num_cpus=None if address else os.cpu_count(),
                     include_dashboard=False, log_to_driver=False, configure_logging=False)
        except ConnectionError as error:
            raise MissingStep(f"no Ray cluster answers at {address}: start one (`ray start --head`) or drop "
                              "--address to run on a local instance") from error
    return ray
