"""`forge rewards support` through the CLI in this process, on a local test double speaking the
OpenAI protocol: JSON with its evaluator and verdict counts, resumption, one-line refusals."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from forge_core import cli
from forge_core.hosts.registry import save_host_config

from support.answering_server import AnsweringServer
from support.enumeration import host_config
from support.stores import copy_store, outcomes_under_retriever


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


def test_support_verdicts_are_stored_counted_named_and_resumed(outcome_store, tmp_path, monkeypatch, capsys) -> None:
    store = copy_store(outcome_store, tmp_path)
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    command = ["rewards", "support", "--host", "synthetic-host", "--judge-host", "test-host", "--split", "dev",
               "--limit", "2", "--json"]
    with AnsweringServer() as server:
        save_host_config(store, host_config(server.base_url))
        code, out, err = forge(command, monkeypatch, capsys)
        assert code == 0, err
        first = json.loads(out)
        code, out, _ = forge(command, monkeypatch, capsys)
    assert (first["planned"], first["judged"], first["errors"], first["status"]) == (12, 12, 0, "finished")
    # the double answers "answer <hash>": no label, so every verdict is NOT ENOUGH INFO and counted unrated
    assert first["unrated"] == 12
    assert first["stored_verdicts"] == {"SUPPORTED": 0, "NOT ENOUGH INFO": 12, "CONTRADICTED": 0}
    assert first["support_evaluator"].startswith("judge:test-host@")
    assert json.loads(out)["planned"] == 0
    assert set(store.reward_outcomes("synthetic-host")["source"]) == {"support"}


def test_a_support_run_on_an_unknown_host_is_one_line(outcome_store, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("FORGE_STORE", str(copy_store(outcome_store, tmp_path).path))
    code, _, err = forge(["rewards", "support", "--host", "nobody"], monkeypatch, capsys)
    assert code == 2 and "no stored outcomes" in err and len(err.strip().splitlines()) == 1


def test_support_verdicts_under_a_retriever_rate_its_answers_and_count_only_under_it(
        outcome_store, tmp_path, monkeypatch, capsys) -> None:
    from forge_core.evidence.retrievers import RetrieverConfig
    from forge_core.policies.support_rates import support_verdicts
    from forge_core.routing.outcome_table import load_outcome_table

    store = copy_store(outcome_store, tmp_path)
    config_hash = outcomes_under_retriever(store, "synthetic-host", RetrieverConfig("bm25-k4", k=4), 0.987)
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    with AnsweringServer() as server:
        save_host_config(store, host_config(server.base_url))
        command = ["rewards", "support", "--host", "synthetic-host", "--judge-host", "test-host", "--split", "dev",
                   "--limit", "1", "--retriever", "bm25-k4", "--json"]
        code, out, err = forge(command, monkeypatch, capsys)
    assert code == 0, err
    assert json.loads(out)["judged"] == 6
    under_k4 = support_verdicts(store, load_outcome_table(store, "synthetic-host", 6, retriever_hash=config_hash))
    assert under_k4.evaluator.startswith("judge:test-host@") and (~np.isnan(under_k4.scores)).sum() == 6
    assert support_verdicts(store, load_outcome_table(store, "synthetic-host", 6)).evaluator is None  # not bm25's
