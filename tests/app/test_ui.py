"""Unit tests of the dashboard's shared UI helpers that need no running page."""

from app import live_view


def test_a_shown_answer_names_the_inputs_changed_since() -> None:
    answered = {"question": "q", "benchmark": "musique", "host": "h", "router": "ckpt-a", "weights": (0.1, 0.2)}
    assert live_view.changed_inputs(answered, dict(answered)) == ""
    moved = {**answered, "question": "q2", "weights": (0.3, 0.2)}
    assert live_view.changed_inputs(answered, moved) == "the question, the weights"


def test_the_crossfit_chart_keeps_its_axis_for_the_deployable_policies() -> None:
    import pandas as pd

    from app import charts

    frame = pd.DataFrame({
        "name": ["always_raw", "forge_lite", "oracle"], "policy": ["always_raw", "forge_lite", "oracle"],
        "kind": ["fixed arm", "router", "oracle"], "cost_k": [0.2, 0.3, 0.25], "macro_f1": [0.40, 0.42, 0.80],
        "f1_low": [0.38, 0.40, 0.78], "f1_high": [0.42, 0.44, 0.82], "on_frontier": [True, True, False],
        "gain": [0.0, 0.01, 0.1], "gain_low": [0.0, 0.0, 0.0], "gain_high": [0.0, 0.02, 0.2],
        "decidable": [False, True, False], "macro_utility": [0.1, 0.1, 0.2]})
    figure = charts.crossfit_pareto(frame)
    low, high = figure.layout.yaxis.range
    assert low < 0.38 and 0.44 < high < 0.5  # the policies spread over the axis, not squeezed under the oracle
    assert [note.text for note in figure.layout.annotations] == ["oracle F1 0.800 ↑ (reference, above the axis)"]
    near = frame.assign(macro_f1=[0.40, 0.42, 0.43], f1_low=[0.38, 0.40, 0.42], f1_high=[0.42, 0.44, 0.44])
    assert charts.crossfit_pareto(near).layout.yaxis.range is None  # an oracle within reach stays on the axis


def test_the_crossfit_chart_draws_the_hull_beside_the_frontier_staircase() -> None:
    import pandas as pd

    from app import charts
    from forge_core.reports.mix_view import HULL_NAME

    frame = pd.DataFrame({
        "name": ["always_direct", "always_raw", "always_summary", "forge_lite", "oracle"],
        "policy": ["always_direct", "always_raw", "always_summary", "forge_lite", "oracle"],
        "kind": ["fixed arm", "fixed arm", "fixed arm", "router", "oracle"], "benchmark": ["macro"] * 5,
        "cost_k": [0.07, 0.37, 0.25, 0.2, 0.1], "macro_f1": [0.20, 0.37, 0.30, 0.33, 0.8],
        "f1_low": [0.18, 0.35, 0.28, 0.31, 0.78], "f1_high": [0.22, 0.39, 0.32, 0.35, 0.82],
        "on_frontier": [True, True, False, True, False], "on_hull": [True, True, False, False, False],
        "hull_gap": [0.0, 0.0, -0.07, 0.05, 0.6], "hull_gap_low": [0.0, 0.0, -0.09, 0.02, 0.58],
        "hull_gap_high": [0.0, 0.0, -0.05, 0.08, 0.62], "gain": [0.0] * 5, "gain_low": [0.0] * 5,
        "gain_high": [0.0] * 5, "decidable": [False] * 5, "macro_utility": [0.1] * 5})
    figure = charts.crossfit_pareto(frame)
    lines = {trace.name: trace for trace in figure.data if trace.mode == "lines"}
    assert list(lines[HULL_NAME].x) == [0.07, 0.37] and list(lines[HULL_NAME].y) == [0.20, 0.37]
    assert list(lines["frontier (deployable)"].x) == [0.07, 0.2, 0.37]
    assert lines["frontier (deployable)"].line.shape == "hv"  # a staircase, told apart from the hull's chords
    assert "+0.050 F1 [+0.020, +0.080] vs the mix" in str(figure.to_json())  # the router's gap in its hover
