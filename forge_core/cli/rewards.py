"""`forge rewards`: label-free rewards (`judge`, `consensus`), their `audit` against gold, and the
`support` verdicts that grounding reports read."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from forge_core.cli.output import (
    BENCHMARK_SUBSET_HELP,
    HOST_RETRIEVER_HELP,
    chosen_retriever,
    console,
    counting_progress,
    open_store,
    print_json,
    print_summary,
)
from forge_core.evaluation.audit_request import RewardAuditRequest
from forge_core.evidence.retrievers import DEFAULT_RETRIEVER, retriever_phrase
from forge_core.rewards.judge_request import JudgeRequest
from forge_core.routing.utility import DEFAULT_LAMBDA_IN, DEFAULT_LAMBDA_OUT, CostWeights

RetrieverOption = Annotated[Optional[str], typer.Option(
    help="The retriever whose evidence the Summary and Raw outcomes were made under (`forge enumerate --retriever`): "
         "only its answers are read and rated (Direct answers serve every retriever)." + HOST_RETRIEVER_HELP)]

rewards_app = typer.Typer(help="Label-free rewards (judge, consensus) and their audit against gold.",
                          no_args_is_help=True)


@rewards_app.command("judge")
def judge_command(
    host: Annotated[str, typer.Option(help="The host whose stored answers are judged.")] = JudgeRequest.host,
    judge_host: Annotated[str, typer.Option(
        help="The host that judges them (any configured host).")] = JudgeRequest.judge_host,
    benchmark: Annotated[Optional[list[str]], typer.Option(help=BENCHMARK_SUBSET_HELP)] = None,
    split: Annotated[str, typer.Option(help="train, dev, test or all.")] = JudgeRequest.split,
    limit: Annotated[Optional[int], typer.Option(help="At most this many queries (all their arms).")] = None,
    arms: Annotated[int, typer.Option(help="Alphabet whose arms are judged: 3, 6 or 12.")] = JudgeRequest.n_arms,
    concurrency: Annotated[int, typer.Option(help="Judge calls in flight at once.")] = JudgeRequest.concurrency,
    split_seed: Annotated[int, typer.Option(help="Split seed (0, 1 or 2).")] = JudgeRequest.split_seed,
    retriever: RetrieverOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object at the end.")] = False,
) -> None:
    """Rate every stored answer still unjudged with the judge host, storing each rating as it lands
    (resumable: run the same command again to continue)."""
    request = JudgeRequest(host=host, judge_host=judge_host, split=split,
                           benchmarks=tuple(benchmark) if benchmark else None, n_arms=arms, split_seed=split_seed,
                           limit=limit, concurrency=concurrency, retriever=chosen_retriever(host, retriever))
    print_summary(_run_rating(request), as_json)


@rewards_app.command("support")
def support_command(
    host: Annotated[str, typer.Option(help="The host whose stored answers are checked.")] = JudgeRequest.host,
    judge_host: Annotated[str, typer.Option(
        help="The evaluator host (any configured host).")] = JudgeRequest.judge_host,
    benchmark: Annotated[Optional[list[str]], typer.Option(help=BENCHMARK_SUBSET_HELP)] = None,
    split: Annotated[str, typer.Option(help="train, dev, test or all.")] = JudgeRequest.split,
    limit: Annotated[Optional[int], typer.Option(help="At most this many queries (all their arms).")] = None,
    arms: Annotated[int, typer.Option(help="Alphabet whose arms are checked: 3, 6 or 12.")] = JudgeRequest.n_arms,
    concurrency: Annotated[int, typer.Option(help="Evaluator calls in flight at once.")] = JudgeRequest.concurrency,
    split_seed: Annotated[int, typer.Option(help="Split seed (0, 1 or 2).")] = JudgeRequest.split_seed,
    retriever: RetrieverOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object at the end.")] = False,
) -> None:
    """Ask the evaluator host, for every stored answer still without a verdict, whether the evidence
    its prompt held (Direct: the retrieved passages) supports it: SUPPORTED, CONTRADICTED or NOT
    ENOUGH INFO, stored as it lands (resumable). `forge eval --json` then reports support_rate."""
    from forge_core.rewards.support_verdict import SUPPORT_SOURCE, evaluator_name, verdict_counts

    request = JudgeRequest(host=host, judge_host=judge_host, split=split,
                           benchmarks=tuple(benchmark) if benchmark else None, n_arms=arms, split_seed=split_seed,
                           limit=limit, concurrency=concurrency, kind=SUPPORT_SOURCE,
                           retriever=chosen_retriever(host, retriever))
    summary = _run_rating(request)
    rows = open_store().reward_outcomes(host, summary["reward_key"])
    summary["support_evaluator"] = evaluator_name(rows["judge_host"].iloc[0], rows["judge_config_hash"].iloc[0]) \
        if len(rows) else None
    summary["stored_verdicts"] = verdict_counts(rows[rows["error"].isna()]["reward"])
    print_summary(summary, as_json)


def _run_rating(request: JudgeRequest) -> dict[str, Any]:
    """Run a judge job (either kind) with a progress bar; its report as a summary."""
    import asyncio

    from forge_core.rewards.judge_job import judge_on_host

    store = open_store()
    request.check(store)
    try:
        with counting_progress() as progress:
            task = progress.add_task(request.kind, total=None)

            def show(report: Any) -> None:
                progress.update(task, completed=report.judged, total=report.planned,
                                description=f"{request.kind} ({len(report.errors)} errors)")

            report = asyncio.run(judge_on_host(store, request, on_progress=show))
    except KeyboardInterrupt:
        console.print("interrupted: every finished rating is stored; run the same command again to continue")
        raise typer.Exit(130) from None
    for line in report.errors[:20]:
        console.print(f"[yellow]error[/yellow] {line}", highlight=False)
    return {"job_id": report.job_id, "reward_key": report.reward_key, "planned": report.planned,
            "judged": report.judged, "unrated": report.unrated, "errors": len(report.errors),
            "status": report.status, "seconds": round(report.seconds, 1)}


@rewards_app.command("consensus")
def consensus_command(
    host: Annotated[str, typer.Option(help="The host whose stored answers are compared.")] = "embedded",
    arms: Annotated[int, typer.Option(help="Alphabet size: 3, 6 or 12.")] = 6,
    retriever: RetrieverOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Per arm: the mean consensus reward over the host's complete queries under the retriever
    (computed from the stored answers, no host call; training and the audit compute it the same way)."""
    from forge_core.arms import alphabet
    from forge_core.evidence.retrievers import evaluated_retriever_hash
    from forge_core.rewards.consensus import consensus_rewards

    store = open_store()
    retriever = chosen_retriever(host, retriever)
    names = [arm.name for arm in alphabet(arms)]
    rows = consensus_rewards(store, host, names, evaluated_retriever_hash(store, host, retriever))
    means = rows.groupby("arm")["reward"].mean().reindex(names)
    summary = {"host": host, "queries": int(rows[["benchmark", "example_id"]].drop_duplicates().shape[0]),
               "mean_reward": {arm: None if means[arm] != means[arm] else round(float(means[arm]), 4) for arm in names}}
    if retriever != DEFAULT_RETRIEVER:
        summary["retriever"] = retriever
    if as_json:
        print_json(summary)
        return
    under = retriever_phrase(retriever)
    console.print(f"{summary['queries']} queries of host '{host}'{under}")
    for arm, value in summary["mean_reward"].items():
        console.print(f"  {arm:<18} {value}")


@rewards_app.command("audit")
def audit_command(
    reward: Annotated[str, typer.Option(help="The proxy to audit: judge or consensus.")] = RewardAuditRequest.reward,
    host: Annotated[str, typer.Option(help="Whose outcomes (they need gold answers).")] = RewardAuditRequest.host,
    judge_key: Annotated[Optional[str], typer.Option(help="Judge rewards of this key (default: the newest).")] = None,
    arms: Annotated[int, typer.Option(help="Alphabet size: 3, 6 or 12.")] = RewardAuditRequest.n_arms,
    lambda_in: Annotated[float, typer.Option(help="Input-token cost weight.")] = DEFAULT_LAMBDA_IN,
    lambda_out: Annotated[float, typer.Option(help="Output-token cost weight.")] = DEFAULT_LAMBDA_OUT,
    router: Annotated[Optional[list[str]], typer.Option(
        help="Router trained on gold and on the proxy in every fold (repeatable: forge_lite, forge_full, "
             f"bge_bm25_kl; default {', '.join(RewardAuditRequest.routers)}).")] = None,
    no_crossfit: Annotated[bool, typer.Option("--no-crossfit", help="Only the per-arm audit (seconds).")] = False,
    folds: Annotated[int, typer.Option(help="Crossfit folds.")] = RewardAuditRequest.folds,
    grid: Annotated[bool, typer.Option("--grid", help="Also Stage 2 on gold or proxy rewards: the paper's "
                                       "gold/gold, gold/proxy and proxy/proxy routers.")] = RewardAuditRequest.grid,
    stage2_steps: Annotated[Optional[int], typer.Option(
        help="With --grid: Stage-2 steps per fold and recipe (default: the crossfit's, "
             f"{RewardAuditRequest.stage2_steps}).")] = None,
    retriever: RetrieverOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """How far a proxy reward can be trusted: per arm Spearman with gold F1, the share of queries
    whose proxy-best arm is gold-best, and the gold utility lost by routers trained on the proxy
    (`regret_vs_gold`, cross-fitted, with its paired 95% interval); with --grid, the paper's proxy
    table (Stage-1 reward / Stage-2 reward) against gold/gold."""
    from forge_core.evaluation.proxy_audit import run_reward_audit

    routers = () if no_crossfit else tuple(router or RewardAuditRequest.routers)
    request = RewardAuditRequest(host=host, reward=reward, judge_key=judge_key, n_arms=arms,
                                 weights=CostWeights(lambda_in, lambda_out), routers=routers, folds=folds, grid=grid,
                                 stage2_steps=RewardAuditRequest.stage2_steps if stage2_steps is None else stage2_steps,
                                 retriever=chosen_retriever(host, retriever))
    store = open_store()
    request.check(store)
    with counting_progress(transient=True) as progress:
        task = progress.add_task("audit folds", total=folds if routers else None)
        report = run_reward_audit(store, request, on_fold=lambda done, total: progress.update(task, completed=done))
    if as_json:
        print_json(report)
    else:
        _print_audit(report)


def _print_audit(report: dict[str, Any]) -> None:
    under = f" under retriever '{report['retriever']}'" if "retriever" in report else ""
    console.print(f"{report['reward']} vs gold F1 on {report['queries']} queries of host '{report['host']}'{under}")
    table = Table("arm", "spearman", "mean proxy", "mean gold F1", "gold utility (always this arm)")
    for arm, row in report["arms"].items():
        rho = "-" if row["spearman"] is None else f"{row['spearman']:.3f}"
        table.add_row(arm, rho, f"{row['mean_proxy']:.3f}", f"{row['mean_gold_f1']:.3f}",
                      f"{row['macro_gold_utility']:.4f}")
    console.print(table)
    for key, label in (("best_arm_match", "proxy-best arm is gold-best (F1)"),
                       ("best_utility_arm_match", "proxy-best arm is gold-best (utility)")):
        match = report[key]
        console.print(f"{label}: {match['share']:.3f} [{match['ci'][0]:.3f}, {match['ci'][1]:.3f}]")
    for name, row in report["routers"].items():
        low, high = row["ci_regret_vs_gold"]
        console.print(f"{name}: utility gold-trained {row['gold_trained']['macro_utility']:.4f}, "
                      f"{report['reward']}-trained {row['proxy_trained']['macro_utility']:.4f}, "
                      f"regret_vs_gold {row['regret_vs_gold']:+.4f} [{low:+.4f}, {high:+.4f}]")
    for name, recipes in report["grid"].items():
        table = Table(f"{name} (Stage 1 / Stage 2)", "macro F1", "F1 vs gold/gold", "utility", "utility vs gold/gold")
        for label, row in recipes.items():
            table.add_row(label, f"{row['macro_f1']:.4f}", _difference(row, "f1"), f"{row['macro_utility']:.4f}",
                          _difference(row, "utility"))
        console.print(table)
    console.print(report["verdict"])


def _difference(row: dict[str, Any], metric: str) -> str:
    """A grid row's difference to gold/gold with its interval, as one cell."""
    low, high = row[f"ci_{metric}_vs_gold_gold"]
    return f"{row[f'{metric}_vs_gold_gold']:+.4f} [{low:+.4f}, {high:+.4f}]"
