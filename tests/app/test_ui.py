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


def test_the_test_split_chart_keeps_its_axis_for_the_deployable_policies() -> None:
    import pandas as pd

    from app import charts

    points = pd.DataFrame({
        "name": ["always_raw", "forge_lite", "oracle"], "policy": ["always_raw", "forge_lite", "oracle"],
        "kind": ["fixed arm", "router", "oracle"], "benchmark": ["all"] * 3, "cost_k": [0.2, 0.3, 0.25],
        "tokens_in": [190.0, 290.0, 240.0], "tokens_out": [10.0, 10.0, 10.0], "macro_f1": [0.40, 0.42, 0.80],
        "macro_utility": [0.1, 0.1, 0.2], "on_frontier": [True, True, False]})
    for color_by in ("policy", "utility"):
        figure = charts.pareto(points, False, color_by)
        low, high = figure.layout.yaxis.range
        assert low < 0.40 and 0.42 < high < 0.45  # fitted to the deployable points, not stretched to the oracle
        assert [note.text for note in figure.layout.annotations] == ["oracle F1 0.800 ↑ (reference, above the axis)"]
