"""What the dashboard's Overview and Pareto pages report: store coverage, per-arm quality and cost,
the fixed arms against the per-query utility oracle, and every policy's cost/quality point with
the Pareto frontier under chosen cost weights.

Quality and cost are computed on an `OutcomeTable` (complete queries only), so every arm and the
oracle are scored on the same queries. Cost is the mean of tokens in + out per query. The oracle
takes, per query, the arm of highest utility `U = F1 - lambda_in * c_in - lambda_out * c_out`
(`forge_core.routing.utility`), with token costs normalized by their maxima over the host's complete
train queries; it is descriptive only (it sees the answers' scores).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from forge_core.arms import alphabet
from forge_core.errors import InvalidInput, MissingStep
from forge_core.hosts.registry import BUILTIN_HOSTS, get_host_config
from forge_core.policies.kinds import ORACLE_KIND
from forge_core.reports.decision import decidable_policies
from forge_core.routing.confidence import RELIABILITY_COLUMNS
from forge_core.routing.outcome_table import OutcomeTable, load_outcome_table
from forge_core.routing.utility import CostNormalizer, CostWeights, oracle_actions, oracle_sets
from forge_core.statistics import macro as macro_mean
from forge_core.statistics import pareto_frontier
from forge_core.store import Store

if TYPE_CHECKING:  # scoring policies imports their models (sklearn, torch): only `pareto_report` needs it
    from forge_core.evaluation.cached import CachedRequest
    from forge_core.policies.context import EvalContext

MACRO = "macro"  # benchmark label of the unweighted mean over benchmarks
ORACLE = "oracle"  # policy name of the per-query utility oracle
SUMMARY_COLUMNS = ("policy", "kind", "benchmark", "queries", "f1", "tokens_in", "tokens_out", "tokens")


def reasoning_summary(store: Store, host: str, retriever_hash: str = "") -> pd.DataFrame:
    """Per arm, in action order, over the host's answered outcomes under one retriever configuration
    (default: the BM25 evidence): outcomes, mean output tokens, mean reasoning tokens (inside the
    output tokens: accounting charges both), the reasoning share of the output, and how reasoning
    was counted."""
    frame = store.reasoning_by_arm(host, retriever_hash)
    order = {arm.name: index for index, arm in enumerate(alphabet(12))}
    frame = frame.assign(position=frame["arm"].map(order)).sort_values("position").drop(columns="position")
    share = frame["tokens_reasoning"] / frame["tokens_out"].where(frame["tokens_out"] > 0)
    return frame.assign(reasoning_share=share.fillna(0.0)).reset_index(drop=True)


def default_alphabet_size(store: Store, host: str) -> int:
    """K for a host: 12 on hosts with a reasoning budget, else 6 (also for unknown hosts)."""
    known = host in BUILTIN_HOSTS or host in store.host_names()
    return get_host_config(store, host).alphabet_size if known else 6


def store_coverage(store: Store, split_seed: int = 0) -> dict[str, dict]:
    """Per host with outcomes: complete queries on its default alphabet (see `Store.coverage`)."""
    n_arms = {host: default_alphabet_size(store, host) for host in store.hosts_with_outcomes()}
    return store.coverage(n_arms, split_seed)


def coverage_frame(coverage: dict[str, dict]) -> pd.DataFrame:
    """`store_coverage` as one row per host and benchmark."""
    rows = [
        {"host": host, "arms": summary["arms"], "benchmark": benchmark,
         "complete queries": counts["complete"], "with probes": counts["with_probes"]}
        for host, summary in coverage.items()
        for benchmark, counts in summary["by_benchmark"].items()
    ]
    return pd.DataFrame(rows, columns=["host", "arms", "benchmark", "complete queries", "with probes"])


def oracle_choices(
    table: OutcomeTable,
    normalizer: CostNormalizer,
    weights: CostWeights = CostWeights(),
) -> np.ndarray:
    """[N] the action index of the utility-maximizing arm of every query (ties: lowest index)."""
    return oracle_actions(table.utility(normalizer, weights))


def policy_summary(
    table: OutcomeTable,
    normalizer: CostNormalizer | None = None,
    weights: CostWeights = CostWeights(),
) -> pd.DataFrame:
    """Mean F1 and token costs of every fixed arm and, given a cost normalizer, of the oracle:
    one row per policy and benchmark, plus `macro` rows (the unweighted mean over benchmarks).

    Columns: policy (arm name or "oracle"), kind ("fixed" or "oracle"), benchmark, queries,
    f1, tokens_in, tokens_out, tokens (in + out), all means per query.
    """
    names = list(table.arms)
    kinds = ["fixed"] * len(names)
    f1, tokens_in, tokens_out = table.f1, table.tokens_in, table.tokens_out
    if normalizer is not None:
        rows = np.arange(len(table))
        chosen = oracle_choices(table, normalizer, weights)
        f1 = np.column_stack([f1, f1[rows, chosen]])
        tokens_in = np.column_stack([tokens_in, tokens_in[rows, chosen]])
        tokens_out = np.column_stack([tokens_out, tokens_out[rows, chosen]])
        names.append(ORACLE)
        kinds.append(ORACLE_KIND)
    long = pd.DataFrame({
        "policy": np.tile(names, len(table)),
        "kind": np.tile(kinds, len(table)),
        "benchmark": np.repeat(table.benchmarks, len(names)),
        "f1": f1.ravel(),
        "tokens_in": tokens_in.ravel(),
        "tokens_out": tokens_out.ravel(),
    })
    per_benchmark = (long.groupby(["policy", "kind", "benchmark"], sort=False)
                     .agg(queries=("f1", "size"), f1=("f1", "mean"), tokens_in=("tokens_in", "mean"),
                          tokens_out=("tokens_out", "mean"))
                     .reset_index())
    macro = (per_benchmark.groupby(["policy", "kind"], sort=False)
             .agg(queries=("queries", "sum"), f1=("f1", "mean"), tokens_in=("tokens_in", "mean"),
                  tokens_out=("tokens_out", "mean"))
             .reset_index()
             .assign(benchmark=MACRO))
    summary = pd.concat([per_benchmark, macro], ignore_index=True)
    summary["tokens"] = summary["tokens_in"] + summary["tokens_out"]
    order = {name: index for index, name in enumerate(names)}
    summary = summary.assign(is_macro=summary["benchmark"] == MACRO, position=summary["policy"].map(order))
    summary = summary.sort_values(["is_macro", "benchmark", "position"])
    return summary[list(SUMMARY_COLUMNS)].reset_index(drop=True)


def oracle_gap_summary(
    table: OutcomeTable,
    normalizer: CostNormalizer,
    weights: CostWeights = CostWeights(),
) -> pd.DataFrame:
    """Per fixed arm (in action order), macro over benchmarks: mean regret (the query's best utility
    minus the arm's, so no tie can decide it) and oracle agreement (share of queries where the arm is
    one of the tied best, `oracle_sets`). Columns: policy, regret, oracle_agreement."""
    utility = table.utility(normalizer, weights)
    losses, in_set = utility.max(axis=1, keepdims=True) - utility, oracle_sets(utility)
    benchmarks = np.asarray(table.benchmarks)
    return pd.DataFrame({
        "policy": list(table.arms),
        "regret": [macro_mean(losses[:, a], benchmarks) for a in range(len(table.arms))],
        "oracle_agreement": [macro_mean(in_set[:, a].astype(np.float64), benchmarks) for a in range(len(table.arms))]})


# ---------------------------------------------------------------- Pareto page

PARETO_COLUMNS = ("policy", "kind", "benchmark", "cost_k", "tokens_in", "tokens_out", "macro_f1", "macro_utility",
                  "gold_recall", "support_rate", "support_coverage", "on_hull", "hull_f1", "hull_gap", "hull_gap_low",
                  "hull_gap_high", "on_frontier")


def require_train_and_dev(table: OutcomeTable) -> None:
    """Refuse, with the next step, a table without complete train or dev queries (baselines and
    routers are tuned on them)."""
    for split in ("train", "dev"):
        if not (table.splits == split).any():
            raise MissingStep(f"host '{table.host}' has no complete {split} queries on {len(table.arms)} arms: "
                             f"run `forge enumerate --host {table.host} --split {split}`")


def pareto_frame(points: dict) -> pd.DataFrame:
    """`evaluation.pareto_points` as one row per policy (and benchmark), with its kind and whether
    it is on the Pareto frontier (lowest cost for the highest macro F1) of the deployable policies
    of its benchmark facet (the oracle, which sees every arm's score, is a reference, never on it)."""

    frame = pd.DataFrame(points["points"], columns=list(PARETO_COLUMNS[:-1]))
    frame["on_frontier"] = False
    for _, facet in frame[frame["kind"] != ORACLE_KIND].groupby("benchmark", sort=False):
        frontier = pareto_frontier(list(zip(facet["cost_k"], facet["macro_f1"])))
        frame.loc[facet.index[frontier], "on_frontier"] = True
    return frame[list(PARETO_COLUMNS)]


def pareto_report(store: Store, request: CachedRequest, by_benchmark: bool = False,
                  base: EvalContext | None = None) -> pd.DataFrame:
    """The Pareto page's points, from the Cached protocol (`evaluation.pareto_points` of the
    request): fixed arms, baselines (re-tuned for its weights), the oracle and its checkpoints,
    with frontier flags (per benchmark when `by_benchmark`). A host without train and dev queries
    is refused; the features must be computed (`forge_core.routing.features.compute_features`).
    `base`: see `pareto_points`."""

    settings = request.settings
    require_train_and_dev(base.table if base is not None else load_outcome_table(store, settings.host,
                                                                                  settings.n_arms))
    from forge_core.evaluation.cached import pareto_points

    return pareto_frame(pareto_points(store, request, by_benchmark, base))


def pareto_highlights(frame: pd.DataFrame) -> dict:
    """Headline numbers of an overall `pareto_frame` (benchmark "all"): the oracle's utility, F1
    and cost, the best policy by utility other than the oracle, and the frontier's policies in
    order of cost."""
    overall = frame[frame["benchmark"] == "all"]
    oracle = overall[overall["policy"] == ORACLE]
    others = overall[overall["policy"] != ORACLE]
    best = others.loc[others["macro_utility"].idxmax()] if len(others) else None
    return {
        "oracle_utility": float(oracle["macro_utility"].iloc[0]) if len(oracle) else None,
        "oracle_f1": float(oracle["macro_f1"].iloc[0]) if len(oracle) else None,
        "oracle_cost_k": float(oracle["cost_k"].iloc[0]) if len(oracle) else None,
        "best_policy": None if best is None else str(best["policy"]),
        "best_utility": None if best is None else float(best["macro_utility"]),
        "frontier": overall[overall["on_frontier"]].sort_values("cost_k")["policy"].tolist(),
    }


# ---------------------------------------------------------------- cross-fitted results

CROSSFIT_COLUMNS = ("policy", "kind", "cost_k", "macro_f1", "f1_low", "f1_high", "macro_utility", "gain",
                    "gain_low", "gain_high", "decidable", "on_frontier")
POINT_DECIMALS = 9  # points equal to this many decimals are one point (`merge_identical_points`)
GAIN_POLICIES = ("forge_full", "forge_lite", "ridge_utility")  # the routers and their linear floor


def crossfit_frame(report: dict) -> pd.DataFrame:
    """One row per policy of a crossfit report: cost, macro F1 with its 95% interval, utility and
    its gain over the best fixed arm with the paired 95% interval, whether that gain is decidable
    (interval above zero, `decision.decidable_policies`), and whether it is on the Pareto frontier
    of the deployable policies (the oracle is a reference, never on it)."""

    best = report["policies"][report["best_fixed_policy"]]["macro_utility"]
    decidable = decidable_policies(report)
    rows = [{"policy": name, "kind": row["kind"], "cost_k": row["cost_k"], "macro_f1": row["macro_f1"],
             "f1_low": row["ci_f1"][0], "f1_high": row["ci_f1"][1], "macro_utility": row["macro_utility"],
             "gain": row["macro_utility"] - best, "gain_low": row["ci_utility_vs_best_fixed"][0],
             "gain_high": row["ci_utility_vs_best_fixed"][1], "decidable": decidable[name], "on_frontier": False}
            for name, row in report["policies"].items()]
    frame = pd.DataFrame(rows, columns=list(CROSSFIT_COLUMNS))
    return _mark_deployable_frontier(frame)


def _mark_deployable_frontier(frame: pd.DataFrame) -> pd.DataFrame:
    """Set `on_frontier` on the rows of the Pareto frontier of deployable policies (the oracle is a
    reference, never on it) and return the frame."""
    deployable = frame[frame["policy"] != ORACLE]
    frontier = pareto_frontier(list(zip(deployable["cost_k"], deployable["macro_f1"])))
    frame.loc[deployable.index[frontier], "on_frontier"] = True
    return frame


GUARD_COLUMNS = ("policy", "fallback", "coverage", "deviations", "losing", "realized_risk", "alpha", "gain",
                 "gain_low", "gain_high")


def guard_frame(report: dict) -> pd.DataFrame:
    """One row per guarded router of a crossfit report (`evaluation.guard_measures`): its fallback
    arms, coverage (share of queries it left the fallback on), deviations and the losing ones, the
    realized risk against alpha, and its utility gain over the fallback with the paired 95% interval."""
    rows = [{"policy": name, "fallback": ", ".join(guard["fallback_arms"]), "coverage": guard["coverage"],
             "deviations": guard["deviations"], "losing": guard["losing_deviations"],
             "realized_risk": guard["realized_risk"], "alpha": guard["alpha"],
             "gain": guard["gain_vs_fallback"]["difference"], "gain_low": guard["gain_vs_fallback"]["ci"][0],
             "gain_high": guard["gain_vs_fallback"]["ci"][1]}
            for name, row in report["policies"].items() if (guard := row.get("guard")) is not None]
    return pd.DataFrame(rows, columns=list(GUARD_COLUMNS))


TRANSFER_COLUMNS = ("policy", "kind", "benchmark", "cost_k", "macro_f1", "macro_utility", "gain", "gain_low",
                    "gain_high", "on_frontier")


def transfer_frame(report: dict) -> pd.DataFrame:
    """One row per policy of a transfer report (benchmark "all"): cost, macro F1 and utility on the
    target, the utility gain over the target's own Lite router with its paired 95% interval, and
    whether it is on the target's Pareto frontier of deployable policies (the oracle is a
    reference, never on it)."""

    reference = report["policies"]["target_forge_lite"]["macro_utility"]
    rows = [{"policy": name, "kind": row["kind"], "benchmark": "all", "cost_k": row["cost_k"],
             "macro_f1": row["macro_f1"], "macro_utility": row["macro_utility"],
             "gain": row["macro_utility"] - reference, "gain_low": row["ci_utility_vs_target_router"][0],
             "gain_high": row["ci_utility_vs_target_router"][1], "on_frontier": False}
            for name, row in report["policies"].items()]
    frame = pd.DataFrame(rows, columns=list(TRANSFER_COLUMNS))
    return _mark_deployable_frontier(frame)


def calibration_frame(report: dict) -> pd.DataFrame:
    """A transfer report's calibration curves: per transferred router and K (0: zero-shot), the
    utility gain over the target's own Lite router with its paired 95% interval."""
    reference = report["policies"]["target_forge_lite"]["macro_utility"]
    rows = []
    for router, points in report["calibration"].items():
        for k, row in [(0, report["policies"][router]), *((point["k"], point) for point in points)]:
            low, high = row["ci_utility_vs_target_router"]
            rows.append({"router": router, "k": k, "gain": row["macro_utility"] - reference, "gain_low": low,
                         "gain_high": high})
    return pd.DataFrame(rows, columns=["router", "k", "gain", "gain_low", "gain_high"])


def arm_mix_frame(report: dict, policies: Sequence[str]) -> pd.DataFrame:
    """Per benchmark, each policy's arm mix on the target as text ("summary:no_think 60%, ..."),
    largest share first: where a transferred allocation departs from the target oracle's."""
    rows = []
    for benchmark, mixes in report["arm_mix"].items():
        row = {"benchmark": benchmark}
        for policy in policies:
            shares = sorted(mixes.get(policy, {}).items(), key=lambda item: -item[1])
            row[policy] = ", ".join(f"{arm} {share:.0%}" for arm, share in shares)
        rows.append(row)
    return pd.DataFrame(rows, columns=["benchmark", *policies])


def merge_identical_points(frame: pd.DataFrame) -> pd.DataFrame:
    """A Pareto or crossfit frame with the policies that share one point (same benchmark, cost, F1
    and utility: e.g. a baseline that always picks one arm and that fixed arm) merged into one row
    named "a = b", so no point hides under another. The row keeps the first policy's other values;
    column `policies` lists the merged policies (one for a point of its own)."""
    columns = [c for c in ("benchmark", "cost_k", "macro_f1", "macro_utility") if c in frame.columns]
    rounded = [frame[c].round(POINT_DECIMALS) if c != "benchmark" else frame[c] for c in columns]
    point = frame.groupby(rounded, sort=False, dropna=False).ngroup().to_numpy()  # numbered as first seen
    merged = frame[~pd.Series(point).duplicated().to_numpy()].copy()
    merged["policies"] = list(frame["policy"].groupby(point, sort=False).agg(tuple))
    merged["policy"] = [" = ".join(policies) for policies in merged["policies"]]
    for flag in ("on_frontier", "on_hull"):  # a merged point is on the frontier (the hull) when one of its policies is
        if flag in frame:
            merged[flag] = frame[flag].fillna(False).astype(bool).groupby(point, sort=False).any().to_numpy()
    return merged.reset_index(drop=True)


def routing_gain_frame(reports: Sequence[dict], policies: Sequence[str] = GAIN_POLICIES) -> pd.DataFrame:
    """Along the cost weights of the given crossfit reports (one stage, one accounting), each
    policy's utility gain with its paired 95% interval over two references: that weight's best
    fixed arm (with the share of the oracle's gain it recovers) and the linear floor
    `ridge_utility`; sorted by total weight."""
    rows = []
    for report in reports:
        best = report["policies"][report["best_fixed_policy"]]["macro_utility"]
        floor = report["policies"].get(report.get("floor_policy", ""), {}).get("macro_utility")
        oracle_gain = report["policies"][ORACLE]["macro_utility"] - best
        weights = {"weights": f"{report['lambda_in']:g} / {report['lambda_out']:g}",
                   "lambda_total": report["lambda_in"] + report["lambda_out"]}
        for name in policies:
            row = report["policies"].get(name)
            if row is None:
                continue
            gain = row["macro_utility"] - best
            rows.append({**weights, "policy": name, "reference": "best fixed arm", "against": report["best_fixed_arm"],
                         "gain": gain, "gain_low": row["ci_utility_vs_best_fixed"][0],
                         "gain_high": row["ci_utility_vs_best_fixed"][1],
                         "oracle_share": gain / oracle_gain if oracle_gain > 0 else np.nan})
            if "ci_utility_vs_floor" in row and floor is not None:
                rows.append({**weights, "policy": name, "reference": "ridge floor", "against": report["floor_policy"],
                             "gain": row["macro_utility"] - floor, "gain_low": row["ci_utility_vs_floor"][0],
                             "gain_high": row["ci_utility_vs_floor"][1], "oracle_share": np.nan})
    frame = pd.DataFrame(rows, columns=["weights", "lambda_total", "policy", "reference", "against", "gain",
                                        "gain_low", "gain_high", "oracle_share"])
    return frame.sort_values(["reference", "lambda_total", "policy"]).reset_index(drop=True)


def seed_spread_frame(spread: dict) -> pd.DataFrame:
    """`crossfit.seed_spread` as one row per policy: the gain over the best fixed arm at each split
    seed with its interval, the spread, and whether it is decidable (above zero at every seed),
    against the best fixed arm and against the ridge floor."""
    rows = []
    for name, row in spread["policies"].items():
        cells = {f"seed {seed}": f"{gain:+.3f} [{low:+.3f}, {high:+.3f}]"
                 for seed, gain, (low, high) in zip(spread["split_seeds"], row["gains"], row["intervals"])}
        rows.append({"policy": name, **cells, "spread": row["spread"], "decidable": row["decidable"],
                     "decidable vs floor": row["decidable_vs_floor"]})
    return pd.DataFrame(rows)


def crossfit_reliability_frame(report: dict) -> pd.DataFrame:
    """Every router's reliability table of a crossfit report, stacked: policy, then the margin bins
    (`routing.confidence.RELIABILITY_COLUMNS`); empty for a run stored before margins were (its
    `margins_stored` is false)."""
    frames = [pd.DataFrame(row["reliability"]).assign(policy=name)
              for name, row in report["policies"].items() if row.get("reliability")]
    if not frames:
        return pd.DataFrame(columns=["policy", *RELIABILITY_COLUMNS])
    return pd.concat(frames, ignore_index=True)[["policy", *RELIABILITY_COLUMNS]]


def crossfit_arms(store: Store, run_id: str, policy: str) -> pd.DataFrame:
    """A policy's out-of-fold arm per query in a stored crossfit run: benchmark, example_id, arm."""
    results = store.crossfit_results(run_id)
    chosen = results[results["policy"] == policy]
    if chosen.empty:
        raise InvalidInput(f"crossfit run '{run_id}' has no policy '{policy}'")
    return chosen[["benchmark", "example_id", "arm"]].reset_index(drop=True)


def reward_audit_table(audit: dict) -> pd.DataFrame:
    """The per-arm rows of a proxy-reward audit (`run_reward_audit`) as the Train
    page shows them."""
    return pd.DataFrame([{"arm": arm, "spearman with gold F1": row["spearman"], "mean proxy": row["mean_proxy"],
                          "mean gold F1": row["mean_gold_f1"],
                          "gold utility (always this arm)": row["macro_gold_utility"]}
                         for arm, row in audit["arms"].items()])
