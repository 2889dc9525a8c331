"""The pages' reads of the store as it is (its hosts, counts, configurations, checkpoints: `data`'s
functions keyed by `CURRENT_STORE_KEY`) are kept until the store changes: a page visited again reads
nothing (each read opened the store file, tens of milliseconds), and a write shows at the next read (it
waited up to 10 s when the reads were kept for a fixed time)."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st

from app import data
from forge_core.records import ArmOutcome
from forge_core.store import Store, utc_now


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
