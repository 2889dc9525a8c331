"""How long a host client and its embedded server live.

`hosted(config)` is the one way library code uses a host: it serves the configuration when it
needs an embedded server (reusing a running one), makes the client, and on leaving closes the
client and stops a server it started. The dashboard instead keeps one served configuration for
its whole session (`serve_for_session`, checked with `is_serving`) and passes it to `hosted`,
which uses a served configuration as it is.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import threading
from collections.abc import AsyncIterator

from forge_core.hosts.base import Host, HostConfig
from forge_core.hosts.embedded import EmbeddedServer, running_server
from forge_core.hosts.registry import make_host, serving

_serving_lock = threading.Lock()


@contextlib.asynccontextmanager
async def hosted(config: HostConfig) -> AsyncIterator[Host]:
    """A client for `config`, served first when it needs an embedded server (see `serving`; a
    server starts and stops in a worker thread, off the event loop). Leaving the block, even by
    an exception, closes the client, then stops the server if this block started it."""
    server = contextlib.ExitStack()
    try:
        served = await asyncio.to_thread(server.enter_context, serving(config))
        async with make_host(served) as client:
            yield client
    finally:
        await asyncio.to_thread(server.close)


def serve_for_session(config: HostConfig) -> HostConfig:
    """The configuration with a live base URL. Embedded hosts reuse a running server or start
    one that lives until this process exits; remote hosts pass through unchanged."""
    if config.kind != "embedded":
        return config
    with _serving_lock:
        running = running_server(config.model)
        if running is None:
            server = EmbeddedServer(config.model)
            server.start()
            atexit.register(server.stop)
            running = server.info
    return dataclasses.replace(config, base_url=running.base_url)


def is_serving(config: HostConfig) -> bool:
    """False when a served embedded host's server has gone (the URL must be refreshed)."""
    return config.kind != "embedded" or running_server(config.model) is not None
