"""`forge eval` (the Cached, Crossfit and Fresh Online protocols) and `forge sweep`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from forge_core.cli.output import (
    BENCHMARK_SUBSET_HELP,
    HOST_RETRIEVER_HELP,
    AddressOption,
    EngineOption,
    chosen_retriever,
    console,
    counting_progress,
    open_store,
    print_json,
    spinner_progress,
)
from forge_core.engines import DEFAULT_ENGINE, check_engine
from forge_core.errors import InvalidInput
from forge_core.evaluation.settings import (
    CROSSFIT_FOLDS,
    CROSSFIT_STAGE,
    CROSSFIT_STAGE2_STEPS,
    DEFAULT_PER_BENCHMARK,
    TRANSFER_CALIBRATION_SPLIT,
    EvaluationSettings,
)
from forge_core.routing.utility import DEFAULT_LAMBDA_IN, DEFAULT_LAMBDA_OUT, CostWeights
from forge_core.training.settings import Stage1Config, Stage2Config

if TYPE_CHECKING:
    from forge_core.evaluation.cached import CachedRequest
    from forge_core.evaluation.crossfit import CrossfitSettings
    from forge_core.evaluation.fresh_online import FreshRequest
    from forge_core.evaluation.transfer import TransferRequest
    from forge_core.store import Store

AccountingOption = Annotated[str, typer.Option(
    help="deploy: charge every host call a decision needs on a new query (probes, earlier cascade calls, the "
         "answer); answer: the paper's Cached cost, the answering call only (excludes probes).")]
HostOption = Annotated[str, typer.Option(help="Whose outcomes to evaluate on.")]
SplitOption = Annotated[str, typer.Option(help="dev or test.")]
ArmsOption = Annotated[int, typer.Option(help="Alphabet size.")]
LambdaInOption = Annotated[float, typer.Option(help="Input-token cost weight.")]
LambdaOutOption = Annotated[float, typer.Option(help="Output-token cost weight.")]
GRID_HELP = ("; comma-separated values make a grid with the other weight and --split-seed: a run for each "
             "combination, and with --engine ray all their folds go to Ray as one batch.")
GridLambdaInOption = Annotated[str, typer.Option(help="Input-token cost weight" + GRID_HELP)]
GridLambdaOutOption = Annotated[str, typer.Option(help="Output-token cost weight" + GRID_HELP)]
PolicyOption = Annotated[Optional[list[str]], typer.Option(help="Only these policies (repeatable).")]
BenchmarkOption = Annotated[Optional[list[str]], typer.Option(help=BENCHMARK_SUBSET_HELP)]
SplitSeedOption = Annotated[int, typer.Option(help="Split seed (0, 1 or 2).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
FoldsOption = Annotated[int, typer.Option(help="Number of folds (stratified by benchmark).")]
StageOption = Annotated[int, typer.Option(help="1, or 2 (Stage 2 on top; Stage-1 parents reported too).")]
Stage2StepsOption = Annotated[int, typer.Option(help="Stage-2 steps per fold and router.")]
PerBenchmarkOption = Annotated[int, typer.Option(help="Queries per benchmark, each answered live.")]
RetrieverOption = Annotated[Optional[str], typer.Option(
    help="The retriever whose evidence the Summary and Raw outcomes were made under (`forge enumerate --retriever`): "
         "only its outcomes are read (Direct outcomes serve every retriever), and its routers." + HOST_RETRIEVER_HELP)]

eval_app = typer.Typer(
    help="Compare FORGE routers with the baselines and the oracle: `cached` on the enumerated outcomes of a "
         "fixed split, `crossfit` out of fold over every complete query (resumable, results stored), `fresh` "
         "by running every policy live on the host (every call counted and timed; resumable). Costs and "
         "utilities charge what a deployment pays unless `--accounting answer`. Without a subcommand, "
         "`--protocol` picks one (the older spelling).",
    invoke_without_command=True)
PROTOCOL_OPTIONS = {  # with the older `--protocol` spelling: the options only one protocol takes
    "cached": ("--repeats",),
    "crossfit": ("--folds", "--stage", "--stage2-steps", "--warm-arms"),
    "fresh": ("--per-benchmark",),
}  # (`forge eval transfer` has no --protocol spelling)


@eval_app.command("cached")
def eval_cached(host: HostOption = EvaluationSettings.host, split: SplitOption = EvaluationSettings.split,
                arms: ArmsOption = EvaluationSettings.n_arms,
                lambda_in: LambdaInOption = DEFAULT_LAMBDA_IN, lambda_out: LambdaOutOption = DEFAULT_LAMBDA_OUT,
                policy: PolicyOption = None,
                repeats: Annotated[bool, typer.Option(
                    help="Mean +- SD over 3 split seeds x 3 training seeds (routers trained where missing).")] = False,
                benchmark: BenchmarkOption = None, split_seed: SplitSeedOption = EvaluationSettings.split_seed,
                accounting: AccountingOption = EvaluationSettings.accounting,
                retriever: RetrieverOption = None,
                as_json: JsonOption = False) -> None:
    """The Cached protocol: every policy on the enumerated outcomes of the split's complete queries
    (the Stage-1 routers still missing for these settings are trained first, and said so)."""
    from forge_core.evaluation.cached import CachedRequest

    request = CachedRequest(_settings(host, split, arms, CostWeights(lambda_in, lambda_out), policy, benchmark,
                                      split_seed, accounting, retriever), repeats=repeats)
    store = open_store()
    request.check(store)
    _prepare_evaluations(store, request.evaluations())
    if repeats:
        _eval_repeats(store, request, as_json)
    else:
        _eval_cached(store, request, as_json)


WarmArmsOption = Annotated[Optional[int], typer.Option(
    help="Stage 1: 3 (the paper's warm start: support head only, thinking uniform) or 6 (the whole alphabet). "
         "Default: the recommended recipe's (`forge recipes`: the one the store's runs measure best).")]


@eval_app.command("crossfit")
def eval_crossfit(host: HostOption = EvaluationSettings.host, arms: ArmsOption = EvaluationSettings.n_arms,
                  lambda_in: GridLambdaInOption = str(DEFAULT_LAMBDA_IN),
                  lambda_out: GridLambdaOutOption = str(DEFAULT_LAMBDA_OUT),
                  folds: FoldsOption = CROSSFIT_FOLDS, stage: StageOption = CROSSFIT_STAGE,
                  stage2_steps: Stage2StepsOption = CROSSFIT_STAGE2_STEPS,
                  split_seed: Annotated[str, typer.Option(
                      help="Seeds the folds and inner dev parts; comma-separated seeds (0,1,2) repeat the run at "
                           "each (a grid, as the weights).")] = str(EvaluationSettings.split_seed),
                  accounting: AccountingOption = EvaluationSettings.accounting,
                  warm_arms: WarmArmsOption = None,
                  retriever: RetrieverOption = None, as_json: JsonOption = False,
                  engine: EngineOption = DEFAULT_ENGINE, address: AddressOption = None) -> None:
    """Crossfit: every complete query of the host gets one out-of-fold decision per policy (every
    benchmark and split pooled, every policy reported); resumable, results stored. The routers are
    trained with the recommended recipe's Stage 1 and weight draws unless --warm-arms says otherwise.
    Comma-separated weights or split seeds make a grid: a run for each combination (as `forge sweep`
    combines weights), each stored as alone. With --engine ray the folds are Ray tasks, a grid's all
    sent as one batch: the same run ids and the same rows."""
    from forge_core import config
    from forge_core.evaluation.crossfit import CrossfitSettings
    from forge_core.evaluation.recipe_choice import recommended_or_default
    from forge_core.routing.conditioning import CostConditioning

    check_engine(engine, address)
    combinations = crossfit_grid(lambda_in, lambda_out, split_seed)
    retriever = chosen_retriever(host, retriever)
    recipe = recommended_or_default(open_store(), host, arms, retriever, config.cache_dir())
    grid = [CrossfitSettings(host=host, n_arms=arms, lambda_in=weight_in, lambda_out=weight_out,
                             accounting=accounting, folds=folds, stage=stage, split_seed=seed,
                             stage1=Stage1Config(warm_start_arms=warm_arms or recipe.warm_start_arms),
                             stage2=Stage2Config(steps=stage2_steps),
                             conditioning=CostConditioning(draws=recipe.draws or CostConditioning.draws),
                             retriever=retriever)
            for weight_in, weight_out, seed in combinations]
    if len(grid) == 1:
        _eval_crossfit(grid[0], as_json, engine, address)
    else:
        _eval_crossfit_grid(grid, as_json, engine, address)


def crossfit_grid(lambda_in: str, lambda_out: str, split_seed: str) -> list[tuple[float, float, int]]:
    """Every (lambda_in, lambda_out, split seed) of the comma-separated options, each once, in the
    order given (weights first, as `forge sweep` combines them)."""
    seeds = [_split_seed(value) for value in _floats(split_seed, "--split-seed")]
    grid = list(dict.fromkeys((weight_in, weight_out, seed) for weight_in in _floats(lambda_in, "--lambda-in")
                              for weight_out in _floats(lambda_out, "--lambda-out") for seed in seeds))
    if not grid:
        raise InvalidInput("--lambda-in, --lambda-out and --split-seed each take at least one value")
    return grid


def _split_seed(value: float) -> int:
    if value != int(value) or value < 0:
        raise InvalidInput(f"--split-seed takes whole numbers of 0 or more, not {value:g}")
    return int(value)


@eval_app.command("fresh")
def eval_fresh(host: HostOption = EvaluationSettings.host, split: SplitOption = EvaluationSettings.split,
               arms: ArmsOption = EvaluationSettings.n_arms,
               lambda_in: LambdaInOption = DEFAULT_LAMBDA_IN, lambda_out: LambdaOutOption = DEFAULT_LAMBDA_OUT,
               policy: PolicyOption = None,
               per_benchmark: PerBenchmarkOption = DEFAULT_PER_BENCHMARK, benchmark: BenchmarkOption = None,
               split_seed: SplitSeedOption = EvaluationSettings.split_seed,
               accounting: AccountingOption = EvaluationSettings.accounting,
               retriever: RetrieverOption = None, as_json: JsonOption = False) -> None:
    """Fresh Online: every deployable policy answers the first queries of each benchmark live on the
    host, every call counted and timed (resumable: finished answers are kept in the store)."""
    from forge_core.evaluation.fresh_online import FreshRequest

    request = FreshRequest(_settings(host, split, arms, CostWeights(lambda_in, lambda_out), policy, benchmark,
                                     split_seed, accounting, retriever), per_benchmark)
    store = open_store()
    request.check(store)
    _prepare_evaluations(store, [request.settings])
    _eval_fresh(store, request, as_json)


@eval_app.command("transfer")
def eval_transfer(
    source: Annotated[str, typer.Option("--from", help="The source host: whose routers (trained on its data only).")],
    target: Annotated[str, typer.Option("--to", help="The target host: whose queries, outcomes and costs.")],
    split: SplitOption = EvaluationSettings.split, arms: ArmsOption = EvaluationSettings.n_arms,
    lambda_in: LambdaInOption = DEFAULT_LAMBDA_IN, lambda_out: LambdaOutOption = DEFAULT_LAMBDA_OUT,
    split_seed: SplitSeedOption = EvaluationSettings.split_seed,
    calibrate: Annotated[Optional[list[int]], typer.Option(
        help="Also refit the transferred routers' last layers on K labelled target queries (repeatable: "
             "--calibrate 25 --calibrate 50 ...).")] = None,
    calibration_split: Annotated[str, typer.Option(
        help="The target split calibration queries come from: train or dev (never the evaluated one)."),
    ] = TRANSFER_CALIBRATION_SPLIT,
    accounting: AccountingOption = EvaluationSettings.accounting,
    retriever: RetrieverOption = None, as_json: JsonOption = False,
) -> None:
    """Transfer: the source host's routers route the target host's stored queries zero-shot (a Full
    router's probes come from the target), beside the target's fixed arms, oracle and own Lite router;
    with --calibrate, after a target-side calibration on K queries."""
    from forge_core.evaluation.transfer import TransferRequest

    request = TransferRequest(source, target, arms, CostWeights(lambda_in, lambda_out), split, split_seed, accounting,
                              tuple(calibrate or ()), calibration_split, retriever=chosen_retriever(source, retriever))
    store = open_store()
    request.check(store)
    _prepare_evaluations(store, request.evaluations())
    _eval_transfer(store, request, as_json)


@eval_app.callback()
def eval_command(
    context: typer.Context,
    host: HostOption = EvaluationSettings.host,
    split: Annotated[Optional[str], typer.Option(
        help=f"Cached and fresh: dev or test (default {EvaluationSettings.split}).")] = None,
    protocol: Annotated[str, typer.Option(help="cached, crossfit or fresh (or name it as a subcommand).")] = "cached",
    arms: ArmsOption = EvaluationSettings.n_arms,
    lambda_in: LambdaInOption = DEFAULT_LAMBDA_IN,
    lambda_out: LambdaOutOption = DEFAULT_LAMBDA_OUT,
    policy: PolicyOption = None,
    repeats: Annotated[bool, typer.Option(help="Cached: mean +- SD over 3 x 3 runs.")] = False,
    per_benchmark: Annotated[Optional[int], typer.Option(
        help=f"Fresh: queries per benchmark (default {DEFAULT_PER_BENCHMARK}).")] = None,
    benchmark: BenchmarkOption = None,
    folds: Annotated[Optional[int], typer.Option(help=f"Crossfit: number of folds (default {CROSSFIT_FOLDS}).")] = None,
    stage: Annotated[Optional[int], typer.Option(help=f"Crossfit: 1 or 2 (default {CROSSFIT_STAGE}).")] = None,
    stage2_steps: Annotated[Optional[int], typer.Option(
        help=f"Crossfit: Stage-2 steps (default {CROSSFIT_STAGE2_STEPS}).")] = None,
    split_seed: SplitSeedOption = EvaluationSettings.split_seed,
    accounting: AccountingOption = EvaluationSettings.accounting,
    warm_arms: WarmArmsOption = None,
    retriever: RetrieverOption = None,
    as_json: JsonOption = False,
) -> None:
    """`forge eval [--protocol P] ...`: the protocol's subcommand, with only the options it takes."""
    if context.invoked_subcommand is not None:
        sources = (context.get_parameter_source(name) for name in context.params)
        if any(source is not None and source.name == "COMMANDLINE" for source in sources):
            raise InvalidInput(f"give the options after `forge eval {context.invoked_subcommand}`")
        return
    if protocol not in PROTOCOL_OPTIONS:
        raise InvalidInput(f"--protocol is cached, crossfit or fresh, not '{protocol}'")
    given = {"--repeats": repeats, "--folds": folds, "--stage": stage, "--stage2-steps": stage2_steps,
             "--per-benchmark": per_benchmark, "--warm-arms": warm_arms}
    if protocol == "crossfit":
        given |= {"--split": split, "--policy": policy, "--benchmark": benchmark}
    foreign = [name for name, value in given.items()
               if value not in (None, False) and name not in PROTOCOL_OPTIONS[protocol]]
    if foreign:
        raise InvalidInput(f"{', '.join(foreign)} does not apply to `forge eval {protocol}` (see its --help)")
    common = {"host": host, "arms": arms, "lambda_in": lambda_in, "lambda_out": lambda_out,
              "split_seed": split_seed, "accounting": accounting, "retriever": retriever, "as_json": as_json}
    if protocol == "crossfit":
        eval_crossfit(folds=folds or CROSSFIT_FOLDS, stage=stage or CROSSFIT_STAGE,
                      stage2_steps=stage2_steps or CROSSFIT_STAGE2_STEPS, warm_arms=warm_arms,
                      **common | {"lambda_in": str(lambda_in), "lambda_out": str(lambda_out),
                                  "split_seed": str(split_seed)})
    elif protocol == "fresh":
        eval_fresh(split=split or EvaluationSettings.split, policy=policy, benchmark=benchmark,
                   per_benchmark=DEFAULT_PER_BENCHMARK if per_benchmark is None else per_benchmark, **common)
    else:
        eval_cached(split=split or EvaluationSettings.split, policy=policy, repeats=repeats, benchmark=benchmark,
                    **common)


def _settings(host: str, split: str, arms: int, weights: CostWeights, policy: list[str] | None,
              benchmark: list[str] | None, split_seed: int, accounting: str,
              retriever: str | None) -> EvaluationSettings:
    """The evaluation settings of the options (`retriever` None: the host's default)."""
    return EvaluationSettings(host, split, arms, weights, tuple(policy) if policy else None,
                              split_seed=split_seed, benchmarks=tuple(benchmark) if benchmark else None,
                              accounting=accounting, retriever=chosen_retriever(host, retriever))


def _prepare_evaluations(store: Store, evaluations: list[EvaluationSettings]) -> None:
    """The explicit step before an evaluation reads: features, and the Stage-1 routers still
    missing for each of the settings, with a progress bar; says which routers it trained."""
    from forge_core.evaluation.setup import prepare_evaluations

    with counting_progress(transient=True) as progress:
        task = progress.add_task("features, then missing routers", total=None)
        trained = prepare_evaluations(store, evaluations, on_features=lambda done, total: progress.update(
            task, completed=done, total=total))
    if trained:
        console.print(f"trained {len(trained)} missing Stage-1 router(s) first: {', '.join(trained)}")


def _eval_repeats(store: Store, request: CachedRequest, as_json: bool) -> None:
    from forge_core.evaluation.cached import run_cached

    settings = request.settings
    with spinner_progress() as progress:
        task = progress.add_task("runs", total=len(request.evaluations()))
        report = run_cached(store, request, on_run=lambda *_: progress.advance(task))
    if as_json:
        print_json(report)
        return
    table = Table("policy", "macro F1", "macro EM", "cost (k tok)", "utility",
                  title=f"{settings.host}, {settings.split}, 3 x 3 runs")
    for name, row in report["policies"].items():
        table.add_row(name, *(f"{row[m + '_mean']:.4f} ± {row[m + '_sd']:.4f}"
                              for m in ("macro_f1", "macro_em", "cost_k", "macro_utility")))
    Console().print(table)


def _eval_cached(store: Store, request: CachedRequest, as_json: bool) -> None:
    from forge_core.evaluation.cached import run_cached

    settings = request.settings
    with spinner_progress() as progress:
        task = progress.add_task("evaluating", total=None)
        report = run_cached(store, request,
                            on_policy=lambda name: progress.update(task, description=f"evaluating {name}"))
    if as_json:
        print_json(report)
        return
    from forge_core.routing.utility import ACCOUNTINGS

    table = Table("policy", "macro F1", "macro EM", "k tok (deploy)", "k tok (answer)", "calls", "utility",
                  "oracle agr.", "F1 vs Raw, 95% CI",
                  title=f"{settings.host}, {settings.split}, {report['queries']} queries, "
                        f"cached{_under(settings.retriever)}",
                  caption=f"utility charges {ACCOUNTINGS[settings.accounting]}")
    for name, row in report["policies"].items():
        table.add_row(name, f"{row['macro_f1']:.4f}", f"{row['macro_em']:.4f}", f"{row['deploy_cost_k']:.3f}",
                      f"{row['answer_cost_k']:.3f}", f"{row['calls_per_query']:.2f}", f"{row['macro_utility']:.4f}",
                      f"{row['oracle_agreement']:.3f}", _ci_text(row))
    Console().print(table)


def _eval_fresh(store: Store, request: FreshRequest, as_json: bool) -> None:
    from forge_core.evaluation.fresh_online import run_fresh

    settings = request.settings
    with counting_progress(transient=True) as progress:
        task = progress.add_task("preparing", total=None)

        def on_result(result: Any, remaining: int) -> None:
            done = progress.tasks[0].completed + 1
            progress.update(task, total=done + remaining, completed=done,
                            description=f"live answers ({result.policy})")

        report = run_fresh(store, request, on_result=on_result)
    if as_json:
        print_json(report)
        return
    table = Table("policy", "F1", "EM", "k tok", "calls", "p50 s", "p95 s", "cached F1", "F1 vs Raw",
                  title=f"{settings.host}, {settings.split}, {report['queries']} queries, "
                        f"fresh online (run {report['run_id']})",
                  caption="k tok: thousands of tokens per query over every call; p50/p95: end-to-end latency; "
                          "cached F1: the Cached protocol on the same queries; F1 vs Raw: paired 95% CI")
    for name, row in report["policies"].items():
        table.add_row(name, f"{row['macro_f1']:.4f}", f"{row['macro_em']:.4f}", f"{row['cost_k']:.3f}",
                      f"{row['calls_per_query']:.2f}", f"{row['latency_p50_ms'] / 1000:.2f}",
                      f"{row['latency_p95_ms'] / 1000:.2f}", f"{row['cached_macro_f1']:.4f}", _ci_text(row))
    Console().print(table)
    for name, why in report["not_run"].items():
        console.print(f"{name}: not run live ({why})")


def _eval_crossfit(settings: CrossfitSettings, as_json: bool, engine: str = DEFAULT_ENGINE,
                   address: str | None = None) -> None:
    from forge_core.evaluation.crossfit import run_crossfit, split_seed_spread
    from forge_core.evaluation.decide import decision_of_run
    from forge_core.evaluation.guard_measures import guard_lines
    from forge_core.evaluation.peer_units import PEER_HEADERS, peer_rows
    from forge_core.routing.utility import ACCOUNTINGS

    store = open_store()
    with counting_progress(transient=True) as progress:
        task = progress.add_task("folds", total=settings.folds)
        report = run_crossfit(
            store, settings, on_fold=lambda done, total: progress.update(task, completed=done),
            on_policy=lambda name: progress.update(task, description=f"fold {progress.tasks[0].completed + 1}: {name}"),
            engine=engine, address=address)
    report["across_split_seeds"] = split_seed_spread(store, report)
    decision = decision_of_run(store, report["run_id"], report["settings"])
    report["decision"] = {key: decision[key] for key in ("deploy", "leader", "tied_with_leader", "best_fixed_policy",
                                                          "best_fixed_arm", "router_candidates", "excluded")}
    if as_json:
        print_json(report)
        return
    table = Table("policy", "macro F1", "k tok (deploy)", "k tok (answer)", "calls", "utility", "F1 vs Raw, 95% CI",
                  "utility vs best fixed, 95% CI", "vs ridge floor, 95% CI", "F1 vs mix at its tokens, 95% CI",
                  "regret, 95% CI", "in oracle set",
                  title=f"{settings.host}{_under(settings.retriever)}, crossfit {settings.folds} folds, "
                        f"stage {settings.stage}, split seed "
                        f"{settings.split_seed}, {report['queries']} queries, "
                        f"best fixed arm {report['best_fixed_arm']} (run {report['run_id']})",
                  caption=f"utility charges {ACCOUNTINGS[settings.accounting]}")
    for name, row in sorted(report["policies"].items(), key=lambda item: -item[1]["macro_utility"]):
        table.add_row(name, f"{row['macro_f1']:.4f}", f"{row['deploy_cost_k']:.3f}", f"{row['answer_cost_k']:.3f}",
                      f"{row['calls_per_query']:.2f}", f"{row['macro_utility']:.4f}",
                      _interval(row["ci_f1_vs_always_raw"]), _interval(row["ci_utility_vs_best_fixed"]),
                      _interval(row.get("ci_utility_vs_floor")), _hull_gap_text(row["hull_gap"]),
                      f"{row['regret']['mean']:.4f} {_interval(row['regret']['ci'])}", f"{row['oracle_agreement']:.1%}")
    Console().print(table)
    Console().print("mix: two fixed arms at random per query; its hull (tokens a query, macro F1): "
                    + ", ".join(f"{v['arm']} ({v['tokens']:,.0f}, {v['f1']:.4f})" for v in report["mix_hull"]["all"]))
    _print_stage_gains(report["stage2_minus_stage1"])
    _print_reliability(report)
    for line in guard_lines(report):  # each guarded router out of fold
        Console().print(line)
    peers = Table(*PEER_HEADERS, title="The peers' units (TARG; DART, AdaptR1; RAG-on-a-Diet), paired 95% intervals")
    for cells in peer_rows(report):
        peers.add_row(*cells)
    Console().print(peers)
    Console().print(f"This run alone would deploy {decision['deploy']} (best fixed arm {decision['best_fixed_arm']}; "
                    f"routers decidably above it and servable: {', '.join(decision['router_candidates']) or 'none'}). "
                    "What to deploy at any weights, from the recommended recipe's runs: `forge decide`.")
    _print_seed_spread(report["across_split_seeds"])


def _eval_crossfit_grid(grid: list[CrossfitSettings], as_json: bool, engine: str, address: str | None) -> None:
    """A grid of crossfit runs: every run's missing folds (on Ray, one batch of tasks), then one
    line a run (its id, weights, split seed, best fixed arm and what it alone would deploy) and
    each group of split seeds' spread; `--json`: {"runs": [each run's report]}."""
    from forge_core.evaluation.crossfit import run_crossfit_grid, seed_key, split_seed_spread
    from forge_core.evaluation.decide import decision_of_run

    store = open_store()
    with counting_progress(transient=True) as progress:
        task = progress.add_task(f"folds of {len(grid)} runs", total=sum(settings.folds for settings in grid))
        reports = run_crossfit_grid(store, grid, on_fold=lambda done, total: progress.update(task, completed=done),
                                    engine=engine, address=address)
    for report in reports:
        report["across_split_seeds"] = split_seed_spread(store, report)
        decision = decision_of_run(store, report["run_id"], report["settings"])
        report["decision"] = {key: decision[key] for key in ("deploy", "leader", "best_fixed_arm")}
    if as_json:
        print_json({"runs": reports})
        return
    table = Table("run", "lambda_in", "lambda_out", "split seed", "queries", "best fixed arm", "leader",
                  "this run alone would deploy", title=f"{grid[0].host}, crossfit {grid[0].folds} folds, "
                                                       f"stage {grid[0].stage}, {len(reports)} runs")
    for report in reports:
        table.add_row(report["run_id"], f"{report['lambda_in']:g}", f"{report['lambda_out']:g}",
                      str(report["split_seed"]), str(report["queries"]), report["best_fixed_arm"],
                      report["decision"]["leader"], report["decision"]["deploy"])
    Console().print(table)
    for report in {seed_key(report): report for report in reports}.values():
        _print_seed_spread(report["across_split_seeds"])
    Console().print("Each run's whole report: `forge eval crossfit` with its weights and split seed (stored: no "
                    "training); what to deploy at any weights: `forge decide`.")


def _print_reliability(report: dict) -> None:
    """Per router: its margin deciles' share of right decisions, lowest to highest (or why none)."""
    if not report["margins_stored"]:
        Console().print("No reliability table: this run was stored before crossfit runs recorded routed margins.")
        return
    table = Table("router", "queries", "margin range (utility)", "share right by margin decile, low to high",
                  "realized difference, lowest / highest decile",
                  title="Reliability of the routers' margins (held out)",
                  caption="margin: tau * (log pi(chosen) - log pi(runner-up)); right: the chosen arm realized at "
                          "least the runner-up's utility")
    for name, row in report["policies"].items():
        bins = row.get("reliability")
        if not bins:
            continue
        table.add_row(name, str(sum(b["queries"] for b in bins)), f"{bins[0]['low']:.4f} to {bins[-1]['high']:.4f}",
                      " ".join(f"{b['share_right']:.0%}" for b in bins),
                      f"{bins[0]['realized_difference']:+.4f} / {bins[-1]['realized_difference']:+.4f}")
    Console().print(table)


def _print_stage_gains(gains: dict) -> None:
    """One line per router with a Stage-1 parent: Stage 2 minus Stage 1 utility and its interval."""
    for name, gain in gains.items():
        Console().print(f"{name}: Stage 2 minus Stage 1 utility {gain['difference']:+.4f} {_interval(gain['ci'])}")


def _eval_transfer(store: Store, request: TransferRequest, as_json: bool) -> None:
    from forge_core.evaluation.transfer import run_transfer
    from forge_core.routing.utility import ACCOUNTINGS

    with spinner_progress() as progress:
        task = progress.add_task("transfer", total=None)
        report = run_transfer(store, request, on_step=lambda step: progress.update(task, description=step))
    if as_json:
        print_json(report)
        return
    table = Table("policy", "kind", "macro F1", "k tok (deploy)", "calls", "utility", "vs Always-Raw, 95% CI",
                  "vs best fixed, 95% CI", "vs target's router, 95% CI",
                  title=f"{request.source_host} -> {request.target_host}, {request.split}, "
                        f"{report['queries']} queries, best fixed arm {report['best_fixed_arm']}",
                  caption=f"utility differences; utility charges {ACCOUNTINGS[request.accounting]}")
    table.columns[0].min_width = max(map(len, report["policies"]))  # whole names: calibrated ones differ at the end
    for name, row in sorted(report["policies"].items(), key=lambda item: -item[1]["macro_utility"]):
        table.add_row(name, row["kind"], f"{row['macro_f1']:.4f}", f"{row['deploy_cost_k']:.3f}",
                      f"{row['calls_per_query']:.2f}", f"{row['macro_utility']:.4f}",
                      _interval(row["ci_utility_vs_always_raw"]), _interval(row["ci_utility_vs_best_fixed"]),
                      _interval(row["ci_utility_vs_target_router"]))
    Console().print(table)
    _print_arm_mix(report)
    for router, points in report["calibration"].items():
        stored = ", ".join(f"K={point['k']} {point['checkpoint_id']}" for point in points)
        Console().print(f"{router} calibrated on the target, stored as: {stored}")


def _print_arm_mix(report: dict) -> None:
    """Per benchmark, the target oracle's arm mix beside the transferred and the target's own Lite router."""
    from forge_core.reports.tables import arm_mix_frame

    frame = arm_mix_frame(report, [name for name in ("oracle", "transfer_forge_lite", "target_forge_lite")
                                   if name in report["policies"]])
    table = Table(*frame.columns, title="Where the transferred allocation differs: arm mix per benchmark")
    for row in frame.itertuples(index=False):
        table.add_row(*row)
    Console().print(table)


def _print_seed_spread(spread: dict) -> None:
    if len(spread["split_seeds"]) < 2:
        return
    seeds = spread["split_seeds"]
    table = Table("policy", *(f"gain, seed {s}" for s in seeds), "spread", "decidable",
                  title=f"Utility gain over each seed's best fixed arm, split seeds {', '.join(map(str, seeds))}",
                  caption="decidable: the 95% interval is above zero at every split seed")
    for name, row in spread["policies"].items():
        cells = [f"{gain:+.3f} {_interval(ci)}" for gain, ci in zip(row["gains"], row["intervals"])]
        table.add_row(name, *cells, f"{row['spread']:.3f}", "yes" if row["decidable"] else "no")
    Console().print(table)


def _under(retriever: str) -> str:
    """A title's note of a retriever other than the default BM25."""
    return "" if retriever == "bm25" else f", retriever {retriever}"


def _hull_gap_text(gap: dict | None) -> str:
    """A policy's F1 above the best mix at its tokens with the interval ("below the cheapest arm": none)."""
    if gap is None:
        return "below the cheapest arm"
    return f"{gap['difference']:+.4f} {_interval(gap['ci'])}"


def _interval(ci: list[float] | None) -> str:
    return f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else ""


def _ci_text(row: dict) -> str:
    return _interval(row["ci_vs_always_raw"])


def _floats(text: str, option: str) -> list[float]:
    try:
        return [float(value) for value in text.split(",") if value.strip()]
    except ValueError:
        raise InvalidInput(f"{option} takes comma-separated numbers, e.g. 0,0.1,0.2") from None


def sweep_command(
    host: Annotated[str, typer.Option(help="Whose outcomes to use.")] = EvaluationSettings.host,
    lambda_in: Annotated[str, typer.Option(help="Comma-separated input-cost weights.")] = "0,0.1,0.3",
    lambda_out: Annotated[str, typer.Option(help="Comma-separated output-cost weights.")] = "0,0.2,0.5",
    split: Annotated[str, typer.Option(help="dev or test.")] = EvaluationSettings.split,
    arms: Annotated[int, typer.Option(help="Alphabet size.")] = EvaluationSettings.n_arms,
    policy: Annotated[Optional[list[str]], typer.Option(help="Only these policies (repeatable).")] = None,
    benchmark: Annotated[Optional[list[str]], typer.Option(help=BENCHMARK_SUBSET_HELP)] = None,
    accounting: AccountingOption = EvaluationSettings.accounting,
    retriever: RetrieverOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Sweep the cost weights: each policy's cost/F1 point per (lambda_in, lambda_out) and the
    Pareto frontier (a Stage-1 router is trained first at every point that has none)."""
    from forge_core.evaluation.cached import SweepRequest, run_sweep

    grid = tuple((li, lo) for li in _floats(lambda_in, "--lambda-in") for lo in _floats(lambda_out, "--lambda-out"))
    settings = EvaluationSettings(host, split, arms, policy_names=tuple(policy) if policy else None,
                                  benchmarks=tuple(benchmark) if benchmark else None, accounting=accounting,
                                  retriever=chosen_retriever(host, retriever))
    request = SweepRequest(grid, settings)
    store = open_store()
    request.check(store)
    _prepare_evaluations(store, request.evaluations())
    with spinner_progress() as progress:
        task = progress.add_task("sweeping", total=len(grid))

        def on_point(li: float, lo: float) -> None:
            progress.update(task, advance=1, description=f"lambda_in {li}, lambda_out {lo}")

        result = run_sweep(store, request, on_point=on_point)
    if as_json:
        print_json(result)
        return
    table = Table("policy", "lambda_in", "lambda_out", "cost (k tok)", "macro F1", "utility", "frontier")
    for index, point in enumerate(result["points"]):
        table.add_row(point["policy"], f"{point['lambda_in']:g}", f"{point['lambda_out']:g}", f"{point['cost_k']:.3f}",
                      f"{point['macro_f1']:.4f}", f"{point['macro_utility']:.4f}",
                      "*" if index in result["frontier"] else "")
    Console().print(table)

