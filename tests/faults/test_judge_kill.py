"""Fault suite, kills: `forge rewards judge` killed with SIGKILL mid-run keeps every rating it
stored, and the same command run again judges exactly what is missing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from forge_core.hosts.registry import save_host_config
from forge_core.store import Store

from support.answering_server import AnsweringServer
from support.enumeration import host_config
from support.stores import copy_store

pytestmark = [pytest.mark.faults, pytest.mark.kills]
COMMAND = ["rewards", "judge", "--host", "synthetic-host", "--judge-host", "test-host", "--split", "dev",
           "--limit", "3", "--json"]


def start(store: Store) -> subprocess.Popen:
    env = {**os.environ, "FORGE_STORE": str(store.path)}
    return subprocess.Popen([sys.executable, "-m", "forge_core.cli", *COMMAND], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_kill_9_mid_judging_loses_no_stored_rating(outcome_store: Store, tmp_path: Path) -> None:
    store = copy_store(outcome_store, tmp_path)
    with AnsweringServer() as server:
        save_host_config(store, host_config(server.base_url))
        process: subprocess.Popen | None = None

        def kill_at_the_eighth(number: int) -> bool:
            if number == 8:
                os.kill(process.pid, signal.SIGKILL)
                return True
            return False

        server.on_request = kill_at_the_eighth
        process = start(store)
        assert process.wait(timeout=300) == -signal.SIGKILL
        kept = store.reward_outcomes("synthetic-host")
        assert 0 < len(kept) < 18 and not kept.duplicated(["benchmark", "example_id", "arm", "reward_key"]).any()

        server.on_request = None
        rerun = start(store)
        stdout, stderr = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, stderr
    assert json.loads(stdout)["planned"] == 18 - len(kept)
    final = store.reward_outcomes("synthetic-host")
    assert len(final) == 18 and final["error"].isna().all()
    assert set(map(tuple, kept[["example_id", "arm"]].values)) <= set(map(tuple, final[["example_id", "arm"]].values))
