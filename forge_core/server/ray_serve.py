"""`forge serve --engine ray --replicas N`: the same OpenAI-compatible app (`build_app`) in N Ray
Serve replicas behind Serve's HTTP ingress.

Each replica builds the app in its own process from the store file (read at start: hosts,
checkpoints, corpora; never written while serving) and keeps its own state:
- the traffic log: each replica appends to a segment of its own in the one traffic folder, so
  every request has exactly one record whichever replica answered it, and `forge traffic` or the
  Traffic page read the deployment as a whole;
- the budget pacer: each replica holds the realized mean of its own requests within the target
  (`server.budget`), so the pooled mean holds it too, since it is a mix of means that each hold it;
- `/metrics`: the replica that answers the scrape (per replica, as Serve routes it).
The store file must be readable at the same path on every node (one machine, or a shared folder).
A Serve config file deploys the same app (`serve_config.app_builder`).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from forge_core.engines import ray_session
from forge_core.hosts.base import HostError
from forge_core.server.app import ServeSettings, build_app, health_status
from forge_core.store import Store

log = logging.getLogger(__name__)

APP_NAME = "forge"  # the Serve application's name (`serve status` lists it)
DEPLOYMENT_NAME = "ForgeRouter"  # the deployment a Serve config file names to set its replicas
READY_IN_A_ROW = 5  # /health answers "ok" this many times per replica in a row before requests are let in


class ForgeReplica:
    """One replica: the app built, in the replica's process, from the store file and the settings."""

    def __init__(self, store_path: str, settings: ServeSettings) -> None:
        self.store_path, self.settings = store_path, settings

    def __serve_build_asgi_app__(self) -> Any:
        return build_app(Store(Path(self.store_path)), self.settings)


def forge_deployment() -> Any:
    """The Serve deployment `DEPLOYMENT_NAME` of `ForgeReplica` behind Serve's ingress (bind it to a
    store path and `ServeSettings`); its replicas: `.options(num_replicas=N)` or a config file's."""
    from ray import serve

    return serve.deployment(name=DEPLOYMENT_NAME)(serve.ingress()(ForgeReplica))


def wait_until_loaded(url: str, replicas: int, timeout_s: float = 300.0) -> None:
    """Return once `/health` has said "ok" `READY_IN_A_ROW` times per replica in a row (Serve routes
    each probe to a replica of its choosing, so a replica still loading, which answers 503 as the
    single server does, is all but certain to be met); a failed load, or none within `timeout_s`,
    is an error."""
    deadline, in_a_row = time.monotonic() + timeout_s, 0
    while in_a_row < READY_IN_A_ROW * replicas:
        status = health_status(url)
        if status == "failed":
            raise HostError(f"a replica could not load: see `GET {url}/health`")
        in_a_row = in_a_row + 1 if status == "ok" else 0
        if time.monotonic() > deadline:
            raise HostError(f"the replicas on {url} did not finish loading within {timeout_s:.0f} s")
        time.sleep(0.05 if status == "ok" else 0.2)


def start_serve(bind: str, port: int) -> None:
    """Serve's controller and HTTP proxy on `bind`:`port`. `serve.start` waits a fixed 60 s for the
    proxy, which a laptop with busy cores can miss while the proxy is still starting: then the
    controller is up, a second `serve.start` joins it, and `wait_until_loaded` waits for the ingress."""
    from ray import serve

    http_options = {"host": bind, "port": port}
    try:
        serve.start(http_options=http_options)
    except TimeoutError:
        log.warning("Serve's HTTP proxy is not up after Serve's 60 s (busy cores?): waiting for it to answer")
        serve.start(http_options=http_options)


def run_replicas(store: Store, settings: ServeSettings, replicas: int, bind: str, port: int,
                 address: str | None = None, until_interrupted: bool = True) -> None:
    """Start `replicas` replicas behind Serve's ingress on `bind`:`port` and, unless told not to,
    serve until Ctrl-C, then shut the application down."""
    ray_session(address)
    from ray import serve

    start_serve(bind, port)
    deployment = forge_deployment().options(num_replicas=replicas)
    serve.run(deployment.bind(str(store.path), settings), name=APP_NAME, route_prefix="/")
    wait_until_loaded(f"http://{'127.0.0.1' if bind == '0.0.0.0' else bind}:{port}", replicas)
    log.info("forge serve: %d Ray Serve replicas on http://%s:%d", replicas, bind, port)
    if not until_interrupted:
        return
    try:
        while True:
            time.sleep(1.0)
    except KeyboardInterrupt:
        pass
    finally:
        serve.delete(APP_NAME)
