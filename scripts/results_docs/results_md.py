"""The generated regions of docs/results.md: the demo store, the Cached, Crossfit and Fresh Online
protocols, today's Stage 1, transfer, one router for every weight, the measured benchmarks and the
evidence per retriever."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from forge_core.errors import MissingStep
from forge_core.evaluation.crossfit import STAGE_CONFIG_RENAMES
from forge_core.evaluation.evidence_arms import EvidenceArmsRequest, compare_arms_of
from forge_core.evaluation.guard_measures import risk_text
from forge_core.evaluation.peer_units import peer_rows
from forge_core.evidence.embedders import DEFAULT_EMBEDDER, embedder_name
from forge_core.evidence.retrievers import RetrieverConfig, retriever_hash
from forge_core.policies.conditioned import conditioned_checkpoint
from forge_core.policies.guard import MIX_GUARD_SUFFIX
from forge_core.policies.registry import ConditionedRouter, TrainedRouter, variants
from forge_core.reports.tables import MACRO, ORACLE, arm_mix_frame, oracle_choices
from forge_core.routing.utility import CostWeights
from forge_core.statistics import Interval, macro
from forge_core.training.settings import PAPER_WARM_START_ARMS
from results_docs.common import (
    BENCHMARK_NAMES,
    HOST,
    N_ARMS,
    ROOT,
    STORED_REPORTS,
    WHOLE_ALPHABET,
    CrossfitRun,
    Results,
    bench_result,
    calls_text,
    ci_text,
    difference_with_ci,
    gain_text,
    goal_verdict,
    ids_text,
    listing,
    load_text,
    pair_text,
    range_text,
    require,
    stored_report,
    weights_text,
)

# ---------------------------------------------------------------- the demo store

def demo_store(results: Results) -> str:
    """The demo store's complete queries per split and benchmark, and those with probes."""
    coverage = results.coverage
    splits = coverage["by_split"]
    benchmarks = ", ".join(f"{BENCHMARK_NAMES[benchmark]} {counts['complete']}"
                           for benchmark, counts in coverage["by_benchmark"].items())
    return (f"{coverage['queries_complete']:,} complete queries ({splits['train']:,} train, {splits['dev']} dev, "
            f"{splits['test']} test at split seed 0; by benchmark: {benchmarks}), {coverage['with_probes']:,} of them "
            "with the four probes")


def _arm_table(summary: pd.DataFrame) -> list[str]:
    """Per arm (and the oracle) and benchmark: F1 / tokens, then macro F1 and tokens in / out."""
    benchmarks = [b for b in dict.fromkeys(summary["benchmark"]) if b != MACRO]
    lines = ["| arm | " + " | ".join(f"{b} F1 / tok" for b in benchmarks) + " | macro F1 | macro tok in / out |",
             "|---|" + "---:|" * (len(benchmarks) + 2)]
    for policy, rows in summary.groupby("policy", sort=False):
        cells = {row.benchmark: row for row in rows.itertuples()}
        name = f"**{policy}**" if policy == ORACLE else policy
        lines.append(f"| {name} | " + " | ".join(f"{cells[b].f1:.3f} / {cells[b].tokens:.0f}" for b in benchmarks)
                     + f" | {cells[MACRO].f1:.3f} | {cells[MACRO].tokens_in:.0f} / {cells[MACRO].tokens_out:.0f} |")
    return lines


def _stored_result(summary: pd.DataFrame, command: str) -> str:
    """`command` as inline code behind the mark tests/test_documented_commands.py runs it by: it must
    print the oracle's macro F1 of `summary` (its row of the summary table) from the store."""
    oracle = summary[(summary["policy"] == ORACLE) & (summary["benchmark"] == MACRO)].iloc[0]
    return f"<!-- stored-result: {MACRO} {ORACLE} {oracle.f1:.3f} -->`{command}`"


def arms_all(results: Results) -> str:
    """Per arm over every complete query (`forge store summary`)."""
    summary = results.arm_summary(None)
    return "\n".join([f"Per arm over all {results.coverage['queries_complete']:,} complete queries "
                      f"({_stored_result(summary, 'forge store summary')}; F1 / tokens per query, in + out):", "",
                      *_arm_table(summary)])


def arms_test(results: Results) -> str:
    """Per arm on the test split (`forge store summary --split test`)."""
    summary = results.arm_summary("test")
    counts = summary[(summary["policy"] == ORACLE) & (summary["benchmark"] != MACRO)].set_index("benchmark")["queries"]
    usual = int(counts.mode().iloc[0])
    fewer = ", ".join(f"{counts[b]} for {BENCHMARK_NAMES[b]}" for b in counts.index if counts[b] != usual)
    return "\n".join([f"Per arm on the test split ({_stored_result(summary, 'forge store summary --split test')}; "
                      f"{counts.sum()} queries: {usual} per benchmark, {fewer}, which has no more):", "",
                      *_arm_table(summary)])


def oracle_headroom(results: Results) -> str:
    """The oracle against Always-Raw over every complete query, F1 difference with its interval."""
    table = results.outcomes
    summary = results.arm_summary(None).set_index(["policy", "benchmark"])
    oracle, raw = summary.loc[(ORACLE, MACRO)], summary.loc[("raw:no_think", MACRO)]
    rows = np.arange(len(table))
    oracle_f1 = table.f1[rows, oracle_choices(table, table.fit_normalizer())]
    _, interval = difference_with_ci(table.benchmarks, oracle_f1, table.f1[:, table.arms.index("raw:no_think")])
    return (f"reaches macro F1 {oracle.f1:.3f} at {oracle.tokens:.0f} tokens over the whole store, against "
            f"Always-Raw's {raw.f1:.3f} at {raw.tokens:.0f} (F1 difference {ci_text(interval)})")


# ---------------------------------------------------------------- Cached protocol

def cached_table(results: Results) -> str:
    """Cached protocol: F1, both costs, calls, utility under both accountings, F1 vs Raw."""
    deploy, answer = results.cached["deploy"], results.cached["answer"]
    lines = ["| policy | macro F1 | k tok, deploy | k tok, answer | calls | utility, deploy | utility, answer "
             "| F1 vs Always-Raw, 95% CI |", "|---|---:|---:|---:|---:|---:|---:|---|"]
    for name, row in deploy["policies"].items():
        lines.append(f"| `{name}` | {row['macro_f1']:.3f} | {row['deploy_cost_k']:.3f} | {row['answer_cost_k']:.3f} "
                     f"| {row['calls_per_query']:.2f} | {row['macro_utility']:.3f} "
                     f"| {answer['policies'][name]['macro_utility']:.3f} | {ci_text(row['ci_vs_always_raw'])} |")
    return "\n".join(lines)


def cached_reading(results: Results) -> str:
    """What the test split decides, and what the deployment's accounting changes."""
    deploy, answer = results.cached["deploy"]["policies"], results.cached["answer"]["policies"]
    intervals = {name: row["ci_vs_always_raw"] for name, row in deploy.items() if name != "always_raw"}
    widths = [high - low for low, high in intervals.values()]
    below = [f"`{name}`" for name, ci in intervals.items() if Interval.of(ci).below]
    above = [f"`{name}`" for name, ci in intervals.items() if Interval.of(ci).above]
    full, selfr = deploy["forge_full"], deploy["self_routing"]
    require(not any(Interval.of(ci).decided for name, ci in intervals.items() if deploy[name]["kind"] == "router"),
            "no router's F1 interval against Always-Raw excludes zero on the test split")
    return (f"On the test split the intervals against Always-Raw are {min(widths):.3f} to {max(widths):.3f} F1 wide; "
            f"only {listing(below)} lie below zero and {listing(above)} above it: "
            f"{results.cached['deploy']['queries']} queries separate no router from Always-Raw. What the deployment's "
            "accounting changes is plain even here: the Full router spends "
            f"{full['deploy_cost_k']:.2f}k tokens and {calls_text(full['calls_per_query'])} calls a query for "
            f"{full['answer_cost_k']:.2f}k tokens of answer, and drops from "
            f"{answer['forge_full']['macro_utility']:.3f} to {full['macro_utility']:.3f} utility; Self-Routing "
            f"likewise ({answer['self_routing']['macro_utility']:.3f} to {selfr['macro_utility']:.3f}).")


# ---------------------------------------------------------------- Crossfit protocol

def _order(policies: dict) -> list[str]:
    """Fixed arms and the floor, baselines, the FORGE routers, the oracle, by each policy's `kind`."""
    ranks = {"fixed arm": 1, "baseline": 2, "router": 4, "oracle": 5}

    def rank(name: str) -> int:
        return ranks.get(policies[name].get("kind"), 0) - (name == "ridge_utility")
    return sorted(policies, key=rank)


def _utility_cell(report: dict, name: str) -> str:
    """Utility, gain over the best fixed arm with its interval, and the interval against the floor."""
    row = report["policies"][name]
    best = report["policies"][report["best_fixed_policy"]]["macro_utility"]
    return (f"{row['macro_utility']:.3f}, {row['macro_utility'] - best:+.3f} "
            f"{ci_text(row['ci_utility_vs_best_fixed'])}, "
            f"{ci_text(row.get('ci_utility_vs_floor')) or '–'}")


def _cost_cell(report: dict, name: str) -> str:
    """Macro F1, k tokens (deployment / answering call) and calls a query."""
    row = report["policies"][name]
    return (f"{row['macro_f1']:.3f}, {row['deploy_cost_k']:.3f} / {row['answer_cost_k']:.3f}, "
            f"{row['calls_per_query']:.2f}")


def _per_weight_table(reports: list[dict], what: str, cell: Callable[[dict, str], str],
                      names: Sequence[str] | None = None) -> list[str]:
    """One row per policy (`names`, default every policy in `_order`), one column per report's weights."""
    header = " | ".join(f"{weights_text(r)}: {what}" for r in reports)
    lines = [f"| policy | {header} |", "|---|" + "---|" * len(reports)]
    for name in names or _order(reports[0]["policies"]):
        lines.append(f"| `{name}` | " + " | ".join(cell(report, name) for report in reports) + " |")
    return lines


def crossfit_runs(results: Results) -> str:
    """Each weight's best fixed arm and the run ids of the Stage-2 tables."""
    reports = results.stage2_reports
    arms = ", ".join(f"`{r['best_fixed_arm']}` at {pair_text(r)}" for r in reports)
    return f"Best fixed arm: {arms} (runs {ids_text([r['run_id'] for r in reports])})"


def crossfit_tables(results: Results) -> str:
    """Per policy and weight: utility, gain over the best fixed arm and over the floor with intervals;
    then F1, both costs and the calls."""
    reports = results.stage2_reports
    return "\n".join([*_per_weight_table(reports, "utility, vs best fixed, vs floor", _utility_cell), "",
                      *_per_weight_table(reports, "F1, k tok deploy / answer, calls", _cost_cell)])


PEER_POLICIES = ("forge_full", "forge_lite", "bge_bm25_kl", "ridge_utility", "self_routing", "frugal_cascade",
                 "always_summary", "always_raw")  # the peers' units table's rows, in this order


def peer_units_table(results: Results) -> str:
    """Per weight and policy: answers with retrieved evidence against always-retrieve, thinking tokens
    against always-cot and tokens against Always-Raw's with their paired intervals (`peer_units`)."""
    lines = ["| weights | policy | answers with evidence [95% CI] | thinking tokens vs always-cot: difference [95% CI] "
             "| tokens vs Always-Raw: difference [95% CI] | F1 vs Always-Raw |", "|---|---|---|---|---|---|"]
    for report in results.stage2_reports:
        rows = {cells[0]: cells for cells in peer_rows(report)}
        lines += [f"| {weights_text(report)} | `{name}` | {' | '.join(rows[name][1:])} |"
                  for name in PEER_POLICIES if name in rows]
    return "\n".join(lines)


SEED_POLICIES = ("forge_full", "forge_lite", "bge_bm25_kl", "ridge_utility", "forge_full_fallback")


def seed_runs(results: Results) -> str:
    """The run ids of the other split seeds' Stage-2 runs."""
    runs = [run for run in results.select(2, split_seed=None) if run.settings["split_seed"] != 0]
    seeds = sorted({run.settings["split_seed"] for run in runs})
    return f"runs at seeds {listing([str(seed) for seed in seeds])}: {ids_text([run.run_id for run in runs])}"


def seeds_table(results: Results) -> str:
    """Per weight and router: the gain over the best fixed arm at each split seed, spread, decidable."""
    lines = ["| weights | policy | gain at each split seed [95% CI] | spread | decidable | decidable vs floor |",
             "|---|---|---|---:|---|---|"]
    for report in results.seed_reports:
        spread = report["across_split_seeds"]
        for name in SEED_POLICIES:
            row = spread["policies"][name]
            gains = "; ".join(f"{seed}: {gain_text(gain, ci)}"
                              for seed, gain, ci in zip(spread["split_seeds"], row["gains"], row["intervals"]))
            floor = "–" if name == report["floor_policy"] else ("yes" if row["decidable_vs_floor"] else "no")
            lines.append(f"| {weights_text(report)} | `{name}` | {gains} | {row['spread']:.3f} "
                         f"| {'yes' if row['decidable'] else 'no'} | {floor} |")
    return "\n".join(lines)


def answer_view(results: Results) -> str:
    """The Full router's gains under the paper's answer-only accounting."""
    reports = results.reports(results.select(2, accounting="answer"))
    rows = [r["policies"]["forge_full"] for r in reports]
    gains = [gain_text(row["macro_utility"] - r["policies"][r["best_fixed_policy"]]["macro_utility"],
                   row["ci_utility_vs_best_fixed"]) for row, r in zip(rows, reports)]
    return (f"gives the Full router gains of {listing(gains)} at {listing([pair_text(r) for r in reports])} (runs "
            f"{ids_text([r['run_id'] for r in reports])})")


def _tokens(values: Sequence[float]) -> str:
    """k tokens: "0.23k to 0.27k"."""
    return range_text(values, 2, "k").replace("+", "")


def _check_full_router(reports: list[dict]) -> None:
    """What the Full router bullet says in words: every Full and Self-Routing interval below zero,
    the fallback rule at 1 call a query and decidable at no weight."""
    spreads = [r["across_split_seeds"]["policies"] for r in reports]
    require(all(Interval.of(ci).below for s in spreads for ci in s["forge_full"]["intervals"]),
            "every interval of the Full router's gain is below zero")
    require(all(Interval.of(r["policies"]["self_routing"]["ci_utility_vs_best_fixed"]).below for r in reports),
            "Self-Routing's intervals are below zero")
    require(all(abs(r["policies"]["forge_full_fallback"]["calls_per_query"] - 1) < 1e-9 for r in reports),
            "the fallback rule makes 1 call a query")
    require(not any(s["forge_full_fallback"]["decidable"] for s in spreads), "the fallback rule is decidable nowhere")


def full_router_reading(results: Results) -> str:
    """Bullet: the Full router, Self-Routing and the fallback rule against the best fixed arm."""
    reports = results.seed_reports
    _check_full_router(reports)
    full = [r["policies"]["forge_full"] for r in reports]
    gains = ", ".join(f"{range_text(r['across_split_seeds']['policies']['forge_full']['gains'])} at {pair_text(r)}"
                      for r in reports)
    self_routing = ", ".join(f"{ci_text(r['policies']['self_routing']['ci_utility_vs_best_fixed'])} at {pair_text(r)}"
                             for r in reports)
    decided = "; ".join(f"{gain_text(gain, ci)} at {pair_text(r)}, seed {seed}" for r in reports
                        for seed, gain, ci in zip(r["across_split_seeds"]["split_seeds"],
                                                  r["across_split_seeds"]["policies"]["forge_full_fallback"]["gains"],
                                                  r["across_split_seeds"]["policies"]["forge_full_fallback"]["intervals"])
                        if Interval.of(ci).decided)
    probes = _tokens([row["deploy_cost_k"] - row["answer_cost_k"] for row in full])
    answers = _tokens([row["answer_cost_k"] for row in full])
    return (f"Charged for them, it loses to the best fixed arm at every weight and every seed: {gains}, every "
            f"interval below zero. Its probes cost {probes} tokens a query, its answers {answers}. Self-Routing, which "
            f"needs the same probes, loses likewise ({self_routing}, seed 0). The dev fallback rule around the Full "
            "router falls back to fixed arms on every benchmark (1 call a query) and is not decidably above the best "
            "fixed arm at any weight across the seeds"
            + (f" (an interval excludes zero at one seed only: {decided})." if decided else "."))


def paper_weights_reading(results: Results) -> str:
    """Bullet: nothing beats the best fixed arm decidably at the first (the paper's) weights."""
    report = results.seed_reports[0]
    spread = report["across_split_seeds"]
    require(len(set(spread["best_fixed_arms"])) == 1, "one best fixed arm at every seed")
    require(not any(Interval.of(ci).above for row in spread["policies"].values() for ci in row["intervals"]),
            f"no interval above zero at {pair_text(report)}")
    return (f"at {pair_text(report)} no policy's interval against {spread['best_fixed_arms'][0]}, the linear floor's "
            "included, is above zero at any seed")


def costly_weights_reading(results: Results) -> str:
    """Bullet: where tokens cost more, which policies beat the best fixed arm at every seed."""
    parts = []
    for report in results.seed_reports[1:]:
        spread = report["across_split_seeds"]
        require(len(set(spread["best_fixed_arms"])) == 1, "one best fixed arm at every seed")
        winners = [f"`{name}` ({range_text(row['gains'])})" for name, row in spread["policies"].items()
                   if row["decidable"]]
        parts.append(f"{'at' if parts else 'At'} {pair_text(report)} {listing(winners)} are above "
                     f"{spread['best_fixed_arms'][0]} at all {len(spread['split_seeds'])} seeds")
    return "; ".join(parts)


def floor_reading(results: Results) -> str:
    """Bullet: router-minus-floor intervals above zero, by router, weight and seed."""
    above = []
    for report in results.seed_reports:
        spread = report["across_split_seeds"]
        for name, row in spread["policies"].items():
            if report["policies"][name]["kind"] != "router":
                continue
            seeds = [seed for seed, ci in zip(spread["split_seeds"], row["floor_intervals"])
                     if ci and Interval.of(ci).above]
            require(len(seeds) <= 1, "a router-minus-floor interval is above zero at one seed at most")
            above += [f"`{name}` at {pair_text(report)}, seed {seed}" for seed in seeds]
    seeds = len(results.seed_reports[0]["across_split_seeds"]["split_seeds"])
    return (f"A router-minus-ridge interval is above zero at one seed of {seeds} at most ({listing(above)}) and "
            "includes zero at the others" if above else "No router-minus-ridge interval is above zero at any seed")


def stage2_table(results: Results) -> str:
    """Per weight and router: Stage 2 minus its Stage-1 parent at each split seed, with intervals."""
    differences = results.stage_differences
    lines = ["| weights | router | Stage 2 minus Stage 1 at each split seed [95% CI] |", "|---|---|---|"]
    for weights in dict.fromkeys(weights_text(settings) for settings, *_ in differences):
        for name in variants(TrainedRouter):
            cells = "; ".join(f"{seed}: {gain_text(gain, ci)}" for settings, router, seed, gain, ci in differences
                              if router == name and weights_text(settings) == weights)
            lines.append(f"| {weights} | `{name}` | {cells} |")
    return "\n".join(lines)


def stage2_reading(results: Results) -> str:
    """How many Stage 2 minus Stage 1 intervals exclude zero, and which."""
    differences = results.stage_differences
    decided = [f"`{name}` at {pair_text(settings)}, seed {seed}: {gain_text(gain, ci)}"
               for settings, name, seed, gain, ci in differences if Interval.of(ci).decided]
    lite = [gain for _, name, _, gain, _ in differences if name == "forge_lite"]
    return (f"Lite moves by {range_text(lite)} over the {len(lite)} runs; {len(decided)} of the {len(differences)} "
            f"intervals exclude zero" + (f" ({'; '.join(decided)})" if decided else ""))


ORACLE_SET_POLICIES = ("forge_lite", "forge_lite_cond", "forge_full", "bge_bm25_kl", "ridge_utility",
                       "always_summary", "always_raw", "always_summary_cot", "always_direct")


def _oracle_set_cell(report: dict, name: str) -> str:
    """Regret with its interval, oracle-set agreement and FEVER's thinking share."""
    row = report["policies"][name]
    return (f"{row['regret']['mean']:.3f} {ci_text(row['regret']['ci'])}, {row['oracle_agreement']:.1%}, "
            f"{row['cot_share'].get('fever', 0.0):.1%}")


def oracle_set_table(results: Results) -> str:
    """Per policy and weight (the Stage-2 runs, split seed 0): regret with its interval, oracle-set
    agreement and the FEVER cot share."""
    return "\n".join(_per_weight_table(results.stage2_reports, "regret [95% CI], in oracle set, FEVER cot",
                                       _oracle_set_cell, (*ORACLE_SET_POLICIES, ORACLE)))


def _overlaps(a: Sequence[float], b: Sequence[float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def oracle_set_reading(results: Results) -> str:
    """Which routers' regret intervals overlap ridge's at every weight, and how the Full router's grows."""
    reports = results.stage2_reports
    routers = [name for name in ORACLE_SET_POLICIES if reports[0]["policies"][name]["kind"] == "router"]
    near = [name for name in routers if all(_overlaps(r["policies"][name]["regret"]["ci"],
                                                      r["policies"]["ridge_utility"]["regret"]["ci"]) for r in reports)]
    full = [r["policies"]["forge_full"]["regret"]["mean"] for r in reports]
    require("forge_full" not in near and full == sorted(full), "the Full router's regret grows with the weights")
    require(all(r["policies"][name]["cot_share"].get("fever", 0.0) == 0 for r in reports for name in routers),
            "no router of these runs sends a FEVER query to a thinking arm")
    return (f"The regret intervals of {listing([f'`{name}`' for name in near])} overlap ridge's at every weight; "
            f"the Full router's regret grows with the weights ({listing([f'{value:.3f}' for value in full])}), "
            "as its probes cost more")


# ---------------------------------------------------------------- today's Stage 1 (the whole alphabet)

SIX_ARM_ROUTERS = (*variants(TrainedRouter), *variants(ConditionedRouter))  # the routers with a Stage-1 parent
SIX_ARM_REFERENCES = ("ridge_utility", ORACLE)


def warm_start_arms(settings: dict) -> int:
    """The arms a run's Stage 1 trained on (older runs store the field as `arms`)."""
    stage1 = {STAGE_CONFIG_RENAMES.get(key, key): value for key, value in settings["stage1"].items()}
    return stage1["warm_start_arms"]


def _stage1_label(settings: dict) -> str:
    """"the paper's (3 arms)" or "the whole alphabet (6 arms)"."""
    arms = warm_start_arms(settings)
    return f"the paper's ({arms} arms)" if arms == PAPER_WARM_START_ARMS else f"the whole alphabet ({arms} arms)"


def _six_arm_runs(results: Results) -> tuple[CrossfitRun, CrossfitRun]:
    """The Stage-1 and Stage-2 runs (deployment accounting, split seed 0, the conditioned routers)
    under today's default Stage 1, at the one weight pair that has both; the Stage-2 run's Stage-1 parents are the
    Stage-1 run's routers (the same out-of-fold rows)."""
    default = WHOLE_ALPHABET
    stage1, stage2 = ([run for run in results.select(stage, conditioned=True)
                       if warm_start_arms(run.settings) == default] for stage in (1, 2))
    pairs = [(one, two) for one in stage1 for two in stage2 if one.weights == two.weights]
    require(len(pairs) == 1, f"one Stage-1 and one Stage-2 run with Stage 1 on {default} arms, at the same weights")
    (stage1_run, stage2_run), = pairs
    first, second = results.rows(stage1_run), results.rows(stage2_run)
    require(all(np.array_equal(first.utility[name], second.utility[f"{name}_stage1"]) for name in SIX_ARM_ROUTERS),
            "the Stage-2 run's Stage-1 parents decide as the Stage-1 run's routers")
    return stage1_run, stage2_run


def _fever_cot(report: dict, name: str) -> str:
    return f"{report['policies'][name]['cot_share'].get('fever', 0.0):.1%}"


def _regret(report: dict, name: str) -> str:
    regret = report["policies"][name]["regret"]
    return f"{regret['mean']:.3f} [{regret['ci'][0]:.3f}, {regret['ci'][1]:.3f}]"


def _shares_right(report: dict, name: str) -> list[float]:
    """A router's share of right decisions per margin decile, lowest margins first."""
    return [decile["share_right"] for decile in report["policies"][name]["reliability"]]


def _percent_range(values: Sequence[float], digits: int = 0) -> str:
    """"34% to 62%" ("34.2% to 61.7%" with one digit)."""
    return f"{min(values):.{digits}%} to {max(values):.{digits}%}"


def default_stage1_runs(results: Results) -> str:
    """The stored Stage-2 runs under today's default Stage 1 (what `forge eval crossfit --stage 2`
    without `--warm-arms` prints at their weights): ids and weights."""
    default = WHOLE_ALPHABET
    runs = [run for run in results.select(2, conditioned=True) if warm_start_arms(run.settings) == default]
    require(bool(runs), f"a stored Stage-2 run with Stage 1 on {default} arms")
    return listing([f"`{run.run_id}` at {pair_text(run.settings)}" for run in runs])


def six_arm_runs(results: Results) -> str:
    """The two runs: ids, stages, weights, folds, queries and the day they were stored."""
    runs = _six_arm_runs(results)
    created = results.store.crossfit_runs(HOST).set_index("run_id")["created_at"]
    days = listing(sorted({f"{created[run.run_id]:%Y-%m-%d}" for run in runs}))
    report = results.reports([runs[1]])[0]
    return (f"runs `{runs[0].run_id}` (Stage 1) and `{runs[1].run_id}` (Stage 2) at {pair_text(runs[0].settings)}, "
            f"{runs[0].settings['folds']} folds, {report['queries']:,} queries, created on {days}")


def six_arm_table(results: Results) -> str:
    """Per router: FEVER thinking share and regret under each stage, Stage 2 minus Stage 1, and
    the share of right decisions in the lowest and highest margin decile; ridge and the oracle below."""
    first, second = results.reports(_six_arm_runs(results))
    lines = ["| policy | Stage 1: FEVER cot, regret [95% CI] | Stage 2: FEVER cot, regret [95% CI] "
             "| Stage 2 minus Stage 1 [95% CI] | right decisions, lowest / highest margin decile: Stage 1; Stage 2 |",
             "|---|---|---|---|---|"]
    for name in (*SIX_ARM_ROUTERS, *SIX_ARM_REFERENCES):
        if name in SIX_ARM_ROUTERS:
            difference = second["stage2_minus_stage1"][name]
            deciles = "; ".join(f"{shares[0]:.0%} / {shares[-1]:.0%}"
                                for shares in (_shares_right(first, name), _shares_right(second, name)))
            extra = f"{gain_text(difference['difference'], difference['ci'])} | {deciles}"
        else:
            extra = "– | –"
        lines.append(f"| `{name}` | {_fever_cot(first, name)}, {_regret(first, name)} "
                     f"| {_fever_cot(second, name)}, {_regret(second, name)} | {extra} |")
    return "\n".join(lines)


def _decile_gap(report: dict, name: str) -> tuple[float, tuple[float, float]]:
    """A router's share of right decisions in its highest margin decile minus its lowest, with the
    95% interval of a difference of two independent shares (normal approximation)."""
    low, high = report["policies"][name]["reliability"][0], report["policies"][name]["reliability"][-1]
    gap = high["share_right"] - low["share_right"]
    half = 1.96 * np.sqrt(sum(d["share_right"] * (1 - d["share_right"]) / d["queries"] for d in (low, high)))
    return gap, (gap - half, gap + half)


def six_arm_reading(results: Results) -> str:
    """What the two runs show: the thinking share under each stage against ridge's and the
    oracle's, regrets against ridge, Stage 2 minus Stage 1, and whether the margins tell right
    decisions apart."""
    first, second = results.reports(_six_arm_runs(results))
    routers = list(SIX_ARM_ROUTERS)
    cot = [{name: report["policies"][name]["cot_share"].get("fever", 0.0) for name in (*routers, *SIX_ARM_REFERENCES)}
           for report in (first, second)]
    require(all(cot[0][name] > cot[0]["ridge_utility"] for name in routers),
            "under Stage 1 every router sends more of FEVER to a thinking arm than ridge")
    require(all(cot[1][name] < cot[0][name] for name in routers), "Stage 2 lowers every router's FEVER thinking share")
    floor = [{name: report["policies"][name]["ci_utility_vs_floor"] for name in routers} for report in (first, second)]
    require(not any(Interval.of(ci).decided for ci in floor[0].values()),
            "under Stage 1 every router-minus-ridge interval contains zero")
    require(not any(Interval.of(ci).above for ci in floor[1].values()), "no Stage-2 router is decidably above ridge")
    below = [f"`{name}` {ci_text(ci)}" for name, ci in floor[1].items() if Interval.of(ci).below]
    moved = [f"`{name}` {gain_text(row['difference'], row['ci'])}"
             for name, row in second["stage2_minus_stage1"].items()
             if name in routers and Interval.of(row["ci"]).decided]
    gaps = [{name: _decile_gap(report, name) for name in routers} for report in (first, second)]
    apart = [[f"`{name}` {gain_text(gap, ci)}" for name, (gap, ci) in stage.items() if Interval.of(ci).above]
             for stage in gaps]
    require(not any(Interval.of(ci).below for stage in gaps for _, ci in stage.values()),
            "no router's highest-margin decile is decidably less often right than its lowest")
    require(len(apart[1]) > len(apart[0]), "more routers' margins tell right decisions apart after Stage 2")
    best = first["best_fixed_policy"]
    margins = [decile["high"] for report in (first, second) for name in routers
               for decile in report["policies"][name]["reliability"]]
    deciles = [decile["queries"] for name in routers for decile in first["policies"][name]["reliability"]]
    return " ".join([
        f"Under Stage 1 every trained router sends more of FEVER to a thinking arm "
        f"({_percent_range([cot[0][n] for n in routers], 1)}) than `ridge_utility` ({cot[0]['ridge_utility']:.1%}; the "
        f"oracle {cot[0][ORACLE]:.1%}); their regrets "
        f"({range_text([first['policies'][n]['regret']['mean'] for n in routers]).replace('+', '')}) "
        "sit beside ridge's "
        f"{_regret(first, 'ridge_utility')} and the best fixed arm's (`{best}`, {_regret(first, best)}), every "
        "router-minus-ridge interval containing zero.",
        f"Stage 2 lowers every router's FEVER thinking share (to {_percent_range([cot[1][n] for n in routers], 1)}); "
        + (f"Stage 2 minus Stage 1 excludes zero for {listing(moved)} only" if moved
           else "no Stage 2 minus Stage 1 interval excludes zero")
        + (f", and {listing(below)} fall decidably below ridge (router minus ridge)." if below
           else ", and no router falls decidably below ridge."),
        f"A routed decision's margin (its arm's predicted utility over the runner-up's, 0 to {max(margins):.2f}) "
        "tells right decisions apart for more routers after Stage 2: under Stage 1 the share of right decisions is "
        f"{_percent_range([d['share_right'] for n in routers for d in first['policies'][n]['reliability']])} in "
        "every margin decile of every router, and the highest decile minus the lowest is above zero for "
        + (f"{listing(apart[0])} only" if apart[0] else "no router")
        + f"; under Stage 2 for {listing(apart[1])} (deciles of {min(deciles)} to {max(deciles)} queries; 95% "
        "intervals of a difference of two shares)."])


# ---------------------------------------------------------------- Fresh Online protocol

def fresh_run(results: Results) -> str:
    """The stored Fresh Online run: queries, policies and its id."""
    fresh = results.fresh
    return (f"{fresh['queries']} queries, {len(fresh['policies'])} policies, run `{fresh['run_id']}`")


def _duration(seconds: float) -> str:
    """"39 min 11 s"."""
    minutes, seconds = divmod(round(seconds), 60)
    return f"{minutes} min {seconds} s" if minutes else f"{seconds} s"


def fresh_timing(results: Results) -> str:
    """When the stored Fresh Online run's answers were made: the per-weight routers and baselines,
    then the cost-conditioned routers, each from its first stored answer to its last."""
    stored = results.store.fresh_results(results.fresh["run_id"])
    stored = stored[stored["policy"].isin(list(results.fresh["policies"]))]
    conditioned = stored["policy"].isin(list(variants(ConditionedRouter)))
    parts = []
    for label, answers in (("the per-weight routers of the Cached table above and the baselines", stored[~conditioned]),
                           ("the two cost-conditioned routers", stored[conditioned])):
        if answers.empty:  # no policy of that kind answered with its current checkpoint
            continue
        first, last = answers["finished_at"].min(), answers["finished_at"].max()
        days = listing(sorted({f"{first:%Y-%m-%d}", f"{last:%Y-%m-%d}"}))
        parts.append(f"{label} answered on {days}, {len(answers):,} answers in "
                     f"{_duration((last - first).total_seconds())} from the first stored answer to the last")
    return "; ".join(parts)


def fresh_table(results: Results) -> str:
    """Fresh Online: F1 (live and cached), both costs, calls, utility, latency."""
    lines = ["| policy | macro F1 | Cached F1, same queries | k tok, every call | k tok, answer | calls "
             "| utility | latency p50 (s) | p95 (s) |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, row in results.fresh["policies"].items():
        lines.append(f"| `{name}` | {row['macro_f1']:.3f} | {row['cached_macro_f1']:.3f} | {row['deploy_cost_k']:.3f} "
                     f"| {row['answer_cost_k']:.3f} | {row['calls_per_query']:.2f} | {row['macro_utility']:.3f} "
                     f"| {row['latency_p50_ms'] / 1000:.2f} | {row['latency_p95_ms'] / 1000:.2f} |")
    return "\n".join(lines)


def fresh_counts(results: Results) -> str:
    """What the probing policies and the fallback rule spend live."""
    policies = results.fresh["policies"]
    probing = [policies[name] for name in ("forge_full", "self_routing")]
    require(abs(policies["forge_full_fallback"]["calls_per_query"] - 1) < 1e-9, "the fallback makes 1 call a query")
    calls = [row["calls_per_query"] for row in probing]
    return (f"the Full router and Self-Routing make {calls_text(min(calls))} to {calls_text(max(calls))} calls "
            "and spend "
            f"{_tokens([row['deploy_cost_k'] for row in probing])} tokens a query against "
            f"{_tokens([row['answer_cost_k'] for row in probing])} for their answers, and "
            "the fallback rule falls back to fixed arms everywhere (1 call a query)")


def _policies_sent(answers: pd.DataFrame, recorded: float) -> str:
    """How the live F1 of one (query, arm) pair came out over the policies that sent the query there:
    "1 for 7 of the 10 policies that sent it there (+0.040 macro F1 each), 0, as recorded, for the other 3"."""
    parts = []
    for value, group in answers.groupby("f1", sort=False):
        if abs(value - recorded) > 1e-9:
            parts.append(f"{value:g} for {_count_of(len(group), len(answers))} that sent it there "
                         f"({group['macro_gain'].iloc[0]:+.3f} macro F1 each)")
    same = int((answers["f1"] - recorded).abs().le(1e-9).sum())
    if same:
        parts.append(f"{recorded:g}, as recorded, for the other {same}")
    return ", ".join(parts)


def _count_of(count: int, total: int) -> str:
    """"all 7 policies" or "2 of the 9 policies"."""
    return f"all {total} policies" if count == total else f"{count} of the {total} policies"


def fresh_differences(results: Results) -> str:
    """The stored Fresh Online run's live answers against the recorded outcomes of the same (query,
    arm), over every answer the run stored: how many came back otherwise (output tokens), and each pair
    whose F1 changed."""
    stored = results.store.fresh_results(results.fresh["run_id"])
    recorded = results.store.arm_outcomes(HOST)[["benchmark", "example_id", "arm", "f1", "tokens_out", "extracted"]]
    live = stored.merge(recorded, on=["benchmark", "example_id", "arm"], suffixes=("", "_recorded"), validate="m:1")
    require(live["f1_recorded"].notna().all(), "every live answer has a recorded outcome of its arm")
    per_benchmark = stored.groupby(["policy", "benchmark"]).size()
    require(per_benchmark.nunique() == 1, "every policy answered as many queries of each benchmark")
    live["macro_gain"] = (live["f1"] - live["f1_recorded"]) / per_benchmark.iloc[0] / stored["benchmark"].nunique()
    keys = ["benchmark", "example_id", "arm"]
    live["other_tokens"] = live["answer_tokens_out"] != live["tokens_out_recorded"]
    live["other_f1"] = (live["f1"] - live["f1_recorded"]).abs() > 1e-9
    pairs = live.groupby(keys)[["other_tokens", "other_f1"]].any()
    changed = []
    for (benchmark, example_id, arm), _ in pairs[pairs["other_f1"]].iterrows():
        answers = live[(live["benchmark"] == benchmark) & (live["example_id"] == example_id) & (live["arm"] == arm)]
        first = answers.iloc[0]
        changed.append(f"{BENCHMARK_NAMES[benchmark]} `{example_id}` under `{arm}`, recorded \"{first['extracted']}\" "
                       f"(F1 {first['f1_recorded']:g}), live F1 {_policies_sent(answers, first['f1_recorded'])}")
    return (f"Of the {len(pairs)} (query, arm) pairs the run answered live, {int(pairs['other_tokens'].sum())} had a "
            "live answer of another length (output tokens) than the recorded one and "
            f"{int(pairs['other_f1'].sum())} one of another F1: {'; '.join(changed)}")


# ---------------------------------------------------------------- Transfer

TRANSFER_POLICIES = ("always_raw", "oracle", "target_forge_lite", "transfer_forge_lite", "transfer_forge_full")


TRANSFER_HEADER = ["| source -> target, weights | policy | macro F1 | k tok, deploy | utility | vs Always-Raw "
                   "| vs best fixed | vs target's router |", "|---|---|---:|---:|---:|---|---|---|"]


def _transfer_row(report: dict, name: str) -> str:
    """One policy's row of a transfer report (`TRANSFER_HEADER`)."""
    row = report["policies"][name]
    return (f"| {report['source_host']} -> {report['target_host']}, {weights_text(report)} | `{name}` "
            f"| {row['macro_f1']:.3f} | {row['deploy_cost_k']:.3f} | {row['macro_utility']:.3f} "
            f"| {ci_text(row['ci_utility_vs_always_raw'])} | {ci_text(row['ci_utility_vs_best_fixed'])} "
            f"| {ci_text(row['ci_utility_vs_target_router'])} |")


def _zero_shot(report: dict) -> list[str]:
    """A transfer report's rows: its best fixed arm and `TRANSFER_POLICIES`."""
    return list(dict.fromkeys([report["best_fixed_policy"], *TRANSFER_POLICIES]))


def transfer_table(results: Results) -> str:
    """Per zero-shot transfer report the store gives: the references and the transferred routers with
    F1, deployment cost, utility and the paired intervals against the target's Always-Raw, best fixed
    arm and own Lite router."""
    return "\n".join([*TRANSFER_HEADER, *(_transfer_row(report, name) for report in results.transfers
                                          for name in _zero_shot(report))])


def _stored_transfers(results: Results) -> list[dict]:
    """The stored `forge eval transfer --json` reports (data/demo/reports/transfer_*.json): weights
    whose routers the export lacks (a report the store gives is generated from it, not kept)."""
    reports = sorted((json.loads(path.read_text()) for path in STORED_REPORTS.glob("transfer_*.json")),
                     key=lambda r: (r["lambda_in"], r["lambda_out"], r["source_host"]))
    exported = {(r["source_host"], r["lambda_in"], r["lambda_out"]) for r in results.transfers}
    require(not any((r["source_host"], r["lambda_in"], r["lambda_out"]) in exported for r in reports),
            "no stored transfer report repeats one the export gives")
    return reports


def transfer_stored_runs(results: Results) -> str:
    """Which stored transfer reports there are: files, directions and weights."""
    reports = _stored_transfers(results)
    weights = listing(list(dict.fromkeys(pair_text(r) for r in reports)))
    return (f"{len(reports)} reports, `data/demo/reports/transfer_*.json`, both directions at {weights}, "
            "zero-shot")


def transfer_stored_table(results: Results) -> str:
    """The stored transfer reports' rows, as `transfer_table`'s."""
    return "\n".join([*TRANSFER_HEADER, *(_transfer_row(report, name) for report in _stored_transfers(results)
                                          for name in _zero_shot(report))])


def transfer_arm_mix(results: Results) -> str:
    """Each benchmark's arm mix of the first transfer report."""
    first = results.transfers[0]
    columns = ["oracle", "transfer_forge_lite", "target_forge_lite"]
    lines = [f"Arm mix per benchmark, {first['source_host']} -> {first['target_host']}, {weights_text(first)}:", "",
             "| benchmark | " + " | ".join(f"`{name}`" for name in columns) + " |", "|---|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(row) + " |" for row in arm_mix_frame(first, columns).itertuples(index=False)]
    return "\n".join(lines)


def transfer_lite(results: Results) -> str:
    """The transferred Lite routers' intervals against the target's own, from the store (each holds zero)."""
    require(not any(Interval.of(r["policies"]["transfer_forge_lite"]["ci_utility_vs_target_router"]).decided
                     for r in results.transfers), "every exported zero-shot Lite interval holds zero")
    return ", ".join(f"{ci_text(r['policies']['transfer_forge_lite']['ci_utility_vs_target_router'])} "
                     f"(to {r['target_host']})" for r in results.transfers) + f" at {pair_text(results.transfers[0])}"


def _verdict(interval: Sequence[float]) -> str:
    """An interval's sign in words, before "it": "above", "below", "not decidably different from"."""
    interval = Interval.of(interval)
    return interval.verdict if interval.decided else f"{interval.verdict} from"


def transfer_stored_lite(results: Results) -> str:
    """The same intervals from the stored reports, each with its verdict against the target's router."""
    return ", ".join(f"{ci_text(ci)} (to {r['target_host']}, {_verdict(ci)} it)" for r in _stored_transfers(results)
                     for ci in [r["policies"]["transfer_forge_lite"]["ci_utility_vs_target_router"]]) + \
        f" at {pair_text(_stored_transfers(results)[0])}"


def small_target_router(results: Results) -> str:
    """The own Lite router of the host with the fewest train queries, against its Always-Raw."""
    report = min(results.transfers, key=lambda r: results.coverages[r["target_host"]]["by_split"]["train"])
    interval = report["policies"]["target_forge_lite"]["ci_utility_vs_always_raw"]
    require(Interval.of(interval).below, "the smaller host's own router is below its Always-Raw")
    train = results.coverages[report["target_host"]]["by_split"]["train"]
    return (f"on `{report['target_host']}` it was trained on {train} train queries and its utility is below "
            f"Always-Raw at {pair_text(report)} ({ci_text(interval)})")


def transfer_full_reading(results: Results) -> str:
    """The transferred Full routers against Always-Raw and the best fixed arm, every direction and weight."""
    reports = [*results.transfers, *_stored_transfers(results)]
    below = [r for r in reports if any(Interval.of(r["policies"]["transfer_forge_full"][key]).below
                                       for key in ("ci_utility_vs_always_raw", "ci_utility_vs_best_fixed"))]
    return (f"`transfer_forge_full` is decidably below Always-Raw or the best fixed arm in {len(below)} of the "
            f"{len(reports)} directions and weights")


# ---------------------------------------------------------------- One router for every weight

def _conditioned_runs(results: Results) -> list[CrossfitRun]:
    runs = results.select(1, conditioned=True)
    require(len({json.dumps(run.settings["conditioning"], sort_keys=True) for run in runs}) == 1,
            "the conditioned Stage-1 runs share one conditioning")
    return runs


def conditioned_settings(results: Results) -> str:
    """The conditioning the crossfit runs trained with."""
    conditioning = _conditioned_runs(results)[0].settings["conditioning"]
    plural = "" if conditioning["draws"] == 1 else "s"
    return (f"weights {conditioning['low']:g} to {conditioning['high']:g}, log-scaled inputs spread over "
            f"[-{conditioning['spread']:g}, {conditioning['spread']:g}], {conditioning['draws']} fresh weight "
            f"pair{plural} per query and epoch, {conditioning['fixed_draws']} fixed pairs per dev query")


def conditioned_table(results: Results) -> str:
    """Per weight: each per-weight router, its conditioned twin and the difference with its interval."""
    lines = ["| weights (λ_in / λ_out) | run | Stage 1 on | forge_lite | forge_lite_cond | diff [95% CI] | forge_full "
             "| forge_full_cond | diff [95% CI] |", "| --- | --- | --- | ---: | ---: | --- | ---: | ---: | --- |"]
    for run in _conditioned_runs(results):
        rows = results.rows(run)
        cells = []
        for name in ("forge_lite", "forge_full"):
            ours, theirs = rows.utility[f"{name}_cond"], rows.utility[name]
            gain, interval = difference_with_ci(rows.benchmarks, ours, theirs)
            cells.append(f"{macro(theirs, rows.benchmarks):.4f} | {macro(ours, rows.benchmarks):.4f} "
                         f"| {gain:+.4f} [{interval[0]:+.4f}, {interval[1]:+.4f}]")
        lines.append(f"| {pair_text(run.settings)} | `{run.run_id}` | {_stage1_label(run.settings)} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def conditioned_reading(results: Results) -> str:
    """What the conditioned runs show, what they leave out (the shipped draws), and their twins."""
    runs = _conditioned_runs(results)
    intervals = []
    for run in runs:
        rows = results.rows(run)
        intervals += [difference_with_ci(rows.benchmarks, rows.utility[f"{n}_cond"], rows.utility[n])[1]
                      for n in ("forge_lite", "forge_full")]
    require(not any(Interval.of(ci).decided for ci in intervals),
            "every conditioned-minus-per-weight interval holds zero")
    shipped = {variant: conditioned_checkpoint(results.store, HOST, variant) for variant in ("lite", "full")}
    draws = {results.store.checkpoint(c)[0]["lineage"]["conditioning"]["draws"] for c in shipped.values()}
    require(len(draws) == 1, "the shipped conditioned checkpoints share their draws")
    run_draws = runs[0].settings["conditioning"]["draws"]
    shipped_runs = [run for run in results.crossfit_runs
                    if (run.settings.get("conditioning") or {}).get("draws") == next(iter(draws))]
    return " ".join([
        f"Every interval of the difference holds zero ({min(ci[1] - ci[0] for ci in intervals):.3f} to "
        f"{max(ci[1] - ci[0] for ci in intervals):.3f} wide): on these folds the conditioned routers are not "
        "decidably worse or better than the per-weight ones.",
        f"The demo export carries these {len(runs)} runs and the two shipped conditioned checkpoints (`forge train "
        f"--conditioned --variant lite`, `{shipped['lite']}`, and `--variant full`, `{shipped['full']}`), "
        + (f"trained as the routers of these runs were ({run_draws} weight pair per training query and epoch, the "
           "recommended recipe of `forge recipes`): the table measures their recipe, and `forge decide` names them."
           if next(iter(draws)) == run_draws else
           f"trained with {next(iter(draws))} weight pairs per training query and epoch, the routers of these runs "
           f"with {run_draws}" + ("; the export holds no crossfit run at the shipped draws, so the table does not "
                                  "measure the shipped checkpoints." if not shipped_runs else "."))])


def _stage1_recipe_pairs(results: Results) -> list[tuple[CrossfitRun, CrossfitRun]]:
    """(paper's warm start Stage-1 run, whole-alphabet Stage-2 run) of the conditioned routers at
    the same weights: the second run's `_stage1` parents are the whole-alphabet Stage 1 on the same folds."""
    warm = [run for run in results.select(1, conditioned=True)
            if warm_start_arms(run.settings) == PAPER_WARM_START_ARMS]
    whole = [run for run in results.select(2, conditioned=True)
             if warm_start_arms(run.settings) != PAPER_WARM_START_ARMS]
    pairs = [(one, two) for one in warm for two in whole if one.weights == two.weights]
    require(bool(pairs), "a conditioned run under each Stage 1 at the same weights")
    for one, two in pairs:
        first, second = results.rows(one), results.rows(two)
        require(np.array_equal(first.benchmarks, second.benchmarks)
                and np.array_equal(first.utility["always_raw"], second.utility["always_raw"]),
                "the two runs decide the same queries under the same utilities")
    return pairs


def _target_thinking_shares(results: Results, run: CrossfitRun) -> list[float]:
    """The Boltzmann target's pi(cot | support) at the run's weights (tau 1), averaged over each
    benchmark's complete queries, per benchmark and support form."""
    table = results.outcomes
    utility = table.utility(table.fit_normalizer(), CostWeights(*run.weights))
    gap = utility[:, 1::2] - utility[:, 0::2]  # [N, 3]: cot minus NoThink per support form
    share = 1 / (1 + np.exp(-gap))
    return [float(value) for name in np.unique(table.benchmarks)
            for value in share[table.benchmarks == name].mean(axis=0)]


def stage1_recipe_reading(results: Results) -> str:
    """The conditioned routers under the whole-alphabet Stage 1 (and Stage 2 on it) minus under the
    paper's warm start, on the same folds: why the shipped conditioned checkpoints keep the warm start."""
    pairs = _stage1_recipe_pairs(results)
    cells, gains = [], []
    for warm, whole in pairs:
        base, other = results.rows(warm), results.rows(whole)
        parts = []
        for name in variants(ConditionedRouter):
            for stage, column in (("Stage 1", f"{name}_stage1"), ("with Stage 2", name)):
                gain, interval = difference_with_ci(base.benchmarks, other.utility[column], base.utility[name])
                gains.append((gain, interval))
                parts.append(f"`{name}` {stage} {gain_text(gain, interval)}")
        cells.append(f"at {pair_text(warm.settings)} (`{whole.run_id}` against `{warm.run_id}`): {listing(parts)}")
    shares = [share for warm, _ in pairs for share in _target_thinking_shares(results, warm)]
    require(not any(Interval.of(interval).above for _, interval in gains),
            "no whole-alphabet conditioned router is decidably above its warm-start twin")
    below = sum(Interval.of(interval).below for _, interval in gains)
    shipped = {variant: conditioned_checkpoint(results.store, HOST, variant) for variant in ("lite", "full")}
    arms = {STAGE_CONFIG_RENAMES.get(key, key): value
            for c in shipped.values() for key, value in results.store.checkpoint(c)[0]["lineage"]["config"].items()}
    require(arms["warm_start_arms"] == PAPER_WARM_START_ARMS, "the shipped conditioned checkpoints use the warm start")
    return " ".join([
        "The cost-conditioned routers under the whole-alphabet Stage 1, minus the same routers under the paper's "
        "warm start, out of fold on the same queries (macro utility, paired 95% intervals): "
        + "; ".join(cells) + ".",
        f"No difference is above zero and {below} of {len(gains)} are decidably below it: at these weights the "
        f"Boltzmann target (tau 1) gives a thinking arm {range_text(shares, 2).replace('+', '')} of its support form's "
        "mass, averaged per benchmark and support form: the thinking head learns from a target close to even, "
        "and what it learns costs more than the FEVER gain it finds.",
        f"The shipped conditioned checkpoints (`{shipped['lite']}`, `{shipped['full']}`, the Live query's default "
        "router) therefore keep the paper's warm start: their thinking heads are uniform, and the Live query, "
        "`forge ask --route` and the Action map name each cot arm an untrained twin of its NoThink arm, not a tie."])


def calibrate_budget(results: Results) -> str:
    """`forge calibrate --budget-tokens 200 --json`, stored: the weights, what they realize out of fold."""
    report = stored_report("calibrate_budget_200")
    settings = (report["variant"], report["ratio"], len(report["folds"]), report["accounting"])
    require(settings == ("lite", 2, 5, "deploy"),
            "the stored calibration is the Lite router's at ratio 2, 5 folds, deployment accounting")
    over = report["realized_tokens"] - report["budget_tokens"]
    inside = report["realized_tokens_ci"][0] <= report["budget_tokens"] <= report["realized_tokens_ci"][1]
    return (f"weights λ_in {report['lambda_in']:.3f} / λ_out {report['lambda_out']:.3f}, realized out of fold "
            f"{report['realized_tokens']:.1f} tokens a query [{report['realized_tokens_ci'][0]:.1f}, "
            f"{report['realized_tokens_ci'][1]:.1f}] and macro F1 {report['realized_f1']:.3f} "
            f"[{report['realized_f1_ci'][0]:.3f}, {report['realized_f1_ci'][1]:.3f}] on {report['queries']:,} "
            f"queries: {abs(over):.1f} tokens {'over' if over > 0 else 'under'} the target, which lies "
            f"{'inside' if inside else 'outside'} the interval, so the report says "
            f"\"{'met' if report['target_met'] else 'not met'}\"")


# ---------------------------------------------------------------- measured benchmarks

def embedder_agreement(results: Results) -> str:
    """`bench/embedder_agreement.py`: the two embeddings' cosines and the routers' agreement."""
    bench = bench_result("embedder_agreement")
    cosines = [bench[key] for key in ("cosine_min", "cosine_p01", "cosine_mean")]
    cosine = (f"rounds to {cosines[0]:.6f} (minimum, 1st percentile and mean alike)" if len(set(cosines)) == 1 else
              "has minimum {:.6f}, 1st percentile {:.6f} and mean {:.6f}".format(*cosines))
    routers = list(bench["routers"].values())
    same = [router["same_decision"] for router in routers]
    agreement = f"{min(same):.0%}" if len(set(same)) == 1 else f"{min(same):.0%} to {max(same):.0%}"
    stages = listing([f"Stage {stage}" for stage in sorted({router["stage"] for router in routers})])
    return (f"the cosine between the two embeddings of each of the {bench['questions']:,} stored questions {cosine}, "
            f"and the {len(routers)} Lite and Full routers trained on the reference embedder in that store ({stages}) "
            f"pick the same arm on {agreement} of the {routers[0]['test_queries']} test queries under either embedder")


def router_bench(results: Results) -> str:
    """`bench/router.py`: cold and warm routing, the warm pieces, the MLP and training times."""
    bench = bench_result("router")
    rows = [("cold routing (top-1 passage vector dropped first)", bench["routing_cold_ms"]),
            ("warm routing (the same questions again)", bench["routing_warm_ms"]),
            *((f"warm: {piece.replace('_', ' ')}", times) for piece, times in bench["warm_pieces_ms"].items())]
    warm, cold = bench["routing_warm_ms"]["p50"], bench["routing_cold_ms"]["p50"]
    goal = bench["goals"]["routing_warm_over_embedding"]
    return "\n".join([
        f"`{bench['embedder']}`, {bench['threads']} thread, {bench['routing_queries']} test questions, a "
        f"{bench['variant'].title()} router trained on {bench['train_queries']:,} train queries; "
        f"{load_text(bench)}:", "",
        "| step | p50 ms | p95 ms |", "|---|---:|---:|",
        *(f"| {label} | {times['p50']:.2f} | {times['p95']:.2f} |" for label, times in rows), "",
        f"Warm routing p50 is {warm / cold:.2f} of cold in the same run. MLP alone: {bench['mlp_p50_us']:.0f} µs "
        f"(p50). Stage 1 took {bench['stage1_seconds']:.1f} s, Stage 2 {bench['stage2_seconds_per_1000_steps']:.1f} s "
        "per 1,000 steps.", "",
        f"As a ratio to the question embedding's own time in the same run ({bench['question_embedding_ms']['p50']:.2f} "
        f"ms p50): warm routing {bench['routing_warm_over_embedding']:.2f}x, cold "
        f"{bench['routing_cold_over_embedding']:.2f}x (p50 over p50; cold also embeds the top-1 passage). Goal (issue "
        f"#51): {goal_verdict(goal, 'warm routing within', 'the embedding')}."])


def serve_bench(results: Results) -> str:
    """`bench/serve.py`: what `forge serve` adds to a request's host call, and requests per second."""
    bench = bench_result("serve")
    return "\n".join([
        f"Router `{bench['router']}`, {bench['requests']} questions one after another, then the same with "
        f"{bench['in_flight']} in flight; {load_text(bench)}:", "",
        "| overhead p50 | overhead p95 | requests/s at " + f"{bench['in_flight']} in flight |", "|---:|---:|---:|",
        f"| {bench['overhead_p50_ms']:.1f} ms | {bench['overhead_p95_ms']:.1f} ms | {bench['requests_per_s']:.1f} |"])


# ---------------------------------------------------------------- evidence per retriever (issue #39)

EVIDENCE_RETRIEVERS = {  # the retrievers compared, as `forge retriever add NAME --kind NAME` makes them
    name: retriever_hash(RetrieverConfig(name, kind=name,
                                         embedder="" if name == "bm25" else embedder_name(DEFAULT_EMBEDDER)))
    for name in ("bm25", "dense", "hybrid")}
EVIDENCE_ARMS_BENCHMARK = "hotpotqa"  # the benchmark of the per-retriever Stage 0 (`forge enumerate --retriever`)
EVIDENCE_ARMS_HOST = "embedded-evidence"  # its host: `embedded`'s model, another name (scripts/evidence_host.py)
EVIDENCE_EXPORT = ROOT / "data" / "evidence"  # its outcomes, exported apart from the demo store's


def _mean_ci(measure: dict, digits: int = 3) -> str:
    """"0.603 [0.559, 0.647]" from an `Interval` JSON."""
    low, high = measure["ci95"]
    return f"{measure['mean']:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def evidence_compare_table(results: Results) -> str:
    """`forge evidence compare`'s stored rows: per benchmark and retriever, gold recall at k with
    its interval and its paired difference from the first retriever, Summary's and Raw's gold
    recall and input tokens, and retrieval latency."""
    stored = results.store.evidence_results()
    require(not stored.empty, "forge evidence compare has stored results")
    lines = ["| benchmark | retriever | queries | gold recall@k | minus bm25 (paired) | Summary recall "
             "| Raw recall | Summary tokens in | Raw tokens in | latency p50 / p95 ms |", "|---" * 10 + "|"]
    for row in stored.itertuples():
        result = row.result
        lines.append(
            f"| {BENCHMARK_NAMES.get(row.benchmark, row.benchmark)} | {row.retriever} | {row.queries:,} "
            f"| {_mean_ci(result['recall_at_k'])} (k {row.k}) | {ci_text(result['recall_vs_first_ci95'])} "
            f"| {_mean_ci(result['summary_recall'])} | {_mean_ci(result['raw_recall'])} "
            f"| {_mean_ci(result['summary_tokens_in'], 0)} | {_mean_ci(result['raw_tokens_in'], 0)} "
            f"| {result['latency_ms']['p50']:.1f} / {result['latency_ms']['p95']:.1f} |")
    return "\n".join(lines)


def _evidence_arms(results: Results) -> dict | None:
    """`forge evidence arms` on the documented benchmark's test split, after `forge store import
    data/evidence` (None before any query is complete under every retriever)."""
    results.store.load_exported(EVIDENCE_EXPORT)
    request = EvidenceArmsRequest(EVIDENCE_ARMS_HOST, EVIDENCE_ARMS_BENCHMARK, tuple(EVIDENCE_RETRIEVERS), "test",
                                  N_ARMS)
    try:
        return compare_arms_of(results.store, request, EVIDENCE_RETRIEVERS)
    except MissingStep:
        return None


def evidence_arms_table(results: Results) -> str:
    """Per arm, one column per retriever: F1 with its interval / mean tokens in + out, F1 minus
    bm25's (paired) under the others, and each retriever's Pareto frontier."""
    report = _evidence_arms(results)
    if report is None:
        return (f"No {BENCHMARK_NAMES[EVIDENCE_ARMS_BENCHMARK]} test query has all {N_ARMS} arms under "
                f"{listing(list(EVIDENCE_RETRIEVERS))} yet.")
    retrievers = report["retrievers"]
    lines = [f"{report['queries']} {BENCHMARK_NAMES[report['benchmark']]} test queries with all {N_ARMS} arms under "
             f"every retriever (split seed 0), host `{report['host']}`. Cells: F1 [95% interval] / tokens in + out "
             f"a query; under dense and hybrid also F1 minus bm25's on the same queries (paired 95% interval).", "",
             "| arm | " + " | ".join(r["name"] for r in retrievers) + " |", "|---" * (len(retrievers) + 1) + "|"]
    for a, arm in enumerate(report["arms"]):
        cells = []
        for r in retrievers:
            measure = r["arms"][a]
            cell = f"{_mean_ci(measure['f1'])} / {measure['tokens_in'] + measure['tokens_out']:,.0f}"
            if r["name"] != report["reference"]:
                cell += f"; {gain_text(measure['f1_minus_reference'], measure['f1_minus_reference_ci95'])}"
            cells.append(cell)
        lines.append(f"| `{arm}` | " + " | ".join(cells) + " |")
    lines.append("| Pareto frontier | " + " | ".join(", ".join(f"`{arm}`" for arm in r["pareto_frontier"])
                                                 for r in retrievers) + " |")
    return "\n".join(lines)


def guards_table(results: Results) -> str:
    """The guarded routers (`<router>_guard`, and `<router>_mix_guard` falling back to the cost-matched
    mix) of the paper-recipe Stage-1 runs and the Stage-2 runs (split seed 0, deployment accounting),
    as `forge eval crossfit` prints them: the fallback, coverage, losing deviations against alpha and
    the utility gain over the fallback with its interval; then the runs still without them."""
    runs = [run for run in results.select(1, conditioned=True)
            if warm_start_arms(run.settings) == PAPER_WARM_START_ARMS]
    lines = ["| run | stage, weights | guard | fallback | left it on | losing deviations | "
             "utility vs fallback [95% CI] |", "|---|---|---|---|---:|---:|---|"]
    without, without_mix = [], []
    for run, report in zip([*runs, *results.select(2)], [*results.reports(runs), *results.stage2_reports]):
        guarded = [(name, row["guard"]) for name, row in report["policies"].items() if row.get("guard")]
        if not guarded:
            without.append(f"`{run.run_id}`")
        elif not any(name.endswith(MIX_GUARD_SUFFIX) for name, _ in guarded):
            without_mix.append(f"`{run.run_id}`")
        for name, guard in guarded:
            gain = guard["gain_vs_fallback"]
            lines.append(f"| `{run.run_id}` | {run.settings['stage']}, {weights_text(report)} | `{name}` | "
                         f"{', '.join(guard['fallback_arms'])} | {guard['coverage']:.1%} | {risk_text(guard)} | "
                         f"{gain['difference']:+.4f} [{gain['ci'][0]:+.4f}, {gain['ci'][1]:+.4f}] |")
    require(len(lines) > 2, "a stored run with guard rows")
    if without:
        lines += ["", f"Runs without guard rows yet (`scripts/guard_crossfit_rows.py` adds them): {listing(without)}."]
    if without_mix:
        lines += ["", f"Runs without mix-guard rows yet (the same script adds them): {listing(without_mix)}."]
    return "\n".join(lines)


def gates_table(results: Results) -> str:
    """The training-free gates of the Stage-2 runs on the queries with a stored draft (`forge gate-report`):
    how many, then per gate and fixed arm utility with its gain over the best fixed arm there, F1,
    tokens, retrieval and thinking shares."""
    from forge_core.reports.gates import gate_report

    lines = []
    for report in results.stage2_reports:
        gates = gate_report(results.store, report["run_id"])
        if not lines:
            lines += [f"{gates['queries_with_draft']} of {gates['queries_in_run']} queries have a stored draft "
                      f"(`forge gate-probes`); on them:", "",
                      "| weights | policy | utility, vs best fixed [95% CI] | F1 | tokens | retrieved | thought |",
                      "|---|---|---|---:|---:|---:|---:|"]
        best = gates["policies"][gates["best_fixed_policy"]]["macro_utility"] if gates["policies"] else 0.0
        for name, row in gates["policies"].items():
            gain = gain_text(row["macro_utility"] - best, row["ci_utility_vs_best_fixed"])
            lines.append(f"| {weights_text(report)} | `{name}` | {row['macro_utility']:.3f}, {gain} | "
                         f"{row['macro_f1']:.3f} | {row['tokens']:.0f} | {row['retrieval_share']:.0%} | "
                         f"{row['thinking_share']:.0%} |")
    return "\n".join(lines)
