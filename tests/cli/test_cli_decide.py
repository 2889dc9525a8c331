"""`forge decide --json` on a fresh `load-demo` store: the decision at any weights, out of fold,
named, and answered again from the cache. Slow: the first call trains each fold's two conditioned
routers once (44 s on the 2-core machine under load)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from forge_core import config
from forge_core.store import Store

from support.resources import require_demo_export
from support.stores import copy_store

CACHED_LIMIT_S = 10.0  # a cached answer: the CLI's start-up and a JSON file (about 2 s unloaded)


@pytest.fixture(scope="module")
def demo_store(imported_store: Store, tmp_path_factory: pytest.TempPathFactory) -> Store:
    require_demo_export()
    store = copy_store(imported_store, tmp_path_factory.mktemp("demo"))
    store.load_export_once(config.demo_dir())
    return store


def decide(store: Store, cache: Path, lambda_in: float, lambda_out: float) -> tuple[dict, float]:
    env = {**os.environ, "FORGE_STORE": str(store.path), "FORGE_CACHE_DIR": str(cache)}
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "forge_core.cli", "decide", "--lambda-in", str(lambda_in),
                             "--lambda-out", str(lambda_out), "--json"], capture_output=True, text=True, env=env,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout), time.perf_counter() - started


@pytest.mark.slow
def test_decide_prefers_the_cheaper_arm_and_answers_again_from_the_cache(demo_store: Store, tmp_path: Path) -> None:
    decided, _ = decide(demo_store, tmp_path / "cache", 0.1, 0.2)
    assert decided["reproduced_share"] == {"forge_full_cond": 1.0, "forge_lite_cond": 1.0}
    assert decided["leader"] == "always_raw"
    assert decided["deploy"] == "always_summary"  # not decidably worse than raw, and 31% fewer tokens
    assert "the cheaper" in decided["sentence"]
    assert decided["serve_command"] == "forge serve --host embedded --arm summary:no_think"
    low, high = decided["gain"]["utility"]["ci"]
    assert low < 0 < high
    assert decided["gain"]["tokens_in"]["difference"] < -100
    other, _ = decide(demo_store, tmp_path / "cache", 0.37, 0.74)
    assert other["lambda_in"] == 0.37 and other["deploy"] in other["policies"]
    assert isinstance(other["decidably_above_floor"], bool) and other["vs_floor"]["ci"][0] <= other["vs_floor"]["ci"][1]
    again, elapsed = decide(demo_store, tmp_path / "cache", 0.37, 0.74)
    assert again == other
    assert elapsed < CACHED_LIMIT_S
