"""Shared fixtures: temporary stores, the real benchmark files, and the tiny embedded host."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

from forge_core import config
from forge_core.data.importers import BENCHMARK_FILES
from forge_core.data.importing import import_benchmarks
from forge_core.hosts.base import HostConfig
from forge_core.hosts.embedded import EmbeddedServer
from forge_core.hosts.models import is_pulled
from forge_core.hosts.registry import BUILTIN_HOSTS
from forge_core.routing.features import compute_features
from forge_core.store import Store


def require_or_skip(reason: str) -> NoReturn:
    """Skip a test whose resource (benchmark files, tiny model, chromium, demo export, test extra)
    is missing; under FORGE_REQUIRE_ALL=1 (as `.ci/run` sets) fail it instead, so CI cannot pass
    by skipping."""
    if os.environ.get("FORGE_REQUIRE_ALL") == "1":
        pytest.fail(f"{reason} (FORGE_REQUIRE_ALL=1: a missing resource fails the run)", pytrace=False)
    pytest.skip(reason)


def require_module(name: str, reason: str) -> ModuleType:
    """The imported module, or `require_or_skip(reason)` when it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        require_or_skip(reason)


def require_tiny_model() -> None:
    """The tiny SmolLM2 model must be pulled (see `require_or_skip`)."""
    if not is_pulled(BUILTIN_HOSTS["embedded-tiny"].model, config.models_dir()):
        require_or_skip("tiny model not pulled: run `forge host pull smollm2-135m` (scripts/setup.sh does)")


def require_demo_export() -> None:
    """The committed demo export must be there (see `require_or_skip`)."""
    if not (config.demo_dir() / "arm_outcomes.parquet").exists():
        require_or_skip(f"no committed demo export in {config.demo_dir()}")


@pytest.fixture(autouse=True)
def isolated_paths(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own store and cache unless it sets them itself (never data/)."""
    root = tmp_path_factory.mktemp("forge")
    monkeypatch.setenv("FORGE_STORE", str(root / "store.duckdb"))
    monkeypatch.setenv("FORGE_CACHE_DIR", str(root / "cache"))


@pytest.fixture(scope="session")
def benchmarks_root() -> Path:
    """The real benchmark files, or a skip naming where they were looked for."""
    root = config.benchmarks_dir()
    if not all((root / spec.relative_path).is_file() for spec in BENCHMARK_FILES.values()):
        require_or_skip(f"benchmark files not found under {root} (set FORGE_BENCHMARKS_DIR)")
    return root


@pytest.fixture(scope="session")
def imported_store(tmp_path_factory: pytest.TempPathFactory, benchmarks_root: Path) -> Store:
    """A store with all five real benchmarks imported (shared, read-only by convention)."""
    store = Store(tmp_path_factory.mktemp("imported") / "store.duckdb")
    import_benchmarks(store, benchmarks_root)
    return store


@pytest.fixture(scope="session")
def tiny_server() -> Iterator[HostConfig]:
    """The real SmolLM2-135M model served by llama.cpp on 127.0.0.1 for the whole session."""
    require_tiny_model()
    host = BUILTIN_HOSTS["embedded-tiny"]
    with EmbeddedServer(host.model) as server:
        yield HostConfig(**{**host.__dict__, "base_url": server.info.base_url})


def synthetic_outcomes(store: Store, host: str, per_split: dict[str, int], benchmarks: tuple[str, ...]) -> None:
    """Test data: arm and probe outcomes for real imported questions, with F1 following a rule a
    router can learn (Raw helps long questions, Direct suffices for short ones) and token costs
    growing with the evidence. Only for tests of training, policies and evaluation."""
    import numpy as np

    from forge_core.arms import alphabet
    from forge_core.records import ArmOutcome, ProbeOutcome
    from forge_core.store import utc_now

    rng = np.random.default_rng(0)
    now = utc_now()
    arm_rows, probe_rows = [], []
    for benchmark in benchmarks:
        for split, count in per_split.items():
            ids = store.split_ids(benchmark, split)[:count]
            for example in store.examples(benchmark, ids):
                long_question = len(example.question.split()) > 12
                for arm in alphabet(6):
                    base = {"direct": 0.6 if not long_question else 0.1, "summary": 0.45, "raw": 0.8 if long_question else 0.3}
                    f1 = float(np.clip(base[arm.support] + rng.normal(0, 0.05) - (0.05 if arm.thinking == "cot" else 0), 0, 1))
                    tokens_in = {"direct": 60, "summary": 260, "raw": 700}[arm.support] + int(rng.integers(0, 40))
                    tokens_out = 8 if arm.thinking == "no_think" else 150
                    arm_rows.append(ArmOutcome(
                        host, benchmark, example.example_id, arm.name, f"answer {f1:.2f}", "x", f1, float(f1 > 0.5),
                        tokens_in, tokens_out, 0, 100.0 + tokens_in, None, 1, "synthetic", now, now))
                for probe in ("greedy", "sample1", "sample2", "sample3"):
                    text = "I don't know" if long_question else example.answers[0]
                    probe_rows.append(ProbeOutcome(host, benchmark, example.example_id, probe, text, 60, 5,
                                                   80.0, None, "synthetic", now))
    store.write_arm_outcome(*arm_rows)
    store.write_probe_outcome(*probe_rows)


@pytest.fixture(scope="session")
def outcome_store(tmp_path_factory: pytest.TempPathFactory, benchmarks_root: Path) -> Store:
    """A small store with synthetic outcomes on real questions of three benchmarks."""
    store = Store(tmp_path_factory.mktemp("outcomes") / "store.duckdb")
    benchmarks = ("musique", "popqa", "2wikimultihopqa")
    import_benchmarks(store, benchmarks_root, list(benchmarks))
    synthetic_outcomes(store, "synthetic-host", {"train": 40, "dev": 20, "test": 20}, benchmarks)
    compute_features(store, "synthetic-host")
    return store


def copy_store(source: Store, directory: Path) -> Store:
    """A private copy of a store file (for tests that write to a shared fixture's data)."""
    import shutil

    directory.mkdir(parents=True, exist_ok=True)
    target = directory / source.path.name
    shutil.copyfile(source.path, target)
    wal = source.path.with_name(source.path.name + ".wal")
    if wal.exists():
        shutil.copyfile(wal, target.with_name(target.name + ".wal"))
    return Store(target)


@pytest.fixture(scope="session")
def trained_store(tmp_path_factory: pytest.TempPathFactory, outcome_store: Store) -> tuple[Store, str]:
    """A copy of `outcome_store` with one Lite Stage-1 checkpoint trained on it as a job (5
    epochs, so its curves are in the job logs); read-only by convention (copy it to write)."""
    from forge_core.training.stage1 import Stage1Config
    from forge_core.training.trainer import TrainRequest, train_router_job

    store = copy_store(outcome_store, tmp_path_factory.mktemp("trained"))
    checkpoint_id = train_router_job(store, TrainRequest(host="synthetic-host", variant="lite",
                                                         stage1=Stage1Config(max_epochs=5)))
    return store, checkpoint_id
