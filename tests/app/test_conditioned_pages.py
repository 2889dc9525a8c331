"""The pages with a cost-conditioned router (AppTest): the Pareto point that moves with the sliders,
the sliders kept across pages, calibration to a budget, and a Live query whose arm rises with the
weights."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.reports.mix_view import HULL_NAME
from forge_core.routing.utility import CostWeights
from forge_core.store import Store

from support.answering_server import AnsweringServer
from support.app_store import FAKE_HOST, PAGE_RUN_TIMEOUT_S
from support.lazy_sections import opened
from support.pareto_page import CALIBRATION, HULL_TABLE, MARGINS, points_table
from support.stores import copy_store

PROJECT_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def conditioned_app(conditioned_store: tuple[Store, str], tmp_path: Path,
                    monkeypatch: pytest.MonkeyPatch) -> tuple[Store, str]:
    """A private copy of the store with a conditioned Lite router, as the dashboard's store."""
    store = copy_store(conditioned_store[0], tmp_path)
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    st.cache_data.clear()
    return store, conditioned_store[1]


def by_label(widgets, label: str):
    matches = [widget for widget in widgets if widget.label == label]
    assert len(matches) == 1, f"{label!r}: {[w.label for w in widgets]}"
    return matches[0]


def navigation() -> AppTest:
    return AppTest.from_file(str(PROJECT_ROOT / "app" / "main.py"), default_timeout=PAGE_RUN_TIMEOUT_S).run()


def test_the_conditioned_point_moves_with_the_sliders_kept_across_pages(conditioned_app: tuple[Store, str]) -> None:
    _, checkpoint_id = conditioned_app
    app = navigation()
    app.switch_page("../pages/pareto.py").run()
    assert not app.exception, app.exception
    assert by_label(app.multiselect, "Router checkpoints").value == [checkpoint_id]  # the conditioned one
    slider = by_label(app.slider, "lambda_in")
    assert slider.max == 3.0 and slider.value == pytest.approx(0.1)
    before = points_table(app).set_index("policy").loc[checkpoint_id]
    by_label(app.slider, "lambda_in").set_value(3.0)
    by_label(app.slider, "lambda_out").set_value(3.0).run()
    assert not app.exception, app.exception
    after = points_table(app).set_index("policy").loc[checkpoint_id]
    assert after["cost_k"] < 0.8 * before["cost_k"]  # dear tokens: the same checkpoint routes to cheaper arms
    frame = points_table(app)
    assert not frame.loc[frame["policy"] == "oracle", "on_frontier"].any()

    app.switch_page("../pages/live_query.py").run()  # the weights follow the user to the next page
    assert not app.exception, app.exception
    assert by_label(app.slider, "lambda_in").value == 3.0 and by_label(app.slider, "lambda_out").value == 3.0
    app.switch_page("../pages/pareto.py").run()
    assert by_label(app.slider, "lambda_out").value == 3.0
    app.switch_page("../pages/action_map.py").run()  # the conditioned router's map is drawn at them too
    assert not app.exception, app.exception
    assert by_label(app.slider, "lambda_in").value == 3.0
    assert any("All at λ_in 3 / λ_out 3 (the sliders' weights" in caption.value for caption in app.caption)
    by_label(app.slider, "lambda_in").set_value(0.1)
    by_label(app.slider, "lambda_out").set_value(0.2).run()
    assert any("All at λ_in 0.1 / λ_out 0.2" in caption.value for caption in app.caption)
    by_label(app.number_input, "lambda_in value").set_value(0.37).run()  # typed beside the slider
    assert not app.exception, app.exception
    assert by_label(app.slider, "lambda_in").value == pytest.approx(0.37)
    assert any("All at λ_in 0.37 / λ_out 0.2" in caption.value for caption in app.caption)
    app.switch_page("../pages/queries.py").run()  # the router and the weights picked elsewhere are kept
    assert not app.exception, app.exception
    assert by_label(app.selectbox, "Router").value == checkpoint_id
    assert by_label(app.number_input, "lambda_in value").value == pytest.approx(0.37)


def test_the_points_table_the_hull_table_and_the_margins_are_drawn_only_while_open(conditioned_app: tuple[Store, str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from app import data, pareto_view

    _, checkpoint_id = conditioned_app
    scored, loaded, ahead = [], [], []
    reliability, reliability_base, prefetch = data.reliability, data.reliability_base, pareto_view.prefetch
    monkeypatch.setattr(data, "reliability", lambda *args: scored.append(args[2:]) or reliability(*args))
    monkeypatch.setattr(data, "reliability_base", lambda *args: loaded.append(args[2]) or reliability_base(*args))
    monkeypatch.setattr(pareto_view, "prefetch",
                        lambda *parts, after_s, after_run: ahead.append(prefetch(*parts)) or ahead[-1])
    app = navigation()
    app.switch_page("../pages/pareto.py").run()
    assert not app.exception, app.exception
    for future in ahead:  # what the page computes ahead for the next step: not the margins' checkpoint
        future.result(timeout=PAGE_RUN_TIMEOUT_S)
    assert ahead and loaded == []
    assert {"Table", f"Against the {HULL_NAME}", "How far the routers' margins can be trusted"} <= {
        expander.label for expander in app.expander}
    assert scored == [] and not app.dataframe  # the points, the hull and the margins: all closed, no grid drawn

    opened(app, HULL_TABLE)
    assert [list(frame.value.columns)[-1] for frame in app.dataframe] == ["verdict"]

    opened(app, MARGINS)
    assert not app.exception, app.exception
    assert [id_ for id_, _ in scored] == [checkpoint_id] and set(loaded) == {checkpoint_id}
    assert any("share_right" in frame.value.columns for frame in app.dataframe)
    by_label(app.slider, "lambda_in").set_value(0.5).run()  # open, it follows the weights
    assert scored[-1] == (checkpoint_id, CostWeights(0.5, 0.2))
    assert "at λ_in 0.5 / λ_out 0.2" in "\n".join(markdown.value for markdown in app.markdown)
    assert "support_rate" in points_table(app).columns


def test_calibrate_to_a_budget_moves_the_sliders(conditioned_app: tuple[Store, str]) -> None:
    app = navigation()
    app.switch_page("../pages/pareto.py").run()
    assert "T (tokens a query)" not in [widget.label for widget in app.number_input]  # drawn once opened
    opened(app, CALIBRATION)
    by_label(app.number_input, "T (tokens a query)").set_value(300.0)
    by_label(app.button, "Calibrate").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    result = app.session_state["calibration_result"]
    assert result.request.budget_tokens == 300.0 and result.queries == 240
    assert result.tokens_ci[0] <= result.tokens <= result.tokens_ci[1]
    assert by_label(app.slider, "lambda_in").value == pytest.approx(round(result.weights.lambda_in, 2))
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Realized tokens a query"] == f"{result.tokens:,.0f}"


def test_a_demo_question_changes_arm_when_the_weights_rise(conditioned_app: tuple[Store, str]) -> None:
    fake = AnsweringServer()
    with fake:
        store, checkpoint_id = conditioned_app
        save_host_config(store, HostConfig(name=FAKE_HOST, kind="openai", model="m", base_url=fake.base_url,
                                           max_retries=0, timeout_s=10.0))
        app = navigation()
        app.switch_page("../pages/live_query.py").run()
        assert not app.exception, app.exception
        by_label(app.selectbox, "Host").set_value(FAKE_HOST).run()
        by_label(app.selectbox, "Router").set_value(checkpoint_id).run()
        demo_buttons = [button for button in app.button if button.label == "Pick"]
        assert demo_buttons, [e.value for e in app.caption]
        assert any("the weights move to 0.02/0.04" in e.value for e in app.caption)  # a pick says what it moves
        demo_buttons[0].click().run()
        assert app.session_state["weights_lambda_in"] == 0.02
        by_label(app.button, "Route and answer").click().run()
        assert not app.exception and _only_wrong_answers(app.error), [e.value for e in app.error]
        by_label(app.slider, "lambda_in").set_value(3.0)
        by_label(app.slider, "lambda_out").set_value(3.0).run()
        by_label(app.button, "Route and answer").click().run()
        assert not app.exception and _only_wrong_answers(app.error), [e.value for e in app.error]
    low, high = app.session_state["live_history"]
    assert low.question == high.question and low.weights == (0.02, 0.04) and high.weights == (3.0, 3.0)
    assert low.arm != high.arm and high.tokens < low.tokens


def _only_wrong_answers(errors) -> bool:
    """True when every error box is the test double's wrong answer ("answer <hash>", shown in red
    as a wrong answer is), not a failure of the page."""
    return all(str(error.value).startswith("answer ") for error in errors)
