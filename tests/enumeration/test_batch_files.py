"""Stage 0 through batch files: request lines out, result lines in, and the same outcomes as online."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import numpy as np
import pytest

from forge_core.data.importing import import_benchmarks
from forge_core.enumeration.batch_files import (
    FileLimits,
    anthropic_custom_id,
    ingest_results,
    openai_batch_line,
    parse_result_line,
    read_jsonl,
    write_request_files,
)
from forge_core.enumeration.calls import CallKey, parse_custom_id, planned_calls
from forge_core.enumeration.estimate import estimate_plan
from forge_core.enumeration.planning import EnumerationPlan, count_calls, plan_work
from forge_core.enumeration.runner import enumerate_arms
from forge_core.errors import InvalidInput
from forge_core.hosts.base import HostConfig
from forge_core.hosts.http_retry import UnusableResponse
from forge_core.hosts.openai_compat import OpenAICompatibleHost, chat_completion_body
from forge_core.hosts.registry import get_host_config, save_host_config
from forge_core.routing.outcome_table import load_outcome_table
from forge_core.store import Store

from support.batch_runner import run_batch_file
from support.stores import copy_store

COMPARED = ["benchmark", "example_id", "arm", "answer", "extracted", "f1", "em", "tokens_in", "tokens_out",
            "tokens_reasoning"]


@pytest.fixture
def store(benchmarks_root: Path) -> Store:
    store = Store(os.environ["FORGE_STORE"])
    import_benchmarks(store, benchmarks_root, ["2wikimultihopqa", "fever"])
    save_host_config(store, HostConfig(name="remote", kind="openai", model="m", base_url="http://127.0.0.1:9/v1"))
    return store


def _plan(**changes) -> EnumerationPlan:
    values = {"host": "remote", "split": "train", "benchmarks": ("2wikimultihopqa", "fever"), "per_benchmark": 2,
              "probes": True}
    return EnumerationPlan(**{**values, **changes})


def _write(store: Store, plan: EnumerationPlan, path: Path, limits: FileLimits | None = None) -> list[Path]:
    config = get_host_config(store, plan.host)
    lines = (openai_batch_line(config, call) for call in planned_calls(store, plan))
    return write_request_files(path, lines, limits) if limits else write_request_files(path, lines)


def _answer(line: dict, text: str = "Paris", status: int = 200) -> dict:
    """An OpenAI batch output line answering a request line (a recorded-response double)."""
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 3}}
    if status != 200:
        body = {"error": {"type": "server_error", "message": "overloaded"}}
    return {"id": "batch_req_1", "custom_id": line["custom_id"], "error": None,
            "response": {"status_code": status, "request_id": "r", "body": body}}


def test_custom_ids_name_the_call_and_survive_odd_example_ids() -> None:
    key = CallKey("my host", "capitals", "a/b+c d", "direct:no_think", greedy_probe=True)
    assert parse_custom_id(key.custom_id) == key
    assert parse_custom_id("remote/fever/123/sample2") == CallKey("remote", "fever", "123", "sample2")
    for foreign in ("batch-7", "remote/fever/123/raw:maybe", "remote/fever/123/raw:cot+greedy"):
        with pytest.raises(InvalidInput):
            parse_custom_id(foreign)
    assert len(anthropic_custom_id(key.custom_id)) <= 64


def test_every_missing_call_becomes_one_line_with_the_online_body(store: Store, tmp_path: Path) -> None:
    plan = _plan()
    files = _write(store, plan, tmp_path / "requests.jsonl")
    lines = [line for _, line in read_jsonl(files[0])]
    assert len(lines) == count_calls(plan_work(store, plan)) == 4 * (6 + 3)
    assert len({line["custom_id"] for line in lines}) == len(lines)
    assert {line["url"] for line in lines} == {"/v1/chat/completions"}
    config = get_host_config(store, "remote")
    calls = {call.key.custom_id: call for call in planned_calls(store, plan)}
    assert all(line["body"] == chat_completion_body(config, calls[line["custom_id"]].request) for line in lines)
    split = _write(store, plan, tmp_path / "parts.jsonl", FileLimits(requests=10, bytes=10**9))
    assert [path.name for path in split] == ["parts-001.jsonl", "parts-002.jsonl", "parts-003.jsonl", "parts-004.jsonl"]
    assert [line for path in split for _, line in read_jsonl(path)] == lines


def test_results_are_stored_once_errors_become_error_rows(store: Store, tmp_path: Path) -> None:
    plan = _plan()
    lines = [line for _, line in read_jsonl(_write(store, plan, tmp_path / "requests.jsonl")[0])]
    failing = next(line["custom_id"] for line in lines if line["custom_id"].endswith("/direct:cot"))  # an arm call
    results = [_answer(line, status=500 if line["custom_id"] == failing else 200) for line in lines]
    requests = {line["custom_id"]: line for line in lines}
    first = ingest_results(store, (parse_result_line(r) for r in results), requests)
    assert (first.stored, first.errors, first.skipped, first.refused) == (len(lines) - 1, 1, 0, [])
    outcomes = store.arm_outcomes("remote")
    assert len(outcomes) == 4 * 6 and outcomes["latency_ms"].isna().all()
    error_row = outcomes[outcomes["error"].notna()]
    assert len(error_row) == 1 and error_row["f1"].isna().all() and "HTTP 500" in error_row["error"].iloc[0]
    assert len(store.probe_outcomes("remote")) == 4 * 4  # three samples and the greedy probe per query
    again = ingest_results(store, (parse_result_line(r) for r in results), requests)
    assert (again.stored, again.errors, again.skipped) == (0, 1, len(lines) - 1)
    assert count_calls(plan_work(store, plan)) == 1  # only the failed call is planned again


def test_batch_outcomes_make_complete_queries_for_training(store: Store, tmp_path: Path) -> None:
    """No latency, yet every query with its arms scored is complete (routers train on batch outcomes)."""
    lines = [line for _, line in read_jsonl(_write(store, _plan(), tmp_path / "requests.jsonl")[0])]
    ingest_results(store, (parse_result_line(_answer(line)) for line in lines))
    table = load_outcome_table(store, "remote", 6)
    assert len(table.keys) == 4 and np.isnan(table.latency_ms).all() and not np.isnan(table.f1).any()
    assert (table.sample_tokens_in == 3 * 100).all()


def test_result_lines_of_each_engine_parse_alike() -> None:
    config = HostConfig(name="remote", kind="openai", model="m", base_url="http://127.0.0.1:9/v1")
    completion = {"choices": [{"message": {"content": "Paris"}}], "usage": {"prompt_tokens": 9, "completion_tokens": 1}}
    current = parse_result_line({"custom_id": "a", "response": {"status_code": 200, "body": completion}})
    older_vllm = parse_result_line({"custom_id": "a", "response": completion, "error": None})
    assert current == older_vllm
    assert (current.generation(config).text, current.generation(config).tokens_in) == ("Paris", 9)
    no_usage = parse_result_line({"custom_id": "a", "response": {"status_code": 200, "body": {
        "choices": [{"message": {"content": "Paris"}}]}}})
    with pytest.raises(UnusableResponse, match="usage"):
        no_usage.generation(config)
    expired = parse_result_line({"custom_id": "a", "response": None,
                                 "error": {"code": "batch_expired", "message": "too late"}})
    assert expired.error == "batch error: batch_expired: too late" and expired.payload is None


def test_a_changed_request_is_refused_by_its_custom_id(store: Store, tmp_path: Path) -> None:
    lines = [line for _, line in read_jsonl(_write(store, _plan(), tmp_path / "requests.jsonl")[0])]
    lines[0]["body"]["max_tokens"] = 999
    requests = {line["custom_id"]: line for line in lines}
    report = ingest_results(store, (parse_result_line(_answer(line)) for line in lines), requests)
    assert len(report.refused) == 1 and lines[0]["custom_id"] in report.refused[0]
    assert report.stored == len(lines) - 1


def test_anthropic_result_lines_are_read_through_the_request_lines(store: Store, tmp_path: Path) -> None:
    lines = [line for _, line in read_jsonl(_write(store, _plan(per_benchmark=1), tmp_path / "requests.jsonl")[0])]
    ids = {anthropic_custom_id(line["custom_id"]): line["custom_id"] for line in lines}
    message = {"content": [{"type": "text", "text": "SUPPORTS"}], "usage": {"input_tokens": 80, "output_tokens": 2}}
    results = [{"custom_id": anthropic, "result": {"type": "succeeded", "message": message}} for anthropic in ids]
    results[0]["result"] = {"type": "expired"}
    report = ingest_results(store, (parse_result_line(r, ids) for r in results))
    assert (report.stored, report.errors) == (len(lines) - 1, 1)
    with pytest.raises(InvalidInput, match="--requests"):
        parse_result_line(results[1])
    fever = store.arm_outcomes("remote", "fever")
    assert set(fever[fever["error"].isna()]["extracted"]) == {"SUPPORTS"}


@pytest.mark.parametrize("n_arms, benchmarks", [
    (3, ("2wikimultihopqa",)), pytest.param(6, ("2wikimultihopqa", "fever"), marks=pytest.mark.slow)])
def test_the_same_outcomes_online_and_through_a_batch_file(store: Store, tmp_path: Path, tiny_server: HostConfig,
                                                          n_arms: int, benchmarks: tuple[str, ...]) -> None:
    """One plan on the real tiny host, online and as a batch file run by a local batch runner (the
    slow case adds the CoT arms, whose 256-token answers take a minute on the tiny host, and FEVER)."""
    plan = _plan(host="embedded-tiny", per_benchmark=1, n_arms=n_arms, benchmarks=benchmarks)
    online, batched = copy_store(store, tmp_path / "online"), copy_store(store, tmp_path / "batched")

    async def run_online():
        async with OpenAICompatibleHost(tiny_server) as client:
            return await enumerate_arms(online, plan, client)

    estimate = estimate_plan(online, plan)
    report = asyncio.run(run_online())
    assert report.calls == estimate.calls == len(benchmarks) * (n_arms + 3) and report.errors == []
    stored_in = online.arm_outcomes("embedded-tiny")["tokens_in"].sum() + online.probe_outcomes("embedded-tiny").query(
        "probe != 'greedy'")["tokens_in"].sum()
    assert estimate.tokens_in == stored_in  # counted exactly, before any call
    requests = _write(batched, plan, tmp_path / "requests.jsonl")[0]
    assert run_batch_file(requests, tmp_path / "results.jsonl", tiny_server.base_url) == report.calls
    lines = {line["custom_id"]: line for _, line in read_jsonl(requests)}
    results = [parse_result_line(line) for _, line in read_jsonl(tmp_path / "results.jsonl")]
    assert ingest_results(batched, results, lines).stored == report.calls

    arms = [store_.arm_outcomes("embedded-tiny")[COMPARED].reset_index(drop=True) for store_ in (online, batched)]
    assert arms[0].equals(arms[1])
    # The greedy probe is compared whole; the three samples (temperature 0.7, seeded) by their
    # prompts only: llama.cpp's seeded sampling also depends on its prompt-cache state, which the
    # shared server holds differently in the two runs (the texts of the online run's samples, then
    # sent concurrently, differed in 1 of 5 runs here; both runs now send them one after another).
    probe_columns = ["benchmark", "example_id", "probe", "answer", "tokens_in", "tokens_out"]
    probes = [store_.probe_outcomes("embedded-tiny")[probe_columns].reset_index(drop=True)
              for store_ in (online, batched)]
    assert len(probes[0]) == len(probes[1]) == len(benchmarks) * 4
    greedy = [frame[frame["probe"] == "greedy"].reset_index(drop=True) for frame in probes]
    assert greedy[0].equals(greedy[1])
    assert probes[0][probe_columns[:3] + ["tokens_in"]].equals(probes[1][probe_columns[:3] + ["tokens_in"]])
    assert batched.arm_outcomes("embedded-tiny")["latency_ms"].isna().all()
    assert (online.arm_outcomes("embedded-tiny")["latency_ms"] > 0).all()
    assert ingest_results(batched, results, lines).skipped == report.calls
