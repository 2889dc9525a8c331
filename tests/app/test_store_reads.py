"""The pages' reads of the store as it is (its hosts, counts, configurations, checkpoints: `data`'s
functions keyed by `CURRENT_STORE_KEY`) are kept until the store changes: a page visited again reads
nothing (each read opened the store file, tens of milliseconds), and a write shows at the next read (it
waited up to 10 s when the reads were kept for a fixed time)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from app import data
from forge_core.records import ArmOutcome
from forge_core.store import Store, utc_now

from support.app_store import PAGE_RUN_TIMEOUT_S
from support.stores import copy_store

PROJECT_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    """An empty store, its file made (the first read makes it: a new version), the dashboard's caches cleared."""
    st.cache_data.clear()
    made = Store(tmp_path / "store.duckdb")
    made.benchmark_stats()
    return made


def one_outcome(host: str) -> ArmOutcome:
    """A stored answer of `host` to one query."""
    now = utc_now()
    return ArmOutcome(host, "popqa", "q1", "direct:no_think", "Paris", "x", 1.0, 1.0, 60, 8, 0, 100.0, None, 1,
                      "test", now, now)


def test_a_read_is_kept_while_the_store_is_unchanged(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = []
    real = Store.hosts_with_outcomes
    monkeypatch.setattr(Store, "hosts_with_outcomes", lambda self: reads.append(1) or real(self))
    for _ in range(3):  # three page runs
        assert data.hosts_with_outcomes(store) == []
    assert len(reads) == 1


def test_a_write_shows_at_the_next_read(store: Store) -> None:
    assert data.hosts_with_outcomes(store) == []
    store.write_outcomes([one_outcome("embedded")], [])
    assert data.hosts_with_outcomes(store) == ["embedded"]


READ_AHEAD = ("benchmark_stats", "hosts_with_outcomes", "checkpoints", "crossfit_runs")  # each opens the store file


@pytest.mark.parametrize("read_ahead", [True, False])
def test_the_pareto_pages_first_run_finds_the_reads_made_ahead(
        conditioned_store: tuple[Store, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        read_ahead: bool) -> None:
    """`forge app`'s server makes the store reads of the pages' first runs once it runs
    (`data.read_store_ahead`): the Pareto page's first run then makes none of them again through the
    dashboard's cached reads (without it, it does; the library's own reads, e.g. in computing features, aside)."""
    store = copy_store(conditioned_store[0], tmp_path)
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    st.cache_data.clear()
    st.cache_resource.clear()
    if read_ahead:
        data.read_store_ahead(data.store())
    reads: list[str] = []
    for name in READ_AHEAD:
        monkeypatch.setattr(Store, name, counted_by_the_dashboard(getattr(Store, name), reads))
    page = AppTest.from_file(str(PROJECT_ROOT / "pages" / "pareto.py"), default_timeout=PAGE_RUN_TIMEOUT_S).run()
    assert not page.exception
    assert (reads == []) == read_ahead, reads


def counted_by_the_dashboard(read: Callable, reads: list[str]) -> Callable:
    """`read` (a `Store` method), its calls from the dashboard's data layer (`app/data.py`) named in `reads`."""
    def counted(self: Store, *args: Any, **kwargs: Any) -> Any:
        if inspect.stack()[1].filename == data.__file__:
            reads.append(read.__name__)
        return read(self, *args, **kwargs)

    return counted
