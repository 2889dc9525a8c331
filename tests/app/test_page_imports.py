"""Pages that draw stored results import no training stack: torch, sklearn and scipy.stats are
loaded by the functions that train, score or fit, on first use, not by importing a page's modules
(seconds of CPU on every app start: the first render of whichever page opens first)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import pytest

from forge_core.config import PROJECT_ROOT

PAGES = PROJECT_ROOT / "pages"
HEAVY = ("torch", "sklearn", "scipy.stats", "umap")
# page -> the heavy packages importing its modules may load (none may load torch): the pages whose first render
# reads views kept at `forge store load-demo` (forge_core.precompute.view_cache) load none
ALLOWED = {page: () for page in ("overview.py", "pareto.py", "action_map.py", "live_query.py", "train.py",
                                 "transfer.py")}


def page_imports(page: str) -> list[str]:
    """The modules a page script imports (what Streamlit loads before the page draws anything)."""
    tree = ast.parse((PAGES / page).read_text())
    found = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
            found += [f"{node.module}.{alias.name}" for alias in node.names]
    return found


def heavy_after_importing(modules: list[str], heavy: tuple[str, ...] = HEAVY) -> list[str]:
    """The `heavy` packages in sys.modules of a fresh interpreter after importing `modules`
    (names that are attributes, not modules, are skipped)."""
    script = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ModuleNotFoundError:\n"
        "        pass\n"
        f"print(json.dumps(sorted(h for h in {heavy!r} if h in sys.modules)))\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment,
                          cwd=PROJECT_ROOT, timeout=120, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def test_page_imports_are_parsed():
    assert "app.data" in page_imports("pareto.py")
    assert "forge_core.evaluation.cached.CachedRequest" in page_imports("pareto.py")


@pytest.mark.parametrize("page", sorted(ALLOWED))
def test_page_modules_import_no_training_stack(page):
    loaded = heavy_after_importing(page_imports(page))
    assert "torch" not in loaded
    assert set(loaded) <= set(ALLOWED[page]), f"{page} loads {loaded}"


# What the Overview, the page a first visit opens while the server still imports, does not need: the jobs
# and the enumeration planning (aiohttp, httpx), `forge decide` (the policies, retrieval's scipy.sparse).
# `app.data` and `app.ui` import them in the functions that use them: about a second of a loaded machine.
NOT_FOR_THE_OVERVIEW = ("forge_core.jobs", "forge_core.enumeration.runner", "forge_core.evaluation.decide",
                        "aiohttp", "httpx")


def test_the_overview_imports_no_jobs_planning_or_decision():
    assert heavy_after_importing(page_imports("overview.py"), NOT_FOR_THE_OVERVIEW) == []
