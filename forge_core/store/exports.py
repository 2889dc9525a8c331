"""Exports of the store to Parquet files, and loading them into a store (the demo, or merging
another machine's enumeration): only rows the store lacks are added, never a duplicate."""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Sequence
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow.parquet as pq

from forge_core.store.connection import StoreError, StoreFile, first_row, known_table, utc_now
from forge_core.store.schema import (
    CHECKPOINT_LINEAGE_COLUMNS,
    EXPORTED_TABLES,
    FILL_CHECKPOINT_LINEAGE,
    FILL_CROSSFIT_KINDS,
    LATER_COLUMNS,
)

log = logging.getLogger(__name__)

# The last key column of the outcome tables whose error rows an answered import replaces.
_OUTCOME_KEYS = {"arm_outcomes": "arm", "probe_outcomes": "probe"}


def export_fingerprint(directory: Path) -> str:
    """A short sha256 of the exported Parquet files' names and contents."""
    digest = hashlib.sha256()
    for table in EXPORTED_TABLES:
        for path in table_files(directory, table):
            digest.update(path.name.encode() if path.name != f"{table}.parquet" else table.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def table_files(directory: Path, table: str) -> list[Path]:
    """A table's exported files: `TABLE.parquet`, then its added parts `TABLE.PART.parquet` by name
    (rows appended to an export as a new file, so the existing file is never rewritten)."""
    main = directory / f"{table}.parquet"
    return [path for path in (main, *sorted(directory.glob(f"{table}.*.parquet"))) if path.exists()]


def export_part(store: StoreFile, directory: Path, table: str, part: str, where: str) -> int:
    """Write the rows of `table` that `where` selects (a fixed SQL condition, no user text) as the
    added part `TABLE.PART.parquet`; returns the row count."""
    with store.connect() as connection:
        frame = connection.execute(f"SELECT * FROM {known_table(table)} WHERE {where} ORDER BY ALL").fetchdf()
    temporary = directory / f".{table}.{part}.parquet.tmp"
    frame.to_parquet(temporary, compression="zstd", index=False)
    os.replace(temporary, directory / f"{table}.{part}.parquet")
    return len(frame)


def export_tables(store: StoreFile, directory: Path, tables: Sequence[str] = EXPORTED_TABLES,
                  host: str | None = None) -> dict[str, int]:
    """Write tables to zstd Parquet files (sorted, so exports diff well); returns row counts. With
    `host`, only that host's rows of the tables that name a host, and only the tables with some."""
    directory.mkdir(parents=True, exist_ok=True)
    counts = {}
    for table in tables:
        with store.connect() as connection:
            if host is None:
                frame = connection.execute(f"SELECT * FROM {known_table(table)} ORDER BY ALL").fetchdf()
            elif "host" in _columns(connection, table):
                frame = connection.execute(f"SELECT * FROM {known_table(table)} WHERE host = ? ORDER BY ALL",
                                           [host]).fetchdf()
            else:
                continue
        if host is not None and frame.empty:
            continue
        temporary = directory / f".{table}.parquet.tmp"
        frame.to_parquet(temporary, compression="zstd", index=False)
        os.replace(temporary, directory / f"{table}.parquet")
        counts[table] = len(frame)
    return counts


def load_exported(store: StoreFile, directory: Path, replace_errors: bool = False,
                  tables: Sequence[str] = EXPORTED_TABLES) -> dict[str, int]:
    """Add the rows of exported Parquet files (`export_tables`) of `tables` that the store lacks, one
    transaction per table; never replaces an answered row, never duplicates one. With
    `replace_errors` (merging machines' enumerations), an imported answered arm or probe
    outcome also replaces this store's error row for that key. Returns rows added (or
    replaced) per table."""
    added: dict[str, int] = {}
    for table in tables:
        for path in table_files(directory, table):
            if _skip_older_export(store, table, directory, path):
                continue
            frame = pd.read_parquet(path)
            with store.transaction() as connection:
                before = _row_count(connection, table)
                replaced = _delete_errors_answered_in(connection, table, frame) if replace_errors else 0
                _insert_new_rows(connection, table, frame)
                added[table] = added.get(table, 0) + _row_count(connection, table) - before + replaced
    return added


def load_export_once(store: StoreFile, directory: Path) -> dict[str, int] | None:
    """`load_exported`, unless this exact export (same file contents) was loaded into this
    store before: then None, so rows a user deleted since (a checkpoint, say) stay deleted."""
    key = "loaded_export:" + export_fingerprint(directory)
    with store.connect() as connection:
        if first_row(connection.execute("SELECT count(*) FROM meta WHERE key = ?", [key]))[0]:
            return None
    added = load_exported(store, directory)
    with store.transaction() as connection:
        connection.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [key, utc_now().isoformat()])
    return added


def _skip_older_export(store: StoreFile, table: str, directory: Path, part: Path | None = None) -> bool:
    """True for the crossfit tables of an export made before deployment accounting (they
    charged no probe: rerun them); exports made before any of a table's later columns load
    (checkpoints' lineage columns, their weights' sha256 and crossfit results' kinds are filled on
    load, the others stay NULL); another older export is refused."""
    source = "crossfit_results" if table.startswith("crossfit_") else table
    path = part if part is not None and source == table else directory / f"{source}.parquet"
    if not path.exists():
        return False
    with store.connect() as connection:
        columns = [row[0] for row in connection.execute(f"DESCRIBE {known_table(source)}").fetchall()]
    names = set(pq.read_schema(path).names)
    if names <= set(columns) and set(columns) - names <= set(LATER_COLUMNS.get(source, ())):
        return False
    if source == "crossfit_results":
        if table == source:  # said once for the pair
            log.warning("%s: crossfit runs of an older FORGE (answer-only accounting) are not loaded; "
                        "rerun them with `forge eval --protocol crossfit`", directory)
        return True
    raise StoreError(f"{path} has the columns of another FORGE version: export it again with this one")


def _insert_new_rows(connection: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame) -> None:
    """Insert the rows with a new key, matching columns by name; checkpoints of an export made
    before the lineage columns get them from their lineage."""
    if frame.empty:
        return
    if table in ("arm_outcomes", "features") and "retriever_hash" not in frame.columns:
        frame = frame.assign(retriever_hash="")  # an export made before evidence keyed them: the default BM25
    connection.register("new_rows", frame)
    connection.execute(f"INSERT INTO {known_table(table)} BY NAME SELECT * FROM new_rows ON CONFLICT DO NOTHING")
    connection.unregister("new_rows")
    if table == "checkpoints" and not set(CHECKPOINT_LINEAGE_COLUMNS) <= set(frame.columns):
        connection.execute(FILL_CHECKPOINT_LINEAGE, [frame["checkpoint_id"].tolist()])
    if table == "checkpoints" and "weights_sha256" not in frame.columns:
        connection.execute("UPDATE checkpoints SET weights_sha256 = sha256(state) WHERE weights_sha256 IS NULL")
    if table == "crossfit_results" and "kind" not in frame.columns:
        connection.execute(FILL_CROSSFIT_KINDS)


def _columns(connection: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    return [column[0] for column in connection.execute(f"SELECT * FROM {known_table(table)} LIMIT 0").description]


def _row_count(connection: duckdb.DuckDBPyConnection, table: str) -> int:
    return first_row(connection.execute(f"SELECT count(*) FROM {known_table(table)}"))[0]


def _delete_errors_answered_in(connection: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame) -> int:
    """Delete a table's error rows whose key has an answered row in `frame`; returns how many."""
    if table not in _OUTCOME_KEYS or frame.empty:
        return 0
    last_key = _OUTCOME_KEYS[table]
    answered = frame.loc[frame["error"].isna(), ["host", "benchmark", "example_id", last_key]]
    evidence = ""  # an arm outcome's key includes its evidence (an export made before: the default's, "")
    if table == "arm_outcomes":
        answered = answered.assign(retriever_hash=frame.get("retriever_hash", pd.Series("", index=frame.index)))
        evidence = "AND t.retriever_hash = a.retriever_hash "
    connection.register("answered_keys", answered)
    deleted = connection.execute(
        f"DELETE FROM {table} t USING answered_keys a WHERE t.error IS NOT NULL AND t.host = a.host "
        f"AND t.benchmark = a.benchmark AND t.example_id = a.example_id AND t.{last_key} = a.{last_key} "
        f"{evidence}RETURNING 1").fetchall()
    connection.unregister("answered_keys")
    return len(deleted)
