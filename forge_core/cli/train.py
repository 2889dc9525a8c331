"""`forge features`, `forge train` and `forge checkpoints`."""

from __future__ import annotations

import json
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Column, Table

from forge_core.cli.output import (
    BENCHMARK_SUBSET_HELP,
    HOST_RETRIEVER_HELP,
    chosen_retriever,
    console,
    counting_progress,
    open_store,
    print_json,
    print_summary,
    spinner_progress,
)
from forge_core.errors import InvalidInput
from forge_core.routing.conditioning import CostConditioning
from forge_core.store import Store
from forge_core.training.request import TrainRequest
from forge_core.training.settings import Stage1Config, Stage2Config

RETRIEVER_HELP = ("The retriever whose evidence the outcomes and the retrieval features were made under "
                  "(`forge enumerate --retriever`); a router records it and refuses any other." + HOST_RETRIEVER_HELP)

def features_command(
    host: Annotated[str, typer.Option(help="Host whose queries (and probes) to featurize.")] = TrainRequest.host,
    retriever: Annotated[Optional[str], typer.Option(help=RETRIEVER_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Compute the router features of every enumerated query (only what is missing)."""
    retriever = chosen_retriever(host, retriever)
    print_summary(compute_features_with_progress(open_store(), host, retriever=retriever), as_json)


def compute_features_with_progress(store: Store, host: str, benchmarks: tuple[str, ...] | None = None,
                                   retriever: str = TrainRequest.retriever) -> dict[str, Any]:
    """`compute_features` with a progress bar: the explicit step before training and evaluation."""
    from forge_core.routing.features import compute_features

    with counting_progress(transient=True) as progress:
        task = progress.add_task("features", total=None)
        return compute_features(store, host, benchmarks, on_progress=lambda done, total: progress.update(
            task, completed=done, total=total), retriever=retriever)


# Over 60 lines: its typer options (48 lines) are `forge train --help`.
def train_router_command(
    stage: Annotated[int, typer.Option(help="1 (KL distillation) or 2 (GRPO family).")] = TrainRequest.stage,
    variant: Annotated[str, typer.Option(help="full, lite or bge.")] = TrainRequest.variant,
    arms: Annotated[int, typer.Option(help="Alphabet size: 3, 6 or 12.")] = TrainRequest.n_arms,
    host: Annotated[str, typer.Option(help="Whose outcomes to train on.")] = TrainRequest.host,
    lambda_in: Annotated[float, typer.Option(help="Input-token cost weight.")] = TrainRequest.lambda_in,
    lambda_out: Annotated[float, typer.Option(help="Output-token cost weight.")] = TrainRequest.lambda_out,
    tau: Annotated[float, typer.Option(help="Boltzmann temperature.")] = Stage1Config.tau,
    algorithm: Annotated[str, typer.Option(help="Stage 2: grpo, dr_grpo, rloo or dpo.")] = Stage2Config.loss_type,
    rewards: Annotated[str, typer.Option(help="Stage 2: table (replay) or live.")] = TrainRequest.rewards,
    reward: Annotated[str, typer.Option(
        help="Stage 1 reward: gold (F1), judge (`forge rewards judge`) or consensus (no call).")] = TrainRequest.reward,
    stage2_reward: Annotated[str, typer.Option(
        help="Stage 2 reward: gold, judge or consensus.")] = TrainRequest.stage2_reward,
    router_kind: Annotated[str, typer.Option(
        "--router", help="factorized, or flat (the ablation).")] = TrainRequest.router_kind,
    target: Annotated[str, typer.Option(help="Stage 1: soft (Boltzmann) or hard (control).")] = Stage1Config.target,
    warm_arms: Annotated[Optional[int], typer.Option(
        help="Stage 1: 3 (the paper's warm start: support head only, thinking uniform) or 6 (the whole "
             "alphabet: the thinking head learns). Default: the recommended recipe's (`forge recipes`: the one "
             "the store's crossfit runs measure best; the paper's without any).")] = None,
    max_epochs: Annotated[int, typer.Option(help="Stage 1: most epochs.")] = Stage1Config.max_epochs,
    patience: Annotated[int, typer.Option(
        help="Stage 1: epochs without a better dev loss before stopping.")] = Stage1Config.patience,
    steps: Annotated[int, typer.Option(help="Stage 2 steps.")] = Stage2Config.steps,
    beta: Annotated[float, typer.Option(
        help="Stage 2: initial weight of the KL anchor to Stage 1.")] = Stage2Config.beta,
    entropy_coef: Annotated[float, typer.Option(
        help="Stage 2: weight of the entropy bonus.")] = Stage2Config.entropy_coef,
    log_every: Annotated[int, typer.Option(help="Stage 2: steps per logged row.")] = Stage2Config.log_every,
    parent: Annotated[Optional[str], typer.Option(help="Stage 2: Stage-1 checkpoint id (default newest).")] = None,
    seed: Annotated[int, typer.Option(help="Training seed.")] = Stage1Config.seed,
    split_seed: Annotated[int, typer.Option(help="Split seed (0, 1 or 2).")] = TrainRequest.split_seed,
    benchmark: Annotated[Optional[list[str]], typer.Option(help=BENCHMARK_SUBSET_HELP)] = None,
    conditioned: Annotated[bool, typer.Option(
        "--conditioned", help="One router for every cost weight: the weights are router inputs, trained at "
                              "weights drawn log-uniformly over --weight-range (lambda-in/out only set the "
                              "reported dev metrics).")] = False,
    weight_range: Annotated[tuple[float, float], typer.Option(help="--conditioned: smallest and largest trained "
                                                                    "weight.")] = (CostConditioning.low,
                                                                                   CostConditioning.high),
    draws: Annotated[Optional[int], typer.Option(
        help="--conditioned: weight pairs each training query is seen at per epoch (default: the recommended "
             "recipe's).")] = None,
    retriever: Annotated[Optional[str], typer.Option(help=RETRIEVER_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Train a router on the store's outcomes and save a checkpoint with its lineage."""
    from forge_core import config
    from forge_core.evaluation.recipe_choice import recommended_or_default
    from forge_core.training.trainer import train_router_job

    store = open_store()
    retriever = chosen_retriever(host, retriever)

    def make_request(stage1_arms: int, weight_draws: int) -> TrainRequest:
        """The request with these warm-start arms and conditioned draws, every other option as given."""
        return TrainRequest(
            host=host, variant=variant, n_arms=arms, stage=stage, router_kind=router_kind, lambda_in=lambda_in,
            lambda_out=lambda_out, rewards=rewards, reward=reward, stage2_reward=stage2_reward, parent=parent,
            split_seed=split_seed,
            benchmarks=tuple(benchmark) if benchmark else None,
            stage1=Stage1Config(tau=tau, target=target, warm_start_arms=stage1_arms, seed=seed,
                                max_epochs=max_epochs, patience=patience),
            stage2=Stage2Config(steps=steps, loss_type=algorithm, seed=seed, beta=beta, entropy_coef=entropy_coef,
                                log_every=log_every),
            conditioning=CostConditioning(*weight_range, draws=weight_draws) if conditioned else None,
            retriever=retriever,
        )

    # The options given are checked before the recommended recipe (seconds on a cold cache) fills the rest.
    request = make_request(Stage1Config.warm_start_arms if warm_arms is None else warm_arms,
                           CostConditioning.draws if draws is None else draws)
    if warm_arms is None or draws is None:
        recipe = recommended_or_default(store, host, arms, retriever, config.cache_dir())
        request = make_request(recipe.warm_start_arms if warm_arms is None else warm_arms,
                               (recipe.draws or CostConditioning.draws) if draws is None else draws)
    request.check(store)
    compute_features_with_progress(store, host, request.benchmarks, request.retriever)
    with spinner_progress() as progress:
        task = progress.add_task(f"stage {stage}", total=steps if stage == 2 else None)

        def on_log(row: dict) -> None:
            done = row.get("step", row.get("epoch", 0))
            detail = ", ".join(f"{k} {v:.4g}" for k, v in row.items() if isinstance(v, float))
            progress.update(task, completed=done, description=f"stage {stage}: {detail}")

        checkpoint_id = train_router_job(store, request, on_log=on_log)
    if checkpoint_id is None:
        console.print("training cancelled (a cancel request from the dashboard): no checkpoint stored")
        raise typer.Exit(1)
    record = store.checkpoint(checkpoint_id)[0]
    result = {"checkpoint_id": checkpoint_id, "stage": stage, "variant": variant, "conditioned": conditioned,
              "metrics": record["metrics"]}
    if as_json:
        print_json(result)
    else:
        console.print(f"checkpoint {checkpoint_id}: " + ", ".join(f"{k} {v:.4g}" for k, v in record["metrics"].items()))


def checkpoints_command(
    host: Annotated[Optional[str], typer.Option(help="Only this host's checkpoints.")] = None,
    delete: Annotated[Optional[list[str]], typer.Option(help="Delete this checkpoint (repeatable).")] = None,
    set_default: Annotated[Optional[str], typer.Option(
        "--set-default", help="Mark this checkpoint as its host's default router (Live query, "
                              "`forge ask --route`); a new run never takes the mark over.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """List router checkpoints with their lineage summary, dev metrics and default mark; delete
    some, or mark a host's default router."""
    if delete and set_default:
        raise InvalidInput("choose --delete or --set-default, not both")
    store = open_store()
    if delete:
        store.delete_checkpoints(delete)
        console.print(f"deleted {len(set(delete))} checkpoint(s)")
        return
    if set_default:
        marked_host = store.mark_checkpoint_as_default(set_default)
        if marked_host is None:
            raise InvalidInput(f"no checkpoint '{set_default}' (see `forge checkpoints`)")
        console.print(f"{set_default} is now the default router of host '{marked_host}'")
        return
    from forge_core.reports.checkpoint_views import checkpoint_names

    frame = store.checkpoints(host)
    marked = {name: store.marked_default_router(name) for name in set(frame["host"])}
    names = checkpoint_names(store.checkpoints())  # the pages' names, unique over every host's checkpoints
    rows = [{"checkpoint_id": r.checkpoint_id, "name": names[r.checkpoint_id], "created_at": str(r.created_at),
             "stage": int(r.stage), "host": r.host, "variant": r.variant, "n_arms": int(r.n_arms), "parent": r.parent,
             "metrics": json.loads(r.metrics), "default": marked[r.host] == r.checkpoint_id}
            for r in frame.itertuples()]
    if as_json:
        print_json({"checkpoints": rows})
        return
    # the full id whole in any terminal (`forge serve --router` takes it); the other columns wrap
    id_column = Column("checkpoint", no_wrap=True, min_width=max((len(r["checkpoint_id"]) for r in rows), default=0))
    table = Table(id_column, "name", "stage", "host", "variant", "arms", "parent", "dev utility", "dev F1", "default")
    for r in rows:
        table.add_row(r["checkpoint_id"], r["name"], str(r["stage"]), r["host"], r["variant"], str(r["n_arms"]),
                      r["parent"] or "", f"{r['metrics'].get('dev_utility', 0):.4f}", _dev_f1_cell(r["metrics"]),
                      "yes" if r["default"] else "")
    Console().print(table)


def _dev_f1_cell(metrics: dict) -> str:
    """The dev F1 column: a proxy-trained checkpoint has no dev F1, only its proxy's mean."""
    if "dev_f1" in metrics:
        return f"{metrics['dev_f1']:.4f}"
    return f"proxy {metrics.get('dev_proxy_reward', 0):.4f}"
