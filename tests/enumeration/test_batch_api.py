"""Stage 0 submitted to OpenAI's and Anthropic's batch endpoints (local doubles of both)."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from forge_core.data.importing import import_benchmarks
from forge_core.enumeration.batch_api import BatchApiError, batch_api, cancel_batch, run_batches
from forge_core.enumeration.batch_files import FileLimits, anthropic_custom_id
from forge_core.enumeration.calls import planned_calls
from forge_core.enumeration.estimate import estimate_plan
from forge_core.enumeration.planning import EnumerationPlan, count_calls, plan_work
from forge_core.errors import InvalidInput
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import get_host_config, save_host_config, save_host_prices
from forge_core.records import HostPrices
from forge_core.store import Store

from support.batch_api_server import BatchApiServer
from support.resources import require_tiny_model

KEY = "sk-test-never-stored"


class Crash(Exception):
    """Stands for the process dying while it polls."""


@pytest.fixture
def store(benchmarks_root: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    require_tiny_model()  # its tokenizer counts the estimate stored with each batch
    monkeypatch.setenv("FORGE_TEST_BATCH_KEY", KEY)
    store = Store(os.environ["FORGE_STORE"])
    import_benchmarks(store, benchmarks_root, ["2wikimultihopqa"])
    return store


def _host(store: Store, server: BatchApiServer, kind: str = "openai") -> HostConfig:
    config = HostConfig(name=f"{kind}-batch", kind=kind, model="m", base_url=server.base_url,
                        api_key_env="FORGE_TEST_BATCH_KEY")
    save_host_config(store, config)
    return config


def _plan(host: str) -> EnumerationPlan:
    return EnumerationPlan(host=host, split="train", benchmarks=("2wikimultihopqa",), per_benchmark=3, probes=True)


def _run(store: Store, plan: EnumerationPlan, provider: str = "openai", on_progress=None):
    api = batch_api(provider, get_host_config(store, plan.host), retry_base_s=0.001)
    return run_batches(store, plan, api, poll_seconds=0.0, on_progress=on_progress)


def test_openai_batch_runs_to_the_store_with_its_id_and_price(store: Store) -> None:
    with BatchApiServer(rate_limited_creates=2) as server:
        plan = _plan(_host(store, server).name)
        save_host_prices(store, HostPrices(plan.host, 2.0, 8.0))
        seen = []
        report = _run(store, plan, on_progress=lambda batch, state: seen.append((state.status, state.completed)))
    assert server.creates == 1 and server.create_attempts == 3  # two 429s, retried
    assert (report.stored, report.errors, report.refused, len(report.submitted)) == (27, 0, [], 1)
    assert seen == [("in_progress", 13), ("completed", 27)]
    assert server.batches["batch_1"]["polls"] == 2  # the results are found from the last poll, not a third GET
    assert count_calls(plan_work(store, plan)) == 0
    outcomes = store.arm_outcomes(plan.host)
    assert len(outcomes) == 18 and outcomes["latency_ms"].isna().all() and outcomes["error"].isna().all()
    [batch] = store.batches(plan.host)
    assert (batch.batch_id, batch.status, batch.requests, batch.completed) == ("batch_1", "ingested", 27, 27)
    assert batch.estimated_usd is not None and batch.estimated_usd > 0
    assert server.authorizations == {f"Bearer {KEY}"}
    with store.connect() as connection:
        tables = [row[0] for row in connection.execute("SHOW TABLES").fetchall()]
        for table in tables:
            text = connection.execute(f"SELECT * FROM {table}").fetchdf().to_csv()  # noqa: S608 (test)
            assert KEY not in text, table


@pytest.mark.parametrize("tokenize", [True, False])
def test_a_vllm_host_counts_its_own_prompt_tokens(store: Store, tokenize: bool) -> None:
    with BatchApiServer(tokenize=tokenize) as server:
        plan = _plan(_host(store, server).name)
        estimate = estimate_plan(store, plan)
        _run(store, plan)
    stored = store.arm_outcomes(plan.host)["tokens_in"].sum() + store.probe_outcomes(plan.host).query(
        "probe != 'greedy'")["tokens_in"].sum()
    if tokenize:
        assert estimate.input_method.startswith("exact: the host's own /tokenize")
        assert estimate.tokens_in == stored
    else:  # no /tokenize (404): the named tokenizer, unscaled
        assert "unscaled" in estimate.input_method and estimate.tokens_in != stored


def test_a_plan_past_the_limits_goes_in_several_batches_submitted_together(store: Store) -> None:
    with BatchApiServer() as server:
        plan = _plan(_host(store, server).name)
        api = batch_api("openai", get_host_config(store, plan.host), retry_base_s=0.001)
        api.limits = FileLimits(requests=10, bytes=10**9)
        creates_at_first_poll = []
        report = run_batches(store, plan, api, poll_seconds=0.0,
                             on_progress=lambda batch, state: creates_at_first_poll.append(server.creates))
    assert report.submitted == ["batch_1", "batch_2", "batch_3"] and creates_at_first_poll[0] == 3
    assert [len(server.batches[b]["lines"]) for b in report.submitted] == [10, 10, 7]
    assert report.stored == 27 and count_calls(plan_work(store, plan)) == 0


def test_a_partly_failed_batch_stores_error_rows_and_the_rerun_sends_only_those(store: Store) -> None:
    with BatchApiServer() as server:
        plan = _plan(_host(store, server).name)
        failing = [call.key.custom_id for call in planned_calls(store, plan)][:4:2]
        server.failing = frozenset(failing)
        report = _run(store, plan)
        assert (report.stored, report.errors) == (25, 2)
        errors = store.arm_outcomes(plan.host).query("error.notna()")
        assert len(errors) + len(store.probe_outcomes(plan.host).query("error.notna()")) == 2
        assert errors["f1"].isna().all() and errors["error"].str.contains("HTTP 500").all()
        server.failing = frozenset()
        again = _run(store, plan)
    assert server.creates == 2 and len(server.batches["batch_2"]["lines"]) == 2
    assert (again.stored, again.errors) == (2, 0) and count_calls(plan_work(store, plan)) == 0


def test_an_expired_batch_keeps_what_it_finished(store: Store) -> None:
    with BatchApiServer(expire_after=10) as server:
        plan = _plan(_host(store, server).name)
        report = _run(store, plan)
    assert (report.stored, report.errors) == (10, 17)
    assert store.batches(plan.host)[0].status == "ingested"
    assert count_calls(plan_work(store, plan)) == 17
    assert store.arm_outcomes(plan.host)["error"].dropna().str.contains("batch_expired").any()


def test_a_crash_after_create_resumes_the_same_batch(store: Store) -> None:
    with BatchApiServer() as server:
        plan = _plan(_host(store, server).name)

        def crash(batch, state) -> None:
            raise Crash(batch.batch_id)

        with pytest.raises(Crash):
            _run(store, plan, on_progress=crash)
        assert [b.status for b in store.batches(plan.host)] == ["in_progress"]
        assert len(store.arm_outcomes(plan.host)) == 0
        report = _run(store, plan)
    assert server.creates == 1 and report.resumed == ["batch_1"] and report.submitted == []
    assert report.stored == 27 and count_calls(plan_work(store, plan)) == 0


def test_a_failed_download_leaves_the_batch_to_resume_and_a_refused_batch_is_final(store: Store) -> None:
    with BatchApiServer(broken_downloads=5) as server:  # every attempt of the first download fails
        plan = _plan(_host(store, server).name)
        with pytest.raises(BatchApiError, match="download: HTTP 500"):
            _run(store, plan)
        assert [b.status for b in store.batches(plan.host)] == ["completed"]  # not final: resumed next time
        report = _run(store, plan)
        assert (report.resumed, report.submitted, report.stored, server.creates) == (["batch_1"], [], 27, 1)
    with BatchApiServer(refuse_input=True) as server:
        save_host_config(store, HostConfig(name="refused", kind="openai", model="m", base_url=server.base_url))
        plan = _plan("refused")
        with pytest.raises(BatchApiError, match="failed: line 1 is not valid"):
            _run(store, plan)
        assert [b.status for b in store.batches(plan.host)] == ["failed"]


def test_anthropic_batch_maps_its_ids_back(store: Store) -> None:
    with BatchApiServer() as server:
        plan = _plan(_host(store, server, "anthropic").name)
        first = next(iter(planned_calls(store, plan))).key.custom_id
        server.failing = frozenset({anthropic_custom_id(first)})
        report = _run(store, plan, "anthropic")
        assert (report.stored, report.errors) == (26, 1)
        sent = server.batches["batch_1"]["lines"]
        assert all(len(line["custom_id"]) <= 64 and "/" not in line["custom_id"] for line in sent)
        assert "system" in sent[0]["body"] and sent[0]["body"]["model"] == "m"  # the Messages body
    assert server.authorizations == {KEY}
    assert store.arm_outcomes(plan.host).query("error.isna()")["answer"].str.startswith("answer ").all()


def test_cancel_asks_the_provider_and_the_rerun_stores_what_was_done(store: Store) -> None:
    with BatchApiServer() as server:
        plan = _plan(_host(store, server).name)
        with pytest.raises(Crash):
            _run(store, plan, on_progress=lambda batch, state: (_ for _ in ()).throw(Crash()))
        cancelled = cancel_batch(store, "batch_1", retry_base_s=0.001)
        assert cancelled.status == "cancelled"
        report = _run(store, plan)
        with pytest.raises(InvalidInput, match="ingested"):
            cancel_batch(store, "batch_1")
    assert report.resumed == ["batch_1"] and server.creates == 2  # the cancelled calls go in a new batch
    assert count_calls(plan_work(store, plan)) == 0


def test_wrong_provider_and_refused_create_are_one_line(store: Store) -> None:
    with BatchApiServer(rate_limited_creates=99) as server:
        config = _host(store, server)
        with pytest.raises(InvalidInput, match="needs a host of kind anthropic"):
            batch_api("anthropic", config)
        with pytest.raises(InvalidInput, match="--to-batch"):
            batch_api("openai", get_host_config(store, "embedded-tiny"))
        with pytest.raises(BatchApiError, match="create: HTTP 429 rate limited"):
            _run(store, _plan(config.name))
    assert store.batches(config.name) == []


def test_an_unexpected_reply_or_download_is_one_line() -> None:
    replies = {"/v1/batches/b1": httpx.Response(200, json={"id": "b1"}),
               "/v1/batches/b2": httpx.Response(200, text="<html>proxy error</html>"),
               "/v1/files/f1/content": httpx.Response(200, text='{"custom_id": "a"}\n{"custom_id": tru')}
    api = batch_api("openai", HostConfig(name="odd", kind="openai", model="m", base_url="http://odd.test/v1"))
    api.http.client = httpx.Client(base_url="http://odd.test/v1",
                                   transport=httpx.MockTransport(lambda request: replies[request.url.path]))
    with pytest.raises(BatchApiError, match="^openai batch API, retrieve: the reply has no 'status'$"):
        api.state("b1")
    with pytest.raises(BatchApiError, match="^openai batch API, retrieve: the reply is not a JSON object$"):
        api.state("b2")
    with pytest.raises(BatchApiError, match="^openai batch API, download: line 2 is not a JSON object$"):
        api.http.jsonl("/files/f1/content", "download")
