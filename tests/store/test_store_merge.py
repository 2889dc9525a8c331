"""Two machines enumerate disjoint shards of one plan; a third merges their exports."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from forge_core.data.importing import import_benchmarks
from forge_core.enumeration.planning import EnumerationPlan, parse_shard, plan_work
from forge_core.enumeration.runner import enumerate_on_host
from forge_core.hosts.base import HostConfig
from forge_core.records import ArmOutcome
from forge_core.store import Store
from forge_core.store.database import arm_outcome_records

from support.answering_server import AnsweringServer

BENCHMARKS = ("musique", "fever")
PLAN = EnumerationPlan(host="shared-host", split="test", benchmarks=BENCHMARKS, per_benchmark=5, concurrency=4)


def machine(tmp_path: Path, name: str, benchmarks_root: Path) -> Store:
    store = Store(tmp_path / f"{name}.duckdb")
    import_benchmarks(store, benchmarks_root, BENCHMARKS)
    return store


def enumerate_part(store: Store, plan: EnumerationPlan, base_url: str) -> None:
    config = HostConfig(name=plan.host, kind="openai", model="m", base_url=base_url, max_concurrency=4)

    report = asyncio.run(enumerate_on_host(store, plan, config))
    assert report.errors == []


def forge(store: Store, *args: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "FORGE_STORE": str(store.path)}
    return subprocess.run([sys.executable, "-m", "forge_core.cli", *args], capture_output=True, text=True,
                          env=environment)


def test_shards_are_disjoint_and_cover_the_plan(tmp_path: Path, benchmarks_root: Path) -> None:
    store = machine(tmp_path, "one", benchmarks_root)
    whole = {(w.example.benchmark, w.example.example_id) for w in plan_work(store, PLAN)}
    parts = [{(w.example.benchmark, w.example.example_id)
              for w in plan_work(store, dataclasses.replace(PLAN, shard=(i, 3)))} for i in (1, 2, 3)]
    assert len(whole) == 10 and set().union(*parts) == whole and sum(map(len, parts)) == 10
    with pytest.raises(ValueError, match="between 1 and 2"):
        parse_shard("3/2")


def test_exports_of_two_machines_merge_into_their_union(tmp_path: Path, benchmarks_root: Path) -> None:
    first, second, merged = (machine(tmp_path, name, benchmarks_root) for name in ("first", "second", "merged"))
    with AnsweringServer() as server:
        enumerate_part(first, dataclasses.replace(PLAN, shard=(1, 2)), server.base_url)
        enumerate_part(second, dataclasses.replace(PLAN, shard=(2, 2)), server.base_url)
    first_rows, second_rows = first.arm_outcomes("shared-host"), second.arm_outcomes("shared-host")
    assert len(first_rows) == 6 * 6 and len(second_rows) == 4 * 6  # queries 1, 3, 5 and 2, 4 of each
    assert not set(first_rows["example_id"]) & set(second_rows["example_id"])
    answered = second_rows.iloc[0]
    merged.write_arm_outcome(*[dataclasses.replace(outcome, error="timed out", f1=None, em=None)
                               for outcome in arm_outcome_records(second_rows.iloc[[0]])])  # an old failure here

    for name, store in (("first", first), ("second", second)):
        store.export_tables(tmp_path / f"export-{name}")
    for name in ("first", "second", "first"):  # the same export twice adds nothing
        result = forge(merged, "store", "import", str(tmp_path / f"export-{name}"), "--json")
        assert result.returncode == 0, result.stderr

    rows = merged.arm_outcomes("shared-host")
    assert len(rows) == 60 and not rows.duplicated(["benchmark", "example_id", "arm"]).any()
    assert rows["error"].isna().all()  # the stored failure was replaced by the answer
    kept = rows.set_index(["example_id", "arm"]).loc[(answered["example_id"], answered["arm"])]
    assert kept["answer"] == answered["answer"]
    coverage = json.loads(forge(merged, "store", "coverage", "--json").stdout)["hosts"]["shared-host"]
    assert coverage["queries_complete"] == 10 and coverage["by_split"] == {"test": 10}
    assert {b: row["complete"] for b, row in coverage["by_benchmark"].items()} == {"fever": 5, "musique": 5}
    assert plan_work(merged, PLAN) == []


def test_import_refuses_a_directory_without_an_export(tmp_path: Path) -> None:
    result = forge(Store(tmp_path / "s.duckdb"), "store", "import", str(tmp_path))
    assert result.returncode == 2 and "holds no exported tables" in result.stderr + result.stdout


def test_one_hosts_export_holds_its_rows_only(tmp_path: Path) -> None:
    store = Store(tmp_path / "two-hosts.duckdb")
    now = datetime.now(timezone.utc)
    store.write_arm_outcome(*[ArmOutcome(host, "fever", "q1", "direct:no_think", "yes", "yes", 1.0, 1.0, 10, 2, 0,
                                         5.0, None, 1, "hash", now, now) for host in ("kept", "other")])

    refused = forge(store, "store", "export", "--host", "kept")
    assert refused.returncode == 2 and "--out" in refused.stderr + refused.stdout
    unknown = forge(store, "store", "export", "--host", "nobody", "--out", str(tmp_path / "none"))
    assert unknown.returncode == 2 and "has no stored outcomes" in unknown.stderr + unknown.stdout

    result = forge(store, "store", "export", "--host", "kept", "--out", str(tmp_path / "kept"))
    assert result.returncode == 0, result.stderr
    assert sorted(path.name for path in (tmp_path / "kept").iterdir()) == ["arm_outcomes.parquet"]
    merged = Store(tmp_path / "merged.duckdb")
    assert forge(merged, "store", "import", str(tmp_path / "kept")).returncode == 0
    assert merged.hosts_with_outcomes() == ["kept"]
