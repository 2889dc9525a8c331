"""Questions without gold answers, end to end through the `forge` CLI: imported, enumerated (on a
local test double speaking the OpenAI protocol), never F1-scored, and trained on with the
consensus reward."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from forge_core.hosts.registry import save_host_config
from forge_core.routing.checkpoints import load_checkpoint
from forge_core.store import Store

from support.answering_server import AnsweringServer
from support.enumeration import host_config
from support.user_files import CITIES, write_jsonl


def forge(store: Store, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "FORGE_STORE": str(store.path)}
    return subprocess.run([sys.executable, "-m", "forge_core.cli", *args], capture_output=True, text=True, env=env)


@pytest.mark.e2e  # end to end: import, enumerate and train as processes (about 28 s)
def test_a_file_without_answers_is_enumerated_unscored_and_trained_on_consensus(tmp_path: Path) -> None:
    store = Store(tmp_path / "store.duckdb")
    questions = write_jsonl(tmp_path / "capitals.jsonl", [
        {"id": country.lower(), "question": f"What is the capital of {country}?",
         "contexts": [{"title": country, "text": f"{city} is the capital of {country}."}]}
        for country, city in CITIES])
    imported = forge(store, "data", "import-file", str(questions), "--name", "capitals", "--json")
    assert imported.returncode == 0, imported.stderr
    assert store.examples("capitals")[0].answers == ()

    with AnsweringServer() as server:
        save_host_config(store, host_config(server.base_url))
        enumerated = forge(store, "enumerate", "--host", "test-host", "--benchmark", "capitals", "--split", "all",
                           "--probes", "--json")
    assert enumerated.returncode == 0, enumerated.stderr
    outcomes = store.arm_outcomes("test-host")
    assert len(outcomes) == 12 * 6 and outcomes["f1"].isna().all() and outcomes["error"].isna().all()

    refused = forge(store, "train", "--host", "test-host", "--variant", "lite", "--max-epochs", "2", "--json")
    assert refused.returncode == 2 and "--reward consensus or judge" in refused.stderr
    for protocol in ("fresh", "cached"):  # nothing to score with F1: one line, no traceback
        unscored = forge(store, "eval", protocol, "--host", "test-host", "--json")
        assert unscored.returncode == 2 and "F1 needs gold answers" in unscored.stderr
        assert "Traceback" not in unscored.stderr and len(unscored.stderr.strip().splitlines()) == 1
    trained = forge(store, "train", "--host", "test-host", "--variant", "lite", "--reward", "consensus",
                    "--max-epochs", "2", "--json")
    assert trained.returncode == 0, trained.stderr
    checkpoint = load_checkpoint(store, json.loads(trained.stdout)["checkpoint_id"])
    assert checkpoint.lineage["reward"] == "consensus"
    assert checkpoint.record["metrics"]["train_queries"] == len(store.split_ids("capitals", "train"))
