"""The evaluator's word on a live answer: with an evaluator host chosen on the Live query page, the
evaluator (the judge test double `VerdictHost`, standing in for the served host) checks the answer
against the evidence its prompt held and rates whether it is correct; the page shows the verdict and
the rating, and the stored trace keeps the verdict."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pandas as pd
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from forge_core.config import PROJECT_ROOT
from forge_core.hosts.base import Host, HostConfig
from forge_core.hosts.registry import config_hash, save_host_config
from forge_core.rewards import live_support
from forge_core.store import Store

from support.answering_server import AnsweringServer
from support.app_store import FAKE_HOST, PAGE_RUN_TIMEOUT_S
from support.judging import SUPPORT_LABELS, VerdictHost
from support.stores import copy_store

EVALUATOR = "evaluator-double"
QUESTION = "Who founded the city of Rome and when?"


@pytest.fixture
def fake_host() -> AnsweringServer:
    with AnsweringServer() as server:
        yield server


def test_a_live_answer_gets_the_evaluators_support_verdict_in_its_trace(
        tmp_path: Path, trained_store: tuple[Store, str], fake_host: AnsweringServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    store = copy_store(trained_store[0], tmp_path / "live")
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    save_host_config(store, HostConfig(name=FAKE_HOST, kind="openai", model="m", base_url=fake_host.base_url,
                                       max_retries=0, timeout_s=10.0))
    evaluator_config = HostConfig(name=EVALUATOR, kind="openai", model="judge", base_url=fake_host.base_url)
    save_host_config(store, evaluator_config)
    evaluator = VerdictHost(evaluator_config)

    @contextlib.asynccontextmanager
    async def double(config: HostConfig) -> AsyncIterator[Host]:
        assert config.name == EVALUATOR
        yield evaluator

    monkeypatch.setattr(live_support, "hosted", double)
    st.cache_data.clear()
    app = AppTest.from_file(str(PROJECT_ROOT / "pages" / "live_query.py"), default_timeout=PAGE_RUN_TIMEOUT_S).run()
    next(w for w in app.selectbox if w.label == "Host").set_value(FAKE_HOST).run()
    next(w for w in app.text_area if w.label == "Your question").set_value(QUESTION)
    next(w for w in app.selectbox if w.label == "Support evaluator").set_value(EVALUATOR)
    next(w for w in app.button if w.label == "Route and answer").click().run()
    assert not app.exception
    assert [box.value for box in app.error if "Support:" not in box.value] == []  # CONTRADICTED shows as an error

    # one check, of the routed answer against its prompt's evidence, and one rating, with the evidence it saw
    support_check, rating = evaluator.requests
    result = app.session_state["live_history"][-1]
    content = support_check.messages[1]["content"]
    assert f"Question: {QUESTION}\nAnswer given: {result.answer.extracted}\n" in content
    assert content.startswith("Evidence:\n") and "(no passage was retrieved)" not in content
    rated = rating.messages[1]["content"]
    assert f"Question: {QUESTION}\nAnswer given: {result.answer.extracted}\n" in rated
    seen = result.answer.support_text  # the judge reward's evidence: what the answering host saw, none for Direct
    assert rated.startswith(f"Evidence the answerer saw:\n{seen}\n\nQuestion: " if seen else "Question: ")
    verdict = SUPPORT_LABELS[len(content) % 3]  # the double's rule
    trace = store.live_traces(FAKE_HOST).iloc[0]
    assert (trace["support_verdict"], trace["evaluator"]) == (verdict, f"judge:{EVALUATOR}@"
                                                                       f"{config_hash(evaluator_config)}")
    shown = "\n".join(box.value for box in [*app.success, *app.info, *app.error] if "Support:" in box.value)
    assert f"Support: **{verdict}** by judge:{EVALUATOR}@" in shown
    assert f"Judge rating: **{len(result.answer.extracted) % 11}/10**" in shown  # the double's rating rule

    next(w for w in app.selectbox if w.label == "Support evaluator").set_value("none")
    next(w for w in app.button if w.label == "Route and answer").click().run()  # no evaluator: no check, no verdict
    assert len(evaluator.requests) == 2 and "Support:" not in "\n".join(b.value for b in app.success)
    assert pd.isna(store.live_traces(FAKE_HOST).iloc[0]["support_verdict"])
