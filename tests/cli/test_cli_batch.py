"""`forge host edit --price-*`, `forge enumerate --estimate/--budget-usd/--to-batch/--from-batch` end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from forge_core.data.importing import import_benchmarks
from forge_core.store import Store

from support.batch_api_server import BatchApiServer
from support.resources import require_tiny_model

FORGE = [sys.executable, "-m", "forge_core.cli"]
PLAN = ["enumerate", "--host", "embedded-tiny", "--benchmark", "2wikimultihopqa", "--per-benchmark", "2"]


def forge(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*FORGE, *args], capture_output=True, text=True, env=dict(os.environ))


@pytest.fixture
def store(benchmarks_root: Path) -> Store:
    require_tiny_model()
    store = Store(os.environ["FORGE_STORE"])
    import_benchmarks(store, benchmarks_root, ["2wikimultihopqa"])
    return store


def test_prices_estimate_and_budget(store: Store) -> None:
    unpriced = json.loads(forge(*PLAN, "--estimate", "--json").stdout)
    assert (unpriced["calls"], unpriced["tokens_out"], unpriced["usd"]) == (12, 2 * (3 * 64 + 3 * 256), None)
    assert unpriced["input_method"].startswith("exact: smollm2-135m")
    assert forge("host", "edit", "embedded-tiny", "--price-in", "2", "--price-out", "8").returncode == 0
    hosts = json.loads(forge("host", "list", "--json").stdout)["hosts"]
    assert (hosts["embedded-tiny"]["usd_per_million_in"], hosts["embedded-tiny"]["usd_per_million_out"]) == (2.0, 8.0)
    priced = json.loads(forge(*PLAN, "--estimate", "--json").stdout)
    assert priced["usd"] == pytest.approx((priced["tokens_in"] * 2 + priced["tokens_out"] * 8) / 1e6)
    assert priced["batch_usd"] == pytest.approx(priced["usd"] / 2)
    refused = forge(*PLAN, "--budget-usd", "0.001")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "above --budget-usd 0.001" in refused.stderr.replace("\n", "")
    assert len(store.arm_outcomes("embedded-tiny")) == 0


@pytest.mark.parametrize("args, message", [
    (["host", "edit", "embedded-tiny", "--concurrency", "3"], "only its prices can be set"),
    (["host", "edit", "embedded-tiny", "--price-out", "-1"], "--price-out must be"),
    (["host", "edit", "nowhere", "--price-in", "1"], "unknown host 'nowhere'"),
    ([*PLAN, "--requests", "x.jsonl"], "--requests goes with --from-batch"),
    ([*PLAN, "--estimate", "--to-batch", "x.jsonl"], "choose one of --estimate and --to-batch"),
    ([*PLAN, "--budget-usd", "5"], "--budget-usd needs the prices of 'embedded-tiny'"),
    (["enumerate", "--from-batch", "missing.jsonl"], "cannot read missing.jsonl"),
])
def test_mistakes_are_one_line(store: Store, args: list[str], message: str) -> None:
    result = forge(*args)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert message in result.stderr.replace("\n", "")


def test_to_batch_then_from_batch_twice(store: Store, tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    written = json.loads(forge(*PLAN, "--probes", "--to-batch", str(requests), "--json").stdout)
    lines = [json.loads(text) for text in requests.read_text().splitlines()]
    assert written == {"requests": 18, "files": [str(requests)]} and len(lines) == 18
    assert len({line["custom_id"] for line in lines}) == 18
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps({"custom_id": line["custom_id"], "error": None, "response": {
        "status_code": 200, "body": {"choices": [{"message": {"content": "Paris"}}],
                                     "usage": {"prompt_tokens": 50, "completion_tokens": 1}}}}) + "\n"
        for line in lines))
    first = json.loads(forge("enumerate", "--from-batch", str(results), "--requests", str(requests), "--json").stdout)
    assert first == {"stored": 18, "errors": 0, "skipped": 0, "refused": 0}
    second = json.loads(forge("enumerate", "--from-batch", str(results), "--json").stdout)
    assert second == {"stored": 0, "errors": 0, "skipped": 18, "refused": 0}
    assert len(store.arm_outcomes("embedded-tiny")) == 12
    nothing = forge(*PLAN, "--probes", "--to-batch", str(tmp_path / "again.jsonl"), "--json")
    assert json.loads(nothing.stdout)["requests"] == 0


def test_batch_openai_submits_stores_and_lists(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORGE_TEST_BATCH_KEY", "sk-cli-test")
    with BatchApiServer() as server:
        added = forge("host", "add", "gpt", "--model", "m", "--base-url", server.base_url,
                      "--api-key-env", "FORGE_TEST_BATCH_KEY", "--price-in", "0.15", "--price-out", "0.6")
        assert added.returncode == 0
        plan = ["enumerate", "--host", "gpt", "--benchmark", "2wikimultihopqa", "--per-benchmark", "2"]
        refused = forge(*plan, "--batch", "openai", "--budget-usd", "0.00001")
        assert refused.returncode == 2 and "through a Batch API, above --budget-usd" in refused.stderr.replace("\n", "")
        result = forge(*plan, "--batch", "openai", "--poll-seconds", "0", "--json")
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == {"submitted": ["batch_1"], "resumed": [], "stored": 12, "errors": 0,
                                             "skipped": 0, "refused": 0}
    [listed] = json.loads(forge("batches", "--json").stdout)["batches"]
    assert (listed["batch_id"], listed["status"], listed["requests"], listed["completed"]) == ("batch_1", "ingested",
                                                                                                12, 12)
    assert listed["estimated_usd"] > 0
    assert len(store.arm_outcomes("gpt")) == 12
    cancel = forge("batches", "cancel", "batch_1")
    assert cancel.returncode == 2 and "is ingested: nothing to cancel" in cancel.stderr
    wrong = forge(*plan, "--batch", "anthropic")
    assert wrong.returncode == 2 and "needs a host of kind anthropic" in wrong.stderr
