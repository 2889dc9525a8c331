"""Speed as ratios (issue #51): `bench/ratios.py`'s ratio and goal, `bench/page_renders.py`'s ratios of the
dashboard's pages to the bare Streamlit page, and the bare page's server started with `forge app`'s options.
No timing here: the numbers in are made up, the numbers out exact."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


def bench_module(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """bench/NAME.py as a module (bench/ is no package; its scripts import each other by name)."""
    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


def test_a_ratio_is_the_time_over_its_reference_to_two_decimals(monkeypatch: pytest.MonkeyPatch) -> None:
    ratios = bench_module("ratios", monkeypatch)
    assert ratios.ratio(2.5, 0.8) == 3.12
    assert ratios.ratio(0.445, 0.445) == 1.0
    with pytest.raises(ValueError, match="positive reference"):
        ratios.ratio(1.0, 0.0)


def test_a_goal_is_met_only_when_no_ratio_is_over_it(monkeypatch: pytest.MonkeyPatch) -> None:
    ratios = bench_module("ratios", monkeypatch)
    assert ratios.goal({"Hosts": 1.2, "Train": 3.0}, 3.0) == {"at_most": 3.0, "met": True, "misses": {}}
    assert ratios.goal({"Hosts": 1.2, "Overview": 3.01, "Pareto": 4.5}, 3.0) == {
        "at_most": 3.0, "met": False, "misses": {"Overview": 3.01, "Pareto": 4.5}}


def test_pages_and_steps_are_ratios_to_the_bare_page_measured_beside_them(monkeypatch: pytest.MonkeyPatch) -> None:
    page_renders = bench_module("page_renders", monkeypatch)
    result = page_renders.speed_ratios(
        renders=[{"Overview": 4.0, "Hosts": 1.0, "Pareto": 2.5}],  # one round
        bare_renders=[{"Overview": 2.0, "Hosts": 0.5, "Pareto": 0.4}],  # the bare page's, just before each
        steps=[0.5, 0.3, 0.4],
        bare_steps=[0.1, 0.2, 0.08])
    assert result == {
        "first_render_over_bare": {"Overview": 2.0, "Hosts": 2.0, "Pareto": 6.25},
        "max_first_render_over_bare": 6.25,
        "steps_over_bare_rerun": [5.0, 3.0, 4.0],  # over the bare rerun: the bare steps' median, 0.1 s
        "step_median_over_bare_rerun": 4.0,
        "goals": {"first_render_over_bare": {"at_most": 3.0, "met": False, "misses": {"Pareto": 6.25}},
                  "step_median_over_bare_rerun": {"at_most": 3.0, "met": False, "misses": {"median step": 4.0}}}}


def test_the_bare_chart_page_is_a_second_reference_without_goals(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same pages and steps over the bare chart page (`bench/bare_chart_page.py`: the elements a
    Pareto step redraws, nothing of FORGE), under keys of their own; the goals stay the bare page's."""
    page_renders = bench_module("page_renders", monkeypatch)
    assert page_renders.reference_ratios(
        renders=[{"Overview": 4.0, "Pareto": 2.5}], reference_renders=[{"Overview": 2.5, "Pareto": 1.25}],
        steps=[0.5, 0.3, 0.4], reference_steps=[0.2, 0.25, 0.1], name="bare_chart") == {
        "first_render_over_bare_chart": {"Overview": 1.6, "Pareto": 2.0},
        "max_first_render_over_bare_chart": 2.0,
        "steps_over_bare_chart_rerun": [2.5, 1.5, 2.0],  # over its rerun: its steps' median, 0.2 s
        "step_median_over_bare_chart_rerun": 2.0}
    assert page_renders.BARE_CHART_PAGE.is_file() and "forge" not in page_renders.BARE_CHART_PAGE.read_text().split(
        '"""')[2].lower()  # nothing of FORGE below its docstring


def test_over_rounds_a_pages_ratio_is_the_median_of_its_rounds_paired_ratios(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each round (a new server: every visit a first one) pairs a page with the bare page timed just before
    it; the result keeps the median of the rounds' ratios, not a ratio of medians, and puts the rounds' steps
    together."""
    page_renders = bench_module("page_renders", monkeypatch)

    def timings(pareto: float, bare: float, steps: list[float], bare_steps: list[float]) -> dict:
        return {"first_render_s": {"Pareto": pareto}, "bare_first_render_s": {"Pareto": bare},
                "bare_chart_first_render_s": {"Pareto": bare * 2}, "steps_s": steps, "paced_steps_s": steps,
                "bare_steps_s": bare_steps, "bare_chart_steps_s": bare_steps}

    rounds = [timings(3.0, 1.0, [0.3], [0.1]), timings(1.0, 0.2, [0.5], [0.1]), timings(2.0, 0.25, [0.4], [0.2])]
    result = page_renders.summary(rounds)
    assert result["first_render_over_bare"] == {"Pareto": 5.0}  # ratios 3, 5, 8 (medians 2.0 / 0.25 would say 8)
    assert result["first_render_over_bare_chart"] == {"Pareto": 2.5}
    assert result["first_render_s"] == {"Pareto": 2.0} and result["bare_first_render_s"] == {"Pareto": 0.25}
    assert result["steps_s"] == [0.3, 0.5, 0.4] and result["step_median_over_bare_rerun"] == 4.0  # 0.4 / 0.1
    assert result["goals"]["first_render_over_bare"]["misses"] == {"Pareto": 5.0}
    assert result["rounds"] == 3 and result["round_seconds"] == rounds


def test_the_bare_page_is_served_with_the_dashboards_server_options(monkeypatch: pytest.MonkeyPatch) -> None:
    from forge_core.cli import dashboard

    page_renders = bench_module("page_renders", monkeypatch)
    started: list[list[str]] = []

    class Started(Exception):
        pass

    def popen(command: list[str], **_: object) -> None:
        started.append(command)
        raise Started

    monkeypatch.setattr(dashboard, "open_store", lambda: None)
    monkeypatch.setattr(dashboard, "load_demo_on_first_run", lambda *_: None)
    monkeypatch.setattr(dashboard, "start_views_if_outdated", lambda *_: None, raising=False)
    monkeypatch.setattr("subprocess.Popen", popen)
    with pytest.raises(Started):
        dashboard.app_command(port=8599)
    options = started[0][started[0].index("run") + 2:]  # after `run SCRIPT`
    pairs = dict(zip(options[::2], options[1::2]))
    assert pairs.pop("--server.port") == "8599"
    assert pairs == dict(zip(page_renders.BARE_SERVER_OPTIONS[::2], page_renders.BARE_SERVER_OPTIONS[1::2]))


def test_the_docs_say_a_goal_met_or_missed_with_the_misses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCH.parent / "scripts"))
    from results_docs.common import goal_verdict as verdict
    assert verdict({"at_most": 2.0, "met": True, "misses": {}}, "warm routing within", "the embedding") == (
        "warm routing within 2x the embedding: met")
    assert verdict({"at_most": 3.0, "met": False, "misses": {"Overview": 3.98, "Action map": 4.371}},
                   "first renders at most", "the bare page") == (
        "first renders at most 3x the bare page: missed (Overview 3.98x, Action map 4.37x)")
