"""Docs generated, not typed: the result tables and figures of docs/results.md and
docs/results-rewards-grounding.md (and docs/bench.md's page renders, docs/serving.md's budget
replays), from the store's runs and
two kinds of committed outputs: bench/results/NAME.json (the JSON line bench/NAME.py printed last,
with the machine's load average) and data/demo/reports/NAME.json (the `--json` output of a command
whose routers no exported store holds: trained in memory, or trained by the command;
`scripts/stored_reports.sh` writes them).

    FORGE_STORE=/tmp/demo/forge.duckdb .venv/bin/python scripts/results_tables.py          # rewrite
    FORGE_STORE=/tmp/demo/forge.duckdb .venv/bin/python scripts/results_tables.py --check  # compare

The store is the demo store (`forge data import && forge store load-demo`). Every generated part
of the two documents sits between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->` (HTML
comments, invisible once rendered): a block (the markers on lines of their own) or a fragment of
a sentence (the markers inline). The script rewrites what lies between the markers and nothing
else; `--check` writes nothing and exits 1 with a unified diff when a document differs from what
it would write (tests/test_results_docs.py compares the same texts).

It only reads, through the functions the documented commands call (`forge store summary`, `forge
eval cached|crossfit|fresh|transfer`, `forge rewards audit --no-crossfit`): no host is called and
nothing is trained. A sentence whose wording the store no longer bears out stops the script with
the claim that failed (rewrite the sentence), and so does a stored report whose figures the store
also gives and gives otherwise. Runs are selected by their settings (host, stage, accounting,
split seed, cost weights, conditioning), never by id; the ids the text quotes come from the store.
Crossfit reports are kept in FORGE_CACHE_DIR/crossfit, as the dashboard keeps them. Intervals are
paired bootstrap 95% intervals (seeded, so the text is the same on every run): queries resampled
within benchmarks, macro over benchmarks.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import re
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from forge_core import config
from forge_core.errors import MissingStep
from forge_core.evaluation.audit_request import RewardAuditRequest
from forge_core.evaluation.cached import CachedRequest, run_cached
from forge_core.evaluation.crossfit import STAGE_CONFIG_RENAMES, cached_crossfit_report, seed_key, seed_spread
from forge_core.evaluation.evidence_arms import EvidenceArmsRequest, compare_arms_of
from forge_core.evaluation.fresh_online import first_rows_per_benchmark, fresh_report, fresh_run_id, policy_checkpoints
from forge_core.evaluation.proxy_audit import run_reward_audit
from forge_core.evaluation.settings import EvaluationSettings
from forge_core.evaluation.setup import EvaluationSetup, evaluation_setup
from forge_core.evaluation.transfer import TransferRequest, run_transfer
from forge_core.evidence.retrievers import RetrieverConfig, retriever_hash
from forge_core.hosts.registry import get_host_config
from forge_core.policies.conditioned import conditioned_checkpoint
from forge_core.policies.grounding import gold_recall_matrix
from forge_core.policies.outcomes import PolicyOutcome, policy_outcomes
from forge_core.policies.registry import ConditionedRouter, TrainedRouter, variants
from forge_core.policies.support_rates import support_verdicts
from forge_core.reports.tables import MACRO, ORACLE, arm_mix_frame, oracle_choices, policy_summary, store_coverage
from forge_core.rewards.support_verdict import SUPPORT_SCORES, SUPPORTED
from forge_core.routing.embedders import DEFAULT_EMBEDDER, embedder_name
from forge_core.routing.outcome_table import OutcomeTable, load_outcome_table
from forge_core.routing.utility import CostWeights
from forge_core.statistics import Interval, macro, paired_bootstrap_ci
from forge_core.store import Store
from forge_core.training.settings import PAPER_WARM_START_ARMS

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = (ROOT / "docs" / "results.md", ROOT / "docs" / "results-rewards-grounding.md", ROOT / "docs" / "bench.md",
             ROOT / "docs" / "serving.md")
BENCH_RESULTS = ROOT / "bench" / "results"  # one file per bench: the JSON line its script printed last
STORED_REPORTS = ROOT / "data" / "demo" / "reports"  # `--json` outputs of commands that train in memory
HOST = "embedded"  # the host the documents report on
TRANSFER_HOSTS = (HOST, "embedded-small")  # the hosts of the transfer tables
N_ARMS = 6  # its alphabet
WHOLE_ALPHABET = 6  # `--warm-arms 6`: Stage 1 on the whole alphabet (the recipe the tables compare with the paper's)
FRESH_PER_BENCHMARK = 5  # `forge eval fresh --per-benchmark 5`: the documented Fresh Online run
AUDIT_WEIGHTS = ((0.1, 0.2), (0.6, 0.6))  # `forge rewards audit [--lambda-in 0.6 --lambda-out 0.6]`
# the grounding tables' rows
GROUNDED = ("always_direct", "always_summary", "always_raw", "forge_lite", "forge_full", ORACLE)
GROUNDED_ROUTERS = {"forge_lite": "Lite", "forge_full": "Full"}  # compared with Always-Raw in its reading
BENCHMARK_NAMES = {"2wikimultihopqa": "2WikiMultihopQA", "fever": "FEVER", "hotpotqa": "HotpotQA",
                   "musique": "MuSiQue", "popqa": "PopQA"}
REGION = re.compile(r"<!-- generated:(?P<name>[\w-]+) -->(?P<body>.*?)<!-- /generated:(?P=name) -->", re.S)


# ---------------------------------------------------------------- formatting

def _ci(interval: Sequence[float] | None) -> str:
    """"[-0.012, +0.034]", or "" for no interval."""
    if interval is None:
        return ""
    low, high = interval
    return f"[{low:+.3f}, {high:+.3f}]"


def _gain(gain: float, interval: Sequence[float]) -> str:
    """"+0.010 [-0.007, +0.026]"."""
    return f"{gain:+.3f} {_ci(interval)}"


def _pair(report: dict) -> str:
    """A report's (or run settings') cost weights: "0.1 / 0.2"."""
    return f"{report['lambda_in']:g} / {report['lambda_out']:g}"


def _weights(report: dict) -> str:
    """"λ 0.1 / 0.2"."""
    return f"λ {_pair(report)}"


def _calls(calls: float) -> str:
    """5.00 as "5", 4.96 as "4.96"."""
    return f"{calls:.2f}".rstrip("0").rstrip(".")


def _range(values: Sequence[float], digits: int = 3, unit: str = "") -> str:
    """"-0.047 to -0.039" (a single value once)."""
    low, high = (f"{value:+.{digits}f}{unit}" for value in (min(values), max(values)))
    return low if low == high else f"{low} to {high}"


def _listing(items: Sequence[str]) -> str:
    """"a", "a and b", "a, b and c"."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _ids(ids: Sequence[str]) -> str:
    """Run ids as inline code, comma-separated."""
    return ", ".join(f"`{run_id}`" for run_id in ids)


def _require(holds: bool, claim: str) -> None:
    """Stop when the store no longer bears out a sentence's wording (the sentence must be rewritten)."""
    if not holds:
        raise SystemExit(f"the store no longer bears out: {claim}")


def _difference(benchmarks: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[float, Interval]:
    """macro(a) - macro(b) and its paired bootstrap 95% interval."""
    return macro(a, benchmarks) - macro(b, benchmarks), paired_bootstrap_ci(a, b, benchmarks)


# ---------------------------------------------------------------- committed outputs

def _bench(name: str) -> dict:
    """The JSON line bench/NAME.py printed last, committed as bench/results/NAME.json."""
    return json.loads((BENCH_RESULTS / f"{name}.json").read_text())


def _stored(name: str) -> dict:
    """A command's `--json` output kept as data/demo/reports/NAME.json (scripts/stored_reports.sh
    writes them): the commands that train routers in memory, whose numbers no store holds."""
    return json.loads((STORED_REPORTS / f"{name}.json").read_text())


# ---------------------------------------------------------------- what the store holds

@dataclasses.dataclass(frozen=True)
class CrossfitRun:
    """A finished crossfit run: its id and settings."""

    run_id: str
    settings: dict

    @property
    def weights(self) -> tuple[float, float]:
        return self.settings["lambda_in"], self.settings["lambda_out"]

    def matches(self, stage: int, accounting: str, conditioned: bool) -> bool:
        """Stage, accounting, and whether the cost-conditioned routers ran (older runs have no key)."""
        return (self.settings["stage"] == stage and self.settings["accounting"] == accounting
                and (self.settings.get("conditioning") is not None) == conditioned)


@dataclasses.dataclass(frozen=True)
class RunRows:
    """A crossfit run's out-of-fold rows per policy, every policy's rows in the same query order."""

    benchmarks: np.ndarray
    utility: dict[str, np.ndarray]  # under the run's accounting
    arms: dict[str, np.ndarray]


class Results:
    """What the documents quote, each read from the store once, on first use."""

    def __init__(self, store: Store, cache_dir: Path) -> None:
        self.store, self.cache_dir = store, cache_dir
        self._pool = ThreadPoolExecutor(max_workers=2)  # crossfit reports: bootstraps, mostly outside the GIL
        self._reports: dict[str, Future] = {}  # crossfit reports by run id, computed or on their way
        self._rows: dict[str, RunRows] = {}  # crossfit rows by run id
        self._audits: dict[tuple, dict] = {}  # reward audits by (reward, weights)

    @cached_property
    def coverages(self) -> dict[str, dict]:
        """`forge store coverage --json`: per host."""
        return store_coverage(self.store)

    @property
    def coverage(self) -> dict:
        return self.coverages[HOST]

    def close(self) -> None:
        """Drop the crossfit reports not started yet (after an error, the script exits at once)."""
        self._pool.shutdown(cancel_futures=True)

    @cached_property
    def outcomes(self) -> OutcomeTable:
        """The host's complete queries on its alphabet (what `forge store summary` reads)."""
        return load_outcome_table(self.store, HOST, N_ARMS)

    def arm_summary(self, split: str | None) -> pd.DataFrame:
        """`forge store summary [--split S]`: per arm and benchmark, and the oracle."""
        table = self.outcomes
        return policy_summary(table if split is None else table.split(split), table.fit_normalizer())

    @cached_property
    def cached(self) -> dict[str, dict]:
        """`forge eval cached --json` under each accounting."""
        return {accounting: run_cached(self.store, CachedRequest(EvaluationSettings(HOST, accounting=accounting)))
                for accounting in ("deploy", "answer")}

    @cached_property
    def crossfit_runs(self) -> list[CrossfitRun]:
        """The host's finished crossfit runs, newest first."""
        runs = self.store.crossfit_runs(HOST)
        finished = runs[runs["folds_done"] >= runs["folds"]]
        return [CrossfitRun(run_id, json.loads(settings)) for run_id, settings in zip(finished["run_id"],
                                                                                      finished["settings"])]

    def select(self, stage: int, accounting: str = "deploy", conditioned: bool = False,
               split_seed: int | None = 0) -> list[CrossfitRun]:
        """The newest run per (cost weights, split seed) with these settings (every seed with None),
        by weights, then seed."""
        chosen: dict[tuple, CrossfitRun] = {}
        for run in self.crossfit_runs:
            if run.matches(stage, accounting, conditioned) and split_seed in (None, run.settings["split_seed"]):
                chosen.setdefault((*run.weights, run.settings["split_seed"]), run)
        return [chosen[key] for key in sorted(chosen)]

    def start_reports(self, runs: Sequence[CrossfitRun]) -> None:
        """Start computing `forge eval crossfit --json` of stored runs in the background (kept as
        the dashboard keeps them): their bootstrap intervals take seconds each."""
        for run in runs:
            if run.run_id not in self._reports:
                self._reports[run.run_id] = self._pool.submit(cached_crossfit_report, self.store, run.run_id,
                                                              self.cache_dir)

    def reports(self, runs: Sequence[CrossfitRun]) -> list[dict]:
        """The crossfit reports of stored runs (`start_reports`, then waiting for them)."""
        self.start_reports(runs)
        return [self._reports[run.run_id].result() for run in runs]

    @cached_property
    def stage2_reports(self) -> list[dict]:
        """`forge eval crossfit --stage 2 --json` of the split-seed-0 deployment runs, by weights."""
        return self.reports(self.select(2))

    @cached_property
    def seed_reports(self) -> list[dict]:
        """The Stage-2 runs of split seed 0, deployment accounting, each with `across_split_seeds`:
        the spread over the runs whose settings differ only in the split seed."""
        every_seed = self.reports(self.select(2, split_seed=None))
        return [{**report,
                 "across_split_seeds": seed_spread([r for r in every_seed if seed_key(r) == seed_key(report)])}
                for report in self.stage2_reports]

    def rows(self, run: CrossfitRun) -> RunRows:
        """A run's out-of-fold utilities and arms per policy, ordered as `crossfit_report` orders them."""
        if run.run_id not in self._rows:
            self._rows[run.run_id] = self._read_rows(run)
        return self._rows[run.run_id]

    def _read_rows(self, run: CrossfitRun) -> RunRows:
        results = self.store.crossfit_results(run.run_id)
        frames = {name: frame.sort_values(["benchmark", "example_id"]).reset_index(drop=True)
                  for name, frame in results.groupby("policy", sort=False)}
        column = f"{run.settings['accounting']}_utility"
        return RunRows(next(iter(frames.values()))["benchmark"].to_numpy(),
                       {name: frame[column].to_numpy() for name, frame in frames.items()},
                       {name: frame["arm"].to_numpy() for name, frame in frames.items()})

    @cached_property
    def stage_differences(self) -> list[tuple[dict, str, int, float, tuple[float, float]]]:
        """(run settings, router, split seed, Stage 2 minus Stage 1 utility, interval) of every
        Stage-2 run (deployment accounting) and router with a Stage-1 parent."""
        found = []
        for run in self.select(2, split_seed=None):
            rows = self.rows(run)
            for name in variants(TrainedRouter):
                gain, interval = _difference(rows.benchmarks, rows.utility[name], rows.utility[f"{name}_stage1"])
                found.append((run.settings, name, run.settings["split_seed"], gain, interval))
        return found

    @cached_property
    def test_split(self) -> tuple[EvaluationSetup, dict[str, PolicyOutcome]]:
        """The Cached protocol's setup on the test split and every policy's decisions there."""
        setup = evaluation_setup(self.store, EvaluationSettings(HOST))
        return setup, policy_outcomes(setup.context, setup.rows, setup.policies)

    @cached_property
    def fresh(self) -> dict:
        """`forge eval fresh --per-benchmark 5 --json` of the stored run, without a host call: its
        policies that answered every query with their current checkpoint (the cost-conditioned
        routers came after the documented run). Stops when the per-weight routers' answers are missing."""
        setup, outcomes = self.test_split
        rows = first_rows_per_benchmark(setup.context, setup.rows, FRESH_PER_BENCHMARK)
        fresh = dataclasses.replace(setup, rows=rows)
        run_id = fresh_run_id(get_host_config(self.store, HOST), fresh, EvaluationSettings(HOST))
        live = [policy for policy in setup.policies if policy.deployable]
        checkpoints = policy_checkpoints(live, setup.router_checkpoints)
        results = self.store.fresh_results(run_id)
        results = results[results["checkpoint_id"].fillna("") == results["policy"].map(checkpoints).fillna("")]
        answered = [policy for policy in live if (results["policy"] == policy.name).sum() == len(rows)]
        if {policy.name for policy in live} - {policy.name for policy in answered} - set(variants(ConditionedRouter)):
            raise SystemExit(f"the store has no finished Fresh Online run {run_id} of the per-weight routers (`forge "
                             f"eval fresh --per-benchmark {FRESH_PER_BENCHMARK}` makes one, with live host calls)")
        chosen = np.isin(setup.rows, rows)  # the Cached protocol on the same queries
        return {"run_id": run_id, "queries": len(rows), "policies": fresh_report(
            results, fresh, answered, {policy.name: outcomes[policy.name].f1[chosen] for policy in answered})}

    @cached_property
    def transfers(self) -> list[dict]:
        """`forge eval transfer --from A --to B --json` both ways between the two embedded hosts, zero-shot."""
        return [run_transfer(self.store, TransferRequest(source, target))
                for source in TRANSFER_HOSTS for target in TRANSFER_HOSTS if source != target]

    def audit(self, reward: str, weights: tuple[float, float]) -> dict:
        """`forge rewards audit --reward R --no-crossfit --json` at these weights: the per-arm audit
        only (the audit's cross-fitted routers are trained, so they are left out)."""
        key = (reward, weights)
        if key not in self._audits:
            request = RewardAuditRequest(HOST, reward, weights=CostWeights(*weights), routers=())
            self._audits[key] = run_reward_audit(self.store, request)
        return self._audits[key]

    def audits(self, reward: str) -> list[dict]:
        """`audit` at every audited weight pair (`AUDIT_WEIGHTS`)."""
        return [self.audit(reward, weights) for weights in AUDIT_WEIGHTS]

    @cached_property
    def grounding(self) -> dict[str, dict[str, tuple[float, tuple[float, float]]]]:
        """Per router of the grounding tables, its gold recall and support rate minus
        Always-Raw's on the test split, with paired intervals (queries with annotations, resp. a
        verdict for both chosen arms)."""
        setup, outcomes = self.test_split
        recall = gold_recall_matrix(self.store, setup.context.table)[setup.rows]
        support = support_verdicts(self.store, setup.context.table).scores[setup.rows]
        supported = np.where(np.isnan(support), np.nan, support == SUPPORT_SCORES[SUPPORTED])
        benchmarks = setup.context.table.benchmarks[setup.rows]

        def chosen_difference(values: np.ndarray, name: str) -> tuple[float, tuple[float, float]]:
            ours = values[np.arange(len(setup.rows)), outcomes[name].actions]
            raw = values[np.arange(len(setup.rows)), outcomes["always_raw"].actions]
            known = ~np.isnan(ours) & ~np.isnan(raw)
            return _difference(benchmarks[known], ours[known], raw[known])

        return {name: {"gold_recall": chosen_difference(recall, name),
                       "support_rate": chosen_difference(supported, name)} for name in GROUNDED_ROUTERS}


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
    _, interval = _difference(table.benchmarks, oracle_f1, table.f1[:, table.arms.index("raw:no_think")])
    return (f"reaches macro F1 {oracle.f1:.3f} at {oracle.tokens:.0f} tokens over the whole store, against "
            f"Always-Raw's {raw.f1:.3f} at {raw.tokens:.0f} (F1 difference {_ci(interval)})")


# ---------------------------------------------------------------- Cached protocol

def cached_table(results: Results) -> str:
    """Cached protocol: F1, both costs, calls, utility under both accountings, F1 vs Raw."""
    deploy, answer = results.cached["deploy"], results.cached["answer"]
    lines = ["| policy | macro F1 | k tok, deploy | k tok, answer | calls | utility, deploy | utility, answer "
             "| F1 vs Always-Raw, 95% CI |", "|---|---:|---:|---:|---:|---:|---:|---|"]
    for name, row in deploy["policies"].items():
        lines.append(f"| `{name}` | {row['macro_f1']:.3f} | {row['deploy_cost_k']:.3f} | {row['answer_cost_k']:.3f} "
                     f"| {row['calls_per_query']:.2f} | {row['macro_utility']:.3f} "
                     f"| {answer['policies'][name]['macro_utility']:.3f} | {_ci(row['ci_vs_always_raw'])} |")
    return "\n".join(lines)


def cached_reading(results: Results) -> str:
    """What the test split decides, and what the deployment's accounting changes."""
    deploy, answer = results.cached["deploy"]["policies"], results.cached["answer"]["policies"]
    intervals = {name: row["ci_vs_always_raw"] for name, row in deploy.items() if name != "always_raw"}
    widths = [high - low for low, high in intervals.values()]
    below = [f"`{name}`" for name, ci in intervals.items() if Interval.of(ci).below]
    above = [f"`{name}`" for name, ci in intervals.items() if Interval.of(ci).above]
    full, selfr = deploy["forge_full"], deploy["self_routing"]
    _require(not any(Interval.of(ci).decided for name, ci in intervals.items() if deploy[name]["kind"] == "router"),
             "no router's F1 interval against Always-Raw excludes zero on the test split")
    return (f"On the test split the intervals against Always-Raw are {min(widths):.3f} to {max(widths):.3f} F1 wide; "
            f"only {_listing(below)} lie below zero and {_listing(above)} above it: "
            f"{results.cached['deploy']['queries']} queries separate no router from Always-Raw. What the deployment's "
            "accounting changes is plain even here: the Full router spends "
            f"{full['deploy_cost_k']:.2f}k tokens and {_calls(full['calls_per_query'])} calls a query for "
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
    return (f"{row['macro_utility']:.3f}, {row['macro_utility'] - best:+.3f} {_ci(row['ci_utility_vs_best_fixed'])}, "
            f"{_ci(row.get('ci_utility_vs_floor')) or '–'}")


def _cost_cell(report: dict, name: str) -> str:
    """Macro F1, k tokens (deployment / answering call) and calls a query."""
    row = report["policies"][name]
    return (f"{row['macro_f1']:.3f}, {row['deploy_cost_k']:.3f} / {row['answer_cost_k']:.3f}, "
            f"{row['calls_per_query']:.2f}")


def _per_weight_table(reports: list[dict], what: str, cell: Callable[[dict, str], str],
                      names: Sequence[str] | None = None) -> list[str]:
    """One row per policy (`names`, default every policy in `_order`), one column per report's weights."""
    header = " | ".join(f"{_weights(r)}: {what}" for r in reports)
    lines = [f"| policy | {header} |", "|---|" + "---|" * len(reports)]
    for name in names or _order(reports[0]["policies"]):
        lines.append(f"| `{name}` | " + " | ".join(cell(report, name) for report in reports) + " |")
    return lines


def crossfit_runs(results: Results) -> str:
    """Each weight's best fixed arm and the run ids of the Stage-2 tables."""
    reports = results.stage2_reports
    arms = ", ".join(f"`{r['best_fixed_arm']}` at {_pair(r)}" for r in reports)
    return f"Best fixed arm: {arms} (runs {_ids([r['run_id'] for r in reports])})"


def crossfit_tables(results: Results) -> str:
    """Per policy and weight: utility, gain over the best fixed arm and over the floor with intervals;
    then F1, both costs and the calls."""
    reports = results.stage2_reports
    return "\n".join([*_per_weight_table(reports, "utility, vs best fixed, vs floor", _utility_cell), "",
                      *_per_weight_table(reports, "F1, k tok deploy / answer, calls", _cost_cell)])


SEED_POLICIES = ("forge_full", "forge_lite", "bge_bm25_kl", "ridge_utility", "forge_full_fallback")


def seed_runs(results: Results) -> str:
    """The run ids of the other split seeds' Stage-2 runs."""
    runs = [run for run in results.select(2, split_seed=None) if run.settings["split_seed"] != 0]
    seeds = sorted({run.settings["split_seed"] for run in runs})
    return f"runs at seeds {_listing([str(seed) for seed in seeds])}: {_ids([run.run_id for run in runs])}"


def seeds_table(results: Results) -> str:
    """Per weight and router: the gain over the best fixed arm at each split seed, spread, decidable."""
    lines = ["| weights | policy | gain at each split seed [95% CI] | spread | decidable | decidable vs floor |",
             "|---|---|---|---:|---|---|"]
    for report in results.seed_reports:
        spread = report["across_split_seeds"]
        for name in SEED_POLICIES:
            row = spread["policies"][name]
            gains = "; ".join(f"{seed}: {_gain(gain, ci)}"
                              for seed, gain, ci in zip(spread["split_seeds"], row["gains"], row["intervals"]))
            floor = "–" if name == report["floor_policy"] else ("yes" if row["decidable_vs_floor"] else "no")
            lines.append(f"| {_weights(report)} | `{name}` | {gains} | {row['spread']:.3f} "
                         f"| {'yes' if row['decidable'] else 'no'} | {floor} |")
    return "\n".join(lines)


def answer_view(results: Results) -> str:
    """The Full router's gains under the paper's answer-only accounting."""
    reports = results.reports(results.select(2, accounting="answer"))
    rows = [r["policies"]["forge_full"] for r in reports]
    gains = [_gain(row["macro_utility"] - r["policies"][r["best_fixed_policy"]]["macro_utility"],
                   row["ci_utility_vs_best_fixed"]) for row, r in zip(rows, reports)]
    return (f"gives the Full router gains of {_listing(gains)} at {_listing([_pair(r) for r in reports])} (runs "
            f"{_ids([r['run_id'] for r in reports])})")


def _tokens(values: Sequence[float]) -> str:
    """k tokens: "0.23k to 0.27k"."""
    return _range(values, 2, "k").replace("+", "")


def _check_full_router(reports: list[dict]) -> None:
    """What the Full router bullet says in words: every Full and Self-Routing interval below zero,
    the fallback rule at 1 call a query and decidable at no weight."""
    spreads = [r["across_split_seeds"]["policies"] for r in reports]
    _require(all(Interval.of(ci).below for s in spreads for ci in s["forge_full"]["intervals"]),
             "every interval of the Full router's gain is below zero")
    _require(all(Interval.of(r["policies"]["self_routing"]["ci_utility_vs_best_fixed"]).below for r in reports),
             "Self-Routing's intervals are below zero")
    _require(all(abs(r["policies"]["forge_full_fallback"]["calls_per_query"] - 1) < 1e-9 for r in reports),
             "the fallback rule makes 1 call a query")
    _require(not any(s["forge_full_fallback"]["decidable"] for s in spreads), "the fallback rule is decidable nowhere")


def full_router_reading(results: Results) -> str:
    """Bullet: the Full router, Self-Routing and the fallback rule against the best fixed arm."""
    reports = results.seed_reports
    _check_full_router(reports)
    full = [r["policies"]["forge_full"] for r in reports]
    gains = ", ".join(f"{_range(r['across_split_seeds']['policies']['forge_full']['gains'])} at {_pair(r)}"
                      for r in reports)
    self_routing = ", ".join(f"{_ci(r['policies']['self_routing']['ci_utility_vs_best_fixed'])} at {_pair(r)}"
                             for r in reports)
    decided = "; ".join(f"{_gain(gain, ci)} at {_pair(r)}, seed {seed}" for r in reports
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
    _require(len(set(spread["best_fixed_arms"])) == 1, "one best fixed arm at every seed")
    _require(not any(Interval.of(ci).above for row in spread["policies"].values() for ci in row["intervals"]),
             f"no interval above zero at {_pair(report)}")
    return (f"at {_pair(report)} no policy's interval against {spread['best_fixed_arms'][0]}, the linear floor's "
            "included, is above zero at any seed")


def costly_weights_reading(results: Results) -> str:
    """Bullet: where tokens cost more, which policies beat the best fixed arm at every seed."""
    parts = []
    for report in results.seed_reports[1:]:
        spread = report["across_split_seeds"]
        _require(len(set(spread["best_fixed_arms"])) == 1, "one best fixed arm at every seed")
        winners = [f"`{name}` ({_range(row['gains'])})" for name, row in spread["policies"].items()
                   if row["decidable"]]
        parts.append(f"{'at' if parts else 'At'} {_pair(report)} {_listing(winners)} are above "
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
            _require(len(seeds) <= 1, "a router-minus-floor interval is above zero at one seed at most")
            above += [f"`{name}` at {_pair(report)}, seed {seed}" for seed in seeds]
    seeds = len(results.seed_reports[0]["across_split_seeds"]["split_seeds"])
    return (f"A router-minus-ridge interval is above zero at one seed of {seeds} at most ({_listing(above)}) and "
            "includes zero at the others" if above else "No router-minus-ridge interval is above zero at any seed")


def stage2_table(results: Results) -> str:
    """Per weight and router: Stage 2 minus its Stage-1 parent at each split seed, with intervals."""
    differences = results.stage_differences
    lines = ["| weights | router | Stage 2 minus Stage 1 at each split seed [95% CI] |", "|---|---|---|"]
    for weights in dict.fromkeys(_weights(settings) for settings, *_ in differences):
        for name in variants(TrainedRouter):
            cells = "; ".join(f"{seed}: {_gain(gain, ci)}" for settings, router, seed, gain, ci in differences
                              if router == name and _weights(settings) == weights)
            lines.append(f"| {weights} | `{name}` | {cells} |")
    return "\n".join(lines)


def stage2_reading(results: Results) -> str:
    """How many Stage 2 minus Stage 1 intervals exclude zero, and which."""
    differences = results.stage_differences
    decided = [f"`{name}` at {_pair(settings)}, seed {seed}: {_gain(gain, ci)}"
               for settings, name, seed, gain, ci in differences if Interval.of(ci).decided]
    lite = [gain for _, name, _, gain, _ in differences if name == "forge_lite"]
    return (f"Lite moves by {_range(lite)} over the {len(lite)} runs; {len(decided)} of the {len(differences)} "
            f"intervals exclude zero" + (f" ({'; '.join(decided)})" if decided else ""))


ORACLE_SET_POLICIES = ("forge_lite", "forge_lite_cond", "forge_full", "bge_bm25_kl", "ridge_utility",
                       "always_summary", "always_raw", "always_summary_cot", "always_direct")


def _oracle_set_cell(report: dict, name: str) -> str:
    """Regret with its interval, oracle-set agreement and FEVER's thinking share."""
    row = report["policies"][name]
    return (f"{row['regret']['mean']:.3f} {_ci(row['regret']['ci'])}, {row['oracle_agreement']:.1%}, "
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
    _require("forge_full" not in near and full == sorted(full), "the Full router's regret grows with the weights")
    _require(all(r["policies"][name]["cot_share"].get("fever", 0.0) == 0 for r in reports for name in routers),
             "no router of these runs sends a FEVER query to a thinking arm")
    return (f"The regret intervals of {_listing([f'`{name}`' for name in near])} overlap ridge's at every weight; "
            f"the Full router's regret grows with the weights ({_listing([f'{value:.3f}' for value in full])}), "
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
    _require(len(pairs) == 1, f"one Stage-1 and one Stage-2 run with Stage 1 on {default} arms, at the same weights")
    (stage1_run, stage2_run), = pairs
    first, second = results.rows(stage1_run), results.rows(stage2_run)
    _require(all(np.array_equal(first.utility[name], second.utility[f"{name}_stage1"]) for name in SIX_ARM_ROUTERS),
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
    _require(bool(runs), f"a stored Stage-2 run with Stage 1 on {default} arms")
    return _listing([f"`{run.run_id}` at {_pair(run.settings)}" for run in runs])


def six_arm_runs(results: Results) -> str:
    """The two runs: ids, stages, weights, folds, queries and the day they were stored."""
    runs = _six_arm_runs(results)
    created = results.store.crossfit_runs(HOST).set_index("run_id")["created_at"]
    days = _listing(sorted({f"{created[run.run_id]:%Y-%m-%d}" for run in runs}))
    report = results.reports([runs[1]])[0]
    return (f"runs `{runs[0].run_id}` (Stage 1) and `{runs[1].run_id}` (Stage 2) at {_pair(runs[0].settings)}, "
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
            extra = f"{_gain(difference['difference'], difference['ci'])} | {deciles}"
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
    _require(all(cot[0][name] > cot[0]["ridge_utility"] for name in routers),
             "under Stage 1 every router sends more of FEVER to a thinking arm than ridge")
    _require(all(cot[1][name] < cot[0][name] for name in routers), "Stage 2 lowers every router's FEVER thinking share")
    floor = [{name: report["policies"][name]["ci_utility_vs_floor"] for name in routers} for report in (first, second)]
    _require(not any(Interval.of(ci).decided for ci in floor[0].values()),
             "under Stage 1 every router-minus-ridge interval contains zero")
    _require(not any(Interval.of(ci).above for ci in floor[1].values()), "no Stage-2 router is decidably above ridge")
    below = [f"`{name}` {_ci(ci)}" for name, ci in floor[1].items() if Interval.of(ci).below]
    moved = [f"`{name}` {_gain(row['difference'], row['ci'])}" for name, row in second["stage2_minus_stage1"].items()
             if name in routers and Interval.of(row["ci"]).decided]
    gaps = [{name: _decile_gap(report, name) for name in routers} for report in (first, second)]
    apart = [[f"`{name}` {_gain(gap, ci)}" for name, (gap, ci) in stage.items() if Interval.of(ci).above]
             for stage in gaps]
    _require(not any(Interval.of(ci).below for stage in gaps for _, ci in stage.values()),
             "no router's highest-margin decile is decidably less often right than its lowest")
    _require(len(apart[1]) > len(apart[0]), "more routers' margins tell right decisions apart after Stage 2")
    best = first["best_fixed_policy"]
    margins = [decile["high"] for report in (first, second) for name in routers
               for decile in report["policies"][name]["reliability"]]
    deciles = [decile["queries"] for name in routers for decile in first["policies"][name]["reliability"]]
    return " ".join([
        f"Under Stage 1 every trained router sends more of FEVER to a thinking arm "
        f"({_percent_range([cot[0][n] for n in routers], 1)}) than `ridge_utility` ({cot[0]['ridge_utility']:.1%}; the "
        f"oracle {cot[0][ORACLE]:.1%}); their regrets "
        f"({_range([first['policies'][n]['regret']['mean'] for n in routers]).replace('+', '')}) sit beside ridge's "
        f"{_regret(first, 'ridge_utility')} and the best fixed arm's (`{best}`, {_regret(first, best)}), every "
        "router-minus-ridge interval containing zero.",
        f"Stage 2 lowers every router's FEVER thinking share (to {_percent_range([cot[1][n] for n in routers], 1)}); "
        + (f"Stage 2 minus Stage 1 excludes zero for {_listing(moved)} only" if moved
           else "no Stage 2 minus Stage 1 interval excludes zero")
        + (f", and {_listing(below)} fall decidably below ridge (router minus ridge)." if below
           else ", and no router falls decidably below ridge."),
        f"A routed decision's margin (its arm's predicted utility over the runner-up's, 0 to {max(margins):.2f}) "
        "tells right decisions apart for more routers after Stage 2: under Stage 1 the share of right decisions is "
        f"{_percent_range([d['share_right'] for n in routers for d in first['policies'][n]['reliability']])} in "
        "every margin decile of every router, and the highest decile minus the lowest is above zero for "
        + (f"{_listing(apart[0])} only" if apart[0] else "no router")
        + f"; under Stage 2 for {_listing(apart[1])} (deciles of {min(deciles)} to {max(deciles)} queries; 95% "
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
        days = _listing(sorted({f"{first:%Y-%m-%d}", f"{last:%Y-%m-%d}"}))
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
    _require(abs(policies["forge_full_fallback"]["calls_per_query"] - 1) < 1e-9, "the fallback makes 1 call a query")
    calls = [row["calls_per_query"] for row in probing]
    return (f"the Full router and Self-Routing make {_calls(min(calls))} to {_calls(max(calls))} calls and spend "
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
    _require(live["f1_recorded"].notna().all(), "every live answer has a recorded outcome of its arm")
    per_benchmark = stored.groupby(["policy", "benchmark"]).size()
    _require(per_benchmark.nunique() == 1, "every policy answered as many queries of each benchmark")
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
    return (f"| {report['source_host']} -> {report['target_host']}, {_weights(report)} | `{name}` "
            f"| {row['macro_f1']:.3f} | {row['deploy_cost_k']:.3f} | {row['macro_utility']:.3f} "
            f"| {_ci(row['ci_utility_vs_always_raw'])} | {_ci(row['ci_utility_vs_best_fixed'])} "
            f"| {_ci(row['ci_utility_vs_target_router'])} |")


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
    _require(not any((r["source_host"], r["lambda_in"], r["lambda_out"]) in exported for r in reports),
             "no stored transfer report repeats one the export gives")
    return reports


def transfer_stored_runs(results: Results) -> str:
    """Which stored transfer reports there are: files, directions and weights."""
    reports = _stored_transfers(results)
    weights = _listing(list(dict.fromkeys(_pair(r) for r in reports)))
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
    lines = [f"Arm mix per benchmark, {first['source_host']} -> {first['target_host']}, {_weights(first)}:", "",
             "| benchmark | " + " | ".join(f"`{name}`" for name in columns) + " |", "|---|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(row) + " |" for row in arm_mix_frame(first, columns).itertuples(index=False)]
    return "\n".join(lines)


def transfer_lite(results: Results) -> str:
    """The transferred Lite routers' intervals against the target's own, from the store (each holds zero)."""
    _require(not any(Interval.of(r["policies"]["transfer_forge_lite"]["ci_utility_vs_target_router"]).decided
                     for r in results.transfers), "every exported zero-shot Lite interval holds zero")
    return ", ".join(f"{_ci(r['policies']['transfer_forge_lite']['ci_utility_vs_target_router'])} "
                     f"(to {r['target_host']})" for r in results.transfers) + f" at {_pair(results.transfers[0])}"


def _verdict(interval: Sequence[float]) -> str:
    """An interval's sign in words, before "it": "above", "below", "not decidably different from"."""
    verdict = Interval.of(interval).verdict
    return verdict if Interval.of(interval).decided else f"{verdict} from"


def transfer_stored_lite(results: Results) -> str:
    """The same intervals from the stored reports, each with its verdict against the target's router."""
    return ", ".join(f"{_ci(ci)} (to {r['target_host']}, {_verdict(ci)} it)" for r in _stored_transfers(results)
                     for ci in [r["policies"]["transfer_forge_lite"]["ci_utility_vs_target_router"]]) + \
        f" at {_pair(_stored_transfers(results)[0])}"


def small_target_router(results: Results) -> str:
    """The own Lite router of the host with the fewest train queries, against its Always-Raw."""
    report = min(results.transfers, key=lambda r: results.coverages[r["target_host"]]["by_split"]["train"])
    interval = report["policies"]["target_forge_lite"]["ci_utility_vs_always_raw"]
    _require(Interval.of(interval).below, "the smaller host's own router is below its Always-Raw")
    train = results.coverages[report["target_host"]]["by_split"]["train"]
    return (f"on `{report['target_host']}` it was trained on {train} train queries and its utility is below "
            f"Always-Raw at {_pair(report)} ({_ci(interval)})")


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
    _require(len({json.dumps(run.settings["conditioning"], sort_keys=True) for run in runs}) == 1,
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
            gain, interval = _difference(rows.benchmarks, ours, theirs)
            cells.append(f"{macro(theirs, rows.benchmarks):.4f} | {macro(ours, rows.benchmarks):.4f} "
                         f"| {gain:+.4f} [{interval[0]:+.4f}, {interval[1]:+.4f}]")
        lines.append(f"| {_pair(run.settings)} | `{run.run_id}` | {_stage1_label(run.settings)} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def conditioned_reading(results: Results) -> str:
    """What the conditioned runs show, what they leave out (the shipped draws), and their twins."""
    runs = _conditioned_runs(results)
    intervals = []
    for run in runs:
        rows = results.rows(run)
        intervals += [_difference(rows.benchmarks, rows.utility[f"{n}_cond"], rows.utility[n])[1]
                      for n in ("forge_lite", "forge_full")]
    _require(not any(Interval.of(ci).decided for ci in intervals),
             "every conditioned-minus-per-weight interval holds zero")
    shipped = {variant: conditioned_checkpoint(results.store, HOST, variant) for variant in ("lite", "full")}
    draws = {results.store.checkpoint(c)[0]["lineage"]["conditioning"]["draws"] for c in shipped.values()}
    _require(len(draws) == 1, "the shipped conditioned checkpoints share their draws")
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
    _require(bool(pairs), "a conditioned run under each Stage 1 at the same weights")
    for one, two in pairs:
        first, second = results.rows(one), results.rows(two)
        _require(np.array_equal(first.benchmarks, second.benchmarks)
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
                gain, interval = _difference(base.benchmarks, other.utility[column], base.utility[name])
                gains.append((gain, interval))
                parts.append(f"`{name}` {stage} {_gain(gain, interval)}")
        cells.append(f"at {_pair(warm.settings)} (`{whole.run_id}` against `{warm.run_id}`): {_listing(parts)}")
    shares = [share for warm, _ in pairs for share in _target_thinking_shares(results, warm)]
    _require(not any(Interval.of(interval).above for _, interval in gains),
             "no whole-alphabet conditioned router is decidably above its warm-start twin")
    below = sum(Interval.of(interval).below for _, interval in gains)
    shipped = {variant: conditioned_checkpoint(results.store, HOST, variant) for variant in ("lite", "full")}
    arms = {STAGE_CONFIG_RENAMES.get(key, key): value
            for c in shipped.values() for key, value in results.store.checkpoint(c)[0]["lineage"]["config"].items()}
    _require(arms["warm_start_arms"] == PAPER_WARM_START_ARMS, "the shipped conditioned checkpoints use the warm start")
    return " ".join([
        "The cost-conditioned routers under the whole-alphabet Stage 1, minus the same routers under the paper's "
        "warm start, out of fold on the same queries (macro utility, paired 95% intervals): "
        + "; ".join(cells) + ".",
        f"No difference is above zero and {below} of {len(gains)} are decidably below it: at these weights the "
        f"Boltzmann target (tau 1) gives a thinking arm {_range(shares, 2).replace('+', '')} of its support form's "
        "mass, averaged per benchmark and support form: the thinking head learns from a target close to even, "
        "and what it learns costs more than the FEVER gain it finds.",
        f"The shipped conditioned checkpoints (`{shipped['lite']}`, `{shipped['full']}`, the Live query's default "
        "router) therefore keep the paper's warm start: their thinking heads are uniform, and the Live query, "
        "`forge ask --route` and the Action map name each cot arm an untrained twin of its NoThink arm, not a tie."])


def calibrate_budget(results: Results) -> str:
    """`forge calibrate --budget-tokens 200 --json`, stored: the weights, what they realize out of fold."""
    report = _stored("calibrate_budget_200")
    settings = (report["variant"], report["ratio"], len(report["folds"]), report["accounting"])
    _require(settings == ("lite", 2, 5, "deploy"),
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


# ---------------------------------------------------------------- grounding (docs/results-rewards-grounding.md)

def grounding_evaluator(results: Results) -> str:
    """The support evaluator the Cached report names, and its coverage."""
    report = results.cached["deploy"]
    coverage = {row["support_coverage"] for name, row in report["policies"].items()}
    _require(len(coverage) == 1, "every policy has the same support coverage")
    return (f"reported `support_evaluator` \"{report['support_evaluator']}\", coverage {next(iter(coverage)):.1f} "
            "for every policy")


def _grounding_table(results: Results, metric: str, value: Callable[[dict], dict[str, float]],
                     total: Callable[[dict], str]) -> str:
    policies = results.cached["deploy"]["policies"]
    benchmarks = list(value(policies["always_raw"]))
    lines = [f"| {metric} | " + " | ".join(benchmarks) + " | macro |", "|---|" + "---|" * (len(benchmarks) + 1)]
    for name in GROUNDED:
        row = policies[name]
        label = f"{name} (descriptive)" if name == ORACLE else name
        lines.append(f"| {label} | " + " | ".join(f"{value(row)[b]:.3f}" for b in benchmarks) + f" | {total(row)} |")
    return "\n".join(lines)


def grounding_f1(results: Results) -> str:
    """Per grounded policy and benchmark: F1 on the test split."""
    return _grounding_table(results, "F1", lambda row: {b: v["f1"] for b, v in row["per_benchmark"].items()},
                            lambda row: f"{row['macro_f1']:.3f}")


def grounding_recall(results: Results) -> str:
    """Per grounded policy and benchmark: gold evidence recall of the chosen arm."""
    return _grounding_table(results, "gold_recall", lambda row: row["gold_recall_per_benchmark"],
                            lambda row: f"{row['gold_recall']:.3f}")


def _rate_table(results: Results, rate: str) -> str:
    return _grounding_table(results, rate, lambda row: {b: v[rate] for b, v in row["support_per_benchmark"].items()},
                            lambda row: f"{row[rate]:.3f} [{row[f'ci_{rate}'][0]:.3f}, {row[f'ci_{rate}'][1]:.3f}]")


def grounding_support(results: Results) -> str:
    """Per grounded policy and benchmark: the share of answers judged SUPPORTED."""
    return _rate_table(results, "support_rate")


def grounding_unsupported(results: Results) -> str:
    """Per grounded policy and benchmark: the share of answers judged CONTRADICTED."""
    return _rate_table(results, "unsupported_rate")


def grounding_reading(results: Results) -> str:
    """Router minus Always-Raw in gold recall and in support rate, with paired intervals."""
    policies = results.cached["deploy"]["policies"]
    names = GROUNDED_ROUTERS

    def differences(metric: str) -> str:
        return ", ".join(f"{label} {_gain(*results.grounding[name][metric])}" for name, label in names.items())

    recall = {name: results.grounding[name]["gold_recall"][1] for name in names}
    support = [policies[name]["support_rate"] for name in GROUNDED if name not in ("always_direct", ORACLE)]
    verdict = ("below it decidably" if all(Interval.of(ci).below for ci in recall.values()) else
               "not decidably different from it" if not any(Interval.of(ci).decided for ci in recall.values()) else
               "decidably below it only for "
               + _listing([names[n] for n, ci in recall.items() if Interval.of(ci).below]))
    _require(not any(Interval.of(results.grounding[n]["support_rate"][1]).decided for n in names),
             "no router's support rate is decidably different from Always-Raw's")
    return (f"Gold evidence recall, router minus Always-Raw (paired 95% intervals over the annotated queries): "
            f"{differences('gold_recall')}; the routers' recall is {verdict} (Lite sends more 2WikiMultihopQA and "
            f"MuSiQue queries to Summary or Direct). Support does not separate them: policies with evidence sit "
            f"between {min(support):.3f} and {max(support):.3f} supported, and router minus Always-Raw is "
            f"{differences('support_rate')}")


# ---------------------------------------------------------------- reward audits (docs/results-rewards-grounding.md)

def _rho(rho: float | None) -> str:
    """A Spearman coefficient, "–" where it is undefined (a constant arm)."""
    return "–" if rho is None else f"{rho:.3f}"


def _match(match: dict) -> str:
    """A share with its interval: "0.654 [0.627, 0.678]"."""
    return f"{match['share']:.3f} [{match['ci'][0]:.3f}, {match['ci'][1]:.3f}]"


def consensus_arms(results: Results) -> str:
    """Per arm: Spearman of the consensus reward with gold F1, and both means."""
    lines = ["| arm | Spearman with gold F1 | mean consensus | mean gold F1 |", "|---|---|---|---|"]
    for arm, row in results.audit("consensus", AUDIT_WEIGHTS[0])["arms"].items():
        lines.append(f"| {arm} | {_rho(row['spearman'])} | {row['mean_proxy']:.3f} | {row['mean_gold_f1']:.3f} |")
    return "\n".join(lines)


def consensus_match(results: Results) -> str:
    """How often the consensus-best arm is a gold-best arm, by F1 and by utility."""
    audit = results.audit("consensus", AUDIT_WEIGHTS[0])
    return (f"on {_match(audit['best_arm_match']).replace(' [', ' of the queries [', 1)}, and by utility on "
            f"{_match(audit['best_utility_arm_match'])}")


def judge_arms(results: Results) -> str:
    """Per arm: Spearman of the judge reward with gold F1, both means, and the arm's gold utility at
    each audited weight pair."""
    audits = results.audits("judge")
    lines = ["| arm | Spearman with gold F1 | mean judge reward | mean gold F1 | gold utility at "
             + " | at ".join(f"{li:g}/{lo:g}" for li, lo in AUDIT_WEIGHTS) + " |", "|---|---|---|---|---|---|"]
    for arm, row in audits[0]["arms"].items():
        utilities = " | ".join(f"{audit['arms'][arm]['macro_gold_utility']:.3f}" for audit in audits)
        lines.append(f"| {arm} | {_rho(row['spearman'])} | {row['mean_proxy']:.3f} | {row['mean_gold_f1']:.3f} "
                     f"| {utilities} |")
    return "\n".join(lines)


def judge_match(results: Results) -> str:
    """How often the judge-best arm is a gold-best arm, by F1 and by utility at each weight pair."""
    audits = results.audits("judge")
    by_utility = " and ".join(f"{_match(audit['best_utility_arm_match'])} at {audit['lambda_in']:g}/"
                              f"{audit['lambda_out']:g}" for audit in audits)
    return (f"by F1 on {_match(audits[0]['best_arm_match']).replace(' [', ' of the queries [', 1)}, by utility on "
            f"{by_utility}")


def _stored_audit(reward: str, weights: tuple[float, float], results: Results) -> dict:
    """A stored `forge rewards audit --reward R [--lambda-in --lambda-out] --json` report; its per-arm
    part must be what the store gives today (`Results.audit`)."""
    stored = _stored(f"audit_{reward}_{weights[0]:g}_{weights[1]:g}")
    fresh = results.audit(reward, weights)
    _require(json.dumps(stored["arms"], sort_keys=True) == json.dumps(fresh["arms"], sort_keys=True)
             and stored["best_utility_arm_match"] == fresh["best_utility_arm_match"],
             f"the stored {reward} audit at {weights[0]:g}/{weights[1]:g} has the store's per-arm figures")
    return stored


def _regret_sentence(audit: dict, name: str) -> str:
    """A router trained on the proxy against the same trained on gold: utility, F1, `regret_vs_gold`."""
    row = audit["routers"][name]
    return (f"utility {row['proxy_trained']['macro_utility']:.3f} (gold F1 {row['proxy_trained']['macro_f1']:.3f}) "
            f"trained on {audit['reward']} against {row['gold_trained']['macro_utility']:.3f} "
            f"({row['gold_trained']['macro_f1']:.3f}) on gold, `regret_vs_gold` {row['regret_vs_gold']:+.3f} "
            f"{_ci(row['ci_regret_vs_gold'])}")


def consensus_regret(results: Results) -> str:
    """The stored consensus audits' Lite router trained on consensus against the same trained on gold."""
    audits = [_stored_audit("consensus", weights, results) for weights in AUDIT_WEIGHTS]
    return "; ".join(f"at {a['lambda_in']:g}/{a['lambda_out']:g} ({a['folds']} folds, {a['queries']:,} queries) "
                     f"the Lite router reaches {_regret_sentence(a, 'forge_lite')}: \"{a['verdict'].split(':')[0]}\""
                     for a in audits)


# ---------------------------------------------------------------- measured benchmarks

def embedder_agreement(results: Results) -> str:
    """`bench/embedder_agreement.py`: the two embeddings' cosines and the routers' agreement."""
    bench = _bench("embedder_agreement")
    cosines = [bench[key] for key in ("cosine_min", "cosine_p01", "cosine_mean")]
    cosine = (f"rounds to {cosines[0]:.6f} (minimum, 1st percentile and mean alike)" if len(set(cosines)) == 1 else
              "has minimum {:.6f}, 1st percentile {:.6f} and mean {:.6f}".format(*cosines))
    routers = list(bench["routers"].values())
    same = [router["same_decision"] for router in routers]
    agreement = f"{min(same):.0%}" if len(set(same)) == 1 else f"{min(same):.0%} to {max(same):.0%}"
    stages = _listing([f"Stage {stage}" for stage in sorted({router["stage"] for router in routers})])
    return (f"the cosine between the two embeddings of each of the {bench['questions']:,} stored questions {cosine}, "
            f"and the {len(routers)} Lite and Full routers trained on the reference embedder in that store ({stages}) "
            f"pick the same arm on {agreement} of the {routers[0]['test_queries']} test queries under either embedder")


def _load(bench: dict) -> str:
    """The machine's load average (1, 5 and 15 minutes) before and after a bench run."""
    before, after = (" / ".join(f"{value:.2f}" for value in bench[key])
                     for key in ("load_average_before", "load_average_after"))
    return f"load average {before} before, {after} after (1 / 5 / 15 min)"


def router_bench(results: Results) -> str:
    """`bench/router.py`: cold and warm routing, the warm pieces, the MLP and training times."""
    bench = _bench("router")
    rows = [("cold routing (top-1 passage vector dropped first)", bench["routing_cold_ms"]),
            ("warm routing (the same questions again)", bench["routing_warm_ms"]),
            *((f"warm: {piece.replace('_', ' ')}", times) for piece, times in bench["warm_pieces_ms"].items())]
    warm, cold = bench["routing_warm_ms"]["p50"], bench["routing_cold_ms"]["p50"]
    goal = bench["goals"]["routing_warm_over_embedding"]
    return "\n".join([
        f"`{bench['embedder']}`, {bench['threads']} thread, {bench['routing_queries']} test questions, a "
        f"{bench['variant'].title()} router trained on {bench['train_queries']:,} train queries; {_load(bench)}:", "",
        "| step | p50 ms | p95 ms |", "|---|---:|---:|",
        *(f"| {label} | {times['p50']:.2f} | {times['p95']:.2f} |" for label, times in rows), "",
        f"Warm routing p50 is {warm / cold:.2f} of cold in the same run. MLP alone: {bench['mlp_p50_us']:.0f} µs "
        f"(p50). Stage 1 took {bench['stage1_seconds']:.1f} s, Stage 2 {bench['stage2_seconds_per_1000_steps']:.1f} s "
        "per 1,000 steps.", "",
        f"As a ratio to the question embedding's own time in the same run ({bench['question_embedding_ms']['p50']:.2f} "
        f"ms p50): warm routing {bench['routing_warm_over_embedding']:.2f}x, cold "
        f"{bench['routing_cold_over_embedding']:.2f}x (p50 over p50; cold also embeds the top-1 passage). Goal (issue "
        f"#51): {_goal_verdict(goal, 'warm routing within', 'the embedding')}."])


def serve_bench(results: Results) -> str:
    """`bench/serve.py`: what `forge serve` adds to a request's host call, and requests per second."""
    bench = _bench("serve")
    return "\n".join([
        f"Router `{bench['router']}`, {bench['requests']} questions one after another, then the same with "
        f"{bench['in_flight']} in flight; {_load(bench)}:", "",
        "| overhead p50 | overhead p95 | requests/s at " + f"{bench['in_flight']} in flight |", "|---:|---:|---:|",
        f"| {bench['overhead_p50_ms']:.1f} ms | {bench['overhead_p95_ms']:.1f} ms | {bench['requests_per_s']:.1f} |"])


def _goal_verdict(goal: dict, what: str, reference: str) -> str:
    """A bench's goal of ratios (`bench/ratios.py`'s `goal`) in words: "first renders at most 3x the bare
    page: met", or "...: missed (Overview 3.98x, Pareto 4.37x)"."""
    verdict = "met" if goal["met"] else "missed (" + ", ".join(
        f"{name} {value:.2f}x" for name, value in goal["misses"].items()) + ")"
    return f"{what} {goal['at_most']:g}x {reference}: {verdict}"


def page_renders(results: Results) -> str:
    """`bench/page_renders.py`: each dashboard page's first render and the slider steps, in seconds and as
    ratios to the bare Streamlit page measured in the same run, the goals, the load average."""
    bench = _bench("page_renders")
    before, after = (" / ".join(f"{value:.2f}" for value in bench[key]) for key in ("loadavg_before", "loadavg_after"))
    over = bench["first_render_over_bare"]
    renders = ", ".join(f"{page} {seconds:.1f} s ({over[page]:.2f}x)"
                        for page, seconds in bench["first_render_s"].items())
    bare = list(bench["bare_first_render_s"].values())  # the bare page's render just before each page's
    steps = ", ".join(f"{seconds:.2f}" for seconds in bench["steps_s"])
    step_ratios = ", ".join(f"{value:.1f}" for value in bench["steps_over_bare_rerun"])
    bare_steps = ", ".join(f"{seconds:.3f}" for seconds in bench["bare_steps_s"])
    goals = bench["goals"]
    return (f"its first renders, each also as a ratio to the bare page's render timed just before it: {renders}; the "
            f"bare Streamlit page's (`bench/bare_page.py`) {bare[0]:.1f} s on its first visit (before the Overview), "
            f"{min(bare[1:]):.1f} to {max(bare[1:]):.1f} s on its revisits; the Pareto slider's "
            f"{len(bench['steps_s'])} steps {steps} s ({step_ratios}x the bare rerun), median "
            f"{bench['step_median_s']:.2f} s, {bench['step_median_over_bare_rerun']:.1f}x the bare rerun (the median "
            f"of the bare slider's {len(bench['bare_steps_s'])} steps {bare_steps} s: "
            f"{bench['bare_step_median_s']:.3f} s); goals (issue #51): "
            f"{_goal_verdict(goals['first_render_over_bare'], 'first renders at most', 'the bare page')}, "
            f"{_goal_verdict(goals['step_median_over_bare_rerun'], 'median step at most', 'the bare rerun')}; "
            f"load average {before} before, {after} after (1 / 5 / 15 min)")


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
    _require(not stored.empty, "forge evidence compare has stored results")
    lines = ["| benchmark | retriever | queries | gold recall@k | minus bm25 (paired) | Summary recall "
             "| Raw recall | Summary tokens in | Raw tokens in | latency p50 / p95 ms |", "|---" * 10 + "|"]
    for row in stored.itertuples():
        result = row.result
        lines.append(
            f"| {BENCHMARK_NAMES.get(row.benchmark, row.benchmark)} | {row.retriever} | {row.queries:,} "
            f"| {_mean_ci(result['recall_at_k'])} (k {row.k}) | {_ci(result['recall_vs_first_ci95'])} "
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
                f"{_listing(list(EVIDENCE_RETRIEVERS))} yet.")
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
                cell += f"; {_gain(measure['f1_minus_reference'], measure['f1_minus_reference_ci95'])}"
            cells.append(cell)
        lines.append(f"| `{arm}` | " + " | ".join(cells) + " |")
    lines.append("| Pareto frontier | " + " | ".join(", ".join(f"`{arm}`" for arm in r["pareto_frontier"])
                                                 for r in retrievers) + " |")
    return "\n".join(lines)


# ---------------------------------------------------------------- serving to a budget

def _replay(name: str) -> dict:
    """A stored `scripts/deploy_replay.py all --out` result, checked against its own counts."""
    replay = _stored(f"deploy_replay_{name}")
    _require(replay["requests"] == replay["answered"] + replay["refused"] == replay["log_records"],
             f"the {name} replay counts every request once, answered or refused, and logs each")
    return replay


def _replay_arms(replay: dict) -> str:
    arms = replay["arms_last_half"]
    return ", ".join(f"{arm} {arms.get(arm, 0)}" for arm in ("direct:no_think", "summary:no_think", "raw:no_think"))


def deploy_replay(results: Results) -> str:
    """The two stored budget replays of the demo's default conditioned router: evidence from the
    union of the replay's corpora (the target held), and from one benchmark's corpus (out of reach)."""
    union, single = _replay("union"), _replay("musique")
    _require(union["router"] == single["router"], "both replays serve the same router")
    _require(abs(union["relative_error_last_half"]) <= 0.05 and union["refused"] == 0,
             "with the union's evidence the replay holds the target within 5% and refuses nothing")
    _require(single["relative_error_last_half"] < -0.05, "with one corpus the replay stays below the target")
    return " ".join([
        f"On the demo store's default conditioned Lite router (`{union['router']}`), a {union['requests']:,}-request "
        f"replay (`scripts/deploy_replay.py all`, the counting double as host) at the target halfway between "
        f"Always-Direct's and Always-Raw's cost ({union['direct_tokens']:.1f} and {union['raw_tokens']:.1f} tokens: "
        f"{union['target']:.1f}), with evidence from the union of the {_listing(union['corpus'])} corpora, realized "
        f"{union['realized_mean_last_half']:.1f} tokens a request over the last {union['requests'] // 2} "
        f"({union['relative_error_last_half']:+.1%}); {union['refused']} refused, "
        f"{union['log_records_per_request']:g} log record a request; arms after the shift: {_replay_arms(union)}.",
        f"Served from the {_listing(single['corpus'])} corpus alone, the same replay (target "
        f"{single['target']:.1f}) realized {single['realized_mean_last_half']:.1f} "
        f"({single['relative_error_last_half']:+.1%}; arms after the shift: {_replay_arms(single)}): the questions "
        "of the other benchmarks find no passage of theirs in it, and with retrieval features that say so the "
        f"router answers {single['arms_last_half'].get('direct:no_think', 0)} of the last "
        f"{single['requests'] // 2} requests Direct: that budget is out of its reach."])


# ---------------------------------------------------------------- the documents

REGIONS: dict[str, Callable[[Results], str]] = {
    "demo-store": demo_store, "arms-all": arms_all, "arms-test": arms_test, "oracle-headroom": oracle_headroom,
    "cached-table": cached_table, "cached-reading": cached_reading,
    "crossfit-runs": crossfit_runs, "crossfit-tables": crossfit_tables, "seed-runs": seed_runs,
    "seeds-table": seeds_table, "answer-view": answer_view, "full-router-reading": full_router_reading,
    "paper-weights-reading": paper_weights_reading, "costly-weights-reading": costly_weights_reading,
    "floor-reading": floor_reading, "oracle-set-table": oracle_set_table,
    "oracle-set-reading": oracle_set_reading, "stage2-table": stage2_table,
    "stage2-reading": stage2_reading, "default-stage1-runs": default_stage1_runs,
    "six-arm-runs": six_arm_runs, "six-arm-table": six_arm_table, "six-arm-reading": six_arm_reading,
    "fresh-run": fresh_run, "fresh-timing": fresh_timing, "fresh-table": fresh_table, "fresh-counts": fresh_counts,
    "fresh-differences": fresh_differences,
    "transfer-table": transfer_table, "transfer-arm-mix": transfer_arm_mix, "transfer-lite": transfer_lite,
    "small-target-router": small_target_router, "transfer-stored-runs": transfer_stored_runs,
    "transfer-stored-table": transfer_stored_table, "transfer-stored-lite": transfer_stored_lite,
    "transfer-full-reading": transfer_full_reading,
    "calibrate-budget": calibrate_budget, "consensus-regret": consensus_regret,
    "conditioned-settings": conditioned_settings, "conditioned-table": conditioned_table,
    "conditioned-reading": conditioned_reading, "stage1-recipe-reading": stage1_recipe_reading,
    "deploy-replay": deploy_replay,
    "grounding-evaluator": grounding_evaluator, "grounding-f1": grounding_f1, "grounding-recall": grounding_recall,
    "grounding-support": grounding_support, "grounding-unsupported": grounding_unsupported,
    "grounding-reading": grounding_reading,
    "consensus-arms": consensus_arms, "consensus-match": consensus_match,
    "judge-arms": judge_arms, "judge-match": judge_match,
    "embedder-agreement": embedder_agreement, "router-bench": router_bench, "serve-bench": serve_bench,
    "page-renders": page_renders,
    "evidence-compare": evidence_compare_table, "evidence-arms": evidence_arms_table,
}


def regenerate(text: str, results: Results) -> str:
    """The text with every generated region rewritten: a block region keeps its markers' lines and
    indentation, a fragment stays inline."""
    def replace(match: re.Match) -> str:
        name = match["name"]
        if name not in REGIONS:
            raise SystemExit(f"unknown generated region '{name}' (known: {', '.join(REGIONS)})")
        body = REGIONS[name](results)
        if not match["body"].startswith("\n"):
            return f"<!-- generated:{name} -->{body}<!-- /generated:{name} -->"
        indent = match.string[:match.start()].rsplit("\n", 1)[-1]
        lines = "\n".join(indent + line if line else "" for line in body.split("\n"))
        return f"<!-- generated:{name} -->\n{lines}\n{indent}<!-- /generated:{name} -->"
    return REGION.sub(replace, text)


def check_regions(texts: Sequence[str]) -> None:
    """Refuse a region the documents lost (its text would go unchecked)."""
    missing = set(REGIONS) - {match["name"] for text in texts for match in REGION.finditer(text)}
    if missing:
        raise SystemExit(f"no region in {', '.join(p.name for p in DOCUMENTS)} for: {', '.join(sorted(missing))}")


def documents_from_store() -> dict[Path, tuple[str, str]]:
    """Each document's committed text and its text with every region generated from the store
    (FORGE_STORE) and the committed outputs."""
    if not config.store_path().exists():
        raise SystemExit(f"no store at {config.store_path()}: `forge data import && forge store load-demo` first")
    texts = {path: path.read_text() for path in DOCUMENTS}
    check_regions(list(texts.values()))
    results = Results(Store(config.store_path()), config.cache_dir() / "crossfit")
    results.start_reports(results.select(2, split_seed=None) + results.select(2, accounting="answer"))
    try:
        return {path: (old, regenerate(old, results)) for path, old in texts.items()}
    finally:
        results.close()


def difference(path: Path, committed: str, generated: str) -> str:
    """A unified diff of a document's committed text against the generated one ("" when equal)."""
    return "".join(difflib.unified_diff(
        committed.splitlines(keepends=True), generated.splitlines(keepends=True),
        f"{path.relative_to(ROOT)} (committed)", f"{path.relative_to(ROOT)} (from the store)"))


def main(argv: Sequence[str] | None = None) -> int:
    """Rewrite the generated regions (or, with --check, report how they differ): 0, or 1 on a difference."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 with a diff when a document differs")
    check = parser.parse_args(argv).check
    differing = {path: texts for path, texts in documents_from_store().items() if texts[0] != texts[1]}
    for path, (committed, generated) in differing.items():
        if check:
            sys.stdout.write(difference(path, committed, generated))
        else:
            path.write_text(generated)
    return 1 if check and differing else 0


if __name__ == "__main__":
    sys.exit(main())
