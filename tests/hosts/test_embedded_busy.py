"""A busy embedded server is not a dead one: `running_server` must not send a caller off to start
a second llama.cpp copy while the announced one is in the middle of a long call."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from forge_core.hosts import embedded
from forge_core.hosts.embedded import running_server


def announce(cache: Path, port: int, pid: int) -> None:
    """The state file an `EmbeddedServer` writes, for a test double standing in for its process."""
    (cache / "servers").mkdir(parents=True, exist_ok=True)
    announcement = {"model_key": "busy-model", "port": port, "pid": pid}
    (cache / "servers" / "busy-model.json").write_text(json.dumps(announcement))


@pytest.fixture
def silent_listener(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A test double of a server busy with a call: its socket accepts connections, it never replies."""
    monkeypatch.setenv("FORGE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(embedded, "HEALTH_TIMEOUT_S", 0.3)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    yield listener.getsockname()[1]
    listener.close()


def test_an_alive_server_that_does_not_answer_in_time_is_busy_not_dead(silent_listener: int, tmp_path: Path) -> None:
    announce(tmp_path, silent_listener, os.getpid())
    info = running_server("busy-model")
    assert info is not None and info.port == silent_listener


def test_a_dead_process_or_a_closed_port_is_not_running(silent_listener: int, tmp_path: Path) -> None:
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    announce(tmp_path, silent_listener, int(finished.stdout))  # that process has exited
    assert running_server("busy-model") is None
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    announce(tmp_path, closed_port, os.getpid())  # alive, but nothing listens there
    assert running_server("busy-model") is None
