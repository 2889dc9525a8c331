"""`forge app`: the Streamlit dashboard."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from forge_core import config
from forge_core.cli.output import console, open_store
from forge_core.store import Store


def load_demo_on_first_run(store: Store, demo: Path) -> None:
    """Load the committed demo outcomes (and the benchmarks, when the store has none) into a store
    that has no outcomes yet (once per export), and start the computation of the dashboard's first
    views in a background process."""
    from forge_core.precompute.background_views import start_background_views
    from forge_core.precompute.demo_store import load_demo, missing_benchmarks_line

    if store.hosts_with_outcomes():
        return
    loaded = load_demo(store, demo, config.benchmarks_dir(), map_cache=config.cache_dir() / "umap")
    if loaded.benchmarks:
        console.print("first run: imported the benchmarks (" + ", ".join(r.benchmark for r in loaded.benchmarks) + ")")
    if loaded.benchmarks_missing is not None:
        console.print(missing_benchmarks_line(loaded.benchmarks_missing))
    if loaded.added:
        console.print("first run: loaded the demo store (" + ", ".join(f"{t} +{n}" for t, n in loaded.added.items())
                      + ")")
        start_background_views(store, config.cache_dir())
        console.print("first run: the dashboard's first views are being computed in a background process (the "
                      "pages that need one show how far; `forge store views` too)")


def app_command(
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 8501,
) -> None:
    """Start the dashboard (Streamlit) on http://127.0.0.1:PORT until Ctrl-C."""
    import os
    import signal
    import subprocess

    load_demo_on_first_run(open_store(), config.demo_dir())
    root = config.PROJECT_ROOT
    command = [sys.executable, "-m", "app.server", "run", str(root / "app" / "main.py"),
               "--server.address", "127.0.0.1", "--server.port", str(port),
               "--server.headless", "true", "--browser.gatherUsageStats", "false",
               "--client.toolbarMode", "minimal",
               # No full garbage collection after every script run: with torch and the outcome tables
               # loaded it took about a third of a Pareto slider step (Python's own collector still runs).
               "--runner.postScriptGC", "false",
               # No watching of the source files for changes (a development aid): its polling took a
               # share of a core all the time.
               "--server.fileWatcherType", "none"]
    python_path = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
    console.print(f"FORGE dashboard on http://127.0.0.1:{port} (Ctrl-C to stop)")
    process = subprocess.Popen(command, cwd=root, env={**os.environ, "PYTHONPATH": python_path})
    signal.signal(signal.SIGTERM, lambda *_: process.terminate())
    try:
        code = process.wait()
    except KeyboardInterrupt:
        process.send_signal(signal.SIGINT)
        code = process.wait()
    raise typer.Exit(code)

