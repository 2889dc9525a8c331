"""Where FORGE finds its inputs and keeps its outputs; each path can be overridden by the environment."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TypeVar

from forge_core.errors import InvalidInput

PROJECT_ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")


def benchmarks_dir() -> Path:
    """The benchmark files, read in place: `FORGE_BENCHMARKS_DIR` or `../shared/benchmarks`."""
    configured = os.environ.get("FORGE_BENCHMARKS_DIR")
    return Path(configured) if configured else PROJECT_ROOT.parent / "shared" / "benchmarks"


def store_path() -> Path:
    """The DuckDB store: `FORGE_STORE` or `data/forge.duckdb`."""
    configured = os.environ.get("FORGE_STORE")
    return Path(configured) if configured else PROJECT_ROOT / "data" / "forge.duckdb"


def cache_dir() -> Path:
    """Derived, rebuildable files (BM25 indexes): `FORGE_CACHE_DIR` or `data/cache`."""
    configured = os.environ.get("FORGE_CACHE_DIR")
    return Path(configured) if configured else PROJECT_ROOT / "data" / "cache"


def store_lock_wait_s() -> float:
    """How long to wait for another process to release the store: `FORGE_STORE_LOCK_WAIT`
    seconds, 60 by default."""
    configured = os.environ.get("FORGE_STORE_LOCK_WAIT")
    try:
        return float(configured) if configured else 60.0
    except ValueError:
        raise InvalidInput(f"FORGE_STORE_LOCK_WAIT is a number of seconds, not '{configured}'") from None


def host_threads() -> int:
    """The CPU threads an embedded host's llama.cpp server computes with: `FORGE_HOST_THREADS`, or
    one per core. Set fewer on a machine busy with other work: llama.cpp's threads wait for each other
    at every layer, so one thread that shares its core with another process slows them all."""
    configured = os.environ.get("FORGE_HOST_THREADS")
    if not configured:
        return os.cpu_count() or 2
    if not configured.isdigit() or int(configured) < 1:
        raise InvalidInput(f"FORGE_HOST_THREADS is a number of threads (1 or more), not '{configured}'")
    return int(configured)


def models_dir() -> Path:
    """Model weights, outside git: `FORGE_MODELS_DIR` or `~/.cache/forge/models`."""
    configured = os.environ.get("FORGE_MODELS_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "forge" / "models"


def demo_dir() -> Path:
    """The committed demo outcomes (Parquet) loaded into a new store on first run."""
    return PROJECT_ROOT / "data" / "demo"


def builtin_or_stored(kind: str, name: str, builtins: Mapping[str, T], stored: Callable[[str], dict | None],
                      stored_names: Callable[[], Iterable[str]], build: Callable[[dict], T]) -> T:
    """A built-in or stored configuration of `kind` ("host", "retriever") by name: the built-in one,
    else `build(stored(name))`, else a one-line error naming the known ones and `forge KIND add`."""
    if name in builtins:
        return builtins[name]
    record = stored(name)
    if record is None:
        known = ", ".join([*builtins, *stored_names()])
        raise InvalidInput(f"unknown {kind} '{name}' (known: {known}); add one with `forge {kind} add`")
    return build(record)
