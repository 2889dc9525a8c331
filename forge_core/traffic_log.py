"""The traffic log of `forge serve`: every request as one JSON line, in files of its own.

DuckDB lets one process write the store, so the server never writes it while serving: the log is
a directory of JSONL segments (default `<store's folder>/traffic`), one segment per server process
(`traffic-<UTC start>-<pid>-<n>.jsonl`, a new one past `SEGMENT_BYTES`). Each record is written
with one `os.write` on an O_APPEND descriptor as soon as it is complete (a kill -9 of the server
loses nothing already written: the kernel has it), and the file is fsync'ed at least every
`FSYNC_INTERVAL_S` by a background thread (a machine crash loses at most that last second).
`read_traffic` reads the segments while the server writes them, skipping a last line cut short
(`forge_core.reports.traffic` summarizes them for `forge traffic` and the Traffic page). The
deployment manifests served (`forge serve --manifest`) are kept beside the segments, one file each.

Two kinds of record, each with `kind`: `request` (exactly one per request the server received,
refused ones included) and `shadow` (work done after a response for the request `id`: the
candidate router's answer, Always-Raw's cost).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from forge_core import config

log = logging.getLogger(__name__)

SEGMENT_BYTES = 64 * 1024 * 1024  # a new segment past this size
FSYNC_INTERVAL_S = 1.0  # at most this long between an append and its fsync
SEGMENT_GLOB = "traffic-*.jsonl"  # the segments, as `TrafficLog` names them
MANIFEST_GLOB = "manifest-*.json"  # the deployment manifests served (`forge serve --manifest`), one file each


class TrafficLog:
    """Appends records to this process's segment; thread-safe; `close` fsyncs and stops the flusher."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._stem = f"traffic-{datetime.now(timezone.utc):%Y%m%dT%H%M%S}-{os.getpid()}"
        self._segment = 0
        self._lock = threading.Lock()
        self._fd = self._open_segment()
        self._dirty = False
        self._written = 0
        self._closed = threading.Event()
        self._flusher = threading.Thread(target=self._flush_loop, name="traffic-fsync", daemon=True)
        self._flusher.start()

    @property
    def path(self) -> Path:
        """The segment being written."""
        return self.directory / f"{self._stem}-{self._segment}.jsonl"

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as a line (visible to readers at once, fsync'ed within a second)."""
        line = (json.dumps(record, separators=(",", ":"), allow_nan=False, default=_jsonable) + "\n").encode()
        with self._lock:
            if self._closed.is_set():
                raise RuntimeError("the traffic log is closed")
            if self._written + len(line) > SEGMENT_BYTES and self._written:
                self._rotate()
            os.write(self._fd, line)
            self._written += len(line)
            self._dirty = True

    def close(self) -> None:
        """Fsync what is written and close the segment."""
        self._closed.set()
        self._flusher.join(timeout=5)
        with self._lock:
            os.fsync(self._fd)
            os.close(self._fd)

    def _open_segment(self) -> int:
        return os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def _rotate(self) -> None:
        os.fsync(self._fd)
        os.close(self._fd)
        self._segment += 1
        self._fd = self._open_segment()
        self._written = 0

    def _flush_loop(self) -> None:
        while not self._closed.wait(FSYNC_INTERVAL_S / 2):
            with self._lock:
                if self._dirty:
                    os.fsync(self._fd)
                    self._dirty = False


def _jsonable(value: Any) -> Any:
    """NaN-free JSON for numpy scalars and the like."""
    return float(value) if hasattr(value, "__float__") else str(value)


def now() -> float:
    """The time a record carries (Unix seconds)."""
    return time.time()


def write_served_manifest(directory: Path, manifest: dict[str, Any]) -> Path:
    """Keep a served deployment manifest beside the traffic log (atomically, named by its id), where
    `forge traffic` and the Traffic page read it; requests served under it name its id."""
    from forge_core.evaluation.manifest import manifest_id, write_manifest

    path = Path(directory) / f"{manifest_id(manifest)}.json"
    write_manifest(path, manifest)
    return path


def served_manifests(directory: Path) -> dict[str, dict[str, Any]]:
    """The manifests kept beside a traffic log, by id (`manifest_summary` of each)."""
    from forge_core.evaluation.manifest import manifest_summary

    found = {}
    for path in sorted(Path(directory).glob(MANIFEST_GLOB)):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            summary = manifest_summary(json.loads(path.read_text()))
            found[summary["manifest_id"]] = summary
    return found


def default_traffic_dir(store_path: Path | None = None) -> Path:
    """`FORGE_TRAFFIC_DIR`, or `traffic/` beside the store (`store_path`, else the configured one)."""
    configured = os.environ.get("FORGE_TRAFFIC_DIR")
    if configured:
        return Path(configured)
    return (Path(store_path) if store_path is not None else config.store_path()).parent / "traffic"


@dataclass(frozen=True)
class TrafficRecords:
    """What a traffic directory holds: request records and shadow records (by request id)."""

    requests: list[dict[str, Any]]
    shadows: dict[str, list[dict[str, Any]]]
    skipped_lines: int  # lines that were not complete JSON (a segment's last line being written)


def read_traffic(directory: Path, since: float | None = None) -> TrafficRecords:
    """Every record of every segment under `directory` (request records at or after `since`, a Unix
    time, when given), oldest first."""
    requests: list[dict[str, Any]] = []
    shadows: dict[str, list[dict[str, Any]]] = {}
    skipped = 0
    for record in _records(Path(directory)):
        if record is None:
            skipped += 1
        elif record.get("kind") == "shadow":
            shadows.setdefault(record["id"], []).append(record)
        elif since is None or record.get("time", 0.0) >= since:
            requests.append(record)
    requests.sort(key=lambda r: r.get("time", 0.0))
    return TrafficRecords(requests, shadows, skipped)


def _records(directory: Path) -> Iterator[dict[str, Any] | None]:
    if not directory.is_dir():
        return
    for segment in sorted(directory.glob(SEGMENT_GLOB)):
        with segment.open("rb") as handle:
            for line in handle:
                try:
                    yield json.loads(line)
                except ValueError:
                    yield None
