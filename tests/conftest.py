"""Shared fixtures: temporary stores, the real benchmark files, and the tiny embedded host. Helpers
that are not fixtures live in `support/` (`support.resources`, `support.stores`)."""

from __future__ import annotations

import fcntl
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from forge_core import config
from forge_core.data.importers import BENCHMARK_FILES
from forge_core.data.importing import import_benchmarks
from forge_core.hosts.base import HostConfig
from forge_core.hosts.embedded import EmbeddedServer
from forge_core.hosts.registry import BUILTIN_HOSTS
from forge_core.routing.features import compute_features
from forge_core.store import Store

from support.counting_host import CountingHost
from support.offline_forge import OfflineDemo, announce_counting_host
from support.resources import require_demo_export, require_or_skip, require_tiny_model
from support.stores import copy_store, synthetic_outcomes

# Tests interrupt the command line with SIGINT as Ctrl-C would. A test run started in the background
# by a non-interactive shell ignores SIGINT, and the commands it starts would inherit that: a Python
# handler here is not inherited, so they get the default back.
signal.signal(signal.SIGINT, signal.default_int_handler)


# Cache folders whose files are named by a digest of what they are built from (BM25 indexes by
# corpus, ONNX exports by weights, the Action map's UMAP and cluster arrays by settings and input
# matrix) and written atomically: the tests share them instead of rebuilding the same files in every
# test's own cache (about 140 index builds in a run; the pages and dashboards of the stores copied
# from `outcome_store` map the same query embeddings). tests/reports/test_action_map.py checks the
# arrays' own caching in a folder of its own.
CONTENT_ADDRESSED_CACHES = ("bm25", "embedders", "umap")


# The test files that read the session's offline demo: one pytest-xdist work unit, so the commands
# they share (the same stored runs) run once a session, and the crossfit reports the results
# documents compute are kept in its cache for the commands that print them beside their sibling runs.
OFFLINE_DEMO_FILES = ("tests/cli/test_stored_results.py", "tests/test_documented_commands.py",
                      "tests/test_results_docs.py")
# The files that start a local Ray instance: one work unit too, so one worker runs one instance (its GCS,
# raylet, agents and idle workers) instead of each worker its own, on a machine whose cores are busy.
RAY_TEST_FOLDER = "tests/cluster/"


def pytest_configure(config: pytest.Config) -> None:
    """Each pytest-xdist worker's embedded hosts compute with its share of the cores (`FORGE_HOST_THREADS`,
    inherited by the commands the tests start): llama.cpp with a thread per core beside a busy worker
    ran the tiny-host tests 2.5-3x slower than with one thread each (measured beside a busy core)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        os.environ.setdefault("FORGE_HOST_THREADS", str(max(1, (os.cpu_count() or 2) // workers)))


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # before pytest-xdist's own choice of scheduler
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """`--dist loadfile` (`scripts/test.sh` runs the suite on several workers) with the offline-demo
    files as one work unit and the Ray files as another: each file runs whole on one worker, so its
    module fixtures are built once. (Groups of `--dist loadgroup` added by a hook are lost on pytest
    9.2: pytest-xdist #1386.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FileUnits(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            file = super()._split_scope(nodeid)
            if file in OFFLINE_DEMO_FILES:
                return "offline-demo"
            return "ray-cluster" if file.startswith(RAY_TEST_FOLDER) else file

    return FileUnits(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every file that reads the offline demo is one of `OFFLINE_DEMO_FILES`."""
    strays = {item.nodeid.split("::")[0] for item in items if "offline_demo" in getattr(item, "fixturenames", ())}
    strays -= set(OFFLINE_DEMO_FILES)
    if strays:
        raise pytest.UsageError(f"add {sorted(strays)} to OFFLINE_DEMO_FILES in tests/conftest.py")


@pytest.fixture(scope="session")
def shared_cache_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the content-addressed cache folders live for the whole session."""
    root = tmp_path_factory.mktemp("shared-cache")
    for name in CONTENT_ADDRESSED_CACHES:
        (root / name).mkdir()
    return root


@pytest.fixture(autouse=True)
def isolated_paths(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
                   shared_cache_root: Path) -> None:
    """Every test gets its own store and cache unless it sets them itself (never data/); the
    cache's content-addressed folders are the session's shared ones."""
    root = tmp_path_factory.mktemp("forge")
    cache = root / "cache"
    cache.mkdir()
    for name in CONTENT_ADDRESSED_CACHES:
        (cache / name).symlink_to(shared_cache_root / name, target_is_directory=True)
    monkeypatch.setenv("FORGE_STORE", str(root / "store.duckdb"))
    monkeypatch.setenv("FORGE_CACHE_DIR", str(cache))


@pytest.fixture(scope="session")
def benchmarks_root() -> Path:
    """The real benchmark files, or a skip naming where they were looked for."""
    root = config.benchmarks_dir()
    if not all((root / spec.relative_path).is_file() for spec in BENCHMARK_FILES.values()):
        require_or_skip(f"benchmark files not found under {root} (set FORGE_BENCHMARKS_DIR)")
    return root


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], Store]) -> Store:
    """A session store built once a run: under pytest-xdist, the first worker that asks builds it
    (`build(folder)`, under a file lock in the folder the run's workers share) and every worker,
    the builder too, gets its own copy of the file; without workers, built here."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return build(tmp_path_factory.mktemp(name))
    shared = tmp_path_factory.getbasetemp().parent  # this run's folder above each worker's own
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if the build fails
        built = shared / f"{name}.built"  # the store file's path, written once the build is done
        if not built.exists():
            folder = shared / name
            folder.mkdir()
            built.write_text(str(build(folder).path))
        source = Store(Path(built.read_text()))
    return copy_store(source, tmp_path_factory.mktemp(name))


@pytest.fixture(scope="session")
def imported_store(tmp_path_factory: pytest.TempPathFactory, benchmarks_root: Path) -> Store:
    """A store with all five real benchmarks imported (shared, read-only by convention; imported
    once a run, `built_once`)."""
    def build(folder: Path) -> Store:
        store = Store(folder / "store.duckdb")
        import_benchmarks(store, benchmarks_root)
        return store

    return built_once(tmp_path_factory, "imported", build)


@pytest.fixture(scope="session")
def offline_demo(imported_store: Store, tmp_path_factory: pytest.TempPathFactory,
                 shared_cache_root: Path) -> Iterator[OfflineDemo]:
    """One fresh demo store (`forge data import && forge store load-demo`) for the commands that print a
    stored result, its cache (the session's content-addressed folders, a counting host announced as every
    embedded host's server) and an empty models directory; each command runs once a session."""
    require_demo_export()
    root = tmp_path_factory.mktemp("offline-demo")
    store = copy_store(imported_store, root / "store")
    store.load_export_once(config.demo_dir())
    cache = root / "cache"
    cache.mkdir()
    for shared in shared_cache_root.iterdir():
        (cache / shared.name).symlink_to(shared, target_is_directory=True)
    with CountingHost() as host:
        announce_counting_host(store, cache, host)
        yield OfflineDemo(store, cache, root / "no-models", host)


@pytest.fixture(scope="session")
def tiny_server() -> Iterator[HostConfig]:
    """The real SmolLM2-135M model served by llama.cpp on 127.0.0.1 for the whole session."""
    require_tiny_model()
    host = BUILTIN_HOSTS["embedded-tiny"]
    with EmbeddedServer(host.model) as server:
        yield HostConfig(**{**host.__dict__, "base_url": server.info.base_url})


@pytest.fixture(scope="session")
def outcome_store(tmp_path_factory: pytest.TempPathFactory, benchmarks_root: Path) -> Store:
    """A small store with synthetic outcomes on real questions of three benchmarks (built once a
    run, `built_once`: its features embed the questions and their top passages)."""
    def build(folder: Path) -> Store:
        store = Store(folder / "store.duckdb")
        benchmarks = ("musique", "popqa", "2wikimultihopqa")
        import_benchmarks(store, benchmarks_root, list(benchmarks))
        synthetic_outcomes(store, "synthetic-host", {"train": 40, "dev": 20, "test": 20}, benchmarks)
        compute_features(store, "synthetic-host")
        return store

    return built_once(tmp_path_factory, "outcomes", build)


@pytest.fixture(scope="session")
def trained_store(tmp_path_factory: pytest.TempPathFactory, outcome_store: Store) -> tuple[Store, str]:
    """A copy of `outcome_store` with one Lite Stage-1 checkpoint trained on it as a job (5
    epochs, so its curves are in the job logs); read-only by convention (copy it to write)."""
    from forge_core.training.request import TrainRequest
    from forge_core.training.settings import Stage1Config
    from forge_core.training.trainer import train_router_job

    store = copy_store(outcome_store, tmp_path_factory.mktemp("trained"))
    checkpoint_id = train_router_job(store, TrainRequest(host="synthetic-host", variant="lite",
                                                         stage1=Stage1Config(max_epochs=5)))
    return store, checkpoint_id


@pytest.fixture(scope="session")
def conditioned_store(tmp_path_factory: pytest.TempPathFactory, trained_store: tuple[Store, str]) -> tuple[Store, str]:
    """A copy of `trained_store` with a cost-conditioned Lite Stage-1 router beside its per-weight
    one; the conditioned checkpoint's id. Read-only by convention (copy it to write)."""
    from forge_core.routing.conditioning import CostConditioning
    from forge_core.training.request import TrainRequest
    from forge_core.training.settings import Stage1Config
    from forge_core.training.trainer import train_router

    store = copy_store(trained_store[0], tmp_path_factory.mktemp("conditioned"))
    checkpoint_id = train_router(store, TrainRequest(host="synthetic-host", variant="lite",
                                                     conditioning=CostConditioning(),
                                                     stage1=Stage1Config(max_epochs=30, patience=5)))
    return store, checkpoint_id


@pytest.fixture(scope="session")
def two_host_store(outcome_store: Store, tmp_path_factory: pytest.TempPathFactory) -> Store:
    """`outcome_store` plus a target host, "knowing-host", that answers long questions without
    evidence (a host that knows more than "synthetic-host"); read-only by convention (copy it to write)."""
    store = copy_store(outcome_store, tmp_path_factory.mktemp("transfer"))
    synthetic_outcomes(store, "knowing-host", {"train": 40, "dev": 20, "test": 20},
                       ("musique", "popqa", "2wikimultihopqa"), direct_f1_long=0.85)
    compute_features(store, "knowing-host")
    return store

