"""`forge decide`: what to deploy at any cost weights, from out-of-fold decisions of the
cost-conditioned routers and the fixed arms (`forge_core.evaluation.decide`)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from forge_core import config
from forge_core.cli.output import (
    HOST_RETRIEVER_HELP,
    chosen_retriever,
    console,
    counting_progress,
    open_store,
    print_json,
)


def decide_command(
    lambda_in: Annotated[float, typer.Option("--lambda-in", help="Input-token cost weight.")],
    lambda_out: Annotated[float, typer.Option("--lambda-out", help="Output-token cost weight.")],
    host: Annotated[str, typer.Option(help="Whose outcomes and crossfit run.")] = "embedded",
    accounting: Annotated[str, typer.Option(help="deploy: every host call a decision needs; answer: the "
                                                 "answering call's only.")] = "deploy",
    retriever: Annotated[Optional[str], typer.Option(
        help="The retriever whose outcomes and crossfit run (`forge eval crossfit --retriever`)."
             + HOST_RETRIEVER_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """The decision at these weights: the conditioned router's checkpoint or the fixed arm to
    deploy, its gain in utility, F1 and tokens (in and out) over the best fixed arm with 95%
    intervals, whether it is decidably above the ridge floor, and the serve command. Out of fold,
    from the newest Stage-1 crossfit run with the conditioned routers; its fold routers are trained
    once (about a minute), each decision is kept in the cache directory."""
    from forge_core.evaluation.decide import decide, decision_json
    from forge_core.routing.utility import CostWeights

    weights = CostWeights(lambda_in, lambda_out)
    retriever = chosen_retriever(host, retriever)
    store = open_store()
    with counting_progress(transient=True) as progress:
        task = progress.add_task("training the fold routers once (folds)", total=None)
        decided = decide(store, host, weights, config.cache_dir(), accounting,
                         on_fold=lambda done, total: progress.update(task, completed=done, total=total),
                         retriever=retriever)
    report = decision_json(decided)
    if as_json:
        print_json(report)
        return
    _print(report)


def _print(report: dict) -> None:
    console.print(report["sentence"], highlight=False, soft_wrap=True)
    gain = report["gain"]
    for key, label, digits in (("utility", "utility", 3), ("f1", "macro F1", 3), ("tokens_in", "tokens in", 1),
                               ("tokens_out", "tokens out", 1)):
        low, high = gain[key]["ci"]
        console.print(f"  {label:<11} {gain[key]['difference']:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}] "
                      f"vs {report['best_fixed_arm']}", highlight=False)
    floor = report["vs_floor"]
    if floor is not None:
        low, high = floor["ci"]
        console.print(f"  {report['floor_verdict']} the floor {report['floor_policy']}: "
                      f"{floor['difference']:+.3f} utility [{low:+.3f}, {high:+.3f}]", highlight=False)
    console.print(f"serve: {report['serve_command']}", highlight=False, soft_wrap=True)
    console.print(f"(out of fold: {report['queries']} queries, {report['folds']} folds of crossfit run "
                  f"{report['run_id']}, {report['accounting']} accounting)", highlight=False)
