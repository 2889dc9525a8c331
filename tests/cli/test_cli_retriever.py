"""`forge retriever add/list/check`, `forge evidence compare` and `forge ask --retriever`, in this
process, on real 2WikiMultihopQA records, against a local retrieval-service test double and an
OpenAI-compatible answering test double."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from forge_core import cli
from forge_core.data.importing import import_benchmarks
from forge_core.store import Store

from support.answering_server import AnsweringServer
from support.resources import require_tiny_model
from support.retrieval_server import RetrievalServer
from support.stores import copy_store

BENCHMARK = "2wikimultihopqa"


@pytest.fixture(scope="module")
def small_store(tmp_path_factory: pytest.TempPathFactory, benchmarks_root: Path) -> Store:
    store = Store(tmp_path_factory.mktemp("retriever-cli") / "store.duckdb")
    import_benchmarks(store, benchmarks_root, [BENCHMARK])
    return store


@pytest.fixture
def store(small_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    copied = copy_store(small_store, tmp_path)
    monkeypatch.setenv("FORGE_STORE", str(copied.path))
    return copied


def forge(arguments: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    """`forge ARGUMENTS` in this process: exit code, stdout, stderr."""
    monkeypatch.setattr(sys, "argv", ["forge", *arguments])
    try:
        cli.main()
        code = 0
    except SystemExit as exit_info:
        code = exit_info.code or 0
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_service_is_added_listed_checked_and_used_by_ask(
        store: Store, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    from forge_core.hosts.base import HostConfig
    from forge_core.hosts.registry import save_host_config

    with RetrievalServer(delay_s=0.05) as service, AnsweringServer() as host:
        save_host_config(store, HostConfig(name="double", kind="openai", model="m", base_url=host.base_url,
                                           max_retries=0))
        assert forge(["retriever", "add", "svc", "--kind", "http", "--url", service.url, "--timeout", "2"],
                     monkeypatch, capsys)[0] == 0
        code, out, _ = forge(["retriever", "list", "--json"], monkeypatch, capsys)
        listed = json.loads(out)["retrievers"]
        assert code == 0 and listed["bm25"]["config_hash"] == "" and len(listed["svc"]["config_hash"]) == 12
        code, out, _ = forge(["retriever", "check", "svc", "--benchmark", BENCHMARK, "--json"], monkeypatch, capsys)
        checked = json.loads(out)
        assert code == 0 and checked["ok"] and checked["latency_ms"] >= 50 and len(checked["passages"]) == 3
        code, out, _ = forge(["ask", "Where is the answer?", "--benchmark", BENCHMARK, "--host", "double",
                              "--retriever", "svc", "--arm", "raw:no_think", "--json"], monkeypatch, capsys)
        asked = json.loads(out)
        assert code == 0 and asked["retriever"] == "svc"
        assert asked["support_text"].startswith("[1] Service passage one\nThe service says the answer is Kathmandu.")
        request = host.received[-1][1]
        assert "The service says the answer is Kathmandu." in request["messages"][1]["content"]
        assert forge(["retriever", "use", "svc", "--host", "double"], monkeypatch, capsys)[0] == 0
        code, out, _ = forge(["ask", "Where is the answer?", "--benchmark", BENCHMARK, "--host", "double",
                              "--arm", "raw:no_think", "--json"], monkeypatch, capsys)  # the host's default
        assert code == 0 and json.loads(out)["retriever"] == "svc"
    assert json.loads(forge(["retriever", "list", "--json"], monkeypatch, capsys)[1])["retrievers"]["svc"][
        "default_of"] == ["double"]
    for command, message in ((["retriever", "remove", "svc"], "is the default of host double"),
                             (["retriever", "use", "nope", "--host", "double"], "unknown retriever 'nope'"),
                             (["retriever", "use", "svc", "--host", "nobody"], "unknown host 'nobody'")):
        code, _, err = forge(command, monkeypatch, capsys)
        assert code == 2 and message in err and err.count("\n") == 1, err
    code, out, _ = forge(["retriever", "check", "svc", "--benchmark", BENCHMARK, "--json"], monkeypatch, capsys)
    assert code == 1 and not json.loads(out)["ok"] and "after 3 attempts" in json.loads(out)["error"]
    code, _, err = forge(["retriever", "check", "svc", "--benchmark", BENCHMARK], monkeypatch, capsys)
    assert code == 2 and err.count("\n") == 1 and "retriever 'svc': http://127.0.0.1" in err
    code, _, err = forge(["retriever", "add", "bad", "--kind", "http"], monkeypatch, capsys)
    assert code == 2 and "needs --url" in err and err.count("\n") == 1


def test_evidence_compare_measures_each_retriever_without_a_host(
        store: Store, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    require_tiny_model()  # its tokenizer counts the prompt tokens when the embedded model is not pulled
    assert forge(["retriever", "add", "wide", "--k", "5", "--raw-words", "300"], monkeypatch, capsys)[0] == 0
    code, out, _ = forge(["evidence", "compare", "--benchmark", BENCHMARK, "--retrievers", "bm25",
                          "--retrievers", "wide", "--limit", "25", "--json"], monkeypatch, capsys)
    assert code == 0
    result = json.loads(out)
    assert (result["benchmark"], result["k"], result["queries"]) == (BENCHMARK, 3, 25)
    bm25, wide = result["retrievers"]
    assert (bm25["name"], bm25["config_hash"], wide["name"]) == ("bm25", "", "wide")
    for row in (bm25, wide):
        for measure in ("recall_at_k", "summary_recall", "raw_recall", "summary_tokens_in", "raw_tokens_in"):
            low, high = row[measure]["ci95"]
            assert low <= row[measure]["mean"] <= high
        assert 0 < row["recall_at_k"]["mean"] <= 1 and row["latency_ms"]["p50"] <= row["latency_ms"]["p95"]
    assert wide["recall_at_k"] == bm25["recall_at_k"]  # the same BM25 ranking, recall at the same k
    assert bm25["recall_vs_first_ci95"] is None and wide["recall_vs_first_ci95"] == [0.0, 0.0]
    assert wide["raw_tokens_in"]["mean"] > 1.4 * bm25["raw_tokens_in"]["mean"]  # five longer passages, not three
    assert wide["raw_recall"]["mean"] >= bm25["raw_recall"]["mean"]
    code, _, err = forge(["evidence", "compare", "--benchmark", BENCHMARK, "--retrievers", "nope"], monkeypatch,
                         capsys)
    assert code == 2 and "unknown retriever 'nope'" in err
