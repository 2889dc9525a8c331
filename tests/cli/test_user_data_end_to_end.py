"""A user's own questions through the whole flow on the real tiny host: import a file the test
writes, enumerate it, train a router on it and evaluate, every step by the `forge` CLI with
`--benchmark NAME`; and `--benchmark` restricting training and evaluation on a shared store."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from forge_core.evaluation.cached import evaluate
from forge_core.evaluation.settings import EvaluationSettings
from forge_core.evaluation.setup import prepare_evaluation, router_policies
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.routing.checkpoints import load_checkpoint
from forge_core.routing.outcome_table import load_outcome_table
from forge_core.store import Store

from support.stores import copy_store
from support.user_files import CITIES, write_jsonl

HOST = "synthetic-host"


def forge(store: Store, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "FORGE_STORE": str(store.path)}
    return subprocess.run([sys.executable, "-m", "forge_core.cli", *args], capture_output=True, text=True, env=env)


@pytest.mark.slow  # the default suite imports, enumerates and trains on a user file in tests/cli/test_label_free.py
def test_own_file_import_enumerate_train_eval_on_the_tiny_host(tmp_path: Path, tiny_server: HostConfig) -> None:
    store = Store(tmp_path / "store.duckdb")
    save_host_config(store, dataclasses.replace(tiny_server, name="tiny", kind="openai", max_retries=0))
    questions = write_jsonl(tmp_path / "capitals.jsonl", [
        {"id": country.lower(), "question": f"What is the capital of {country}?", "answers": city}
        for country, city in CITIES])
    corpus = write_jsonl(tmp_path / "atlas.jsonl", [
        {"title": country, "text": f"{city} is the capital of {country}."} for country, city in CITIES])
    imported = forge(store, "data", "import-file", str(questions), "--name", "capitals", "--corpus", str(corpus),
                     "--json")
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout) == {"benchmark": "capitals", "added": True, "examples": 12, "documents": 12}

    enumerated = forge(store, "enumerate", "--host", "tiny", "--benchmark", "capitals", "--split", "all",
                       "--arms", "3", "--probes", "--json")
    assert enumerated.returncode == 0, enumerated.stderr
    assert json.loads(enumerated.stdout)["errors"] == 0
    outcomes = store.arm_outcomes("tiny")
    assert set(outcomes["benchmark"]) == {"capitals"} and len(outcomes) == 12 * 3
    assert (outcomes["tokens_in"] > 0).all()

    trained = forge(store, "train", "--host", "tiny", "--arms", "3", "--variant", "lite", "--benchmark", "capitals",
                    "--max-epochs", "3", "--json")
    assert trained.returncode == 0, trained.stderr
    checkpoint = store.checkpoint(json.loads(trained.stdout)["checkpoint_id"])[0]
    assert checkpoint["lineage"]["benchmarks"] == ["capitals"]
    assert checkpoint["metrics"]["train_queries"] == len(store.split_ids("capitals", "train"))

    evaluated = forge(store, "eval", "--host", "tiny", "--arms", "3", "--benchmark", "capitals", "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    report = json.loads(evaluated.stdout)
    assert report["queries"] == len(store.split_ids("capitals", "test"))
    raw = report["policies"]["always_raw"]
    assert set(raw["per_benchmark"]) == {"capitals"} and 0.0 <= raw["macro_f1"] <= 1.0
    assert {"forge_full", "forge_lite", "bge_bm25_kl"} <= set(report["policies"])


def test_benchmark_option_restricts_training_and_evaluation(outcome_store: Store, tmp_path: Path) -> None:
    everything = load_outcome_table(outcome_store, HOST)
    musique = load_outcome_table(outcome_store, HOST, benchmarks=["musique"])
    assert set(musique.benchmarks) == {"musique"} and 0 < len(musique) < len(everything)
    assert musique.keys == tuple(key for key in everything.keys if key[0] == "musique")
    with pytest.raises(ValueError, match="unknown benchmark.*nowhere"):
        load_outcome_table(outcome_store, HOST, benchmarks=["nowhere"])
    with pytest.raises(ValueError, match="no outcomes for host 'synthetic-host' on fever"):
        load_outcome_table(outcome_store, HOST, benchmarks=["fever"])

    store = copy_store(outcome_store, tmp_path / "restricted")
    settings = EvaluationSettings(HOST, policy_names=("always_raw", "forge_lite"), benchmarks=("musique",))
    prepare_evaluation(store, settings)
    report = evaluate(store, settings)
    assert set(report["policies"]["always_raw"]["per_benchmark"]) == {"musique"}
    assert routers_benchmarks(store, settings) == [["musique"]] * 3
    default = EvaluationSettings(HOST, policy_names=("always_raw", "forge_lite"))
    prepare_evaluation(store, default)
    assert routers_benchmarks(store, default) == [None] * 3  # the restricted routers are not picked up
    report = evaluate(store, default)
    assert set(report["policies"]["always_raw"]["per_benchmark"]) == {"musique", "popqa", "2wikimultihopqa"}


def routers_benchmarks(store: Store, settings: EvaluationSettings) -> list:
    """The `benchmarks` lineage of the FORGE routers an evaluation with these settings uses."""
    return [load_checkpoint(store, policy.checkpoint_id).lineage.get("benchmarks")
            for policy in router_policies(store, settings)]
