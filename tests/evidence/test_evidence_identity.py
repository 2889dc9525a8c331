"""Evidence is part of an arm's identity: outcomes, features and routers are keyed by the retriever
configuration's hash; a table never mixes two evidences and a router refuses any other retriever."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from forge_core.errors import InvalidInput, MissingStep
from forge_core.evidence.retrievers import RetrieverConfig
from forge_core.routing.checkpoints import latest_checkpoint, load_checkpoint
from forge_core.routing.outcome_table import load_outcome_table
from forge_core.store import Store
from forge_core.training.request import TrainRequest
from forge_core.training.settings import Stage1Config
from forge_core.training.trainer import train_router

from support.stores import copy_store, outcomes_under_retriever

HOST = "synthetic-host"
DENSE = RetrieverConfig("dense", kind="dense", embedder="all-MiniLM-L6-v2")
DENSE_F1 = 0.987  # no synthetic outcome has this F1: it marks the rows made under dense


@pytest.fixture(scope="module")
def dense_store(tmp_path_factory: pytest.TempPathFactory, trained_store: tuple[Store, str]) -> tuple[Store, str, str]:
    """A copy of `trained_store` (one Lite router trained under bm25) with outcomes and features under
    dense too; (store, the bm25 router's id, the dense hash)."""
    store = copy_store(trained_store[0], tmp_path_factory.mktemp("dense"))
    return store, trained_store[1], outcomes_under_retriever(store, HOST, DENSE, DENSE_F1)


def test_an_outcome_table_never_mixes_retrievers(dense_store: tuple[Store, str, str]) -> None:
    store, _, dense_hash = dense_store
    bm25 = load_outcome_table(store, HOST)
    dense = load_outcome_table(store, HOST, retriever_hash=dense_hash)
    assert dense.keys == bm25.keys and dense.retriever_hash == dense_hash and bm25.retriever_hash == ""
    evidence_arms = [i for i, arm in enumerate(bm25.arms) if not arm.startswith("direct:")]
    direct_arms = [i for i, arm in enumerate(bm25.arms) if arm.startswith("direct:")]
    assert (dense.f1[:, evidence_arms] == DENSE_F1).all()  # Summary and Raw: dense's rows only
    assert not (bm25.f1 == DENSE_F1).any()  # the default evidence: none of dense's rows
    np.testing.assert_array_equal(dense.f1[:, direct_arms], bm25.f1[:, direct_arms])  # Direct: shared, no evidence
    assert set(store.arm_outcomes(HOST, retriever_hash=dense_hash)["retriever_hash"]) == {"", dense_hash}
    assert (store.arm_outcomes(HOST, retriever_hash=dense_hash).query("retriever_hash == ''")["arm"]
            .str.startswith("direct:").all())


def test_a_retriever_without_outcomes_plans_only_its_evidence_arms(dense_store: tuple[Store, str, str]) -> None:
    store, _, _ = dense_store
    benchmark = "popqa"
    done_bm25 = store.finished_arms(HOST, benchmark)
    done_other = store.finished_arms(HOST, benchmark, "0123456789ab")
    key = next(iter(done_bm25))
    assert len(done_bm25[key]) == 6
    assert done_other[key] == {"direct:no_think", "direct:cot"}  # Direct serves every retriever


def test_a_router_trained_under_bm25_refuses_dense_in_training(dense_store: tuple[Store, str, str]) -> None:
    store, bm25_router, dense_hash = dense_store
    request = TrainRequest(host=HOST, variant="lite", stage=2, parent=bm25_router, retriever="dense")
    with pytest.raises(InvalidInput, match=f"router {bm25_router} was trained under the default bm25 evidence"):
        request.check(store)
    # nothing under dense is picked as a parent, a served or an evaluated router either
    assert latest_checkpoint(store, HOST, "lite", retriever_hash=dense_hash) is None
    with pytest.raises(MissingStep, match="Stage 2 starts from"):
        dataclasses.replace(request, parent=None).check(store)


def test_a_router_trained_under_dense_records_it_and_refuses_bm25(dense_store: tuple[Store, str, str],
                                                                   tmp_path: Path) -> None:
    store = copy_store(dense_store[0], tmp_path)
    dense_hash = dense_store[2]
    router = train_router(store, TrainRequest(host=HOST, variant="lite", retriever="dense",
                                              stage1=Stage1Config(max_epochs=2)))
    assert load_checkpoint(store, router).lineage["retriever_hash"] == dense_hash
    assert latest_checkpoint(store, HOST, "lite", retriever_hash=dense_hash) == router
    assert latest_checkpoint(store, HOST, "lite") == dense_store[1]  # the bm25 one stays the bm25 default
    with pytest.raises(InvalidInput, match=f"retriever configuration {dense_hash}; it cannot route with retriever "
                                           "'bm25'"):
        TrainRequest(host=HOST, variant="lite", stage=2, parent=router).check(store)


def test_outcomes_under_a_retriever_export_as_an_added_part(dense_store: tuple[Store, str, str],
                                                            tmp_path: Path) -> None:
    from forge_core.store.exports import export_part, load_exported

    store, _, dense_hash = dense_store
    rows = export_part(store, tmp_path, "arm_outcomes", "retrievers", "retriever_hash <> ''")
    assert rows == len(store.arm_outcomes(HOST, retriever_hash=dense_hash).query("retriever_hash != ''"))
    fresh = Store(tmp_path / "fresh.duckdb")
    assert load_exported(fresh, tmp_path) == {"arm_outcomes": rows}  # only the part: no main file here
    assert fresh.arm_outcomes(HOST).empty  # the default evidence: none of the part's rows
    assert len(fresh.arm_outcomes(HOST, retriever_hash=dense_hash)) == rows
