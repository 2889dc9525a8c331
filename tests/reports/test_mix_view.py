"""The Pareto page's view of the mix of fixed arms (exact numbers): the hull's vertices per facet in
order of cost, each point's verdict against the hull, and the table of gaps."""

from __future__ import annotations

import pandas as pd

from forge_core.reports.mix_view import BELOW_RANGE, hull_gap_frame, hull_gap_text, hull_lines, hull_verdict

POINTS = pd.DataFrame([
    # policy, kind, benchmark, cost_k, macro_f1, on_hull, hull_f1, hull_gap, hull_gap_low, hull_gap_high
    ("always_raw", "fixed arm", "all", 0.40, 0.60, True, 0.60, 0.0, 0.0, 0.0),
    ("always_direct", "fixed arm", "all", 0.05, 0.20, True, 0.20, 0.0, 0.0, 0.0),
    ("always_direct_cot", "fixed arm", "all", 0.30, 0.30, False, 0.50, -0.20, -0.25, -0.15),
    ("router", "router", "all", 0.20, 0.45, False, 0.40, 0.05, 0.01, 0.09),
    ("cheap", "baseline", "all", 0.01, 0.10, False, None, None, None, None),
    ("oracle", "oracle", "all", 0.10, 0.90, False, 0.20, 0.70, 0.60, 0.80),
    ("always_raw", "fixed arm", "popqa", 0.50, 0.70, True, 0.70, 0.0, 0.0, 0.0),
], columns=["policy", "kind", "benchmark", "cost_k", "macro_f1", "on_hull", "hull_f1", "hull_gap", "hull_gap_low",
            "hull_gap_high"])


def test_the_hull_is_its_vertices_in_order_of_cost_per_facet() -> None:
    lines = hull_lines(POINTS)
    assert list(zip(lines["benchmark"], lines["policy"])) == [
        ("all", "always_direct"), ("all", "always_raw"), ("popqa", "always_raw")]  # the arm below it left out


def test_each_point_says_where_it_lies_against_the_mix() -> None:
    assert hull_verdict(0.05, 0.01, 0.09) == "above the mix"
    assert hull_verdict(-0.2, -0.25, -0.15) == "below the mix"
    assert hull_verdict(0.0, 0.0, 0.0) == "not decidably different from the mix"
    assert hull_verdict(None, None, None) == BELOW_RANGE and hull_verdict(float("nan"), None, None) == BELOW_RANGE
    assert hull_gap_text(0.05, 0.01, 0.09) == "+0.050 F1 [+0.010, +0.090] vs the mix at its tokens (above the mix)"


def test_the_table_lists_every_policy_but_the_oracle_highest_gap_first() -> None:
    table = hull_gap_frame(POINTS)
    overall = table[table["benchmark"] == "all"]
    assert list(overall["name"]) == ["router", "always_raw", "always_direct", "always_direct_cot", "cheap"]
    assert list(overall["verdict"]) == ["above the mix", "not decidably different from the mix",
                                        "not decidably different from the mix", "below the mix", BELOW_RANGE]
    assert "oracle" not in set(table["policy"])
