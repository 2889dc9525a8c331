"""`forge serve`: the OpenAI-compatible routing server."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from forge_core.cli.output import console, open_store, warn_if_other_host


def serve_command(
    router: Annotated[str, typer.Option(
        help="A checkpoint id, or lite/full: the host's newest checkpoint of that variant.")] = "lite",
    host: Annotated[str, typer.Option(help="The host that answers (see `forge host list`).")] = "embedded",
    benchmark: Annotated[str, typer.Option(help="Whose corpus evidence is retrieved from.")] = "hotpotqa",
    retriever: Annotated[str, typer.Option(
        help="Where the evidence comes from (see `forge retriever list`); the routers must be trained "
             "under it.")] = "bm25",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8100,
    api_key_env: Annotated[Optional[str], typer.Option(
        help="An environment variable holding the key clients must send as `Authorization: Bearer`.")] = None,
    bind: Annotated[str, typer.Option(
        help="Address to bind; anything but 127.0.0.1 exposes the server.")] = "127.0.0.1",
    shadow_raw: Annotated[float, typer.Option(
        "--shadow-raw", help="Share of requests (0 to 1, evenly spread) that also send raw:no_think after their "
                             "response, to estimate the saving against Always-Raw at /metrics.")] = 0.0,
) -> None:
    """An OpenAI-compatible server: /v1/chat/completions routes and answers each question (the
    Live query path) with only the host calls the decision needs, /v1/models, /metrics
    (Prometheus), /health; until Ctrl-C."""
    import uvicorn

    from forge_core.server.app import ServeSettings, build_app

    settings = ServeSettings(host=host, benchmark=benchmark, router=router, api_key_env=api_key_env,
                             shadow_raw=shadow_raw, retriever=retriever)
    store = open_store()
    if router not in ("lite", "full"):
        warn_if_other_host(store, router, host)
    application = build_app(store, settings)
    if bind != "127.0.0.1":
        console.print(f"[yellow]warning: binding {bind} makes the server reachable beyond this machine"
                      f"{'' if api_key_env else ' without an API key (--api-key-env)'}[/yellow]")
    console.print(f"FORGE server on http://{bind}:{port}/v1 (host {host}; Ctrl-C to stop)")
    uvicorn.run(application, host=bind, port=port, log_level="warning")

