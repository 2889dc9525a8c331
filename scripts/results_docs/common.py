"""What the generators of every document share: the constants, the formatting of figures and
intervals, the committed outputs (bench results, stored reports) and `Results`, the store's runs
read once."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from forge_core.evaluation.audit_request import RewardAuditRequest
from forge_core.evaluation.cached import CachedRequest, run_cached
from forge_core.evaluation.crossfit import cached_crossfit_report, seed_key, seed_spread
from forge_core.evaluation.fresh_online import (
    first_rows_per_benchmark,
    fresh_policies,
    fresh_report,
    fresh_run_id,
    policy_checkpoints,
)
from forge_core.evaluation.proxy_audit import run_reward_audit
from forge_core.evaluation.settings import EvaluationSettings
from forge_core.evaluation.setup import EvaluationSetup, evaluation_setup
from forge_core.evaluation.transfer import TransferRequest, run_transfer
from forge_core.hosts.registry import get_host_config
from forge_core.policies.grounding import gold_recall_matrix
from forge_core.policies.outcomes import PolicyOutcome, policy_outcomes
from forge_core.policies.registry import ConditionedRouter, TrainedRouter, variants
from forge_core.policies.support_rates import support_verdicts
from forge_core.reports.tables import ORACLE, policy_summary, store_coverage
from forge_core.rewards.support_verdict import SUPPORT_SCORES, SUPPORTED
from forge_core.routing.outcome_table import OutcomeTable, load_outcome_table
from forge_core.routing.utility import CostWeights
from forge_core.statistics import Interval, macro, paired_bootstrap_ci
from forge_core.store import Store

ROOT = Path(__file__).resolve().parents[2]  # the repository
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


# ---------------------------------------------------------------- formatting

def ci_text(interval: Sequence[float] | None) -> str:
    """"[-0.012, +0.034]", or "" for no interval."""
    if interval is None:
        return ""
    low, high = interval
    return f"[{low:+.3f}, {high:+.3f}]"


def gain_text(gain: float, interval: Sequence[float]) -> str:
    """"+0.010 [-0.007, +0.026]"."""
    return f"{gain:+.3f} {ci_text(interval)}"


def pair_text(report: dict) -> str:
    """A report's (or run settings') cost weights: "0.1 / 0.2"."""
    return f"{report['lambda_in']:g} / {report['lambda_out']:g}"


def weights_text(report: dict) -> str:
    """"λ 0.1 / 0.2"."""
    return f"λ {pair_text(report)}"


def calls_text(calls: float) -> str:
    """5.00 as "5", 4.96 as "4.96"."""
    return f"{calls:.2f}".rstrip("0").rstrip(".")


def range_text(values: Sequence[float], digits: int = 3, unit: str = "") -> str:
    """"-0.047 to -0.039" (a single value once)."""
    low, high = (f"{value:+.{digits}f}{unit}" for value in (min(values), max(values)))
    return low if low == high else f"{low} to {high}"


def listing(items: Sequence[str]) -> str:
    """"a", "a and b", "a, b and c"."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def ids_text(ids: Sequence[str]) -> str:
    """Run ids as inline code, comma-separated."""
    return ", ".join(f"`{run_id}`" for run_id in ids)


def require(holds: bool, claim: str) -> None:
    """Stop when the store no longer bears out a sentence's wording (the sentence must be rewritten)."""
    if not holds:
        raise SystemExit(f"the store no longer bears out: {claim}")


def difference_with_ci(benchmarks: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[float, Interval]:
    """macro(a) - macro(b) and its paired bootstrap 95% interval."""
    return macro(a, benchmarks) - macro(b, benchmarks), paired_bootstrap_ci(a, b, benchmarks)


# ---------------------------------------------------------------- committed outputs

def bench_result(name: str) -> dict:
    """The JSON line bench/NAME.py printed last, committed as bench/results/NAME.json."""
    return json.loads((BENCH_RESULTS / f"{name}.json").read_text())


def stored_report(name: str) -> dict:
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
                gain, interval = difference_with_ci(rows.benchmarks, rows.utility[name], rows.utility[f"{name}_stage1"])
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
        live = fresh_policies(setup.policies, None)
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
            return difference_with_ci(benchmarks[known], ours[known], raw[known])

        return {name: {"gold_recall": chosen_difference(recall, name),
                       "support_rate": chosen_difference(supported, name)} for name in GROUNDED_ROUTERS}


def load_text(bench: dict) -> str:
    """The machine's load average (1, 5 and 15 minutes) before and after a bench run."""
    before, after = (" / ".join(f"{value:.2f}" for value in bench[key])
                     for key in ("load_average_before", "load_average_after"))
    return f"load average {before} before, {after} after (1 / 5 / 15 min)"


def goal_verdict(goal: dict, what: str, reference: str) -> str:
    """A bench's goal of ratios (`bench/ratios.py`'s `goal`) in words: "first renders at most 3x the bare
    page: met", or "...: missed (Overview 3.98x, Pareto 4.37x)"."""
    verdict = "met" if goal["met"] else "missed (" + ", ".join(
        f"{name} {value:.2f}x" for name, value in goal["misses"].items()) + ")"
    return f"{what} {goal['at_most']:g}x {reference}: {verdict}"
