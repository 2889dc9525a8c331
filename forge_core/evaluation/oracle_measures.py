"""What a policy's out-of-fold decisions say against the oracle, in ways no tie can decide.

The oracle is a set (`forge_core.routing.utility.oracle_sets`): every arm within 1e-9 of the
query's best utility. From the fixed arms' stored decisions (one per arm, so their utilities are
the query's utility row) each policy gets:

- `regret`: the mean of the oracle's utility minus the policy's (a probing router also pays its
  probes), macro over benchmarks, with a 95% paired-bootstrap interval;
- `oracle_agreement`: the share of queries whose chosen arm is in the oracle set;
- `cot_share`: per benchmark, the share of queries sent to a thinking arm (any mode but no_think);
- for a router with a Stage-1 parent (`<router>_stage1`), `stage2_minus_stage1`: its macro utility
  minus the parent's with the paired interval;
- for a router whose margins were stored (runs since schema margins), `reliability`: its margin
  deciles against the realized utility difference of the chosen arm and the runner-up.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from forge_core.routing.confidence import reliability_table
from forge_core.routing.utility import oracle_sets
from forge_core.statistics import macro, paired_bootstrap_ci

NO_THINK = "no_think"
STAGE1_SUFFIX = "_stage1"  # a Stage-2 router's parent is stored as `<router>_stage1`


def is_thinking_arm(arm: str) -> bool:
    """Whether an arm name (`support:thinking`) thinks at all (any mode but no_think)."""
    return arm.split(":", 1)[-1] != NO_THINK


def utility_matrix(per_policy: dict[str, pd.DataFrame], fixed: list[str], column: str) -> tuple[np.ndarray, list[str]]:
    """[N, K] utility of every fixed arm per query (rows in the frames' common order) and the arm names."""
    arms = [per_policy[name]["arm"].iloc[0] for name in fixed]
    return np.column_stack([per_policy[name][column].to_numpy() for name in fixed]), arms


def oracle_measures(frame: pd.DataFrame, utility: np.ndarray, arms: list[str], column: str,
                    benchmarks: np.ndarray) -> dict:
    """Regret (mean and 95% interval), tie-aware oracle agreement and per-benchmark cot share of
    one policy's decisions (`frame`, rows in the order of `utility`'s rows)."""
    chosen = frame["arm"].to_numpy()
    index = {arm: a for a, arm in enumerate(arms)}
    in_set = oracle_sets(utility)
    agrees = np.array([in_set[row, index[arm]] if arm in index else False for row, arm in enumerate(chosen)])
    losses = utility.max(axis=1) - frame[column].to_numpy()
    thinking = np.array([is_thinking_arm(arm) for arm in chosen], dtype=np.float64)
    return {
        "regret": {"mean": macro(losses, benchmarks),
                   "ci": list(paired_bootstrap_ci(losses, np.zeros_like(losses), benchmarks))},
        "oracle_agreement": macro(agrees.astype(np.float64), benchmarks),
        "cot_share": {str(b): float(thinking[benchmarks == b].mean()) for b in np.unique(benchmarks)},
    }


def stage2_minus_stage1(per_policy: dict[str, pd.DataFrame], column: str, benchmarks: np.ndarray) -> dict:
    """Per router stored beside its Stage-1 parent: macro utility difference and its paired 95% interval."""
    differences = {}
    for name in per_policy:
        parent = f"{name}{STAGE1_SUFFIX}"
        if parent not in per_policy:
            continue
        child, base = per_policy[name][column].to_numpy(), per_policy[parent][column].to_numpy()
        differences[name] = {"difference": macro(child, benchmarks) - macro(base, benchmarks),
                             "ci": list(paired_bootstrap_ci(child, base, benchmarks))}
    return differences


def margin_reliability(frame: pd.DataFrame, utility: np.ndarray, arms: list[str]) -> list[dict] | None:
    """A router's reliability table (`reliability_table` rows) from its stored margins and runner-up
    arms, the realized difference read off the fixed arms' utilities (`utility`, rows in the frame's
    order); None when the policy stored no margins (not a router, or a run stored before margins)."""
    if "margin" not in frame or "runner_up" not in frame:
        return None
    stored = frame["margin"].notna().to_numpy() & frame["runner_up"].notna().to_numpy()
    if not stored.any():
        return None
    index = {arm: a for a, arm in enumerate(arms)}
    rows = np.flatnonzero(stored)
    chosen = np.array([index[arm] for arm in frame["arm"].to_numpy()[rows]])
    runner_up = np.array([index[arm] for arm in frame["runner_up"].to_numpy()[rows]])
    realized = utility[rows, chosen] - utility[rows, runner_up]
    table = reliability_table(frame["margin"].to_numpy(dtype=np.float64)[rows], realized)
    return table.to_dict(orient="records")
