"""The dashboard's first views computed in a background process: progress after every view, one
process at a time (a lock), and what a page waits for."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from forge_core.errors import MissingStep
from forge_core.evaluation import transfer_request
from forge_core.precompute.background_views import PROGRESS_DIR, compute_views, start_background_views, views_progress
from forge_core.precompute.view_cache import ViewStep, default_transfer_request, view_name, view_steps
from forge_core.store import Store


def recording_step(name: str, seen: list, cache_dir: Path) -> ViewStep:
    """A view whose computation records what `views_progress` said while it ran."""
    return ViewStep(name, f"the {name} view", lambda: seen.append((name, views_progress(cache_dir))))


def test_progress_is_recorded_after_every_view_and_a_finished_run_keeps_the_rows(tmp_path: Path) -> None:
    store, cache = Store(tmp_path / "store.duckdb"), tmp_path / "cache"
    seen: list = []
    steps = [recording_step("a/h", seen, cache), recording_step("b/h", seen, cache)]

    assert compute_views(store, cache, steps)

    (first, during_first), (second, during_second) = seen
    assert (first, second) == ("a/h", "b/h")
    assert during_first.running and during_first.done == () and during_first.current == "the a/h view"
    assert during_first.waiting_for("a/h") and during_first.waiting_for("x/h", "b/h")
    assert not during_first.waiting_for("x/h")  # a view it does not plan is the page's own to compute
    assert during_second.done == ("a/h",) and during_second.fraction == 0.5
    finished = views_progress(cache)
    assert not finished.running and finished.done == ("a/h", "b/h") and finished.finished
    assert not finished.waiting_for("a/h", "b/h")


def test_a_view_the_store_cannot_make_yet_is_passed_and_a_failure_is_recorded(tmp_path: Path) -> None:
    store, cache = Store(tmp_path / "store.duckdb"), tmp_path / "cache"

    def missing() -> None:
        raise MissingStep("no crossfit run")

    def broken() -> None:
        raise RuntimeError("disk full")

    compute_views(store, cache, [ViewStep("a/h", "a", missing)])
    assert views_progress(cache).done == ("a/h",)
    with pytest.raises(RuntimeError):
        compute_views(store, cache, [ViewStep("a/h", "a", broken), ViewStep("b/h", "b", lambda: None)])
    stopped = views_progress(cache)
    assert stopped.done == () and "disk full" in stopped.error and not stopped.finished
    assert not stopped.running and not stopped.waiting_for("b/h")  # a page computes it itself


def test_one_process_at_a_time(tmp_path: Path) -> None:
    store, cache = Store(tmp_path / "store.duckdb"), tmp_path / "cache"
    started, release = threading.Event(), threading.Event()
    blocking = ViewStep("a/h", "a", lambda: started.set() or release.wait())
    worker = threading.Thread(target=compute_views, args=(store, cache, [blocking]))
    worker.start()
    try:
        started.wait()
        assert views_progress(cache).running and views_progress(cache).waiting_for("a/h")
        assert not compute_views(store, cache, [ViewStep("b/h", "b", lambda: pytest.fail("ran twice"))])
        assert not start_background_views(store, cache)
    finally:
        release.set()
        worker.join()
    assert not views_progress(cache).running


def test_the_background_process_computes_and_releases_the_lock(tmp_path: Path) -> None:
    """A real detached process, on a store with no outcomes (nothing to compute): it writes a finished
    progress and leaves."""
    store, cache = Store(tmp_path / "store.duckdb"), tmp_path / "cache"
    store.benchmark_stats()  # the file exists
    assert start_background_views(store, cache)
    progress_file = cache / PROGRESS_DIR / "progress.json"
    while not (progress_file.exists() and "finished_at" in json.loads(progress_file.read_text())):
        threading.Event().wait(0.1)  # a hang ends at pytest's --timeout
    while views_progress(cache).running:  # the lock is let go as the process ends
        threading.Event().wait(0.1)
    progress = views_progress(cache)
    assert progress.planned == () and progress.fraction == 1.0 and progress.finished
    assert (cache / PROGRESS_DIR / "log.txt").exists()


def test_view_steps_name_what_the_pages_wait_for(outcome_store: Store, tmp_path: Path) -> None:
    host = outcome_store.hosts_with_outcomes()[0]
    names = [step.name for step in view_steps(outcome_store, tmp_path)]
    kinds = ["gold_recall", "crossfit", "pareto", "decision", "action_map", "demo", "audit", "any_weights"]
    assert names == [view_name(kind, host) for kind in kinds]  # one host: no transfer; the fold routers last


def test_the_transfer_view_is_of_the_first_hosts_with_routers_at_the_default_weights(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with_routers = {("b", "c")}  # the host pairs both of whose routers are stored at the default weights

    def stored_weights(store: Store, request) -> list:
        return [request.weights] if (request.source_host, request.target_host) in with_routers else []

    monkeypatch.setattr(transfer_request, "stored_transfer_weights", stored_weights)
    store = Store(tmp_path / "store.duckdb")

    def opening(hosts: list[str]) -> tuple[str, str] | None:
        request = default_transfer_request(store, hosts)
        return None if request is None else (request.source_host, request.target_host)

    assert opening(["a", "b", "c"]) == ("b", "c")  # not the first two: the page would only offer to train
    with_routers.add(("c", "a"))
    assert opening(["a", "b", "c"]) == ("b", "c")  # the first source first
    with_routers.clear()
    assert opening(["a", "b", "c"]) == ("a", "b")  # none has them: the first two hosts
    assert opening(["a"]) is None
