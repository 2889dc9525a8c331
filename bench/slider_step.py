"""Pareto slider steps in a real browser: how long one cost-weight step takes to update the page.

Starts `forge app` on a copy of a store (default: the FORGE_STORE, e.g. the demo store), opens the
Pareto page in Debian's chromium (Playwright), waits for the first render, then moves the
lambda_in slider `--steps` times by 0.01 with the keyboard. A step counts from the key press until
the page has rerun: the oracle's utility card shows a new value and the script is done, checked
every animation frame (`tests/app/test_conditioned_browser.py` uses the same check). The cache
directory is one as `forge store load-demo` leaves it (`page_renders.fresh_cache`) and each step is
a new weight pair, so no step is served from an earlier run's results.

Prints one JSON line: the first render's seconds, each step's seconds, their median, and the
conditioned Lite router's tokens a query before and after the steps (empty without one), and the
machine's load average before and after.
Run: `.venv/bin/python bench/slider_step.py [--store data/forge.duckdb] [--steps 10]`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from page_renders import first_render, fresh_cache, slider_steps  # noqa: E402

from forge_core.store import Store  # noqa: E402

from support.browser import browser_page, running_dashboard  # noqa: E402


def measure(store: Path, steps: int) -> dict:
    """First render and per-step seconds of the Pareto page on a copy of `store` (timed as
    `page_renders` times them)."""
    with tempfile.TemporaryDirectory() as directory:
        copy = Path(directory) / "store.duckdb"
        shutil.copy(store, copy)
        # a cache as load-demo leaves it: a step's weights are never served from an earlier run's results
        os.environ["FORGE_CACHE_DIR"] = str(fresh_cache(Path(directory), Store(copy)))
        with running_dashboard(copy, Path(directory) / "app.log") as url, browser_page() as page:
            render = first_render(page, f"{url}/pareto", "Pareto")
            routed = page.get_by_test_id("stMetric").filter(has_text="forge_lite_cond at these weights")
            before = routed.all_inner_texts()
            durations = slider_steps(page, steps)
            return {"store": str(store), "first_render_s": render, "steps_s": durations,
                    "median_s": statistics.median(durations), "conditioned_before": before,
                    "conditioned_after": routed.all_inner_texts()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=ROOT / "data" / "forge.duckdb")
    parser.add_argument("--steps", type=int, default=10)
    arguments = parser.parse_args()
    load_before = os.getloadavg()  # a loaded machine's figures say so
    result = measure(arguments.store, arguments.steps)
    print(json.dumps({**result, "load_average_before": load_before, "load_average_after": os.getloadavg()}))


if __name__ == "__main__":
    main()
