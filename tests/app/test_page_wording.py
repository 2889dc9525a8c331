"""What the pages say, whole and in one unit (#56): the Live query chart in the margin's utility
units (probabilities on request), the live scorecard over the same questions, and an answer's
verdict in the words of what lexical F1 measures. The Live query's result panels are rendered from
hand-built `RoutedAnswer` records, so no router or host is needed."""

from __future__ import annotations

import math
import re

import pandas as pd
from streamlit.testing.v1 import AppTest

from forge_core.evidence.answering import ArmAnswer, Evidence
from forge_core.routing.live import RawCost, RoutedAnswer

from support.app_store import PAGE_RUN_TIMEOUT_S
from support.vega_charts import vega_charts

PROBABILITIES = {"direct:no_think": 0.15, "direct:cot": 0.16, "summary:no_think": 0.18, "summary:cot": 0.17,
                 "raw:no_think": 0.17, "raw:cot": 0.17}  # near 1/6, as a Lite router's on the demo store


def arm_answer(arm: str, text: str = "Cold Harbor") -> ArmAnswer:
    return ArmAnswer(arm=arm, answer=text, extracted=text, tokens_in=300, tokens_out=8, tokens_reasoning=0,
                     latency_ms=900.0, support_text="")


def routed(tau: float = 1.0, f1: float | None = 0.4, raw_f1: float | None = 1.0, arm: str = "summary:no_think",
           raw: bool = True) -> RoutedAnswer:
    """A routed answer as `route_and_answer` makes one, Always-Raw answered beside it when `raw`."""
    return RoutedAnswer(
        question="Which battle?", benchmark="2wikimultihopqa", host="embedded", checkpoint_id="ckpt-0123456789ab",
        probabilities=PROBABILITIES, routing_ms=12.0, probe_calls=0, probe_tokens_in=0, probe_tokens_out=0,
        evidence=Evidence("Which battle?", ()), answer=arm_answer(arm), answer_is_probe=False, f1=f1,
        golds=("Second Battle of Bull Run",), raw_cost=RawCost(400, 8, "extra call") if raw else None,
        raw_answer=arm_answer("raw:no_think", "Second Battle of Bull Run") if raw else None,
        raw_f1=raw_f1 if raw else None, tau=tau)


def render_answer(result, names=None) -> None:  # run as a script: no annotation it cannot resolve
    from app import live_view

    live_view.routed_answer(result, names=names)


def cards(app: AppTest) -> dict[str, tuple[str, str]]:
    """The cards `ui.name_metric` shows whole: label -> (value, help)."""
    markdown = list(app.markdown)
    return {re.fullmatch(r":small\[(.*)\]", label.value).group(1): (re.sub(r"<[^>]+>", "", value.value),
                                                                      label.proto.help)
            for label, value in zip(markdown, markdown[1:]) if re.fullmatch(r":small\[.*\]", label.value)}


def bars(chart: tuple[dict, pd.DataFrame]) -> tuple[list[str], list[float], str]:
    """A bar chart's arms (in the chart's order), heights and y-axis title, from its spec and data."""
    spec, frame = chart
    layer = spec["layer"][0] if "layer" in spec else spec
    column = layer["encoding"]["y"]["field"]
    assert layer["encoding"]["x"]["sort"] == list(frame["arm"])
    return list(frame["arm"]), list(frame[column]), layer["encoding"]["y"]["title"]


def test_the_live_chart_shows_each_arms_implied_utility_in_the_margins_units() -> None:
    tau = 2.0  # a router distilled at another temperature: its own tau scales the gaps
    result = routed(tau=tau)
    app = AppTest.from_function(render_answer, args=(result,), default_timeout=PAGE_RUN_TIMEOUT_S).run()
    assert not app.exception, app.exception
    (chart,) = vega_charts(app)  # the probabilities only on request
    arms, heights, title = bars(chart)
    assert title.startswith("utility vs the chosen arm")
    chosen = math.log(PROBABILITIES["summary:no_think"])
    assert heights == [tau * (math.log(PROBABILITIES[arm]) - chosen) for arm in arms]
    assert max(heights) == 0.0 and heights[arms.index("summary:no_think")] == 0.0
    runner_up = result.confidence.runner_up  # the caption's margin is the runner-up's bar, sign turned
    assert -heights[arms.index(runner_up)] == result.confidence.margin
    assert cards(app)["Chosen arm"][0] == "summary:no_think"  # a card: the arm's name shown whole
    assert any(caption.value.startswith(f"{result.confidence.margin:+.3f} utility over {runner_up}")
               for caption in app.caption)  # under the card, in the chart's units

    next(t for t in app.toggle if t.label.startswith("Show the router's probabilities")).set_value(True).run()
    charts = vega_charts(app)
    assert len(charts) == 2
    arms, heights, title = bars(charts[1])
    assert title == "probability" and heights == [PROBABILITIES[arm] for arm in arms]


def render_history(answers, names=None) -> None:  # run as a script: no annotation it cannot resolve
    from app import live_view

    live_view.session_history(answers, names)


def test_the_session_compares_routed_and_always_raw_f1_over_the_same_questions() -> None:
    answers = [routed(f1=0.0, raw_f1=1.0), routed(f1=0.5, raw_f1=0.5), routed(f1=1.0, raw_f1=1.0),
               routed(f1=0.0, raw=False), routed(f1=0.25, raw=False)]  # Always-Raw made live on 3 of 5
    app = AppTest.from_function(render_history, args=(answers,), default_timeout=PAGE_RUN_TIMEOUT_S).run()
    assert not app.exception, app.exception
    shown = cards(app)
    value, help_text = shown["Mean F1 (routed)"]
    assert value == "0.35" and "Over the 5 questions" in help_text
    value, help_text = shown["F1 routed vs Raw, 3 both answered"]  # the routed mean over those 3 only
    assert value == "0.50 vs 0.83" and "same 3 questions" in help_text
    assert not [label for label in shown if "Always-Raw)" in label]  # no mean of Raw over other questions

    app = AppTest.from_function(render_history, args=(answers[3:],), default_timeout=PAGE_RUN_TIMEOUT_S).run()
    assert cards(app)["F1 routed vs Raw"][0] == "–"


def test_an_answers_verdict_says_what_lexical_f1_measures() -> None:
    result = routed(f1=1 / 3, raw_f1=1.0)  # "Cold Harbor" for "Second Battle of Bull Run": wrong, with shared words
    app = AppTest.from_function(render_answer, args=(result,), default_timeout=PAGE_RUN_TIMEOUT_S).run()
    assert not app.exception, app.exception
    captions = "\n".join(caption.value for caption in app.caption)
    assert ("Some token overlap with the gold answer (F1 0.33): lexical F1 counts shared words, not whether the "
            "answer is right.") in captions
    assert "Exact match with a gold answer (F1 1.00)" in captions  # Always-Raw's answer beside it
    assert "right against" not in captions.lower() and "partly" not in captions.lower()
    assert [box.value for box in app.warning] == ["Cold Harbor"] and [box.value for box in app.success] == [
        "Second Battle of Bull Run"]


def test_the_live_page_names_its_router_as_every_page_does_with_the_full_id_to_copy() -> None:
    result = routed()
    names = {result.checkpoint_id: "Lite cond. stage 1 · ckpt-012345"}  # checkpoint_names' name of the router
    app = AppTest.from_function(render_answer, args=(result, names), default_timeout=PAGE_RUN_TIMEOUT_S).run()
    assert cards(app)["Chosen arm"][1].startswith("Router Lite cond. stage 1 · ckpt-012345 (ckpt-0123456789ab),")
    app = AppTest.from_function(render_history, args=([result], names), default_timeout=PAGE_RUN_TIMEOUT_S).run()
    (history,) = app.dataframe
    assert history.value[["router", "router id"]].to_dict("records") == [
        {"router": "Lite cond. stage 1 · ckpt-012345", "router id": "ckpt-0123456789ab"}]


def crossfit_report(run_id: str, warm_start_arms: int, stage: int = 1, split_seed: int = 0) -> dict:
    """A stored crossfit run's report, as far as its picker label reads it."""
    settings = {"stage": stage, "n_arms": 6, "seed": 0, "split_seed": split_seed, "conditioning": None,
                "stage1": {"warm_start_arms": warm_start_arms}, "stage2": {"steps": 1000}}
    return {"run_id": run_id, "settings": settings, "stage": stage, "lambda_in": 0.6, "lambda_out": 0.6,
            "split_seed": split_seed, "accounting": "deploy", "folds": 5, "queries": 1544,
            "policies": {"forge_lite": {}, "forge_lite_cond": {}}}


def test_crossfit_runs_are_labelled_by_what_tells_them_apart() -> None:
    from app.crossfit_view import crossfit_run_label, crossfit_run_labels

    runs = [crossfit_report("crossfit-aaa", 3), crossfit_report("crossfit-bbb", 6),
            crossfit_report("crossfit-ccc", 3, stage=2), crossfit_report("crossfit-ddd", 3, split_seed=1),
            crossfit_report("crossfit-eee", 3, split_seed=1)]  # a rerun of crossfit-ddd's settings
    labels = crossfit_run_labels(runs)
    assert labels == {  # what all share (training seed, accounting, folds) left out; an id only for the rerun
        "crossfit-aaa": "λ 0.6 / 0.6 · paper's Stage 1 · split seed 0",
        "crossfit-bbb": "λ 0.6 / 0.6 · 6-arm Stage 1 · split seed 0",
        "crossfit-ccc": "λ 0.6 / 0.6 · paper's Stage 1 + Stage 2 (1000 steps) · split seed 0",
        "crossfit-ddd": "λ 0.6 / 0.6 · paper's Stage 1 · split seed 1 · crossfit-ddd",
        "crossfit-eee": "λ 0.6 / 0.6 · paper's Stage 1 · split seed 1 · crossfit-eee"}
    whole = crossfit_run_label(runs[0])  # shown under the picker: the run's every part and its full id
    assert "paper's Stage 1, seed 0" in whole and "deployment accounting" in whole and whole.endswith("crossfit-aaa")


def test_a_decision_names_its_checkpoint_and_fixed_arms_as_every_page_does() -> None:
    from forge_core.evaluation.decide import decision_sentence
    from forge_core.policies.kinds import FIXED_ARM_KIND
    from forge_core.reports import checkpoint_views
    from forge_core.routing import checkpoints

    assert checkpoint_views.checkpoint_name is checkpoints.checkpoint_name  # one function, below the decision
    row = {"checkpoint_id": "ckpt-9621658c2e77", "variant": "lite", "stage": 1,
           "lineage": {"conditioning": {"low": 0.02, "high": 3.0}}}
    name = checkpoints.checkpoint_name(row)
    assert name == "Lite cond. stage 1 · ckpt-962165"  # the legends' and pickers' name
    gain = {"utility": {"difference": 0.031, "ci": [0.011, 0.049]}}
    decided = {"deploy": "forge_lite_cond", "leader": "always_raw", "best_fixed_arm": "summary:no_think",
               "lambda_in": 0.6, "lambda_out": 0.6, "budget_tokens": None, "router_candidates": ["forge_lite_cond"],
               "checkpoint_id": row["checkpoint_id"], "checkpoint_name": name, "trains_first": False,
               "policies": {"forge_lite_cond": {"kind": "router", "arm": None, "tokens": 150.0,
                                                "gain_vs_best_fixed": gain},
                            "always_raw": {"kind": FIXED_ARM_KIND, "arm": "raw:no_think", "tokens": 178.0,
                                           "gain_vs_best_fixed": gain}}}
    sentence = decision_sentence(decided)
    assert sentence.startswith(f"Deploy forge_lite_cond ({name}) at λ_in 0.6 / λ_out 0.6: +0.031 utility")
    assert "; raw:no_think has the highest utility" in sentence and "always_raw" not in sentence


def test_the_overviews_three_uses_are_the_readmes() -> None:
    from pathlib import Path

    from app.overview_view import USES
    from app.ui import PAGES_DIR

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    assert re.findall(r"^\*\*(\d\. [^*]+?)\.\*\*", readme, flags=re.MULTILINE) == [use.title for use in USES]
    assert all((PAGES_DIR / script).is_file() for use in USES for script, *_ in use.links)
