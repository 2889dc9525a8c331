"""`forge decide` latency on a fresh cache: the first decision at new weights, the same again, another pair.

Copies a store (default: FORGE_STORE, e.g. one made by `forge store load-demo`) and gives it an empty
cache directory. Then, each timed as its own `forge` process from start to exit:

1. `precompute_s`: what `forge store load-demo` does after loading (`forge_core.precompute.view_cache`:
   the crossfit reports and the decision at the default weights, which trains each fold's
   cost-conditioned routers once per crossfit run);
2. `forge decide --lambda-in 0.37 --lambda-out 0.74 --json` the first time (`first_s`), the second
   time (`cached_s`), and at 0.25/0.5 (`other_weights_s`);
3. the reference, `forge --help` (`reference_s`: the CLI's own start), as each decide's ratio to it.

Prints one JSON line with `os.getloadavg()` before and after (a loaded machine's numbers say so).
Run: `.venv/bin/python bench/decide_latency.py [--store PATH]`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from forge_core import config

FIRST = ("0.37", "0.74")
OTHER = ("0.25", "0.5")


def timed(arguments: list[str], environment: dict[str, str]) -> float:
    """Seconds of one `forge` process with `arguments`, from start to exit (it must succeed)."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "forge_core.cli", *arguments], env=environment, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return round(time.monotonic() - started, 2)


def decide_arguments(weights: tuple[str, str]) -> list[str]:
    return ["decide", "--lambda-in", weights[0], "--lambda-out", weights[1], "--json"]


def measure(store: Path) -> dict:
    """The timings of the module docstring on a copy of `store` with an empty cache."""
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as directory:
        copy, cache = Path(directory) / "store.duckdb", Path(directory) / "cache"
        shutil.copy(store, copy)
        environment = {**os.environ, "FORGE_STORE": str(copy), "FORGE_CACHE_DIR": str(cache)}
        code = ("from forge_core import config; from forge_core.store import Store; "
                "from forge_core.precompute.view_cache import precompute_views; "
                "precompute_views(Store(config.store_path()), config.cache_dir())")
        started = time.monotonic()
        subprocess.run([sys.executable, "-c", code], env=environment, check=True)
        precompute = round(time.monotonic() - started, 2)
        first = timed(decide_arguments(FIRST), environment)
        cached = timed(decide_arguments(FIRST), environment)
        other = timed(decide_arguments(OTHER), environment)
        reference = timed(["--help"], environment)
    return {"store": str(store), "precompute_s": precompute, "first_s": first, "cached_s": cached,
            "other_weights_s": other, "reference_s": reference,
            "first_vs_reference": round(first / reference, 2), "cached_vs_reference": round(cached / reference, 2),
            "other_weights_vs_reference": round(other / reference, 2),
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=config.store_path())
    print(json.dumps(measure(parser.parse_args().store)))


if __name__ == "__main__":
    main()
