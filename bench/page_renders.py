"""First render of every dashboard page on a fresh cache, and the Pareto slider step, in a real browser.

Copies a store (default: FORGE_STORE, e.g. one made by `forge store load-demo`), starts `forge app`
on the copy with an empty result cache (a new app process, and a new cache directory holding only
what `forge store load-demo` puts there: the demo export's Action map arrays and the views it
precomputes (`forge_core.precompute.view_cache`: crossfit reports, gold recall, the consensus audit, the
demo questions, the Pareto points and reliability tables at the default request, the decision at the
default weights, whose fold routers, trained once per crossfit run by load-demo, are linked from the
current cache like the downloaded models and built retrieval indexes: setup, not a render)), opens each page in
Debian's chromium (Playwright) and times it from navigation until its title is drawn, the script is
done and no element is still a skeleton. Then moves the Pareto page's lambda_in slider `--steps`
times by 0.01 with the keyboard (`bench/slider_step.py`'s step check), each key press as soon as the
last step is drawn (a key held down), and `--steps` times more with a pause of `PACED_PAUSE_S` before
each press (a person stepping now and then: the page computes the step that continues the last move
while one is drawn, `app.step_prefetch`, and a pause lets it finish).

In the same run, a bare Streamlit page (`bench/bare_page.py`: a title, a line of text, a slider and a
card showing its value; nothing of FORGE) is served the way `forge app` serves the dashboard (a new
`streamlit run` process with the same server options, `BARE_SERVER_OPTIONS`, minus FORGE's module
preload), opened and timed as a page's first render, then its slider is stepped `--steps` times as
the Pareto slider is. Each page's first render is reported as a ratio to the bare page's render timed
just before it (a pair measured seconds apart, so a load that changes during the run changes both),
each Pareto step (and their median) as a ratio to the bare rerun (the bare steps' median), against
the goals of issue #51: first renders at most 3x the bare page, the median step at most 3x the bare
rerun (`goals`: met or not, and the ratios over the goal by name). Like is compared with like: the
bare render before the Overview is the first visit to the bare page's server (Streamlit's scripts not
yet in the browser cache, as on the Overview, the first visit to the dashboard's server), the others
are revisits (a new session, the scripts cached, as on every later page).

A second bare page, `bench/bare_chart_page.py`, holds the elements a Pareto step redraws and nothing of
FORGE: a Vega-Lite chart of as many points as the Pareto chart, drawn as it is, moving with its slider, a
dataframe of as many rows as the Pareto table and a metric card. It is served, opened (just before the bare
page, before each dashboard page) and stepped exactly as the bare page is, and every first render and the
steps are also reported as ratios to it (`*_over_bare_chart*`). The two ratios separate what a page costs:
over the bare page, everything (Streamlit's and Vega-Lite's drawing of the chart and the grid included); over
the bare chart page, FORGE's own work (its script, its other elements) beyond drawing the same kinds of
element. The goals stay against the bare page.

The whole is measured `--rounds` times (default 3), each round on a new dashboard server and cache (so each
page's visit is a first visit in every round): a page's first render, and its ratio to each bare page, is
the median over the rounds of the round's own (a ratio is taken within its round, of a pair timed seconds
apart); the steps of all rounds are put together. One round's figures swing by half between runs on a
noisy machine; the medians much less.

Prints one JSON line: seconds per page's first render, the slider steps and their median (the paced
steps' too, with their median over the bare rerun: no goal, the goal is on steps pressed at once), both bare
pages' first renders and steps, the ratios and goals, and `os.getloadavg()` before and after (a
loaded machine's numbers say so).
Run: `.venv/bin/python bench/page_renders.py [--store PATH] [--steps 5] [--rounds 3]` (about 4 minutes a
round); the README's figures come from its stored line, `bench/results/page_renders.json`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from ratios import goal, ratio  # noqa: E402

from forge_core import config  # noqa: E402
from forge_core.evaluation.fold_decisions import fold_file  # noqa: E402
from forge_core.precompute.map_cache import MAP_CACHE_FILE, import_map_cache  # noqa: E402
from forge_core.precompute.view_cache import precompute_views  # noqa: E402
from forge_core.store import Store  # noqa: E402

from support.browser import PARETO_STEP_DONE, STARTUP_TIMEOUT_S, browser_page, free_port, healthy, running_dashboard  # noqa: E402

TIMEOUT_MS = 300_000
PAGES = {"Overview": "", "Enumerate": "enumerate", "Hosts": "hosts", "Live query": "live-query", "Train": "train",
         "Pareto": "pareto", "Action map": "action-map", "Queries": "queries", "Transfer": "transfer"}
SETUP_CACHES = ("embedders", "bm25", "passage_vectors")  # model files and indexes, linked from the current cache
BARE_PAGE = ROOT / "bench" / "bare_page.py"
BARE_TITLE = "Bare page"
BARE_CHART_PAGE = ROOT / "bench" / "bare_chart_page.py"  # the elements a Pareto step redraws, nothing of FORGE
BARE_CHART_TITLE = "Bare chart page"
# the server options `forge app` passes to Streamlit (forge_core/cli/dashboard.py; tests/test_bench_ratios.py
# checks they are the same), for the bare page's server
BARE_SERVER_OPTIONS = ("--server.address", "127.0.0.1", "--server.headless", "true",
                       "--browser.gatherUsageStats", "false", "--client.toolbarMode", "minimal",
                       "--runner.postScriptGC", "false", "--server.fileWatcherType", "none")
# a step of the bare page's slider is done when its value card shows a new value and the script is done: the
# Pareto step's check, on the bare page's card
BARE_STEP_DONE = PARETO_STEP_DONE.replace('"Oracle utility"', '"Slider value"')
GOAL_FIRST_RENDER = 3.0  # issue #51: every page's first render at most 3x the bare page's
GOAL_STEP_MEDIAN = 3.0  # issue #51: the median Pareto step at most 3x the bare rerun
PACED_PAUSE_S = 0.5  # the paced steps' pause before each key press (the goal is on steps pressed at once)


def fresh_cache(directory: Path, store: Store) -> Path:
    """A cache directory as `forge store load-demo` leaves it for `store`, with the current cache's
    setup linked in (models, indexes, and the fold routers its decision trains once per crossfit run)."""
    cache = directory / "cache"
    cache.mkdir()
    for name in SETUP_CACHES:
        if (config.cache_dir() / name).exists():
            (cache / name).symlink_to(config.cache_dir() / name)
    for host in store.hosts_with_outcomes():
        for run_id in store.crossfit_runs(host)["run_id"]:
            trained = fold_file(config.cache_dir(), run_id)
            if trained.exists():
                fold_file(cache, run_id).parent.mkdir(exist_ok=True)
                fold_file(cache, run_id).symlink_to(trained)
    import_map_cache(config.demo_dir() / MAP_CACHE_FILE, cache / "umap")
    # the gold recall view writes under `config.cache_dir()` (as it is in load-demo), not its `cache_dir`
    # argument: without this it landed in the current cache, and the Overview computed it while timed
    with _cache_dir_set(cache):
        precompute_views(store, cache)
    return cache


@contextlib.contextmanager
def _cache_dir_set(cache: Path) -> Iterator[None]:
    """FORGE_CACHE_DIR set to `cache` inside the block, as it was after it."""
    before = os.environ.get("FORGE_CACHE_DIR")
    os.environ["FORGE_CACHE_DIR"] = str(cache)
    try:
        yield
    finally:
        if before is None:
            del os.environ["FORGE_CACHE_DIR"]
        else:
            os.environ["FORGE_CACHE_DIR"] = before


def first_render(page, url: str, title: str) -> float:
    """Seconds from navigating to `url` until the page's title is drawn, its script is done and no
    element is still a loading skeleton (Streamlit draws one until an element's code has loaded)."""
    from playwright.sync_api import expect

    started = time.monotonic()
    page.goto(url)
    expect(page.get_by_role("heading", name=title, exact=True)).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=TIMEOUT_MS)
    expect(page.get_by_test_id("stSkeleton")).to_have_count(0, timeout=TIMEOUT_MS)
    return round(time.monotonic() - started, 2)


def slider_steps(page, steps: int, slider: str = "lambda_in", card: str = "Oracle utility",
                 done: str = PARETO_STEP_DONE, pause_s: float = 0.0) -> list[float]:
    """Seconds of each step of a slider (by default the Pareto page's lambda_in) on the open page: from the
    key press until `done` (a script given the card's value before the step) holds; with `pause_s`, that
    long a pause before each key press (a person stepping now and then), else each press follows the
    last step at once (a key held down)."""
    oracle = page.get_by_test_id("stMetric").filter(has_text=card).get_by_test_id("stMetricValue")
    thumb = page.get_by_test_id("stSlider").filter(has_text=slider).get_by_role("slider")
    thumb.focus(timeout=TIMEOUT_MS)  # a loaded machine can keep the browser busy drawing the page for long
    durations = []
    for _ in range(steps):
        time.sleep(pause_s)
        shown = oracle.inner_text()
        started = time.monotonic()
        thumb.press("ArrowRight")
        page.wait_for_function(done, arg=shown, polling="raf", timeout=TIMEOUT_MS)
        durations.append(round(time.monotonic() - started, 3))
    return durations


@contextlib.contextmanager
def running_bare_page(log_path: Path, script: Path = BARE_PAGE) -> Iterator[str]:
    """A bare page (`bench/bare_page.py`, or `script`) served by a new Streamlit process with `forge app`'s
    server options until the block ends (SIGTERM); yields its URL once healthy."""
    port = free_port()
    command = [sys.executable, "-m", "streamlit", "run", str(script), "--server.port", str(port),
               *BARE_SERVER_OPTIONS]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log_path.open("w"),
                               start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not healthy(url):
            assert process.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, f"{script.name}'s server did not answer /_stcore/health"
            time.sleep(0.5)
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


def speed_ratios(renders: list[dict[str, float]], bare_renders: list[dict[str, float]], steps: list[float],
                 bare_steps: list[float]) -> dict:
    """Each page's first render over the bare page's render timed just before it (per round, same keys;
    over several rounds the median of the rounds' ratios), each step over the bare rerun (the bare steps'
    median) and the steps' median over it, with the goals of issue #51 and whether they are met."""
    over = reference_ratios(renders, bare_renders, steps, bare_steps, "bare")
    return {**over, "goals": {
        "first_render_over_bare": goal(over["first_render_over_bare"], GOAL_FIRST_RENDER),
        "step_median_over_bare_rerun": goal({"median step": over["step_median_over_bare_rerun"]}, GOAL_STEP_MEDIAN)}}


def reference_ratios(renders: list[dict[str, float]], reference_renders: list[dict[str, float]], steps: list[float],
                     reference_steps: list[float], name: str) -> dict:
    """Each page's first render over the reference page's render timed before it (one dict of each per round,
    same keys; a ratio is taken within its round, a pair timed seconds apart, and its median over the rounds
    kept), each step and the steps' median over the reference rerun (the reference steps' median), under
    keys naming the reference (`name`: "bare" or "bare_chart"); no goals."""
    renders_over = {page: round(statistics.median(ratio(each[page], reference[page])
                                                  for each, reference in zip(renders, reference_renders)), 2)
                    for page in renders[0]}
    rerun = statistics.median(reference_steps)
    return {f"first_render_over_{name}": renders_over,
            f"max_first_render_over_{name}": max(renders_over.values()),
            f"steps_over_{name}_rerun": [ratio(seconds, rerun) for seconds in steps],
            f"step_median_over_{name}_rerun": ratio(statistics.median(steps), rerun)}


def measure(store: Path, steps: int, screenshots: Path | None = None) -> dict[str, Any]:
    """One round: every page's first render and the Pareto slider steps on a copy of `store` (a new dashboard
    server and cache: each page's visit is its first), and each bare page's render before each page (the bare
    chart page's, then the bare page's) and its slider steps, in the same browser (with `screenshots`, a
    full-page PNG of each dashboard page there, taken after its render is timed). Seconds, unsummarized."""
    with tempfile.TemporaryDirectory() as directory:
        copy = Path(directory) / "store.duckdb"
        shutil.copy(store, copy)
        os.environ["FORGE_CACHE_DIR"] = str(fresh_cache(Path(directory), Store(copy)))
        with (running_dashboard(copy, Path(directory) / "app.log") as url,
              running_bare_page(Path(directory) / "bare.log") as bare_url,
              running_bare_page(Path(directory) / "bare_chart.log", BARE_CHART_PAGE) as chart_url,
              browser_page() as page):
            page.set_viewport_size({"width": 1280, "height": 1000})
            renders, bare_renders, chart_renders = {}, {}, {}  # per page: its first render, the bare pages' before it
            for title, path in PAGES.items():
                chart_renders[title] = first_render(page, chart_url, BARE_CHART_TITLE)
                bare_renders[title] = first_render(page, bare_url, BARE_TITLE)
                renders[title] = first_render(page, f"{url}/{path}", title)
                if screenshots is not None:
                    screenshots.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(screenshots / f"{path or 'overview'}.png"), full_page=True)
            bare_steps = bare_slider_steps(page, bare_url, BARE_TITLE, steps)
            chart_steps = bare_slider_steps(page, chart_url, BARE_CHART_TITLE, steps)
            first_render(page, f"{url}/pareto", "Pareto")
            durations = slider_steps(page, steps)
            paced = slider_steps(page, steps, pause_s=PACED_PAUSE_S)
    return {"first_render_s": renders, "bare_first_render_s": bare_renders, "bare_chart_first_render_s": chart_renders,
            "steps_s": durations, "paced_steps_s": paced, "bare_steps_s": bare_steps, "bare_chart_steps_s": chart_steps}


def summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The rounds of `measure` in one result: each page's first render (and each bare page's before it) the
    median over the rounds, the ratios (`speed_ratios`, `reference_ratios`), the steps of every round
    together (each kind over all rounds' bare steps), the number of rounds and each round's own seconds
    (`round_seconds`)."""
    def page_medians(key: str) -> dict[str, float]:
        return {page: round(statistics.median(each[key][page] for each in rounds), 3) for page in rounds[0][key]}

    def joined(key: str) -> list[float]:
        return [seconds for each in rounds for seconds in each[key]]

    renders = page_medians("first_render_s")
    steps, paced, bare_steps, chart_steps = map(joined, ("steps_s", "paced_steps_s", "bare_steps_s",
                                                         "bare_chart_steps_s"))
    per_round = {key: [each[key] for each in rounds]
                 for key in ("first_render_s", "bare_first_render_s", "bare_chart_first_render_s")}
    return {"first_render_s": renders, "max_first_render_s": max(renders.values()),
            "steps_s": steps, "step_median_s": statistics.median(steps),
            "paced_steps_s": paced, "paced_step_median_s": statistics.median(paced),
            "paced_step_median_over_bare_rerun": ratio(statistics.median(paced), statistics.median(bare_steps)),
            "bare_first_render_s": page_medians("bare_first_render_s"), "bare_steps_s": bare_steps,
            "bare_step_median_s": statistics.median(bare_steps),
            "bare_chart_first_render_s": page_medians("bare_chart_first_render_s"), "bare_chart_steps_s": chart_steps,
            "bare_chart_step_median_s": statistics.median(chart_steps),
            **speed_ratios(per_round["first_render_s"], per_round["bare_first_render_s"], steps, bare_steps),
            **reference_ratios(per_round["first_render_s"], per_round["bare_chart_first_render_s"], steps, chart_steps,
                               "bare_chart"),
            "rounds": len(rounds), "round_seconds": rounds}


def bare_slider_steps(page, url: str, title: str, steps: int) -> list[float]:
    """A bare page opened (its render not kept) and its slider stepped `steps` times as the Pareto
    slider is: seconds a step, until its value card shows the new value and the script is done."""
    first_render(page, url, title)
    return slider_steps(page, steps, slider="value", card="Slider value", done=BARE_STEP_DONE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=config.store_path())
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3,
                        help="Measure this many times, each on a new dashboard server and cache (medians reported).")
    parser.add_argument("--screenshots", type=Path, help="Also save a full-page screenshot of each page here.")
    arguments = parser.parse_args()
    if arguments.steps < 1 or arguments.rounds < 1:
        parser.error("--steps and --rounds must be at least 1 (the steps' median is compared with the bare rerun's)")
    load_before = os.getloadavg()
    rounds = []
    for number in range(arguments.rounds):
        print(f"page_renders: round {number + 1} of {arguments.rounds}", file=sys.stderr)
        rounds.append(measure(arguments.store, arguments.steps, arguments.screenshots))
    print(json.dumps({"store": str(arguments.store), **summary(rounds),
                      "loadavg_before": [round(x, 2) for x in load_before],
                      "loadavg_after": [round(x, 2) for x in os.getloadavg()]}))


if __name__ == "__main__":
    main()
