"""`forge batches`: the Stage-0 batches submitted to providers' Batch APIs; cancel one."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from forge_core.cli.output import console, open_store, print_json

batches_app = typer.Typer(help="Batches submitted by `forge enumerate --batch`: list them, cancel one.",
                          invoke_without_command=True)


@batches_app.callback()
def batches_list(ctx: typer.Context,
                 as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False) -> None:
    """List the submitted batches, newest first, with status, counts and estimated cost."""
    if ctx.invoked_subcommand is not None:
        return
    batches = open_store().batches()
    if as_json:
        print_json({"batches": [
            {key: value.isoformat() if hasattr(value, "isoformat") else value
             for key, value in dataclasses.asdict(batch).items()} for batch in batches]})
        return
    if not batches:
        console.print("No batches yet: `forge enumerate ... --batch openai|anthropic` submits one.")
        return
    table = Table("batch", "provider", "host", "status", "requests", "completed", "failed", "estimated USD", "created")
    for batch in batches:
        cost = "" if batch.estimated_usd is None else f"{batch.estimated_usd:,.4f}"
        table.add_row(batch.batch_id, batch.provider, batch.host, batch.status, f"{batch.requests:,}",
                      f"{batch.completed:,}", f"{batch.failed:,}", cost, f"{batch.created_at:%Y-%m-%d %H:%M}")
    Console().print(table)


@batches_app.command("cancel")
def batches_cancel(batch_id: Annotated[str, typer.Argument(help="A batch id from `forge batches`.")]) -> None:
    """Ask the provider to cancel a batch; rerun `forge enumerate ... --batch` to store what it finished."""
    from forge_core.enumeration.batch_api import cancel_batch

    cancelled = cancel_batch(open_store(), batch_id)
    console.print(f"batch {batch_id}: {cancelled.status}")
