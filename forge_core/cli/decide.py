"""`forge decide`: what to deploy at given cost weights (or within a token budget), from the
out-of-fold evidence of one recipe (`forge_core.evaluation.decide`), as a deployment manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from forge_core import config
from forge_core.cli.output import (
    HOST_RETRIEVER_HELP,
    AddressOption,
    EngineOption,
    chosen_retriever,
    console,
    counting_progress,
    open_store,
    print_json,
)
from forge_core.engines import DEFAULT_ENGINE, check_engine
from forge_core.errors import InvalidInput
from forge_core.statistics import Interval

out = Console(highlight=False, soft_wrap=True)  # the report, on stdout


def decide_command(
    lambda_in: Annotated[Optional[float], typer.Option(
        "--lambda-in", help="Input-token cost weight (with --budget-tokens and no weights: calibrated).")] = None,
    lambda_out: Annotated[Optional[float], typer.Option("--lambda-out", help="Output-token cost weight.")] = None,
    budget_tokens: Annotated[Optional[float], typer.Option(
        "--budget-tokens", help="Deploy only a policy whose out-of-fold tokens a query meet this budget (not "
                                "decidably above it); without weights, decide at the weights `forge calibrate "
                                "--budget-tokens` finds for it.")] = None,
    recipe: Annotated[Optional[str], typer.Option(
        help="The recipe id whose runs decide (see `forge recipes`; default: the one the store's runs measure "
             "best).")] = None,
    host: Annotated[str, typer.Option(help="Whose outcomes and crossfit runs.")] = "embedded",
    accounting: Annotated[str, typer.Option(help="deploy: every host call a decision needs; answer: the "
                                                 "answering call's only.")] = "deploy",
    retriever: Annotated[Optional[str], typer.Option(
        help="The retriever whose outcomes and crossfit runs (`forge eval crossfit --retriever`)."
             + HOST_RETRIEVER_HELP)] = None,
    manifest: Annotated[Optional[Path], typer.Option(
        "--manifest", help="Also write the deployment manifest to this file (`forge serve --manifest`).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the deployment manifest as one JSON object.")] = False,
    engine: EngineOption = DEFAULT_ENGINE,
    address: AddressOption = None,
) -> None:
    """What to deploy: among every policy measured out of fold at these weights that `forge serve`
    can serve (fixed arms and FORGE routers; the others are listed with the reason), a router only
    where its gain over the best fixed arm is decidable, else the cheapest arm not decidably below
    the best. The evidence is one recipe's: its stored crossfit run at these weights, else its
    cost-conditioned routers' folds deciding at them (trained once, about a minute). Names a
    checkpoint of that recipe (or the command that trains it) and writes a deployment manifest.
    With --engine ray the folds it trains (the calibration's, the fold routers') are Ray tasks: the
    same decision."""
    from forge_core.evaluation.decide import decide
    from forge_core.evaluation.manifest import data_version, decision_manifest, write_manifest
    from forge_core.evidence.retrievers import evaluated_retriever_hash

    check_engine(engine, address)
    retriever = chosen_retriever(host, retriever)
    store = open_store()
    weights, from_budget = _weights(store, host, lambda_in, lambda_out, budget_tokens, accounting, retriever,
                                    engine, address)
    with counting_progress(transient=True) as progress:
        task = progress.add_task("training the fold routers once (folds)", total=None)
        decided = decide(store, host, weights, config.cache_dir(), accounting,
                         on_fold=lambda done, total: progress.update(task, completed=done, total=total),
                         retriever=retriever, recipe=_recipe(store, host, recipe, retriever),
                         budget_tokens=budget_tokens, engine=engine, address=address)
    decided["weights_from_budget"] = from_budget
    report = decision_manifest(decided, data_version(store, host, decided["recipe"]["n_arms"],
                                                     evaluated_retriever_hash(store, host, retriever)))
    if manifest is not None:
        write_manifest(manifest, report)
    if as_json:
        print_json(report)
        return
    _print(report)
    if manifest is not None:
        console.print(f"manifest: {manifest} (`forge serve --manifest {manifest}` serves exactly this)")


def _weights(store, host: str, lambda_in: float | None, lambda_out: float | None, budget_tokens: float | None,
             accounting: str, retriever: str, engine: str, address: str | None) -> tuple:
    """The weights to decide at, and whether they came from calibrating to the budget (its folds on
    `engine`)."""
    from forge_core.routing.utility import CostWeights

    if lambda_in is not None and lambda_out is not None:
        return CostWeights(lambda_in, lambda_out), False
    if lambda_in is not None or lambda_out is not None or budget_tokens is None:
        raise InvalidInput("give both --lambda-in and --lambda-out, or --budget-tokens alone (the weights are then "
                           "calibrated to it)")
    from forge_core.evaluation.calibration import CalibrationRequest, calibrated_weights

    request = CalibrationRequest(budget_tokens=budget_tokens, host=host, accounting=accounting, retriever=retriever)
    with counting_progress(transient=True) as progress:
        task = progress.add_task("calibrating the weights to the budget (folds, once)", total=request.folds)
        weights = calibrated_weights(store, request, config.cache_dir(),
                                     on_fold=lambda done, total: progress.update(task, completed=done),
                                     engine=engine, address=address)
    return weights, True


def _recipe(store, host: str, recipe_id: str | None, retriever: str):
    """The recipe named by id among those the host's runs measured (None: the recommended one)."""
    if recipe_id is None:
        return None
    from forge_core.evaluation.recipe_choice import measured_recipes
    from forge_core.evidence.embedders import embedder_name
    from forge_core.evidence.retrievers import evaluated_retriever_hash

    measured = measured_recipes(store, host, evaluated_retriever_hash(store, host, retriever), embedder_name())
    found = {m.recipe.recipe_id: m.recipe for m in measured}
    if recipe_id not in found:
        known = ", ".join(sorted(found)) or "none"
        raise InvalidInput(f"no crossfit run of host '{host}' measured recipe '{recipe_id}' (measured: {known}; "
                           "see `forge recipes`)")
    return found[recipe_id]


def _print(report: dict) -> None:
    """The decision as `forge decide` prints it (stdout; progress and messages go to stderr)."""
    out.print(report["sentence"])
    recipe = report["recipe"]
    chosen = ("the recommended recipe, measured best by the store's runs" if report["recipe_measured"]
              else "the default recipe: no run of the store compares recipes")
    if recipe["recipe_id"] != report["recommended_recipe"]:
        chosen = f"asked for; the recommended recipe is {report['recommended_recipe']}"
    out.print(f"recipe: {recipe['recipe_id']} ({recipe['label']}): {chosen}")
    if report["policy"] == report["best_fixed_policy"] and report["challenger"]:
        out.print(f"strongest servable router, {report['challenger']}, against {report['best_fixed_arm']}:")
        gains = report["policies"][report["challenger"]]["gain"]
    else:
        gains = report["gain"]
    for key, label, digits in (("utility", "utility", 3), ("f1", "macro F1", 3), ("tokens", "tokens", 1)):
        low, high = gains[key]["ci"]
        out.print(f"  {label:<9} {gains[key]['difference']:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}] "
                  f"vs {report['best_fixed_arm']}")
    floor = report["vs_floor"]
    if floor is not None:
        low, high = floor["ci"]
        out.print(f"  {report['floor_verdict']} the floor {report['floor_policy']}: "
                  f"{floor['difference']:+.3f} utility [{low:+.3f}, {high:+.3f}]")
    _print_excluded(report)
    if report["budget_tokens"] is not None:
        origin = " (the weights were calibrated to it)" if report["weights_from_budget"] else ""
        over = ", ".join(report["over_budget"]) or "none"
        out.print(f"budget: {report['budget_tokens']:g} tokens a query{origin}; decidably over it: {over}")
    label = "train, then decide again" if report["trains_first"] else "serve"
    out.print(f"{label}: {report['serve_command']}")
    source = ("its stored crossfit run at these weights" if report["evidence"] == "stored run"
              else "the folds of its cost-conditioned run, deciding at these weights")
    if report["evidence"] != "stored run":
        out.print("the per-weight routers and the baselines were not measured at these weights: `forge eval "
                  f"crossfit --lambda-in {report['lambda_in']:g} --lambda-out {report['lambda_out']:g}` measures "
                  "them, and they compete from then on")
    out.print(f"(out of fold: {report['queries']} queries, {source}: {', '.join(report['crossfit_run_ids'])}; "
              f"{report['accounting']} accounting; data {report['data_version']}, code {report['code_version']})")


def _print_excluded(report: dict) -> None:
    """The policies that could not compete though they beat the best fixed arm decidably."""
    for name, reason in report["excluded"].items():
        gain = report["policies"][name]["gain"]["utility"]
        if Interval.of(gain["ci"]).above:
            out.print(f"  excluded though decidably above {report['best_fixed_arm']}: {name} "
                      f"{gain['difference']:+.3f} [{gain['ci'][0]:+.3f}, {gain['ci'][1]:+.3f}]: {reason}")


def recipes_command(
    host: Annotated[str, typer.Option(help="Whose crossfit runs.")] = "embedded",
    arms: Annotated[int, typer.Option(help="The alphabet size of the routers compared.")] = 6,
    retriever: Annotated[Optional[str], typer.Option(help="The retriever whose runs." + HOST_RETRIEVER_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """The recipes the host's crossfit runs measured, each one's paired comparisons with the others
    on the same queries, and the recommended recipe: the one they measure best, which `forge
    decide`, `forge train` and `forge eval crossfit` default to."""
    from rich.table import Table

    from forge_core.evaluation.recipe_choice import recommended_recipe
    from forge_core.evidence.embedders import embedder_name
    from forge_core.evidence.retrievers import evaluated_retriever_hash

    retriever = chosen_retriever(host, retriever)
    store = open_store()
    choice = recommended_recipe(store, host, evaluated_retriever_hash(store, host, retriever), embedder_name(),
                                arms, config.cache_dir())
    recommended = choice["recipe"]
    if as_json:
        print_json({"recommended": recommended.to_dict(), "measured": choice["measured"],
                    "standings": choice["standings"], "comparisons": choice["comparisons"]})
        return
    table = Table("recipe", "", "beats", "beaten by", "comparisons above / below", "what",
                  title=f"Router recipes measured on host '{host}' ({arms} arms)",
                  caption="a comparison: one router's out-of-fold utility under one recipe minus under another, on "
                          "the same queries and weights, decided where its 95% interval excludes zero; a recipe "
                          "beats another when their decided comparisons favour it beyond chance (sign test, 5%); "
                          "recommended: the simplest recipe no other beats")
    for row in choice["standings"]:
        mark = "recommended" if row["recipe_id"] == recommended.recipe_id else ""
        table.add_row(row["recipe_id"], mark, ", ".join(row["beats"]) or "-", ", ".join(row["beaten_by"]) or "-",
                      f"{row['decidably_above']} / {row['decidably_below']} of {row['comparisons']}", row["label"])
    Console(width=160).print(table)
    if not choice["measured"]:
        console.print("No two recipes were measured on the same queries: the default recipe is recommended. Compare "
                      "one with `forge eval crossfit --warm-arms 6` beside a run of the default.")
