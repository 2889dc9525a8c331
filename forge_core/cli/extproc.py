"""`forge extproc`: FORGE as an Envoy external processor (gRPC, `envoy.service.ext_proc.v3`)."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Annotated, Optional

import typer

from forge_core.cli.output import (
    HOST_RETRIEVER_HELP,
    GuardFallbackOption,
    chosen_retriever,
    console,
    open_store,
    warn_if_other_host,
)
from forge_core.errors import InvalidInput


# Over 60 lines: its typer options are `forge extproc --help`.
def extproc_command(
    router: Annotated[Optional[str], typer.Option(
        help="A checkpoint id, or lite: the host's newest Lite checkpoint (default lite; a Full router's probes "
             "are host calls a gateway does not make).")] = None,
    arm: Annotated[Optional[str], typer.Option(
        "--arm", help="Forward every request under one fixed arm, as `forge serve --arm` answers it (router "
                      "override, no weights); weights, budgets, --mix and --guard are refused with it.")] = None,
    mix: Annotated[Optional[str], typer.Option(
        "--mix", help="Forward each request under the arm its question draws from ARM=SHARE,ARM=SHARE, as "
                      "`forge serve --mix` does (x-forge-mix); refused with --arm, --router, weights, "
                      "budgets.")] = None,
    guard: Annotated[Optional[float], typer.Option(
        "--guard", help="Guard the router for this risk, as `forge serve --guard` does (x-forge-guard: held or "
                        "deviated); refused with --arm, --mix and budgets.")] = None,
    guard_fallback: GuardFallbackOption = "arm",
    host: Annotated[str, typer.Option(
        help="The host Envoy forwards to (see `forge host list`): its model name and thinking fields make the "
             "body.")] = "embedded",
    benchmark: Annotated[Optional[list[str]], typer.Option(
        help="Whose corpus evidence is retrieved from (default hotpotqa); repeat it for a union.")] = None,
    retriever: Annotated[Optional[str], typer.Option(
        help="Where the evidence comes from (see `forge retriever list`)." + HOST_RETRIEVER_HELP)] = None,
    port: Annotated[int, typer.Option(help="gRPC port to listen on.")] = 50051,
    bind: Annotated[str, typer.Option(help="Address to bind; anything but 127.0.0.1 exposes it.")] = "127.0.0.1",
    lambda_in: Annotated[Optional[float], typer.Option("--lambda-in", help="As in `forge serve`.")] = None,
    lambda_out: Annotated[Optional[float], typer.Option("--lambda-out", help="As in `forge serve`.")] = None,
    budget_tokens: Annotated[Optional[float], typer.Option(
        "--budget-tokens", help="Hold the mean tokens a request near this, as `forge serve` does.")] = None,
    budgets: Annotated[Optional[Path], typer.Option(
        "--budgets", help="A JSON file client -> mean tokens a request, as in `forge serve`.")] = None,
    ratio: Annotated[Optional[float], typer.Option("--ratio", help="The budgets' ray, as in `forge serve`.")] = None,
    traffic_dir: Annotated[Optional[Path], typer.Option(
        "--traffic-dir", help="Where the traffic log is written (default: traffic/ beside the store).")] = None,
) -> None:
    """An Envoy external processor: routes each buffered chat-completions body, replaces it with the
    routed host request (evidence, thinking fields, corrected content-length, x-forge-* headers), charges
    the response's usage to the client's budget and logs it; lets what it cannot route through unchanged
    (x-forge-passed). Until Ctrl-C."""
    from forge_core.cli.serve import weights_request
    from forge_core.evidence.answering import corpus_name
    from forge_core.server.app import ServeSettings
    try:
        from forge_core.server.extproc import start_extproc
    except ImportError as error:
        raise InvalidInput(f"forge extproc needs the gateways extra ({error.name} is missing): "
                           "pip install -e '.[gateways]'") from None
    if router == "full":
        raise InvalidInput("a Full router's features are four host probes: an external processor serves a Lite "
                           "or BGE+BM25 router")
    fixed = arm or mix
    if fixed is not None and router is not None:
        raise InvalidInput(f"{'--arm' if arm else '--mix'} {fixed} serves fixed arms: --router needs routing (drop "
                           "one of them)")
    store = open_store()
    if router not in (None, "lite"):
        warn_if_other_host(store, router, host)
    settings = ServeSettings(host=host, benchmark=corpus_name(benchmark or ["hotpotqa"]), router=router or "lite",
                             weights=weights_request(lambda_in, lambda_out, budget_tokens, budgets, ratio),
                             traffic_dir=traffic_dir, retriever=chosen_retriever(host, retriever), arm=arm, mix=mix,
                             guard=guard, guard_fallback=guard_fallback)
    server, gateway, bound = start_extproc(store, settings, port, bind)
    console.print(f"FORGE external processor on {bind}:{bound} (envoy.service.ext_proc.v3; host {host}; Ctrl-C to "
                  "stop)")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop(grace=5).wait()
        gateway.close()
        console.print(f"passed unchanged: {dict(gateway.passed) or 'none'}")
