"""The Pareto page's mix of fixed arms: the hull the page draws beside the frontier, and each
policy's point against it, from the points `pareto_frame` gives (`on_hull`, `hull_f1`, `hull_gap`,
`hull_gap_low`, `hull_gap_high`; `forge_core.policies.mix_hull` computes them).

The hull is the upper convex hull of the fixed arms on (tokens, F1), from the cheapest arm to the
arm of highest F1: every point on it is a mix that sends each query to one of two arms at random.
The frontier is the staircase of the policies' own points. A policy's gap is its F1 minus the best
mix's at its own tokens, with the paired 95% interval (the mix's outcome on each query is its two
arms' in its proportions, so the pairing is exact).
"""

from __future__ import annotations

import pandas as pd

from forge_core.policies.kinds import ORACLE_KIND
from forge_core.statistics import Interval

HULL_NAME = "mix of fixed arms (hull)"  # the hull's name in charts and captions
BELOW_RANGE = "below the cheapest arm"  # a point spending fewer tokens than any mix: no gap
HULL_VERDICTS = {"above": "above the mix", "below": "below the mix",
                 "not decidably different": "not decidably different from the mix"}
HULL_GAP_COLUMNS = ("name", "policy", "kind", "benchmark", "cost_k", "macro_f1", "hull_f1", "hull_gap", "hull_gap_low",
                    "hull_gap_high", "verdict")


def hull_lines(points: pd.DataFrame) -> pd.DataFrame:
    """The hull's vertices per benchmark facet, in order of cost: the points `on_hull` (fixed arms, or
    a merged point holding one; columns policy, benchmark, cost_k, macro_f1)."""
    vertices = points[points["on_hull"].fillna(False).astype(bool)]
    return vertices.sort_values(["benchmark", "cost_k"])[["policy", "benchmark", "cost_k", "macro_f1"]]


def hull_verdict(gap: float | None, low: float | None, high: float | None) -> str:
    """Where a point lies against the hull at its own tokens: above, below or not decidably
    different from the mix (its paired 95% interval), or below the cheapest arm (no mix)."""
    if gap is None or pd.isna(gap):
        return BELOW_RANGE
    return HULL_VERDICTS[Interval.of([low, high]).verdict]


def hull_gap_text(gap: float | None, low: float | None, high: float | None) -> str:
    """One line for a point's hover and table: "+0.012 F1 [-0.003, +0.027] vs the mix (not decidably
    different from the mix)", or "below the cheapest arm"."""
    verdict = hull_verdict(gap, low, high)
    if verdict == BELOW_RANGE:
        return f"no mix at its tokens ({BELOW_RANGE})"
    return f"{gap:+.3f} F1 [{low:+.3f}, {high:+.3f}] vs the mix at its tokens ({verdict})"


def hull_gap_frame(points: pd.DataFrame) -> pd.DataFrame:
    """Every policy's point but the oracle's (a reference, not a policy), named (`name` column,
    else the policy id), against the hull at its own tokens: the mix's F1 there, the gap with its
    paired 95% interval, and the verdict; highest gap first within each benchmark."""
    shown = points[points["kind"] != ORACLE_KIND].copy()
    if "name" not in shown.columns:
        shown["name"] = shown["policy"]
    shown["verdict"] = [hull_verdict(gap, low, high) for gap, low, high in
                        zip(shown["hull_gap"], shown["hull_gap_low"], shown["hull_gap_high"])]
    ordered = shown.sort_values(["benchmark", "hull_gap"], ascending=[True, False], na_position="last")
    return ordered[list(HULL_GAP_COLUMNS)].reset_index(drop=True)
