"""First render of every dashboard page on a fresh cache, and the Pareto slider step, in a real browser.

Copies a store (default: FORGE_STORE, e.g. one made by `forge store load-demo`), starts `forge app`
on the copy with an empty result cache (a new app process, and a new cache directory holding only
what `forge store load-demo` puts there: the demo export's Action map arrays and the views it
precomputes (`forge_core.reports.view_cache`: crossfit reports, gold recall, the consensus audit, the
demo questions, the Pareto points and reliability tables at the default request, the decision at the
default weights, whose fold routers, trained once per crossfit run by load-demo, are linked from the
current cache like the downloaded models and built retrieval indexes: setup, not a render)), opens each page in
Debian's chromium (Playwright) and times it from navigation until its title is drawn, the script is
done and no element is still a skeleton. Then moves the Pareto page's lambda_in slider `--steps`
times by 0.01 with the keyboard (`bench/slider_step.py`'s step check).

Prints one JSON line: seconds per page's first render, the slider steps and their median, and
`os.getloadavg()` before and after (a loaded machine's numbers say so).
Run: `.venv/bin/python bench/page_renders.py [--store PATH] [--steps 5]`; the README's figures come from its
stored line, `bench/results/page_renders.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from forge_core import config  # noqa: E402
from forge_core.evaluation.fold_decisions import fold_file  # noqa: E402
from forge_core.reports.map_cache import MAP_CACHE_FILE, import_map_cache  # noqa: E402
from forge_core.reports.view_cache import precompute_views  # noqa: E402
from forge_core.store import Store  # noqa: E402

from support.browser import PARETO_STEP_DONE, browser_page, running_dashboard  # noqa: E402

TIMEOUT_MS = 300_000
PAGES = {"Overview": "", "Enumerate": "enumerate", "Hosts": "hosts", "Live query": "live-query", "Train": "train",
         "Pareto": "pareto", "Action map": "action-map", "Queries": "queries", "Transfer": "transfer"}
SETUP_CACHES = ("embedders", "bm25", "passage_vectors")  # model files and indexes, linked from the current cache


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
    precompute_views(store, cache)
    return cache


def first_render(page, url: str, title: str) -> float:
    """Seconds from navigating to `url` until the page's title is drawn, its script is done and no
    element is still a placeholder (Streamlit draws a skeleton until an element's code has loaded)."""
    from playwright.sync_api import expect

    started = time.monotonic()
    page.goto(url)
    expect(page.get_by_role("heading", name=title, exact=True)).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=TIMEOUT_MS)
    expect(page.get_by_test_id("stSkeleton")).to_have_count(0, timeout=TIMEOUT_MS)
    return round(time.monotonic() - started, 2)


def slider_steps(page, steps: int) -> list[float]:
    """Seconds of each lambda_in step on the (open) Pareto page."""
    oracle = page.get_by_test_id("stMetric").filter(has_text="Oracle utility").get_by_test_id("stMetricValue")
    thumb = page.get_by_test_id("stSlider").filter(has_text="lambda_in").get_by_role("slider")
    thumb.focus(timeout=TIMEOUT_MS)  # a loaded machine can keep the browser busy drawing the page for long
    durations = []
    for _ in range(steps):
        shown = oracle.inner_text()
        started = time.monotonic()
        thumb.press("ArrowRight")
        page.wait_for_function(PARETO_STEP_DONE, arg=shown, polling="raf", timeout=TIMEOUT_MS)
        durations.append(round(time.monotonic() - started, 3))
    return durations


def measure(store: Path, steps: int, screenshots: Path | None = None) -> dict:
    """Every page's first render and the Pareto slider steps on a copy of `store` (with
    `screenshots`, a full-page PNG of each page there, taken after its render is timed)."""
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as directory:
        copy = Path(directory) / "store.duckdb"
        shutil.copy(store, copy)
        os.environ["FORGE_CACHE_DIR"] = str(fresh_cache(Path(directory), Store(copy)))
        with running_dashboard(copy, Path(directory) / "app.log") as url, browser_page() as page:
            page.set_viewport_size({"width": 1280, "height": 1000})
            renders = {}
            for title, path in PAGES.items():
                renders[title] = first_render(page, f"{url}/{path}", title)
                if screenshots is not None:
                    screenshots.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(screenshots / f"{path or 'overview'}.png"), full_page=True)
            first_render(page, f"{url}/pareto", "Pareto")
            durations = slider_steps(page, steps)
    return {"store": str(store), "first_render_s": renders, "max_first_render_s": max(renders.values()),
            "steps_s": durations, "step_median_s": statistics.median(durations) if durations else None,
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=config.store_path())
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--screenshots", type=Path, help="Also save a full-page screenshot of each page here.")
    arguments = parser.parse_args()
    print(json.dumps(measure(arguments.store, arguments.steps, arguments.screenshots)))


if __name__ == "__main__":
    main()
