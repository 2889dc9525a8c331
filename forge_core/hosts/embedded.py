"""The embedded default host: a llama.cpp model on this machine's CPU, served on 127.0.0.1.

The runtime is llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`, started
through `forge_core.hosts.llama_server`, which runs every model call on one thread), run as a
child process and spoken to through the same `OpenAICompatibleHost` as every remote host. It was
measured faster end-to-end on FORGE's prompts than xllamacpp here (see `bench/host_runtime.py`).

A running server is announced in a small state file (model, port, pid) so that other FORGE
processes reuse it instead of loading a second copy: `forge host serve` keeps one up until
Ctrl-C; any command that needs the host and finds none starts its own and stops it on exit.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from forge_core import config
from forge_core.hosts.base import HostError
from forge_core.hosts.models import is_pulled, model_path

log = logging.getLogger(__name__)

CONTEXT_TOKENS = 8192  # prompt + answer window of the embedded model
STARTUP_TIMEOUT_S = 180.0
HEALTH_TIMEOUT_S = 2.0  # an idle server answers `/models` at once
BUSY_CONNECT_TIMEOUT_S = 2.0  # a live server's socket accepts at once, even mid-call


@dataclass(frozen=True)
class ServerInfo:
    """A running embedded server, as announced in its state file."""

    model_key: str
    port: int
    pid: int

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible endpoint root."""
        return f"http://127.0.0.1:{self.port}/v1"


def _state_file(model_key: str) -> Path:
    return config.cache_dir() / "servers" / f"{model_key}.json"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _is_healthy(info: ServerInfo) -> bool:
    try:
        response = httpx.get(f"{info.base_url}/models", timeout=HEALTH_TIMEOUT_S)
    except httpx.HTTPError:
        return False
    return response.status_code == 200


def _is_busy(info: ServerInfo) -> bool:
    """True when the announced process is alive and its port accepts connections: a server in the
    middle of a long call (llama.cpp answers `/models` only between calls), not a dead one."""
    if info.pid <= 0:
        return False
    try:
        os.kill(info.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, owned by another user
    try:
        with socket.create_connection(("127.0.0.1", info.port), timeout=BUSY_CONNECT_TIMEOUT_S):
            return True
    except OSError:
        return False


def running_server(model_key: str) -> ServerInfo | None:
    """The announced server for this model if it answers, or is alive and busy with a call (its
    health check then times out: starting a second copy would halve both), else None."""
    path = _state_file(model_key)
    try:
        info = ServerInfo(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None
    return info if _is_healthy(info) or _is_busy(info) else None


class EmbeddedServer:
    """Owns one llama.cpp server child process for a pulled model."""

    def __init__(self, model_key: str, port: int | None = None, threads: int | None = None,
                 server_args: tuple[str, ...] = ()) -> None:
        models_dir = config.models_dir()
        if not is_pulled(model_key, models_dir):
            raise HostError(f"model '{model_key}' is not pulled yet: run `forge host pull {model_key}`")
        self.model_key = model_key
        self.model_file = model_path(model_key, models_dir)
        self.port = port or _free_port()
        self.threads = threads or config.host_threads()
        self.server_args = server_args  # extra `llama_cpp.server` options, e.g. ("--n_ubatch", "1")
        self.process: subprocess.Popen | None = None
        self.log_path = config.cache_dir() / "servers" / f"{model_key}.log"

    @property
    def info(self) -> ServerInfo:
        """The server's address and process."""
        return ServerInfo(self.model_key, self.port, self.process.pid if self.process else 0)

    def start(self) -> ServerInfo:
        """Start the server, wait until it answers, and announce it."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable, "-m", "forge_core.hosts.llama_server", "--model", str(self.model_file),
            "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(CONTEXT_TOKENS),
            "--n_threads", str(self.threads), "--n_threads_batch", str(self.threads),
            "--model_alias", self.model_key, *self.server_args,
        ]
        with self.log_path.open("w") as log_file:
            self.process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        self._wait_until_healthy()
        self._announce()
        log.info("embedded host %s serving on %s", self.model_key, self.info.base_url)
        return self.info

    def _wait_until_healthy(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = self.log_path.read_text(errors="replace").strip().splitlines()[-3:]
                raise HostError(f"the embedded server for {self.model_key} exited: {' | '.join(tail)}")
            if _is_healthy(self.info):
                return
            time.sleep(0.3)
        self.stop()
        raise HostError(f"the embedded server for {self.model_key} did not start in {STARTUP_TIMEOUT_S:.0f} s")

    def _announce(self) -> None:
        path = _state_file(self.model_key)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps({"model_key": self.model_key, "port": self.port, "pid": self.process.pid}))
        os.replace(temporary, path)

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s) and withdraw its announcement."""
        if self.process is None:
            return
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        path = _state_file(self.model_key)
        if running_server(self.model_key) is None:
            path.unlink(missing_ok=True)
        self.process = None

    def __enter__(self) -> EmbeddedServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
