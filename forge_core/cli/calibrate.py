"""`forge calibrate`: the cost weights at which the cost-conditioned router meets a token budget or
an F1 floor, with the out-of-fold tokens and F1 they realize."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from forge_core.cli.output import (
    HOST_RETRIEVER_HELP,
    chosen_retriever,
    console,
    counting_progress,
    open_store,
    print_json,
)
from forge_core.evaluation.settings import CALIBRATION_RATIO, CALIBRATION_VARIANT, CROSSFIT_FOLDS


def calibrate_command(
    budget_tokens: Annotated[Optional[float], typer.Option(help="Target: at most this many tokens a query.")] = None,
    min_f1: Annotated[Optional[float], typer.Option(help="Target: at least this macro F1 (0 to 1).")] = None,
    ratio: Annotated[float, typer.Option(
        help="lambda_out / lambda_in along the searched weights.")] = CALIBRATION_RATIO,
    variant: Annotated[str, typer.Option(
        help="The conditioned router's features: lite or full.")] = CALIBRATION_VARIANT,
    host: Annotated[str, typer.Option(help="Whose outcomes to calibrate on.")] = "embedded",
    folds: Annotated[int, typer.Option(help="Crossfit folds (stratified by benchmark).")] = CROSSFIT_FOLDS,
    split_seed: Annotated[int, typer.Option(help="Seeds the folds and inner dev parts.")] = 0,
    accounting: Annotated[str, typer.Option(help="deploy: tokens of every host call a decision needs; answer: "
                                                 "the answering call's only.")] = "deploy",
    retriever: Annotated[Optional[str], typer.Option(
        help="The retriever whose outcomes to calibrate on (`forge enumerate --retriever`)."
             + HOST_RETRIEVER_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Find the weights (along lambda_out = ratio x lambda_in) at which the cost-conditioned router
    meets a token budget or an F1 floor on inner dev parts, and report the tokens and F1 they
    realize out of fold, with 95% intervals (crossfit; routers trained in memory, minutes)."""
    from forge_core.evaluation.calibration import CalibrationRequest, run_calibration

    request = CalibrationRequest(budget_tokens=budget_tokens, min_f1=min_f1, ratio=ratio, variant=variant,
                                 host=host, folds=folds, split_seed=split_seed, accounting=accounting,
                                 retriever=chosen_retriever(host, retriever))
    store = open_store()
    with counting_progress(transient=True) as progress:
        task = progress.add_task("calibrating (folds)", total=folds)
        result = run_calibration(store, request, on_fold=lambda done, total: progress.update(task, completed=done))
    report = result.to_json()
    if as_json:
        print_json(report)
        return
    tokens_low, tokens_high = report["realized_tokens_ci"]
    f1_low, f1_high = report["realized_f1_ci"]
    console.print(f"target: {request.target} ({accounting} accounting, {variant} conditioned router)")
    console.print(f"weights: lambda_in {result.weights.lambda_in:.4g}, lambda_out {result.weights.lambda_out:.4g} "
                  f"(median of {folds} folds, each chosen on its inner dev part)")
    console.print(f"realized out of fold over {result.queries} queries: {result.tokens:.1f} tokens a query "
                  f"[{tokens_low:.1f}, {tokens_high:.1f}], macro F1 {result.f1:.4f} [{f1_low:.4f}, {f1_high:.4f}]; "
                  f"target {'met' if result.target_met else 'NOT met'}")
    if request.budget_tokens is not None:
        console.print(mix_line(result.mix, request.budget_tokens) if result.mix is not None else
                      f"no mix of fixed arms spends as little as {request.budget_tokens:g} tokens a query")
    missed = [fold.fold for fold in result.folds if not fold.met_on_dev]
    if missed:
        console.print(f"folds {missed}: no weight of the ray met the target on dev; the nearest end was taken")


def mix_line(mix: dict, budget_tokens: float) -> str:
    """The best mix of fixed arms within the budget and each router's F1 gain over it, in one line."""
    what = " + ".join(f"{arm} {share:.0%}" for arm, share in zip(mix["arms"], mix["shares"]))
    gains = "; ".join(f"{name} {gain['difference']:+.4f} F1 [{gain['ci'][0]:+.4f}, {gain['ci'][1]:+.4f}], "
                      f"{gain['verdict']}" for name, gain in mix["gains"].items())
    return (f"best mix of fixed arms within {budget_tokens:g} tokens a query: {what} ({mix['tokens']:.1f} tokens, "
            f"macro F1 {mix['f1']:.4f}); against it: {gains}")
