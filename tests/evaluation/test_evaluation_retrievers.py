"""Evaluations under a retriever: `forge eval`, `forge decide` and crossfit runs read only the
chosen retriever's Summary and Raw outcomes (Direct ones serve every retriever), and a crossfit run
id names the retriever by its configuration hash, omitted for the default BM25 evidence."""

from __future__ import annotations

import dataclasses
import json
import sys

import numpy as np
import pytest

from forge_core import cli
from forge_core.arms import DIRECT_NO_THINK, RAW_NO_THINK
from forge_core.errors import MissingStep
from forge_core.evaluation.crossfit import CrossfitSettings, crossfit_identity, crossfit_run_id
from forge_core.evaluation.settings import EvaluationSettings
from forge_core.evaluation.setup import router_policies, settings_context
from forge_core.evidence.retrievers import RetrieverConfig, retriever_hash, save_retriever_config
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.policies.baselines import FixedArm
from forge_core.policies.context import evaluation_context
from forge_core.policies.outcomes import policy_outcomes
from forge_core.policies.support_rates import support_verdicts
from forge_core.server.app import ROUTER_MODEL, ServeSettings, resolve_models
from forge_core.store import Store

from support.stores import copy_store, outcomes_under_retriever

HOST = "synthetic-host"
DENSE = RetrieverConfig("dense", kind="dense", embedder="all-MiniLM-L6-v2")
DENSE_F1 = 0.987  # no synthetic outcome has this F1: it marks the rows made under dense


@pytest.fixture(scope="module")
def dense_store(tmp_path_factory: pytest.TempPathFactory, trained_store: tuple[Store, str]) -> Store:
    """A copy of `trained_store` (a Lite router trained under bm25) with outcomes under dense too."""
    store = copy_store(trained_store[0], tmp_path_factory.mktemp("dense-eval"))
    outcomes_under_retriever(store, HOST, DENSE, DENSE_F1)
    return store


def test_an_evaluation_under_dense_reads_only_its_outcomes(dense_store: Store) -> None:
    bm25 = settings_context(dense_store, EvaluationSettings(HOST))
    dense = settings_context(dense_store, EvaluationSettings(HOST, retriever="dense"))
    assert dense.table.retriever_hash == retriever_hash(DENSE) and bm25.table.retriever_hash == ""
    rows = dense.rows("test")
    scored = policy_outcomes(dense, rows, [FixedArm(RAW_NO_THINK), FixedArm(DIRECT_NO_THINK)])
    assert np.allclose(scored["always_raw"].f1, DENSE_F1)  # Raw: dense's rows only
    bm25_scored = policy_outcomes(bm25, bm25.rows("test"), [FixedArm(RAW_NO_THINK), FixedArm(DIRECT_NO_THINK)])
    assert not np.isclose(bm25_scored["always_raw"].f1, DENSE_F1).any()  # bm25: none of dense's rows
    np.testing.assert_array_equal(scored["always_direct"].f1, bm25_scored["always_direct"].f1)  # Direct: shared
    assert support_verdicts(dense_store, dense.table).evaluator is None  # no judge verdict of bm25 answers
    with pytest.raises(MissingStep, match="under retriever 'dense'"):  # the bm25 router is not dense's
        router_policies(dense_store, EvaluationSettings(HOST, retriever="dense"))


def test_a_crossfit_run_id_names_the_retriever_hash_but_not_bm25(outcome_store: Store) -> None:
    base = evaluation_context(outcome_store, HOST, 6, CrossfitSettings().weights)
    settings = CrossfitSettings(host=HOST)
    before_retrievers = {k: v for k, v in settings.to_dict().items() if k not in ("retriever", "retriever_hash")}
    bm25_id = crossfit_run_id(settings.to_dict(""), base)
    assert bm25_id == crossfit_run_id(before_retrievers, base)  # a stored bm25 run keeps its id
    assert "retriever_hash" not in crossfit_identity(settings.to_dict(""))
    dense = dataclasses.replace(settings, retriever="dense").to_dict(retriever_hash(DENSE))
    assert crossfit_identity(dense)["retriever_hash"] == retriever_hash(DENSE)
    assert crossfit_run_id(dense, base) != bm25_id
    renamed = dataclasses.replace(settings, retriever="my-bm25").to_dict("")  # a name is only a label
    assert crossfit_run_id(renamed, base) == bm25_id


@pytest.mark.parametrize("command", [["eval", "cached"], ["eval", "crossfit"], ["sweep"],
                                     ["decide", "--lambda-in", "0.1", "--lambda-out", "0.2"]])
def test_a_retriever_without_outcomes_is_one_line(command: list[str], outcome_store: Store, tmp_path,
                                                  monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    store = copy_store(outcome_store, tmp_path)
    save_retriever_config(store, DENSE)  # configured, never enumerated
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    monkeypatch.setattr(sys, "argv", ["forge", *command, "--host", HOST, "--retriever", "dense"])
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == (
        f"error: no outcomes for host '{HOST}' under retriever 'dense': run "
        f"`forge enumerate --host {HOST} --retriever dense` first")


def test_enumerate_under_another_retriever_refuses_a_batch_in_one_line(outcome_store: Store, tmp_path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       capsys) -> None:
    store = copy_store(outcome_store, tmp_path)
    save_retriever_config(store, DENSE)
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    monkeypatch.setattr(sys, "argv", ["forge", "enumerate", "--host", "embedded", "--retriever", "dense",
                                      "--batch", "openai"])
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    error = capsys.readouterr().err.strip()
    assert exit_info.value.code == 2 and "\n" not in error
    assert error.startswith("error: --retriever other than bm25 goes with an online run, not --batch or --to-batch: ")


def test_a_transfer_view_key_names_the_retriever_hash_but_not_bm25(dense_store: Store) -> None:
    from forge_core.evaluation.transfer import TransferRequest
    from forge_core.precompute.view_cache import _request_identity

    bm25 = TransferRequest(HOST, "another-host", store_calibrated=False)
    before_retrievers = {k: v for k, v in dataclasses.asdict(bm25).items() if k != "retriever"}
    assert _request_identity(dense_store, bm25) == before_retrievers  # views kept before retrievers keep their key
    dense = TransferRequest("another-host", HOST, store_calibrated=False, retriever="dense")
    assert _request_identity(dense_store, dense)["retriever_hash"] == retriever_hash(DENSE)
    with pytest.raises(MissingStep, match="under retriever 'dense'"):  # that target has nothing under dense
        _request_identity(dense_store, dataclasses.replace(bm25, retriever="dense"))


def test_rewards_audit_under_dense_reads_its_answers_and_asks_for_judge_rewards_of_them(
        dense_store: Store, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("FORGE_STORE", str(dense_store.path))
    audit = ["forge", "rewards", "audit", "--host", HOST, "--retriever", "dense", "--no-crossfit", "--json"]
    monkeypatch.setattr(sys, "argv", audit)
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    assert exit_info.value.code == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["retriever"], report["retriever_hash"]) == ("dense", retriever_hash(DENSE))
    assert report["arms"][RAW_NO_THINK]["mean_gold_f1"] == pytest.approx(DENSE_F1)  # dense's answers only
    monkeypatch.setattr(sys, "argv", [*audit, "--reward", "judge"])
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == (
        f"error: host '{HOST}' has no judge rewards under retriever 'dense': run `forge rewards judge --host {HOST} "
        "--retriever dense`")


def test_serve_under_dense_looks_for_routers_trained_under_it(dense_store: Store, tmp_path) -> None:
    store = copy_store(dense_store, tmp_path)
    save_host_config(store, HostConfig(name=HOST, kind="openai", model="m", base_url="http://127.0.0.1:9"))
    bm25_router = resolve_models(store, ServeSettings(host=HOST))[ROUTER_MODEL]
    assert store.checkpoint(bm25_router)[0]["lineage"].get("retriever_hash", "") == ""
    with pytest.raises(MissingStep) as missing:  # the bm25 router is not dense's
        resolve_models(store, ServeSettings(host=HOST, retriever="dense"))
    assert str(missing.value) == (f"no lite router for host '{HOST}' under retriever 'dense': train one with "
                                  f"`forge train --stage 1 --host {HOST} --variant lite --retriever dense`")
