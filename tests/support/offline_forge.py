"""Running `forge` the way a user would, in a subprocess, but on a store copy with no host to reach
and every host call counted: the embedded hosts' server announcements in the cache point at a
counting test double (`counting_host.CountingHost`), and the models directory is empty, so a call
goes to the double (and is counted) or, if the announcement were ignored, fails for want of a model.
What the shared tests of "prints a stored result" use (tests/test_documented_commands.py,
tests/cli/test_stored_results.py): both read the runs of one `OfflineDemo` (the `offline_demo` session
fixture), which runs each command once a session, however many tests check what it printed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from forge_core.hosts.registry import BUILTIN_HOSTS, get_host_config
from forge_core.store import Store

from support.counting_host import CountingHost

# Not a claim about speed: a guard so that a command that trains (minutes) or waits on something
# cannot hang the suite; what a test asserts is counted (rows, host calls), never timed.
HANG_GUARD_S = 1800
WIDE_COLUMNS = "200"  # rich tables wide enough to print ids and figures whole, as on a wide terminal


def announce_counting_host(store: Store, cache_dir: Path, host: CountingHost) -> None:
    """Announce `host` in `cache_dir` as the running server of every embedded host's model the store
    knows, as an `EmbeddedServer` announces itself (`servers/<model>.json`; the process is this one,
    alive, so `running_server` takes the double for a busy server and sends the calls to it). Refuses a
    store with a remote host: its calls would not reach the double."""
    names = set(BUILTIN_HOSTS) | set(store.host_names())
    configs = [get_host_config(store, name) for name in sorted(names)]
    remote = [config.name for config in configs if config.kind != "embedded"]
    assert not remote, f"remote hosts would not be counted: {remote}"
    servers = cache_dir / "servers"
    servers.mkdir(parents=True, exist_ok=True)
    port = host.httpd.server_address[1]
    for model in {config.model for config in configs}:
        (servers / f"{model}.json").write_text(json.dumps({"model_key": model, "port": port, "pid": os.getpid()}))


@dataclass(frozen=True)
class ForgeRun:
    """What one `forge` command left: its exit code, stdout and stderr, the store's row counts
    before and after, and the host calls it made."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    rows_before: dict[str, int]
    rows_after: dict[str, int]
    host_calls: int

    @property
    def rows_changed(self) -> dict[str, tuple[int, int]]:
        """Every table whose row count the command changed: (before, after)."""
        return {table: (count, self.rows_after.get(table, 0)) for table, count in self.rows_before.items()
                if self.rows_after.get(table, 0) != count}


def run_forge(args: list[str] | tuple[str, ...], store: Store, cache_dir: Path, models_dir: Path,
              host: CountingHost) -> ForgeRun:
    """`forge ARGS` in a subprocess on `store` with `cache_dir` (announced to `host`, see
    `announce_counting_host`) and an empty `models_dir`; the row counts of every table before and
    after, and the host calls it made."""
    models_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "FORGE_STORE": str(store.path), "FORGE_CACHE_DIR": str(cache_dir),
           "FORGE_MODELS_DIR": str(models_dir), "COLUMNS": WIDE_COLUMNS}
    before, calls = store.table_counts(), len(host.received)
    result = subprocess.run([sys.executable, "-m", "forge_core.cli", *args], capture_output=True, text=True,
                            env=env, timeout=HANG_GUARD_S)
    return ForgeRun(tuple(args), result.returncode, result.stdout, result.stderr, before, store.table_counts(),
                    len(host.received) - calls)


def command_key(args: list[str] | tuple[str, ...]) -> tuple:
    """What a `forge` command line asks for: its command path, and at each level every parameter with the
    defaults filled in, as the CLI parses it (so `eval crossfit --stage 2 --split-seed 0 ...` and the same
    command with its options in another order or `--split-seed 0` left to the default are one command); the
    line itself when the CLI does not parse it."""
    import typer

    from forge_core.cli import app

    try:
        command = typer.main.get_command(app)
        context = command.make_context("forge", list(args))
        key: list[tuple[str, str]] = [("forge", repr(sorted(context.params.items())))]
        while hasattr(command, "resolve_command"):
            rest = [*getattr(context, "_protected_args", []), *context.args]
            if not rest:  # a group that runs by itself (`forge eval --split test`)
                break
            name, command, rest = command.resolve_command(context, rest)
            context = command.make_context(name, rest, parent=context)
            key.append((name, repr(sorted(context.params.items()))))
        return tuple(key)
    except Exception:  # noqa: BLE001 -- not parsed: the line is its own key
        return ("unparsed", *args)


class OfflineDemo:
    """A fresh demo store that `forge` commands only read (each run is checked for that), its cache
    (the counting host announced) and an empty models directory; `run` runs a command once a session,
    by what it asks for (`command_key`), and hands every later caller the same `ForgeRun`."""

    def __init__(self, store: Store, cache_dir: Path, models_dir: Path, host: CountingHost) -> None:
        self.store = store
        self.cache_dir = cache_dir
        self.models_dir = models_dir
        self.host = host
        self._runs: dict[tuple, ForgeRun] = {}

    def run(self, args: list[str] | tuple[str, ...]) -> ForgeRun:
        """`forge ARGS` on the demo store (see `run_forge`), run on first asking."""
        key = command_key(args)
        if key not in self._runs:
            self._runs[key] = run_forge(args, self.store, self.cache_dir, self.models_dir, self.host)
        return self._runs[key]
