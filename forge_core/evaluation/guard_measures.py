"""What a guarded router did out of fold (`forge_core.policies.guard`), from its stored rows: how
often it left its fallback arm (coverage), how often such a deviation lost utility against the
fallback on the same query (the realized risk, against the alpha it was fitted for), and its
utility gain over the fallback with the paired 95% interval.

A guard's stored `runner_up` is its fold's fallback arm (the best fixed arm on that fold's training
rows) and its `arm` what it answered with: a deviation is a row whose arm is not the fallback.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from forge_core.policies.guard import GUARD_SUFFIX
from forge_core.routing.guard import GUARD_ALPHA
from forge_core.statistics import macro, paired_bootstrap_ci


def is_guard(name: str) -> bool:
    """Whether a policy name is a guarded router's."""
    return name.endswith(GUARD_SUFFIX)


def guard_measures(frame: pd.DataFrame, utility: np.ndarray, arms: list[str], column: str,
                   benchmarks: np.ndarray) -> dict | None:
    """A guard's coverage (macro share of queries deviated), deviations and the losing ones, the
    realized risk (losing deviations over deviations; None without any) against `alpha`, the
    fallback arms of its folds, and `gain_vs_fallback`: its `column` utility minus the fallback
    arm's on each query (`utility`: the fixed arms' per query, in the frame's row order), macro,
    with the paired 95% interval. None for a frame without fallback arms (a run stored before)."""
    if "runner_up" not in frame or frame["runner_up"].isna().any():
        return None
    index = {arm: a for a, arm in enumerate(arms)}
    rows = np.arange(len(frame))
    chosen = np.array([index[arm] for arm in frame["arm"]])
    fallback = np.array([index[arm] for arm in frame["runner_up"]])
    deviated = chosen != fallback
    loses = deviated & (utility[rows, chosen] < utility[rows, fallback])
    fallback_utility = utility[rows, fallback]
    guarded = frame[column].to_numpy(dtype=np.float64)
    return {"alpha": GUARD_ALPHA, "fallback_arms": sorted(set(frame["runner_up"])),
            "coverage": macro(deviated.astype(np.float64), benchmarks), "deviations": int(deviated.sum()),
            "losing_deviations": int(loses.sum()),
            "realized_risk": float(loses.sum() / deviated.sum()) if deviated.any() else None,
            "gain_vs_fallback": {"difference": macro(guarded - fallback_utility, benchmarks),
                                 "ci": list(paired_bootstrap_ci(guarded, fallback_utility, benchmarks))}}


def guard_lines(report: dict) -> list[str]:
    """One line per guarded router of a crossfit report: coverage, realized risk against alpha and
    the utility gain over its fallback with the interval (`forge eval crossfit` prints them)."""
    lines = []
    for name, row in report["policies"].items():
        guard = row.get("guard")
        if guard is None:
            continue
        gain = guard["gain_vs_fallback"]
        lines.append(f"{name}: left its fallback ({', '.join(guard['fallback_arms'])}) on {guard['coverage']:.1%} of "
                     f"queries; {risk_text(guard)}; utility {gain['difference']:+.4f} "
                     f"[{gain['ci'][0]:+.4f}, {gain['ci'][1]:+.4f}] over the fallback")
    return lines


def risk_text(guard: dict) -> str:
    """A guard's losing deviations against alpha, in words: "42 of 570 deviations lost utility (7.4%
    against alpha 20%)", or "no deviation"."""
    if guard["realized_risk"] is None:
        return "no deviation"
    return (f"{guard['losing_deviations']} of {guard['deviations']} deviations lost utility "
            f"({guard['realized_risk']:.1%} against alpha {guard['alpha']:.0%})")
