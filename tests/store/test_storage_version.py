"""The store file's DuckDB storage format: new stores are written in the stated format, existing ones
keep theirs, and a file this DuckDB cannot read is one line (exit code 2) with the file untouched."""

from __future__ import annotations

import hashlib
import os
import struct
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from forge_core.store import Store, StoreError
from forge_core.store.connection import STORAGE_COMPATIBILITY_VERSION, unreadable_store_line

# DuckDB's main file header is the file's first 4,096 bytes: a checksum (uint64) of the rest of the
# block, the magic "DUCK", then the storage version number (uint64, little-endian).
HEADER_BLOCK_SIZE = 4096
MAGIC_OFFSET = 8
VERSION_OFFSET = 12
FUTURE_STORAGE_VERSION = 1_000_000  # far above any storage version a DuckDB reads today


def storage_format(path: Path) -> str:
    """The storage format DuckDB reports for the file ('v1.0.0+': read by DuckDB 1.0 and later)."""
    with duckdb.connect(str(path), read_only=True) as connection:
        return connection.execute(
            "SELECT tags['storage_version'] FROM duckdb_databases() WHERE database_name = current_database()"
        ).fetchone()[0]


def header_checksum(block: bytes) -> int:
    """DuckDB's checksum of a header block: 5381 xor-ed with each 8-byte word after the checksum
    field times 0xbf58476d1ce4e5b9 (modulo 2**64)."""
    checksum = 5381
    for (word,) in struct.iter_unpack("<Q", block[8:]):
        checksum ^= (word * 0xBF58476D1CE4E5B9) % 2**64
    return checksum


def set_storage_version(path: Path, version: int) -> None:
    """Rewrite the storage version number in the file's main header, with a matching checksum (as a
    newer DuckDB would have written it)."""
    data = bytearray(path.read_bytes())
    assert data[MAGIC_OFFSET:VERSION_OFFSET] == b"DUCK"
    data[VERSION_OFFSET:VERSION_OFFSET + 8] = struct.pack("<Q", version)
    data[0:8] = struct.pack("<Q", header_checksum(bytes(data[:HEADER_BLOCK_SIZE])))
    path.write_bytes(bytes(data))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_forge(store_path: Path, *arguments: str) -> subprocess.CompletedProcess:
    """The installed `forge` command on the given store."""
    forge = Path(sys.executable).with_name("forge")
    return subprocess.run([str(forge), *arguments], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "FORGE_STORE": str(store_path)})


def assert_one_line_and_untouched(result: subprocess.CompletedProcess, store_path: Path, digest: str,
                                  files: list[str], *phrases: str) -> str:
    """Exit code 2, one line on stderr without a traceback, naming the store and saying `phrases`;
    the file's bytes unchanged and no file added beside it. Returns the line."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert len(lines) == 1, result.stderr
    assert str(store_path) in lines[0] and all(phrase in lines[0] for phrase in phrases), lines[0]
    assert sha256(store_path) == digest
    assert sorted(os.listdir(store_path.parent)) == files
    return lines[0]


def test_a_new_store_is_written_in_the_stated_storage_format(tmp_path: Path) -> None:
    store = Store(tmp_path / "new.duckdb")
    store.schema_version()  # creates the file and migrates it
    assert STORAGE_COMPATIBILITY_VERSION == "v1.1.0"
    assert storage_format(store.path) == "v1.0.0+"  # storage version 64: DuckDB 1.0, 1.1 and later read it
    assert struct.unpack_from("<Q", store.path.read_bytes(), VERSION_OFFSET)[0] == 64
    store.schema_version()  # reopening and writing keeps the format
    assert storage_format(store.path) == "v1.0.0+"


def test_an_existing_store_keeps_its_storage_format(tmp_path: Path) -> None:
    path = tmp_path / "latest.duckdb"
    duckdb.connect(str(path), config={"storage_compatibility_version": "latest"}).close()
    written_as = storage_format(path)
    store = Store(path)
    store.schema_version()  # every migration written into it
    assert store.benchmark_stats() == {}
    assert storage_format(path) == written_as  # not rewritten in FORGE's format (nor in another)


def test_a_store_from_a_newer_duckdb_is_one_line_and_left_as_it_is(tmp_path: Path) -> None:
    store = Store(tmp_path / "future.duckdb")
    store.schema_version()
    set_storage_version(store.path, FUTURE_STORAGE_VERSION)
    digest, files = sha256(store.path), sorted(os.listdir(tmp_path))
    with pytest.raises(StoreError, match=f"written by a newer DuckDB \\(storage version {FUTURE_STORAGE_VERSION}\\)"):
        Store(store.path).schema_version()
    for arguments in (["store", "summary"], ["data", "stats"]):
        line = assert_one_line_and_untouched(
            run_forge(store.path, *arguments), store.path, digest, files,
            f"written by a newer DuckDB (storage version {FUTURE_STORAGE_VERSION})",
            f"duckdb {duckdb.__version__} reads storage versions", "bash scripts/setup.sh", "FORGE_STORE")
    assert line.startswith("error: ")


@pytest.mark.parametrize("contents", ["random bytes", "text", "empty", "damaged header"])
def test_a_file_duckdb_cannot_read_is_one_line_and_left_as_it_is(tmp_path: Path, contents: str) -> None:
    path = tmp_path / "store.duckdb"
    if contents == "damaged header":  # a FORGE store whose header no longer matches its checksum
        Store(path).schema_version()
        data = bytearray(path.read_bytes())
        data[VERSION_OFFSET] ^= 0x01
        path.write_bytes(bytes(data))
        expected = "is damaged (Corrupt database file"
    else:
        path.write_bytes({"random bytes": os.urandom(3 * HEADER_BLOCK_SIZE),
                          "text": b"benchmark,example_id,question\n" * 400, "empty": b""}[contents])
        expected = "is not a DuckDB database file"
    digest, files = sha256(path), sorted(os.listdir(tmp_path))
    assert_one_line_and_untouched(run_forge(path, "data", "stats"), path, digest, files, expected, "FORGE_STORE")


# DuckDB's own words for a file in a storage format it cannot read, as DuckDB 2.0.1, 1.5.6 and 1.1.3
# said them (first line), and FORGE's line for each.
@pytest.mark.parametrize(("message", "expected"), [
    ("IO Error: Trying to read a database file with storage version number 70, but we can only read storage "
     "versions between 64 and 69.",
     "was written by a newer DuckDB (storage version 70) than this one (duckdb {v} reads storage versions 64 to 69)"),
    ("IO Error: Trying to read a database file with version number 69, but we can only read versions between "
     "64 and 68.",
     "was written by a newer DuckDB (storage version 69) than this one (duckdb {v} reads storage versions 64 to 68)"),
    ("IO Error: Trying to read a database file with version number 999, but we can only read version 64.",
     "was written by a newer DuckDB (storage version 999) than this one (duckdb {v} reads storage version 64)"),
])
def test_duckdb_storage_version_refusals_become_one_line(message: str, expected: str) -> None:
    line = unreadable_store_line(Path("/data/forge.duckdb"), message)
    assert line == (f"the store /data/forge.duckdb {expected.format(v=duckdb.__version__)}: upgrade with "
                    "`bash scripts/setup.sh`, or set FORGE_STORE to another store; FORGE left the file as it is")


def test_other_open_errors_are_not_taken_for_an_unreadable_file() -> None:
    lock = 'IO Error: Could not set lock on file "/data/forge.duckdb": Conflicting lock is held in python (PID 7)'
    assert unreadable_store_line(Path("/data/forge.duckdb"), lock) is None
