"""The `forge` command line: the same work as the dashboard, without a browser. One module per
command group (`data`, `store`, `host`, `train`, `evaluate`, `calibrate`, `decide`, `rewards`, `enumerate`, `batches`,
`ask`, `serve`, `extproc`, `traffic`, `dashboard`, `retriever` with `evidence`), output helpers in `output`; this
module assembles them and is the entry point."""

from __future__ import annotations

import logging

import typer

from forge_core.cli import (
    ask,
    batches,
    calibrate,
    dashboard,
    data,
    decide,
    enumerate,
    evaluate,
    extproc,
    gate_probes,
    host,
    retriever,
    rewards,
    serve,
    store,
    traffic,
    train,
)
from forge_core.cli.output import console
from forge_core.errors import ForgeError

DOCUMENTATION = (  # the manual's pages, as the README's "Documentation" lists them
    ("README.md", "what FORGE does, a tour of the dashboard, the concepts, what is where, configuration"),
    ("docs/commands.md", "every forge command in one table, with the page that documents it"),
    ("docs/data.md", "the benchmarks, your own questions, splits, and the store's commands"),
    ("docs/hosts.md", "hosts, endpoints and prices; thinking controls and the depth check"),
    ("docs/retrievers.md", "retrievers: bm25, dense, hybrid and your own service; forge evidence compare"),
    ("docs/stage0.md", "Stage 0: forge enumerate, estimates, budgets, batches, and Stage 0 at scale"),
    ("docs/scale.md", "past one machine on Ray: --engine ray for Stage 0, crossfit and forge serve"),
    ("docs/training.md", "arms and prompts, features and embedders, forge train, checkpoints, rewards"),
    ("docs/evaluation.md", "policies, the Cached, Crossfit and Fresh Online protocols, accounting, transfer"),
    ("docs/dashboard.md", "the dashboard's pages, the Live query page and forge ask"),
    ("docs/serving.md", "forge serve: the OpenAI-compatible server that routes every request"),
    ("docs/results.md", "what FORGE measured on the demo store, and performance figures"),
    ("docs/results-rewards-grounding.md", "the reward audits and the grounding tables, measured"),
    ("docs/bench.md", "the performance benchmarks in bench/"),
    ("docs/reliability.md", "the test suite, its wall times, and the fault suite's figures"),
)
EPILOG = "\n".join(["Documentation (paths in the repository):"]
                    + [f"  {path}: {what}" for path, what in DOCUMENTATION])  # one line each in --help

app = typer.Typer(help="FORGE: route a frozen LLM between evidence forms and reasoning budgets.", epilog=EPILOG,
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
app.add_typer(data.data_app, name="data")
app.add_typer(store.store_app, name="store")
app.add_typer(host.host_app, name="host")
app.add_typer(data.index_app, name="index")
app.add_typer(retriever.retriever_app, name="retriever")
app.add_typer(retriever.evidence_app, name="evidence")
app.command("ask")(ask.ask)
app.command("features")(train.features_command)
app.command("train")(train.train_router_command)
app.command("checkpoints")(train.checkpoints_command)
app.add_typer(rewards.rewards_app, name="rewards")
app.add_typer(evaluate.eval_app, name="eval")
app.command("sweep")(evaluate.sweep_command)
app.command("calibrate")(calibrate.calibrate_command)
app.command("decide")(decide.decide_command)
app.command("recipes")(decide.recipes_command)
app.command("enumerate")(enumerate.enumerate_command)
app.command("gate-probes")(gate_probes.gate_probes_command)
app.command("gate-report")(gate_probes.gate_report_command)
app.add_typer(batches.batches_app, name="batches")
app.command("serve")(serve.serve_command)
app.command("extproc")(extproc.extproc_command)
app.command("traffic")(traffic.traffic_command)
app.command("app")(dashboard.app_command)


def main() -> None:
    """Entry point: run the CLI. A `ForgeError` (a user mistake or a missing step) becomes one line
    on stderr and exit code 2; any other exception is a bug and keeps its traceback. Ctrl-C exits
    with 130 after the command has stored what it finished."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        result = app(standalone_mode=False)
    except ForgeError as error:
        console.print(f"[red]error:[/red] {error}", highlight=False, soft_wrap=True)
        raise SystemExit(2) from None
    except (KeyboardInterrupt, typer.Abort):
        console.print("interrupted")
        raise SystemExit(130) from None
    except typer.TyperException as error:  # usage errors, in standalone_mode=False
        error.show()
        raise SystemExit(getattr(error, "exit_code", 2)) from None
    raise SystemExit(result if isinstance(result, int) else 0)
