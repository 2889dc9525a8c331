"""A store made with `keep_open_s` (the dashboard's): a burst of reads opens the file once, the file
is closed once the reads stop, a write is in the file (not only its write-ahead log) when the write
returns, and a replaced file is opened anew."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from forge_core.store import Store
from forge_core.store import connection as store_connection

KEEP_S = 0.2


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The paths every file open of the test went to, in order."""
    paths: list[Path] = []
    open_with_wait = store_connection.StoreFile._open_with_wait

    def counted(self: store_connection.StoreFile):
        paths.append(self.path)
        return open_with_wait(self)

    monkeypatch.setattr(store_connection.StoreFile, "_open_with_wait", counted)
    return paths


def kept_open(path: Path) -> bool:
    return store_connection._file_key(path) in store_connection._OPEN_FILES


def test_reads_share_one_open_file_until_they_stop(tmp_path: Path, opened: list[Path]) -> None:
    Store(tmp_path / "s.duckdb").save_host_config("h", {"kind": "test"})  # a store, written and closed
    assert not kept_open(tmp_path / "s.duckdb")
    store = Store(tmp_path / "s.duckdb", keep_open_s=KEEP_S)
    opened.clear()
    for _ in range(5):
        assert store.host_names() == ["h"]
    assert opened == [store.path]  # five reads, one file open
    assert kept_open(store.path)
    while kept_open(store.path):  # closed once the reads stopped: other processes may write (else a hang ends
        time.sleep(0.05)          # at pytest's --timeout)
    assert store.host_names() == ["h"] and len(opened) == 2


def test_a_write_is_in_the_file_when_it_returns(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb", keep_open_s=60)
    assert store.host_names() == []
    store.save_host_config("h", {"kind": "test"})
    assert not kept_open(store.path)  # closed at once: its write-ahead log is checkpointed
    assert not store.path.with_name("s.duckdb.wal").exists()
    shutil.copy(store.path, tmp_path / "copy.duckdb")
    assert Store(tmp_path / "copy.duckdb").host_names() == ["h"]


def test_a_replaced_file_is_opened_anew(tmp_path: Path) -> None:
    Store(tmp_path / "a.duckdb").save_host_config("a", {"kind": "test"})
    Store(tmp_path / "b.duckdb").save_host_config("b", {"kind": "test"})
    store = Store(tmp_path / "s.duckdb", keep_open_s=60)
    shutil.copy(tmp_path / "a.duckdb", store.path)
    assert store.host_names() == ["a"]
    assert kept_open(store.path)
    store.path.unlink()
    shutil.copy(tmp_path / "b.duckdb", store.path)
    assert store.host_names() == ["b"]
    store_connection.release_store_file(store.path)
    assert not kept_open(store.path)


def test_a_file_kept_open_is_closed_before_the_interpreter_stops_its_threads(tmp_path: Path) -> None:
    """At exit the kept file is closed on the exiting thread (an `atexit` handler), not left to its
    closer thread: the interpreter stops daemon threads at exit, and one stopped inside DuckDB's close
    aborts the process. The check runs after the handler (registered first, so run last)."""
    import subprocess
    import sys

    Store(tmp_path / "s.duckdb").save_host_config("h", {"kind": "test"})
    script = (
        "import atexit\n"
        "atexit.register(lambda: print('kept at exit:', len(connection._OPEN_FILES)))\n"
        "from forge_core.store import Store, connection\n"
        f"Store({str(tmp_path / 's.duckdb')!r}, keep_open_s=60).host_config('h')\n"
        "print('kept after the read:', len(connection._OPEN_FILES))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["kept after the read: 1", "kept at exit: 0"], result.stdout


def test_exit_waits_for_a_closer_in_the_middle_of_its_close(tmp_path: Path) -> None:
    """A closer thread that has taken the file off the kept list and is still closing it when the
    program ends: the exit waits for the close to finish (a thread stopped inside DuckDB's close
    aborts the process). The close is made slow, and writes a line when it has finished."""
    import subprocess
    import sys

    store_path, finished = tmp_path / "s.duckdb", tmp_path / "closed.txt"
    Store(store_path).save_host_config("h", {"kind": "test"})
    script = (
        "import threading, time\n"
        "from forge_core.store import Store, connection\n"
        "class SlowClose:\n"
        "    def __init__(self, inner): self.inner = inner\n"
        "    def close(self):\n"
        "        time.sleep(0.5)\n"
        "        self.inner.close()\n"
        f"        open({str(finished)!r}, 'a').write(threading.current_thread().name + '\\n')\n"
        f"Store({str(store_path)!r}, keep_open_s=0.1).host_config('h')\n"
        "held = next(iter(connection._OPEN_FILES.values()))\n"
        "held.connection = SlowClose(held.connection)\n"
        "time.sleep(0.3)  # the closer has started its close; the program ends while it runs\n"
        "print('kept at the end:', len(connection._OPEN_FILES))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "kept at the end: 0", result.stdout
    closers = finished.read_text().split() if finished.exists() else []
    assert len(closers) == 1 and closers[0] != "MainThread", closers


def test_a_closer_frees_the_connection_before_it_lets_the_exit_go_on(tmp_path: Path) -> None:
    """The closer thread drops its last reference to the closed connection while it still holds the
    file's lock, so the exiting thread (which waits for that lock) never finishes while DuckDB's
    destructor is still to run on the closer: run there after the interpreter has begun to stop, it
    aborts the process ("FATAL: exception not rethrown"). Checked at the moment the lock is let go."""
    import threading
    import weakref

    path = tmp_path / "s.duckdb"
    Store(path).save_host_config("h", {"kind": "test"})
    Store(path, keep_open_s=60).host_config("h")
    key = store_connection._file_key(path)
    held = store_connection._OPEN_FILES[key]
    held.closer.cancel()
    held.last_used = 0.0  # idle long enough
    alive_at_release: list[bool] = []
    kept = weakref.ref(held)
    del held

    class WatchedLock:
        """The file's lock, noting whether the kept file is still alive when it is let go."""

        def __init__(self) -> None:
            self.lock = threading.RLock()

        def __enter__(self) -> None:
            self.lock.acquire()

        def __exit__(self, *exc: object) -> None:
            alive_at_release.append(kept() is not None)
            self.lock.release()

    store_connection._THREAD_LOCKS[key] = WatchedLock()
    try:
        store_connection._close_if_idle(key, 60)
    finally:
        store_connection._THREAD_LOCKS.pop(key)
    assert key not in store_connection._OPEN_FILES
    assert alive_at_release == [False]
