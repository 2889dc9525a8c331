"""A small store for the dashboard tests: two real benchmarks and synthetic arm outcomes."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from forge_core.arms import SUPPORTS, alphabet
from forge_core.data.importing import import_benchmarks
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import config_hash, save_host_config
from forge_core.records import ArmOutcome
from forge_core.store import Store

APP_BENCHMARKS = ("2wikimultihopqa", "musique")
# How long one AppTest page run may take before it counts as hung: a guard, not a speed check (speed is
# bench/page_renders.py's). A page that scores crossfit runs took over 120 s at load 9-16 on 2 cores; the
# per-test limit (pytest-timeout, 900 s in pyproject.toml) stays above it.
PAGE_RUN_TIMEOUT_S = 600
FAKE_HOST = "fake"  # an OpenAI-compatible test double (tests/support/answering_server.py)
QUERIES_PER_SPLIT = {"train": 3, "test": 2}
FAKE_HOST_HASH = config_hash(HostConfig(name=FAKE_HOST, kind="openai", model="m"))  # enumerating resumes it


def build_app_store(path: Path, benchmarks_root: Path, fake_host_url: str | None = None) -> Store:
    """Import the two smallest benchmarks and store 6-arm outcomes for a few train and test
    queries of each on the fake host (whose configuration points at `fake_host_url`, if given)."""
    store = Store(path)
    import_benchmarks(store, benchmarks_root, APP_BENCHMARKS)
    if fake_host_url:
        save_host_config(store, HostConfig(name=FAKE_HOST, kind="openai", model="m", base_url=fake_host_url,
                                           max_retries=0, timeout_s=10.0))
    for benchmark in APP_BENCHMARKS:
        for split, count in QUERIES_PER_SPLIT.items():
            for position, example_id in enumerate(store.split_ids(benchmark, split)[:count]):
                for index, arm in enumerate(alphabet(6)):
                    store.write_arm_outcome(synthetic_outcome(benchmark, example_id, arm.name, position + index))
    return store


def synthetic_outcome(benchmark: str, example_id: str, arm: str, seed: int) -> ArmOutcome:
    """A deterministic outcome: F1 cycles 0, 0.5, 1; evidence and reasoning cost tokens."""
    support, thinking = arm.split(":")
    now = datetime(2026, 1, 1)
    f1 = (seed % 3) / 2
    return ArmOutcome(FAKE_HOST, benchmark, example_id, arm, "answer", "answer", f1, float(f1 == 1.0),
                      40 + 100 * SUPPORTS.index(support), 5 if thinking == "no_think" else 60, 0, 100.0,
                      None, 1, FAKE_HOST_HASH, now, now)
