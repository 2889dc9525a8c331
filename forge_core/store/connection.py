"""Opening the store file: waiting out other processes' locks, transactions, migrations, and the
small statement helpers every store module shares.

DuckDB lets one process hold a database file read-write and blocks the others meanwhile. FORGE
therefore never keeps a connection open for long: every operation opens the file, does its work
inside a transaction and closes it again, retrying for a while when another process holds the lock.
A long job (enumeration, training) writes in small batches, so the dashboard can read in between.

Opening the file costs tens of milliseconds (DuckDB reads its catalog), and a dashboard page makes
a hundred reads. A store made with `keep_open_s` (the dashboard's) therefore keeps the file open
for that many seconds after its last use, while nothing of it waits in the write-ahead log, and
serves the next operation a new connection on the open database (`cursor`: its own transactions,
no file read): a burst of reads opens the file once, and other processes wait at most
`keep_open_s` longer for it. A write leaves a write-ahead log, so the file is closed (checkpointed)
at once, as without `keep_open_s`: a copy of the file holds every committed write.

A writer that commits every half second (enumeration's outcome writer) would spend most of its
CPU starting databases. It keeps a `FileAttacher` instead, an in-memory DuckDB of its own, and
each of its transactions attaches the file, commits and detaches it (`attached_transaction`):
the same short hold of the file, checkpointed and released after each commit, for a few
milliseconds instead of tens.

A new store file is written in the storage format of `STORAGE_COMPATIBILITY_VERSION`, which every
DuckDB FORGE supports reads; an existing file is opened in the format it has, never rewritten in
another. A file this DuckDB cannot read (a newer format, or not a DuckDB file) is one `StoreError`
line, and the file is left as it is.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pandas as pd

from forge_core import config
from forge_core.errors import ForgeError
from forge_core.store.schema import MIGRATIONS, SCHEMA_VERSION, TABLES

log = logging.getLogger(__name__)


# Errors of duckdb.connect that pass: another process's lock, or (within this process) a file
# still attached by a database another thread is closing.
TRANSIENT_OPEN_ERRORS: tuple[type[Exception], ...] = (
    duckdb.IOException, getattr(duckdb, "ResourceInUseException", duckdb.IOException))


# New store files use DuckDB 1.1's storage format (storage version 64): read by DuckDB 1.0 and every
# later release, so by every DuckDB that pyproject.toml allows (duckdb>=1.1).
STORAGE_COMPATIBILITY_VERSION = "v1.1.0"

# DuckDB's words for a file whose storage version it cannot read: "... with storage version number
# 70, but we can only read storage versions between 64 and 69" (2.0), "... version number 69, but we
# can only read versions between 64 and 68" (1.2 to 1.5), "... version number 999, but we can only
# read version 64" (1.1).
UNREADABLE_VERSION = re.compile(
    r"version number (?P<found>\d+), but we can only read (?:storage )?versions? "
    r"(?:between )?(?P<low>\d+)(?: and (?P<high>\d+))?")


# A write refused by the disk: full, over quota, read-only, or failing.
DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO)


class StoreError(ForgeError):
    """A store problem a user can act on (locked too long, newer schema or storage format, not a
    DuckDB file, changed source, full disk)."""


def unreadable_store_line(path: Path, message: str) -> str | None:
    """One line for a file DuckDB refused to open because it cannot read it (a storage version it
    does not know, not a DuckDB file, a damaged header), or None for any other refusal."""
    keep = "FORGE left the file as it is"
    version = UNREADABLE_VERSION.search(message)
    if version:
        found, low = int(version["found"]), int(version["low"])
        high = int(version["high"] or low)
        readable = (f"duckdb {duckdb.__version__} reads storage version {low}" if low == high
                    else f"duckdb {duckdb.__version__} reads storage versions {low} to {high}")
        if found > high:
            return (f"the store {path} was written by a newer DuckDB (storage version {found}) than this one "
                    f"({readable}): upgrade with `bash scripts/setup.sh`, or set FORGE_STORE to another store; "
                    f"{keep}")
        return (f"the store {path} was written by an older DuckDB (storage version {found}) than this one "
                f"reads ({readable}): set FORGE_STORE to another store; {keep}")
    if "not a valid DuckDB database file" in message:
        return (f"the store {path} is not a DuckDB database file (empty, another kind of file, or damaged "
                f"at its start): move it away or set FORGE_STORE to another store; {keep}")
    if "Corrupt database file" in message:
        return (f"the store {path} is damaged ({message}): restore it from a copy or set FORGE_STORE to "
                f"another store; {keep}")
    return None


def _disk_refusal(error: BaseException) -> str | None:
    """The OS's words for a write the disk refused ("no space left on device"), or None. DuckDB
    reports them inside its own errors (a COMMIT that could not write the write-ahead log is a
    TransactionException ending in the OS's message)."""
    if isinstance(error, OSError):
        return os.strerror(error.errno).lower() if error.errno in DISK_ERRNOS else None
    if isinstance(error, duckdb.Error):
        return next((os.strerror(code).lower() for code in DISK_ERRNOS if os.strerror(code) in str(error)), None)
    return None


_THREAD_LOCKS: dict[str, threading.RLock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()


def _file_key(path: Path) -> str:
    return str(path.resolve())


def _thread_lock(key: str) -> threading.RLock:
    """The in-process lock of a store file (re-entrant: a thread may nest connections)."""
    with _THREAD_LOCKS_GUARD:
        return _THREAD_LOCKS.setdefault(key, threading.RLock())


@dataclass
class _OpenFile:
    """A store file this process keeps open between operations (`StoreFile.keep_open_s`)."""

    connection: duckdb.DuckDBPyConnection
    identity: tuple[int, int, int]  # process, device and inode: a forked child or a replaced file opens anew
    users: int = 0
    last_used: float = 0.0
    closer: threading.Timer | None = None


_OPEN_FILES: dict[str, _OpenFile] = {}  # by file key, guarded by the file's thread lock


def _identity(path: Path) -> tuple[int, int, int] | None:
    try:
        status = path.stat()
    except OSError:
        return None
    return os.getpid(), status.st_dev, status.st_ino


def _close_open_file(key: str) -> None:
    """Close the file kept open under `key`, if any (its owner holds the file's thread lock)."""
    held = _OPEN_FILES.pop(key, None)
    if held is None:
        return
    if held.closer is not None:
        held.closer.cancel()
    if held.identity[0] == os.getpid():  # a forked child leaves its parent's database alone
        held.connection.close()


def _close_if_idle(key: str, keep_open_s: float) -> None:
    with _thread_lock(key):
        held = _OPEN_FILES.get(key)
        if held is not None and not held.users and time.monotonic() - held.last_used >= keep_open_s * 0.99:
            _close_open_file(key)
        # The closed connection is freed here, under the lock the exiting thread waits for: freed after it,
        # on this daemon thread while the interpreter stops, DuckDB's destructor aborts the process.
        del held


# How long the exiting thread waits for another thread's operation on a store file to end.
EXIT_WAIT_S = 30.0


@atexit.register
def _close_open_files_at_exit() -> None:
    """Close every file kept open, on the exiting thread, after every other thread's operation on a
    store file has ended: the interpreter stops daemon threads at exit, and one stopped inside
    DuckDB (a `keep_open_s` closer in the middle of its close, the outcome writer in a commit) aborts
    the process ("terminate called ... FATAL: exception not rethrown"). Such a thread holds the
    file's thread lock, so taking each lock waits for it."""
    with _THREAD_LOCKS_GUARD:
        locks = list(_THREAD_LOCKS.items())
    for key, lock in locks:
        if lock.acquire(timeout=EXIT_WAIT_S):
            try:
                _close_open_file(key)
            finally:
                lock.release()


def release_store_file(path: Path | str) -> None:
    """Close the connection this process keeps open on a store file (after `keep_open_s` reads),
    so another configuration (a read-only connection) or a file copy sees it closed."""
    key = _file_key(Path(path))
    with _thread_lock(key):
        _close_open_file(key)


class FileAttacher:
    """An in-memory DuckDB that one thread keeps to attach store files for its transactions
    (`StoreFile.attached_transaction`); `close` it when done. Use it from one thread at a time."""

    def __init__(self) -> None:
        self.memory = duckdb.connect(":memory:")

    def close(self) -> None:
        """Close the in-memory database (no store file is attached between transactions)."""
        self.memory.close()


_ATTACHED = "forge_store"  # the attached file's name inside a `FileAttacher`'s database


class StoreFile:
    """A DuckDB store file: short-lived connections and transactions on it, migrated on first use."""

    def __init__(self, path: Path | str, keep_open_s: float = 0.0) -> None:
        """`keep_open_s` > 0 keeps the file open that long after its last read (see the module)."""
        self.path = Path(path)
        self.keep_open_s = keep_open_s
        self._migrated = False

    @contextlib.contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short-lived connection, waiting while another process holds the file.

        Threads of one process take turns on a file (one connection at a time): DuckDB shares
        one database instance between a process's connections to a file, and a thread closing
        the last one races with another opening or scanning a registered frame (the dashboard
        runs overlapping script runs and fragments in threads)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        key = _file_key(self.path)
        with _thread_lock(key):
            if self.keep_open_s > 0:
                held = self._open_kept(key)
                connection = held.connection.cursor()
            else:
                held, connection = None, self._open_with_wait()
            try:
                if not self._migrated:
                    self._migrate(connection)
                yield connection
            finally:
                connection.close()
                if held is not None:
                    self._release_kept(key, held)

    def _open_kept(self, key: str) -> _OpenFile:
        """The file as this process keeps it open, opened now if it is not (or is another file)."""
        held = _OPEN_FILES.get(key)
        if held is not None and held.identity != _identity(self.path):
            _close_open_file(key)
            held = None
        if held is None:
            connection = self._open_with_wait()
            held = _OPEN_FILES[key] = _OpenFile(connection, _identity(self.path) or (0, 0, 0))
        if held.closer is not None:
            held.closer.cancel()
            held.closer = None
        held.users += 1
        return held

    def _release_kept(self, key: str, held: _OpenFile) -> None:
        """After an operation: close the file now if a write left a write-ahead log, else once
        `keep_open_s` pass without another operation."""
        held.users -= 1
        if held.users:
            return
        if self.path.with_name(self.path.name + ".wal").exists():
            _close_open_file(key)
            return
        held.last_used = time.monotonic()
        held.closer = threading.Timer(self.keep_open_s, _close_if_idle, (key, self.keep_open_s))
        held.closer.daemon = True  # never keeps a finished process alive
        held.closer.start()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection inside one transaction: all of it lands, or none of it. A write the disk
        refuses (full, read-only, failing) is a `StoreError` naming the store and the reason."""
        with self.connect() as connection, self._atomic(connection):
            yield connection

    @contextlib.contextmanager
    def attached_transaction(self, attacher: FileAttacher) -> Iterator[duckdb.DuckDBPyConnection]:
        """`transaction` on the attacher's database with this file attached (and in use) for it:
        detached afterwards, whatever happens, which checkpoints the file and releases it to other
        processes as closing a connection does, without starting a database each time."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        key = _file_key(self.path)
        memory = attacher.memory
        with _thread_lock(key):
            _close_open_file(key)  # a file this process keeps open cannot be attached as well
            self._open_with_wait(lambda: _attach(memory, self.path))
            try:
                if not self._migrated:
                    self._migrate(memory)
                with self._atomic(memory):
                    yield memory
            except BaseException:
                with contextlib.suppress(duckdb.Error):  # the transaction's error is the one to report
                    _detach(memory)
                raise
            _detach(memory)

    def schema_version(self) -> int:
        """The schema version of the file (migrating it first if it is older)."""
        with self.connect() as connection:
            return self._schema_version(connection)

    @contextlib.contextmanager
    def _atomic(self, connection: duckdb.DuckDBPyConnection) -> Iterator[None]:
        """One transaction on an open connection (see `transaction`)."""
        connection.execute("BEGIN TRANSACTION")
        try:
            yield
            connection.execute("COMMIT")
        except BaseException as error:
            with contextlib.suppress(duckdb.Error):  # a failed COMMIT has already rolled back
                connection.execute("ROLLBACK")
            refusal = _disk_refusal(error)
            if refusal:
                raise StoreError(f"cannot write the store {self.path}: {refusal}; nothing of this "
                                 "write was stored (free space, or set FORGE_STORE to a store on another disk, "
                                 "then run the command again: it continues where it stopped)") from None
            raise

    def _open_with_wait(self, open_file: Callable[[], duckdb.DuckDBPyConnection] | None = None,
                        ) -> duckdb.DuckDBPyConnection:
        """Connect (creating a missing file first), waiting while another process holds the file's
        lock, or while another thread of this process is closing its last connection (DuckDB then
        reports the file as still attached: the dashboard runs overlapping script runs in threads).
        A file DuckDB cannot read is a `StoreError` at once (`unreadable_store_line`). `open_file`
        opens it another way (an attach), with the same waiting; its result is returned."""
        wait_s = config.store_lock_wait_s()
        deadline = time.monotonic() + wait_s
        delay = 0.05
        while True:
            try:
                if not self.path.exists():
                    self._create()
                return open_file() if open_file is not None else duckdb.connect(str(self.path))
            except duckdb.Error as error:
                message = " ".join(str(error).split())
                unreadable = unreadable_store_line(self.path, message)
                if unreadable:
                    raise StoreError(unreadable) from None
                if not isinstance(error, TRANSIENT_OPEN_ERRORS):
                    raise
                locked = "lock" in message.lower() or "already attached" in message.lower()
                if locked and time.monotonic() > deadline:
                    raise StoreError(f"the store {self.path} is held by another process; waited {wait_s:g} s "
                                     f"(stop that process or try again; {message})") from None
                if not locked:
                    raise StoreError(f"cannot open the store {self.path} (can this user write to its folder? "
                                     f"set FORGE_STORE to move it): {message}") from None
                time.sleep(delay)
                delay = min(delay * 2, 1.0)

    def _create(self) -> None:
        """Create the (empty) store file in the storage format of `STORAGE_COMPATIBILITY_VERSION`.

        The format is set on a separate in-memory database that attaches the new file and lets it go
        again: a file connection with its own configuration would make DuckDB refuse every other
        connection to the file in this process that has none."""
        settings = {"storage_compatibility_version": STORAGE_COMPATIBILITY_VERSION}
        creator = duckdb.connect(":memory:", config=settings)
        try:
            quoted = str(self.path).replace("'", "''")  # ATTACH takes no parameters
            creator.execute(f"ATTACH '{quoted}' AS new_store")
            creator.execute("DETACH new_store")
        finally:
            creator.close()

    def _migrate(self, connection: duckdb.DuckDBPyConnection) -> None:
        version = self._schema_version(connection)
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"the store {self.path} has schema version {version}, newer than this FORGE "
                f"({SCHEMA_VERSION}); upgrade FORGE or use another store"
            )
        for target in range(version + 1, SCHEMA_VERSION + 1):
            with self._atomic(connection):
                connection.execute(MIGRATIONS[target - 1])
                connection.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(target)]
                )
            log.info("store %s migrated to schema version %d", self.path, target)
        self._migrated = True

    @staticmethod
    def _schema_version(connection: duckdb.DuckDBPyConnection) -> int:
        has_meta = first_row(connection.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'meta'"
        ))[0]
        if not has_meta:
            return 0
        row = first_row(connection.execute("SELECT value FROM meta WHERE key = 'schema_version'"))
        return int(row[0]) if row else 0


def _attach(memory: duckdb.DuckDBPyConnection, path: Path) -> duckdb.DuckDBPyConnection:
    """Attach a store file to an attacher's database and make it the default for names."""
    quoted = str(path).replace("'", "''")  # ATTACH takes no parameters
    memory.execute(f"ATTACH '{quoted}' AS {_ATTACHED}")
    memory.execute(f"USE {_ATTACHED}")
    return memory


def _detach(memory: duckdb.DuckDBPyConnection) -> None:
    """Detach the store file again: checkpointed, closed, its lock released."""
    memory.execute("USE memory")
    memory.execute(f"DETACH {_ATTACHED}")


def first_row(result: duckdb.DuckDBPyConnection) -> tuple | None:
    """The first row of a result, consuming the rest: DuckDB refuses further work on a
    connection while a result is unfinished."""
    rows = result.fetchall()
    return rows[0] if rows else None


def known_table(table: str) -> str:
    """A table name checked against the schema's (identifiers cannot be SQL parameters)."""
    if table not in TABLES:
        raise ValueError(f"unknown table '{table}'")
    return table


def insert_rows(connection: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame,
                replace: bool = False) -> None:
    """Insert a frame whose columns are the table's, in order: rows with a new key only, or with
    `replace` every row, replacing those with the same key."""
    if frame.empty:
        return
    connection.register("new_rows", frame)
    if replace:
        connection.execute(f"INSERT OR REPLACE INTO {known_table(table)} SELECT * FROM new_rows")
    else:
        connection.execute(f"INSERT INTO {known_table(table)} SELECT * FROM new_rows ON CONFLICT DO NOTHING")
    connection.unregister("new_rows")


def utc_now() -> datetime:
    """Naive UTC timestamp, as DuckDB's TIMESTAMP stores it."""
    return datetime.now(timezone.utc).replace(tzinfo=None)
