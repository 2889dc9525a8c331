"""The DuckDB store: schema, migrations and every SQL statement FORGE runs.

DuckDB lets one process hold a database file read-write and blocks the others meanwhile. FORGE
therefore never keeps a connection open: every operation opens the file, does its work inside a
transaction and closes it again, retrying for a while when another process holds the lock. A long
job (enumeration, training) writes in small batches, so the dashboard can read in between.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from forge_core.records import Document, Example

log = logging.getLogger(__name__)

LOCK_WAIT_SECONDS = 60.0  # how long to wait for another process to release the file

# Each entry moves the schema one version up; never edit a released entry, append a new one.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR);
    CREATE TABLE imports (
        benchmark VARCHAR PRIMARY KEY, source_path VARCHAR, source_sha256 VARCHAR,
        n_examples INTEGER, n_documents INTEGER, imported_at TIMESTAMP);
    CREATE TABLE examples (
        benchmark VARCHAR, example_id VARCHAR, position INTEGER, question VARCHAR,
        answers VARCHAR[], evidence VARCHAR[], PRIMARY KEY (benchmark, example_id));
    CREATE TABLE documents (
        benchmark VARCHAR, doc_id VARCHAR, position INTEGER, title VARCHAR, text VARCHAR,
        PRIMARY KEY (benchmark, doc_id));
    CREATE TABLE split_manifests (
        benchmark VARCHAR, split_seed INTEGER, source_sha256 VARCHAR,
        n_train INTEGER, n_dev INTEGER, n_test INTEGER, created_at TIMESTAMP,
        PRIMARY KEY (benchmark, split_seed));
    CREATE TABLE splits (
        benchmark VARCHAR, split_seed INTEGER, example_id VARCHAR, split VARCHAR,
        PRIMARY KEY (benchmark, split_seed, example_id));
    CREATE TABLE hosts (name VARCHAR PRIMARY KEY, config JSON, updated_at TIMESTAMP);
    CREATE TABLE arm_outcomes (
        host VARCHAR, benchmark VARCHAR, example_id VARCHAR, arm VARCHAR,
        answer VARCHAR, extracted VARCHAR, f1 DOUBLE, em DOUBLE,
        tokens_in INTEGER, tokens_out INTEGER, tokens_reasoning INTEGER, latency_ms DOUBLE,
        error VARCHAR, attempts INTEGER, host_config_hash VARCHAR,
        started_at TIMESTAMP, finished_at TIMESTAMP,
        PRIMARY KEY (host, benchmark, example_id, arm));
    CREATE TABLE probe_outcomes (
        host VARCHAR, benchmark VARCHAR, example_id VARCHAR, probe VARCHAR,
        answer VARCHAR, tokens_in INTEGER, tokens_out INTEGER, latency_ms DOUBLE,
        error VARCHAR, host_config_hash VARCHAR, finished_at TIMESTAMP,
        PRIMARY KEY (host, benchmark, example_id, probe));
    CREATE TABLE features (
        host VARCHAR, benchmark VARCHAR, example_id VARCHAR, kind VARCHAR, vals FLOAT[],
        PRIMARY KEY (host, benchmark, example_id, kind));
    CREATE TABLE checkpoints (
        checkpoint_id VARCHAR PRIMARY KEY, created_at TIMESTAMP, stage INTEGER, host VARCHAR,
        variant VARCHAR, n_arms INTEGER, parent VARCHAR, lineage JSON, metrics JSON,
        training_log JSON, state BLOB);
    CREATE TABLE jobs (
        job_id VARCHAR PRIMARY KEY, kind VARCHAR, status VARCHAR, params JSON,
        total INTEGER, done INTEGER, errors INTEGER, message VARCHAR, pid INTEGER,
        started_at TIMESTAMP, updated_at TIMESTAMP, finished_at TIMESTAMP);
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


class StoreError(Exception):
    """A store problem a user can act on (locked too long, newer schema, changed source)."""


def utc_now() -> datetime:
    """Naive UTC timestamp, as DuckDB's TIMESTAMP stores it."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


@dataclass(frozen=True)
class SplitAssignment:
    """The split of every example of one benchmark under one split seed."""

    benchmark: str
    split_seed: int
    source_sha256: str
    splits: dict[str, str]  # example_id -> "train" | "dev" | "test"


class Store:
    """A DuckDB file holding examples, corpora, splits, hosts, outcomes, features and checkpoints."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._migrated = False

    # ------------------------------------------------------------ connections and schema

    @contextlib.contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short-lived connection, waiting while another process holds the file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = self._open_with_wait()
        try:
            if not self._migrated:
                self._migrate(connection)
            yield connection
        finally:
            connection.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection inside one transaction: all of it lands, or none of it."""
        with self.connect() as connection:
            connection.execute("BEGIN TRANSACTION")
            try:
                yield connection
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    def _open_with_wait(self) -> duckdb.DuckDBPyConnection:
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        delay = 0.05
        while True:
            try:
                return duckdb.connect(str(self.path))
            except duckdb.IOException as error:
                if "lock" not in str(error).lower() or time.monotonic() > deadline:
                    raise StoreError(f"cannot open the store {self.path}: {error}") from None
                time.sleep(delay)
                delay = min(delay * 2, 1.0)

    def _migrate(self, connection: duckdb.DuckDBPyConnection) -> None:
        version = self._schema_version(connection)
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"the store {self.path} has schema version {version}, newer than this FORGE "
                f"({SCHEMA_VERSION}); upgrade FORGE or use another store"
            )
        for target in range(version + 1, SCHEMA_VERSION + 1):
            connection.execute("BEGIN TRANSACTION")
            connection.execute(MIGRATIONS[target - 1])
            connection.execute(
                "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(target)]
            )
            connection.execute("COMMIT")
            log.info("store %s migrated to schema version %d", self.path, target)
        self._migrated = True

    @staticmethod
    def _schema_version(connection: duckdb.DuckDBPyConnection) -> int:
        has_meta = connection.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'meta'"
        ).fetchone()[0]
        if not has_meta:
            return 0
        row = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else 0

    def schema_version(self) -> int:
        """The schema version of the file (migrating it first if it is older)."""
        with self.connect() as connection:
            return self._schema_version(connection)

    # ------------------------------------------------------------ benchmark imports

    def import_source_hash(self, benchmark: str) -> str | None:
        """The sha256 of the file a benchmark was imported from, or None if never imported."""
        with self.connect() as connection:
            row = connection.execute(
                "SELECT source_sha256 FROM imports WHERE benchmark = ?", [benchmark]
            ).fetchone()
        return row[0] if row else None

    def import_benchmark(
        self,
        benchmark: str,
        source_path: Path,
        source_sha256: str,
        examples: Sequence[Example],
        documents: Sequence[Document],
        split_assignments: Sequence[SplitAssignment],
    ) -> bool:
        """Import one benchmark in a single transaction; returns False when it was already there.

        Re-importing the same file adds nothing; importing a changed file is refused, because
        its splits and outcomes would no longer match what is stored.
        """
        with self.transaction() as connection:
            row = connection.execute(
                "SELECT source_sha256 FROM imports WHERE benchmark = ?", [benchmark]
            ).fetchone()
            if row and row[0] == source_sha256:
                return False
            if row:
                raise StoreError(
                    f"{source_path} changed since '{benchmark}' was imported (sha256 {row[0][:12]} "
                    f"now {source_sha256[:12]}); import it into a new store (FORGE_STORE)"
                )
            self._insert_examples(connection, examples)
            self._insert_documents(connection, documents)
            for assignment in split_assignments:
                self._insert_splits(connection, assignment)
            connection.execute(
                "INSERT INTO imports VALUES (?, ?, ?, ?, ?, ?)",
                [benchmark, str(source_path), source_sha256, len(examples), len(documents), utc_now()],
            )
        return True

    @staticmethod
    def _insert_examples(connection: duckdb.DuckDBPyConnection, examples: Sequence[Example]) -> None:
        frame = pd.DataFrame(
            {
                "benchmark": [e.benchmark for e in examples],
                "example_id": [e.example_id for e in examples],
                "position": range(len(examples)),
                "question": [e.question for e in examples],
                "answers": [list(e.answers) for e in examples],
                "evidence": [list(e.evidence) for e in examples],
            }
        )
        connection.register("new_examples", frame)
        connection.execute("INSERT INTO examples SELECT * FROM new_examples ON CONFLICT DO NOTHING")
        connection.unregister("new_examples")

    @staticmethod
    def _insert_documents(connection: duckdb.DuckDBPyConnection, documents: Sequence[Document]) -> None:
        frame = pd.DataFrame(
            {
                "benchmark": [d.benchmark for d in documents],
                "doc_id": [d.doc_id for d in documents],
                "position": range(len(documents)),
                "title": [d.title for d in documents],
                "text": [d.text for d in documents],
            }
        )
        connection.register("new_documents", frame)
        connection.execute("INSERT INTO documents SELECT * FROM new_documents ON CONFLICT DO NOTHING")
        connection.unregister("new_documents")

    @staticmethod
    def _insert_splits(connection: duckdb.DuckDBPyConnection, assignment: SplitAssignment) -> None:
        counts = {name: 0 for name in ("train", "dev", "test")}
        for split in assignment.splits.values():
            counts[split] += 1
        connection.execute(
            "INSERT INTO split_manifests VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [assignment.benchmark, assignment.split_seed, assignment.source_sha256,
             counts["train"], counts["dev"], counts["test"], utc_now()],
        )
        frame = pd.DataFrame(
            {
                "benchmark": assignment.benchmark,
                "split_seed": assignment.split_seed,
                "example_id": list(assignment.splits),
                "split": list(assignment.splits.values()),
            }
        )
        connection.register("new_splits", frame)
        connection.execute("INSERT INTO splits SELECT * FROM new_splits ON CONFLICT DO NOTHING")
        connection.unregister("new_splits")

    # ------------------------------------------------------------ reading examples and corpora

    def benchmark_stats(self, split_seed: int = 0) -> dict[str, dict[str, Any]]:
        """Per benchmark: example and document counts and split sizes under `split_seed`."""
        with self.connect() as connection:
            examples = dict(connection.execute(
                "SELECT benchmark, count(*) FROM examples GROUP BY benchmark").fetchall())
            documents = dict(connection.execute(
                "SELECT benchmark, count(*) FROM documents GROUP BY benchmark").fetchall())
            split_rows = connection.execute(
                "SELECT benchmark, split, count(*) FROM splits WHERE split_seed = ? "
                "GROUP BY benchmark, split", [split_seed]).fetchall()
        stats = {
            name: {"examples": count, "documents": documents.get(name, 0),
                   "splits": {"train": 0, "dev": 0, "test": 0}}
            for name, count in sorted(examples.items())
        }
        for benchmark, split, count in split_rows:
            stats[benchmark]["splits"][split] = count
        return stats

    def split_manifests(self) -> list[dict[str, Any]]:
        """Every split manifest: benchmark, seed, source hash and sizes."""
        with self.connect() as connection:
            frame = connection.execute(
                "SELECT * FROM split_manifests ORDER BY benchmark, split_seed").fetchdf()
        return frame.to_dict("records")

    def split_ids(self, benchmark: str, split: str, split_seed: int = 0) -> list[str]:
        """Example ids of one split, in import order."""
        with self.connect() as connection:
            rows = connection.execute(
                "SELECT s.example_id FROM splits s JOIN examples e USING (benchmark, example_id) "
                "WHERE s.benchmark = ? AND s.split = ? AND s.split_seed = ? ORDER BY e.position",
                [benchmark, split, split_seed],
            ).fetchall()
        return [row[0] for row in rows]

    def examples(self, benchmark: str, example_ids: Sequence[str] | None = None) -> list[Example]:
        """Examples of a benchmark in import order, optionally only the given ids."""
        query = "SELECT benchmark, example_id, question, answers, evidence FROM examples WHERE benchmark = ?"
        params: list[Any] = [benchmark]
        if example_ids is not None:
            query += " AND list_contains(?, example_id)"
            params.append(list(example_ids))
        with self.connect() as connection:
            rows = connection.execute(query + " ORDER BY position", params).fetchall()
        return [Example(b, i, q, tuple(a), tuple(ev or ())) for b, i, q, a, ev in rows]

    def documents(self, benchmark: str) -> list[Document]:
        """The benchmark's retrieval corpus in import order (the BM25 index's doc order)."""
        with self.connect() as connection:
            rows = connection.execute(
                "SELECT title, text FROM documents WHERE benchmark = ? ORDER BY position", [benchmark]
            ).fetchall()
        return [Document(benchmark, title, text) for title, text in rows]

    # ------------------------------------------------------------ host configurations

    def save_host_config(self, name: str, host_config: dict[str, Any]) -> None:
        """Add or replace a named host configuration (it never holds a secret)."""
        with self.transaction() as connection:
            connection.execute(
                "INSERT OR REPLACE INTO hosts VALUES (?, ?, ?)", [name, dumps(host_config), utc_now()]
            )

    def host_config(self, name: str) -> dict[str, Any] | None:
        """A stored host configuration, or None."""
        with self.connect() as connection:
            row = connection.execute("SELECT config FROM hosts WHERE name = ?", [name]).fetchone()
        return json.loads(row[0]) if row else None

    def host_names(self) -> list[str]:
        """Names of the stored host configurations."""
        with self.connect() as connection:
            return [r[0] for r in connection.execute("SELECT name FROM hosts ORDER BY name").fetchall()]

    def delete_host_config(self, name: str) -> bool:
        """Remove a stored host configuration; False when there was none."""
        with self.transaction() as connection:
            found = connection.execute("SELECT count(*) FROM hosts WHERE name = ?", [name]).fetchone()[0]
            connection.execute("DELETE FROM hosts WHERE name = ?", [name])
        return bool(found)

    def table_counts(self) -> dict[str, int]:
        """Row count of every table (for diagnostics and idempotence tests)."""
        with self.connect() as connection:
            tables = [r[0] for r in connection.execute(
                "SELECT table_name FROM information_schema.tables ORDER BY table_name").fetchall()]
            return {t: connection.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}


def dumps(value: Any) -> str:
    """JSON for the store's JSON columns: stable key order."""
    return json.dumps(value, sort_keys=True)
