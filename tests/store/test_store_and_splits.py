"""The store (schema, idempotent and transactional imports) and the seeded splits."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from forge_core.data.importing import import_benchmarks
from forge_core.data.splits import SPLIT_SEEDS, assign_splits, split_sizes
from forge_core.records import Document, Example
from forge_core.store import SCHEMA_VERSION, Store, StoreError


def test_split_sizes_follow_paper_and_adapt() -> None:
    assert split_sizes(9000) == {"train": 1500, "dev": 500, "test": 300}
    assert split_sizes(2300) == {"train": 1500, "dev": 500, "test": 300}
    assert split_sizes(1700) == {"train": 1108, "dev": 370, "test": 222}
    assert split_sizes(350) == {"train": 224, "dev": 76, "test": 50}
    assert split_sizes(153) == {"train": 90, "dev": 33, "test": 30}


def test_splits_are_disjoint_deterministic_and_seeded() -> None:
    ids = [f"q{i}" for i in range(400)]
    first = assign_splits("musique", ids, 0, "sha")
    again = assign_splits("musique", list(reversed(ids)), 0, "sha")
    other_seed = assign_splits("musique", ids, 1, "sha")
    assert first.splits == again.splits  # file order does not matter
    assert first.splits != other_seed.splits
    assert set(first.splits) <= set(ids)  # each id at most once: disjoint by construction
    counts = {name: list(first.splits.values()).count(name) for name in ("train", "dev", "test")}
    assert counts == split_sizes(400)


def test_import_counts_and_disjoint_splits(imported_store: Store) -> None:
    stats = imported_store.benchmark_stats()
    assert {name: row["examples"] for name, row in stats.items()} == {
        "2wikimultihopqa": 153, "fever": 9000, "hotpotqa": 1700, "musique": 350, "popqa": 2500}
    assert all(row["documents"] > 0 for row in stats.values())
    for benchmark in stats:
        for seed in SPLIT_SEEDS:
            ids = {s: set(imported_store.split_ids(benchmark, s, seed)) for s in ("train", "dev", "test")}
            assert not ids["train"] & ids["dev"] and not ids["train"] & ids["test"] and not ids["dev"] & ids["test"]
    manifests = imported_store.split_manifests()
    assert len(manifests) == 5 * len(SPLIT_SEEDS)
    assert all(len(m["source_sha256"]) == 64 for m in manifests)


def test_reimport_changes_nothing(imported_store: Store, benchmarks_root: Path) -> None:
    before = imported_store.table_counts()
    results = import_benchmarks(imported_store, benchmarks_root)
    assert [r.added for r in results] == [False] * 5
    assert imported_store.table_counts() == before


def sample_examples(n: int) -> list[Example]:
    return [Example("musique", f"id{i}", f"Question {i}?", (f"answer {i}",)) for i in range(n)]


def test_failed_import_leaves_store_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(tmp_path / "s.duckdb")
    before = store.table_counts()

    def broken_insert(connection: duckdb.DuckDBPyConnection, assignment: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(Store, "_insert_splits", staticmethod(broken_insert))
    examples = sample_examples(10)
    assignment = assign_splits("musique", [e.example_id for e in examples], 0, "sha")
    with pytest.raises(RuntimeError, match="disk full"):
        store.import_benchmark("musique", Path("m.jsonl"), "sha", examples,
                               [Document("musique", "T", "text")], [assignment])
    assert store.table_counts() == before


def test_changed_source_is_refused(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    examples = sample_examples(5)
    assert store.import_benchmark("musique", Path("m"), "sha-1", examples, [], [])
    assert not store.import_benchmark("musique", Path("m"), "sha-1", examples, [], [])
    with pytest.raises(StoreError, match="changed since"):
        store.import_benchmark("musique", Path("m"), "sha-2", examples, [], [])


def test_schema_version_and_newer_schema_refused(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    assert store.schema_version() == SCHEMA_VERSION
    with duckdb.connect(str(store.path)) as connection:
        connection.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION + 1)])
    with pytest.raises(StoreError, match="newer than this FORGE"):
        Store(store.path).schema_version()


def test_examples_and_documents_roundtrip(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    examples = [Example("musique", "b", "Q?", ("A", "alias"), ("evidence",)), *sample_examples(2)]
    documents = [Document("musique", "T1", "one"), Document("musique", "T2", "two")]
    store.import_benchmark("musique", Path("m"), "sha", examples, documents, [])
    assert store.examples("musique") == examples
    assert store.examples("musique", ["id1"]) == [examples[2]]
    assert store.documents("musique") == documents


def test_threads_of_one_process_share_a_store(tmp_path: Path) -> None:
    """The dashboard reads one store from overlapping script runs (threads): connections opened
    and closed concurrently, some scanning registered frames, must all succeed."""
    import threading

    store = Store(tmp_path / "s.duckdb")
    keys = [("musique", f"q{i}") for i in range(20)]
    store.write_features([("", benchmark, example_id, "structural", [1.0, 2.0]) for benchmark, example_id in keys])
    errors: list[str] = []

    def read() -> None:
        for _ in range(25):
            try:
                assert len(store.feature_rows("", ["structural"], keys[:5])) == 5
                store.jobs()
            except Exception as error:  # noqa: BLE001 (collected for the assertion below)
                errors.append(repr(error))

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
