"""Retrievers as configuration: hashes that leave the default evidence's keys alone, the store's
registry, the HTTP retriever against a local test-double service (latency, failures, a slow and a
malformed reply), dense and hybrid retrieval with the real embedder on real benchmark records,
`forge ask --retriever`, and a router refusing evidence it was not trained under."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from forge_core.data.importing import import_benchmarks
from forge_core.errors import InvalidInput
from forge_core.evidence.answering import load_retriever, retrieve_evidence
from forge_core.evidence.http_retriever import RetrieverError
from forge_core.evidence.retrievers import (
    RetrieverConfig,
    get_retriever_config,
    list_retriever_configs,
    remove_retriever,
    retriever_hash,
    save_retriever_config,
)
from forge_core.store import Store

from support.answering_server import AnsweringServer
from support.retrieval_server import PASSAGES, RetrievalServer

BENCHMARK = "2wikimultihopqa"
MINILM = "all-MiniLM-L6-v2@onnx"


@pytest.fixture(scope="module")
def small_store(tmp_path_factory: pytest.TempPathFactory, benchmarks_root: Path) -> Store:
    """2WikiMultihopQA's real records (153 questions, 1,175 passages) in a store of their own."""
    store = Store(tmp_path_factory.mktemp("retrievers") / "store.duckdb")
    import_benchmarks(store, benchmarks_root, [BENCHMARK])
    return store


def http_config(url: str, **options) -> RetrieverConfig:
    return RetrieverConfig(name="svc", kind="http", url=url, **{"timeout_s": 2.0, "retries": 2, **options})


def test_the_default_evidence_has_no_hash_and_every_other_configuration_has_its_own() -> None:
    assert retriever_hash(RetrieverConfig("bm25")) == ""
    assert retriever_hash(RetrieverConfig("renamed-default")) == ""  # a name is not evidence
    hashes = {retriever_hash(config) for config in (
        RetrieverConfig("a", k=4), RetrieverConfig("b", raw_words=100), RetrieverConfig("c", summary_words=60),
        RetrieverConfig("d", kind="dense", embedder=MINILM), RetrieverConfig("e", kind="hybrid", embedder=MINILM),
        RetrieverConfig("f", kind="hybrid", embedder=MINILM, fusion_k=10), http_config("http://127.0.0.1:1/a"),
        http_config("http://127.0.0.1:1/b"))}
    assert len(hashes) == 8 and "" not in hashes
    assert retriever_hash(http_config("http://x/a", timeout_s=9.0, retries=0, api_key_env="K")) == retriever_hash(
        http_config("http://x/a"))  # how a service is called is not what it returns


@pytest.mark.parametrize("kind", ["dense", "hybrid"])
def test_a_dense_or_hybrid_hash_depends_on_its_embedder(kind: str) -> None:
    """Two configurations that differ only in their embedder give different evidence, so different
    hashes; the same configuration under another name hashes the same."""
    minilm = RetrieverConfig("a", kind=kind, embedder=MINILM)
    assert retriever_hash(minilm) == retriever_hash(RetrieverConfig("b", kind=kind, embedder=MINILM))
    assert retriever_hash(minilm) != retriever_hash(RetrieverConfig("a", kind=kind, embedder="bge-base-en-v1.5"))


def test_the_registry_stores_lists_and_refuses_in_one_line(tmp_path: Path) -> None:
    store = Store(tmp_path / "store.duckdb")
    save_retriever_config(store, RetrieverConfig("d", kind="dense", embedder=MINILM, k=4))
    assert get_retriever_config(store, "d") == RetrieverConfig("d", kind="dense", embedder=MINILM, k=4)
    assert [c.name for c in list_retriever_configs(store)] == ["bm25", "d"]
    refused = {
        "built-in retriever": RetrieverConfig("bm25"),
        "kind must be one of": RetrieverConfig("x", kind="faiss"),
        "needs --url": RetrieverConfig("x", kind="http"),
        "go with --kind http": RetrieverConfig("x", url="http://127.0.0.1:1"),
        "at least 1": RetrieverConfig("x", k=0),
        "needs the name of its embedder": RetrieverConfig("x", kind="dense"),
    }
    for message, config in refused.items():
        with pytest.raises(InvalidInput, match=message):
            save_retriever_config(store, config)
    with pytest.raises(InvalidInput, match="unknown retriever 'nope' .known: bm25, d."):
        get_retriever_config(store, "nope")
    remove_retriever(store, "d")
    with pytest.raises(InvalidInput, match="no stored retriever named 'd'"):
        remove_retriever(store, "d")


def test_the_http_retriever_sends_the_protocol_and_reads_the_passages(monkeypatch: pytest.MonkeyPatch) -> None:
    from forge_core.evidence.http_retriever import HttpRetriever

    monkeypatch.setenv("SVC_KEY", "secret-key")
    with RetrievalServer(delay_s=0.15) as server:
        config = http_config(server.url, api_key_env="SVC_KEY", k=2, raw_words=4, timeout_s=30.0)  # a busy machine
        retriever = HttpRetriever(config, BENCHMARK)
        hits = retriever.retrieve("Where is the answer?", 5)
        evidence = retrieve_evidence(retriever, "Where is the answer?")
    body, headers = server.received[0]
    assert body == {"query": "Where is the answer?", "k": 5}
    assert headers["Authorization"] == "Bearer secret-key"
    assert [(h.document.title, h.document.text, h.score) for h in hits] == [
        (p["title"], p["text"], p["score"]) for p in PASSAGES[:4]]
    assert len(server.received) == 2  # one request a call: the slow reply was waited for, not given up and retried
    assert evidence.support_text("raw") == ("[1] Service passage one\nThe service says the\n\n"
                                            "[2] Service passage two\nA second passage from")


def test_the_http_retriever_retries_what_a_retry_may_fix_and_fails_in_one_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from forge_core.evidence.http_retriever import HttpRetriever

    with RetrievalServer(script=lambda n: (503, {"error": "busy"}) if n == 1 else None) as server:
        assert len(HttpRetriever(http_config(server.url), BENCHMARK).retrieve("q", 2)) == 2
        assert len(server.received) == 2  # one failure, one retry
    cases = {
        "HTTP 401": (lambda n: (401, {"error": "bad key"}), 1),  # not retried
        r"passage 0 of the reply has no \"text\" string \(after 3 attempts\)": (lambda n: (200, [{"title": "t"}]), 3),
        r"the reply is not a JSON list": (lambda n: (200, {"hits": []}), 3),
        "the reply is not JSON": (lambda n: (200, "<html>"), 3),
        "non-numeric score": (lambda n: (200, [{"text": "x", "score": "high"}]), 3),
    }
    for message, (script, requests) in cases.items():
        with RetrievalServer(script=script) as server:
            with pytest.raises(RetrieverError, match=message) as raised:
                HttpRetriever(http_config(server.url), BENCHMARK).retrieve("q", 2)
            assert len(server.received) == requests
            assert "\n" not in str(raised.value) and str(raised.value).startswith("retriever 'svc': http://127.0.0.1")
    with RetrievalServer(delay_s=1.0) as server:  # slower than the timeout
        with pytest.raises(RetrieverError, match=r"no reply within 0.3 s \(after 2 attempts\)"):
            HttpRetriever(http_config(server.url, timeout_s=0.3, retries=1), BENCHMARK).retrieve("q", 2)
    monkeypatch.delenv("SVC_KEY", raising=False)
    with pytest.raises(RetrieverError, match="environment variable SVC_KEY is not set"):
        HttpRetriever(http_config("http://127.0.0.1:1/x", api_key_env="SVC_KEY"), BENCHMARK)
    with pytest.raises(RetrieverError, match=r"ConnectError \(after 1 attempt\)"):
        HttpRetriever(http_config("http://127.0.0.1:1/x", retries=0), BENCHMARK).retrieve("q", 2)


def test_reciprocal_rank_fusion_sums_one_over_k_plus_rank() -> None:
    from forge_core.evidence.dense_retrieval import reciprocal_rank_fusion

    assert list(reciprocal_rank_fusion([[2, 0], [0, 1]], 3, 60)) == [1 / 62 + 1 / 61, 1 / 62, 1 / 61]
    assert list(reciprocal_rank_fusion([[1]], 2, 1)) == [0.0, 0.5]


@pytest.mark.slow  # about a minute on a fresh cache: the embedder's ONNX export, then 40 passages
def test_dense_and_hybrid_retrieval_with_the_real_embedder_on_real_records(small_store: Store) -> None:
    from forge_core.evidence.dense_retrieval import DenseRetriever, HybridRetriever
    from forge_core.evidence.embedders import load_embedder
    from forge_core.evidence.passage_vectors import PassageVectors
    from forge_core.evidence.retrieval import Retriever
    from forge_core.policies.grounding import evidence_recall

    documents = small_store.documents(BENCHMARK)[:40]  # a slice of the corpus keeps the embedding short
    kept = {d.text for d in documents}
    examples = [e for e in small_store.examples(BENCHMARK)[:30]
                if e.evidence and all(any(g.strip() in t for t in kept) for g in e.evidence)][:4]
    assert len(examples) >= 3
    vectors = PassageVectors(documents, load_embedder())
    vectors.ensure_all()
    settings = RetrieverConfig("d").settings
    dense = DenseRetriever(vectors, load_embedder(), settings)
    bm25 = Retriever.from_documents(documents)
    hybrid = HybridRetriever(bm25, dense, 60, settings)
    for example in examples:
        hits = dense.retrieve(example.question, 3)
        cosines = [hit.score for hit in hits]
        assert cosines == sorted(cosines, reverse=True) and all(-1.0 <= c <= 1.0 + 1e-6 for c in cosines)
        question_vector = load_embedder().embed([example.question])[0]
        best = int(np.argmax(vectors.vectors @ question_vector))
        assert hits[0].document == documents[best]
        fused = hybrid.retrieve(example.question, 3)
        assert max(hit.score for hit in fused) <= 2 / 61 + 1e-12
    recall = {name: np.mean([evidence_recall(e.evidence, "\n".join(h.document.text for h in r.retrieve(e.question, 3)))
                             for e in examples]) for name, r in (("dense", dense), ("hybrid", hybrid))}
    assert recall["dense"] > 0.3 and recall["hybrid"] > 0.3  # real questions find their own gold passages


def test_ask_uses_the_services_passages_and_a_router_refuses_other_evidence(small_store: Store, tmp_path: Path) -> None:
    from forge_core.hosts.base import HostConfig
    from forge_core.hosts.registry import save_host_config
    from forge_core.routing.ask import AskRequest, check_router_retriever, run_ask

    from support.stores import copy_store

    store = copy_store(small_store, tmp_path)
    with AnsweringServer() as host, RetrievalServer() as service:
        save_host_config(store, HostConfig(name="double", kind="openai", model="m", base_url=host.base_url,
                                           max_retries=0))
        save_retriever_config(store, http_config(service.url))
        answered = run_ask(store, AskRequest("Where is the answer?", BENCHMARK, "double", arm="raw:no_think",
                                             retriever="svc"))
        plain = run_ask(store, AskRequest("Where is the answer?", BENCHMARK, "double", arm="raw:no_think"))
    assert answered.answer.support_text.startswith("[1] Service passage one\nThe service says the answer is Kathmandu.")
    assert "Service passage four" not in answered.answer.support_text  # k = 3
    assert "Service passage" not in plain.answer.support_text  # bm25 by default
    assert plain.answer.support_text == retrieve_evidence(load_retriever(store, BENCHMARK),
                                                          "Where is the answer?").support_text("raw")
    check_router_retriever("ckpt1", {}, RetrieverConfig("bm25"))  # trained before retrievers: default evidence
    with pytest.raises(InvalidInput, match="router ckpt1 was trained under the default bm25 evidence; it cannot "
                                           "route with retriever 'svc'"):
        check_router_retriever("ckpt1", {}, http_config("http://x"))
    dense = RetrieverConfig("d", kind="dense", embedder=MINILM)
    check_router_retriever("ckpt2", {"retriever_hash": retriever_hash(dense)}, dense)
    with pytest.raises(InvalidInput, match=f"trained under retriever configuration {retriever_hash(dense)}"):
        check_router_retriever("ckpt2", {"retriever_hash": retriever_hash(dense)}, RetrieverConfig("bm25"))


def test_forge_serve_refuses_a_retriever_its_routers_were_not_trained_under(
        trained_store: tuple[Store, str], tmp_path: Path) -> None:
    from forge_core.hosts.base import HostConfig
    from forge_core.hosts.registry import save_host_config
    from forge_core.server.app import ServerState, ServeSettings

    from support.stores import copy_store

    store = copy_store(trained_store[0], tmp_path)
    save_host_config(store, HostConfig(name="synthetic-host", kind="openai", model="m", base_url="http://127.0.0.1:9/v1"))
    save_retriever_config(store, RetrieverConfig("d", kind="dense", embedder=MINILM))
    settings = ServeSettings(host="synthetic-host", benchmark="musique", router=trained_store[1])
    assert ServerState(store, settings).retriever_config.name == "bm25"
    with pytest.raises(InvalidInput, match=f"router {trained_store[1]} was trained under the default bm25 "
                                           "evidence; it cannot route with retriever 'd'"):
        ServerState(store, ServeSettings(**{**settings.__dict__, "retriever": "d"}))
