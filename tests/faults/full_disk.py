"""A test double for a disk that fills up: runs a `forge` command whose store commits fail, from
the N-th on, with DuckDB's own error for a full disk.

    python tests/faults/full_disk.py N forge-arguments...

With N = 0 the disk never fills up, and the number of commits the command made is printed last
on stdout (`full_disk: K commits`), to choose an N that fails a given write.

DuckDB writes a transaction to the store's write-ahead log at COMMIT; on a full disk that write
fails, DuckDB rolls the transaction back and raises `TransactionException("Failed to commit:
Could not write file ...wal: No space left on device")` (seen on a full tmpfs with DuckDB 2.0).
This double raises exactly that at the N-th COMMIT and every later one (the disk stays full until
the process ends), after rolling the transaction back as DuckDB does. Everything else is the real
store and the real command.
"""

from __future__ import annotations

import atexit
import sys

import duckdb

REAL_CONNECT = duckdb.connect


class FullDisk:
    """Counts commits across connections; full from commit number `full_at` on."""

    def __init__(self, full_at: int) -> None:
        self.full_at = full_at
        self.commits = 0

    def connect(self, database: str, *args, **kwargs) -> FullDiskConnection:
        return FullDiskConnection(REAL_CONNECT(database, *args, **kwargs), database, self)


class FullDiskConnection:
    """A DuckDB connection whose COMMIT fails once the disk is full (all else passes through)."""

    def __init__(self, connection: duckdb.DuckDBPyConnection, database: str, disk: FullDisk) -> None:
        self._connection, self._database, self._disk = connection, database, disk

    def execute(self, query: str, *args, **kwargs):
        if query.strip().upper() == "COMMIT":
            self._disk.commits += 1
            if 0 < self._disk.full_at <= self._disk.commits:
                self._connection.execute("ROLLBACK")
                raise duckdb.TransactionException(
                    f'TransactionContext Error: Failed to commit: Could not write file "{self._database}.wal": '
                    "No space left on device")
        return self._connection.execute(query, *args, **kwargs)

    def cursor(self) -> FullDiskConnection:
        """A cursor on the same database (a store kept open hands one out per operation), counted alike."""
        return FullDiskConnection(self._connection.cursor(), self._database, self._disk)

    def __getattr__(self, name: str):
        return getattr(self._connection, name)


def main() -> None:
    full_at, sys.argv = int(sys.argv[1]), ["forge", *sys.argv[2:]]
    disk = FullDisk(full_at)
    duckdb.connect = disk.connect  # the store module calls duckdb.connect
    if not full_at:
        atexit.register(lambda: print(f"full_disk: {disk.commits} commits", flush=True))
    from forge_core.cli import main as forge_main

    forge_main()


if __name__ == "__main__":
    main()
