"""Shared fixtures: temporary stores, the real benchmark files, and the tiny embedded host."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from forge_core import config
from forge_core.data_import import import_benchmarks
from forge_core.hosts.base import HostConfig
from forge_core.hosts.embedded import EmbeddedServer
from forge_core.hosts.registry import BUILTIN_HOSTS
from forge_core.importers import BENCHMARK_FILES
from forge_core.models import is_pulled
from forge_core.store import Store


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
        pytest.skip(f"benchmark files not found under {root} (set FORGE_BENCHMARKS_DIR)")
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
    host = BUILTIN_HOSTS["embedded-tiny"]
    if not is_pulled(host.model, config.models_dir()):
        pytest.skip("tiny model not pulled: run `forge host pull smollm2-135m` (scripts/setup.sh does)")
    with EmbeddedServer(host.model) as server:
        yield HostConfig(**{**host.__dict__, "base_url": server.info.base_url})
