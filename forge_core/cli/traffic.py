"""`forge traffic`: what `forge serve` has served, from its traffic log (never the store)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from forge_core.cli.output import console, print_json


def traffic_command(
    since: Annotated[Optional[str], typer.Option(
        help="Only requests since a duration ago (90s, 15m, 2h, 1d) or an ISO time (UTC).")] = None,
    traffic_dir: Annotated[Optional[Path], typer.Option(
        "--traffic-dir", help="The traffic log's folder (default: traffic/ beside the store).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Summarize the traffic log: requests, arm mix, tokens a request with 95% intervals, per
    budget and client, the shadow samples (saving against Always-Raw, the candidate), the slowest
    and costliest requests. Reads while a server writes."""
    from forge_core.reports.traffic import parse_since, summarize_traffic
    from forge_core.traffic_log import default_traffic_dir, read_traffic

    directory = traffic_dir or default_traffic_dir()
    summary = summarize_traffic(read_traffic(directory, parse_since(since))) | {"traffic_dir": str(directory)}
    if as_json:
        print_json(summary)
        return
    _print(summary)


def _print(summary: dict[str, Any]) -> None:
    from forge_core.reports.traffic import interval_text

    if not summary["requests"]:
        console.print(f"no request logged in {summary['traffic_dir']}")
        return
    first, last = (datetime.fromtimestamp(summary[key], timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
                   for key in ("first", "last"))
    tokens = summary["tokens"]
    console.print(f"{summary['requests']:,} requests ({first} to {last} UTC), {summary['answered']:,} answered; "
                  f"status {summary['by_status']}")
    if tokens["n"]:
        console.print(f"tokens a request {interval_text(tokens)}; {summary['host_calls']:,} host calls; "
                      f"latency {interval_text(summary['latency_ms'])} ms")
        console.print("arms: " + ", ".join(f"{arm} {count}" for arm, count in summary["arms"].items()))
    for manifest, count in summary["manifests"].items():
        console.print(f"{count:,} requests served under deployment manifest {manifest} "
                      f"({summary['traffic_dir']}/{manifest}.json)", highlight=False)
    for title, key in (("budget", "budgets"), ("client", "clients")):
        if summary[key]:
            table = Table(title=f"by {title}")
            for column in (title, "requests", "tokens a request (95% CI)", "lambda_in", "lambda_out"):
                table.add_column(column)
            for name, group in summary[key].items():
                table.add_row(name, str(group["requests"]), interval_text(group["tokens"]), _weight(group["lambda_in"]),
                              _weight(group["lambda_out"]))
            console.print(table)
    for name, group in summary["budgets"].items():
        if group.get("out_of_reach"):
            side = "lowest (the router spends less)" if group["at_bound"] == "lowest" else "highest (it spends more)"
            console.print(f"[yellow]budget {name}: target {group['target']:g} out of the router's reach; the "
                          f"controller sits at its {side} trained weights[/yellow]")
    saving = summary["shadow_raw"]["saving_tokens"]
    if saving["n"]:
        console.print(f"saving against Always-Raw (shadow sample of {saving['n']}): {interval_text(saving)} "
                      "tokens a request")
    candidate = summary["candidate"]
    if candidate["shadowed"]:
        console.print(f"candidate: {candidate['routed']} routed, agreement {candidate['agreement']}, "
                      f"{candidate['calls']} shadow calls, {candidate['tokens_spent']:,} tokens, "
                      f"{candidate['capped']} past the cap")
    for key in ("slowest", "costliest"):
        console.print(f"{key}: " + "; ".join(f"{r['id'][:8]} {r['arm']} {r['tokens']} tok {r['latency_ms']:.0f} ms"
                                           for r in summary[key]))


def _weight(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"
