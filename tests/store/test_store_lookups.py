"""Targeted store lookups (one outcome, a host's recent errors, checkpoints by lineage), the
checkpoints' lineage columns (schema version 6) and exports made before them."""

from __future__ import annotations

import hashlib
import json
import shutil
from datetime import datetime
from pathlib import Path

import duckdb
import pytest

from forge_core import config
from forge_core.records import ArmOutcome, HostPrices
from forge_core.store import Store
from forge_core.store.schema import MIGRATIONS, SCHEMA_VERSION

LINEAGE_COLUMNS = "lambda_in, lambda_out, split_seed, seed, embedder, store_snapshot, benchmarks"


def outcome(example_id: str, arm: str, error: str | None, minute: int, host: str = "h") -> ArmOutcome:
    return ArmOutcome(host, "musique", example_id, arm, "answer", "answer", None if error else 1.0,
                      None if error else 1.0, 100, 5, 0, 12.5, error, 1, "hash",
                      datetime(2026, 1, 1, 12, minute), datetime(2026, 1, 1, 12, minute, 30))


def lineage(**changes: object) -> dict:
    return {"lambda_in": 0.1, "lambda_out": 0.2, "split_seed": 0, "seed": 0, "embedder": "minilm",
            "store_snapshot": "snap-a", "benchmarks": None, "tau": 1.0, **changes}


def save(store: Store, checkpoint_id: str, stage: int = 1, variant: str = "lite", **changes: object) -> None:
    store.save_checkpoint({"checkpoint_id": checkpoint_id, "stage": stage, "host": "h", "variant": variant,
                           "n_arms": 6, "parent": None, "lineage": lineage(**changes),
                           "metrics": {"dev_utility": 0.5}, "training_log": []}, b"weights")


def lineage_columns(store: Store) -> list[tuple]:
    with store.connect() as connection:
        return connection.execute(
            f"SELECT checkpoint_id, {LINEAGE_COLUMNS} FROM checkpoints ORDER BY checkpoint_id").fetchall()


def test_arm_outcome_is_one_row_or_none(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    answered, failed = outcome("q1", "raw:no_think", None, 1), outcome("q1", "direct:no_think", "timeout", 2)
    store.write_arm_outcome(answered, failed, outcome("q1", "raw:no_think", None, 3, host="other"))
    assert store.arm_outcome("h", "musique", "q1", "raw:no_think") == answered
    assert store.arm_outcome("h", "musique", "q1", "direct:no_think") == failed
    assert store.arm_outcome("h", "musique", "q2", "raw:no_think") is None
    assert store.arm_outcome("h", "hotpotqa", "q1", "raw:no_think") is None


def test_recent_arm_errors_are_a_hosts_newest_error_rows(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    store.write_arm_outcome(
        outcome("q1", "raw:no_think", "timeout", 1), outcome("q2", "raw:no_think", "refused", 4),
        outcome("q3", "raw:no_think", None, 5), outcome("q4", "raw:cot", "HTTP 500", 3),
        outcome("q5", "raw:cot", "elsewhere", 9, host="other"))
    newest = store.recent_arm_errors("h", limit=2)
    assert [(o.example_id, o.error) for o in newest] == [("q2", "refused"), ("q4", "HTTP 500")]
    assert [o.example_id for o in store.recent_arm_errors("h", limit=5)] == ["q2", "q4", "q1"]
    assert store.recent_arm_errors("nobody", limit=5) == []


def test_answered_arm_tokens_in_are_a_hosts_first_answered_rows(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    store.write_arm_outcome(
        outcome("q2", "raw:no_think", None, 1), outcome("q1", "raw:cot", None, 2),
        outcome("q1", "raw:no_think", "timeout", 3), outcome("q3", "raw:cot", None, 4),
        outcome("q0", "raw:cot", None, 5, host="other"))
    assert store.answered_arm_tokens_in("h", 2) == [("musique", "q1", "raw:cot", 100),
                                                    ("musique", "q2", "raw:no_think", 100)]
    assert len(store.answered_arm_tokens_in("h", 10)) == 3
    assert store.answered_arm_tokens_in("nobody", 10) == []


def test_all_host_prices_are_the_priced_hosts_by_name(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    assert store.all_host_prices() == {}
    store.save_host_prices(HostPrices("b", 0.5, 1.5))
    store.save_host_prices(HostPrices("a", 0.0, 2.0))
    assert store.all_host_prices() == {"a": HostPrices("a", 0.0, 2.0), "b": HostPrices("b", 0.5, 1.5)}
    assert store.all_host_prices()["b"] == store.host_prices("b")


def test_find_checkpoints_selects_by_columns_newest_first(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    save(store, "ckpt-a")
    save(store, "ckpt-b", stage=2)
    save(store, "ckpt-c", lambda_in=0.3)
    save(store, "ckpt-d", benchmarks=["musique"])
    save(store, "ckpt-e", variant="full", store_snapshot="snap-b")
    lite = store.find_checkpoints("h", variant="lite")
    assert list(lite["checkpoint_id"]) == ["ckpt-d", "ckpt-c", "ckpt-b", "ckpt-a"]
    assert list(store.find_checkpoints("h", variant="lite", lambda_in=0.1, benchmarks=None)["checkpoint_id"]) == [
        "ckpt-b", "ckpt-a"]
    assert list(store.find_checkpoints("h", benchmarks=["musique"])["checkpoint_id"]) == ["ckpt-d"]
    assert list(store.find_checkpoints("h", stage=2, seed=0, embedder="minilm")["checkpoint_id"]) == ["ckpt-b"]
    found = store.find_checkpoints("h", store_snapshot="snap-b", lambda_out=0.2, split_seed=0, n_arms=6)
    assert found.columns.tolist() == [
        "checkpoint_id", "created_at", "stage", "store_snapshot", "metrics", "conditioned"]
    assert found[["checkpoint_id", "stage", "store_snapshot", "conditioned"]].values.tolist() == [
        ["ckpt-e", 1, "snap-b", False]]  # a lineage without `conditioning`: a router of one weight pair
    assert json.loads(found["metrics"].iloc[0]) == {"dev_utility": 0.5}
    assert store.find_checkpoints("other", variant="lite").empty
    with pytest.raises(ValueError, match="no column tau"):
        store.find_checkpoints("h", tau=1.0)


def test_save_checkpoint_writes_the_lineage_columns(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    save(store, "ckpt-a", benchmarks=["musique", "popqa"])
    assert lineage_columns(store) == [("ckpt-a", 0.1, 0.2, 0, 0, "minilm", "snap-a", ["musique", "popqa"])]
    record, state = store.checkpoint("ckpt-a")  # the record keeps its keys: the columns are a copy
    assert set(record) == {"checkpoint_id", "created_at", "stage", "host", "variant", "n_arms", "parent",
                           "lineage", "metrics", "training_log", "weights_sha256"}
    assert state == b"weights" and record["weights_sha256"] == hashlib.sha256(b"weights").hexdigest()


def store_before_lineage_columns(path: Path) -> None:
    """A store at schema version 5 with two checkpoints (one lineage without an embedder)."""
    connection = duckdb.connect(str(path))
    for migration in MIGRATIONS[:5]:
        connection.execute(migration)
    connection.execute("INSERT INTO meta VALUES ('schema_version', '5')")
    for checkpoint_id, changes in (("ckpt-old", {"benchmarks": ["fever"]}), ("ckpt-older", {"embedder": None})):
        connection.execute(
            "INSERT INTO checkpoints VALUES (?, ?, 1, 'h', 'lite', 6, NULL, ?, '{}', '[]', ?)",
            [checkpoint_id, datetime(2026, 1, 1), json.dumps(lineage(lambda_out=0.25, seed=3, **changes)), b"w"])
    connection.close()


EXPECTED_OLD = [("ckpt-old", 0.1, 0.25, 0, 3, "minilm", "snap-a", ["fever"]),
                ("ckpt-older", 0.1, 0.25, 0, 3, None, "snap-a", None)]


def test_the_migration_fills_the_lineage_columns_of_earlier_checkpoints(tmp_path: Path) -> None:
    store_before_lineage_columns(tmp_path / "old.duckdb")
    store = Store(tmp_path / "old.duckdb")
    assert store.schema_version() == SCHEMA_VERSION
    assert lineage_columns(store) == EXPECTED_OLD
    assert list(store.find_checkpoints("h", seed=3, embedder=None)["checkpoint_id"]) == ["ckpt-older"]


def test_a_checkpoints_export_made_before_the_lineage_columns_loads(tmp_path: Path) -> None:
    store_before_lineage_columns(tmp_path / "old.duckdb")
    export = tmp_path / "export"
    export.mkdir()
    with duckdb.connect(str(tmp_path / "old.duckdb")) as connection:  # as `forge store export` wrote it then
        connection.execute(f"COPY (SELECT * FROM checkpoints ORDER BY ALL) TO '{export / 'checkpoints.parquet'}'")
    store = Store(tmp_path / "new.duckdb")
    assert store.load_exported(export) == {"checkpoints": 2}
    assert lineage_columns(store) == EXPECTED_OLD
    assert store.load_exported(export) == {"checkpoints": 0}


def test_the_committed_demo_checkpoints_load_with_their_lineage_columns(tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    demo.mkdir()
    shutil.copy(config.demo_dir() / "checkpoints.parquet", demo)
    store = Store(tmp_path / "s.duckdb")
    assert store.load_exported(demo) == {"checkpoints": 21}  # embedded 14 + 4 conditioned (2 recipes), small 3
    with store.connect() as connection:
        rows = connection.execute(f"SELECT lineage, {LINEAGE_COLUMNS} FROM checkpoints").fetchall()
    for lineage_json, *columns in rows:
        recorded = json.loads(lineage_json)
        assert columns == [recorded.get(key) for key in LINEAGE_COLUMNS.split(", ")]


def test_a_new_checkpoints_export_round_trips(tmp_path: Path) -> None:
    source = Store(tmp_path / "source.duckdb")
    save(source, "ckpt-a", benchmarks=["musique"])
    save(source, "ckpt-b", lambda_in=0.05)
    assert source.export_tables(tmp_path / "export", ("checkpoints",)) == {"checkpoints": 2}
    target = Store(tmp_path / "target.duckdb")
    assert target.load_exported(tmp_path / "export") == {"checkpoints": 2}
    with source.connect() as a, target.connect() as b:
        assert b.execute("SELECT * FROM checkpoints ORDER BY ALL").fetchall() == a.execute(
            "SELECT * FROM checkpoints ORDER BY ALL").fetchall()


def test_the_migration_gives_earlier_crossfit_rows_their_policy_kind(tmp_path: Path) -> None:
    connection = duckdb.connect(str(tmp_path / "old.duckdb"))
    for migration in MIGRATIONS[:6]:
        connection.execute(migration)
    connection.execute("INSERT INTO meta VALUES ('schema_version', '6')")
    policies = ("always_raw", "always_direct_cot", "oracle", "forge_full_fallback", "bge_bm25_kl", "ridge_utility",
                "tiermem")
    for policy in policies:
        connection.execute("INSERT INTO crossfit_results VALUES ('run', 0, ?, 'b', 'q', 'raw:no_think', 1, 1, 1, "
                           "1, 1, 1, NULL)", [policy])
    connection.close()
    kinds = Store(tmp_path / "old.duckdb").crossfit_results("run").set_index("policy")["kind"].to_dict()
    assert kinds == {"always_raw": "fixed arm", "always_direct_cot": "fixed arm", "oracle": "oracle",
                     "forge_full_fallback": "router", "bge_bm25_kl": "router", "ridge_utility": "baseline",
                     "tiermem": "baseline"}
