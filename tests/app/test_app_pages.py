"""A Streamlit AppTest per dashboard page, on a small store, an empty store, and a fake host."""

from __future__ import annotations

import dataclasses
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from app.step_prefetch import prefetch
from forge_core import config
from forge_core.config import PROJECT_ROOT
from forge_core.data.importing import import_benchmarks
from forge_core.enumeration.estimate import estimate_plan
from forge_core.enumeration.planning import EnumerationPlan
from forge_core.evidence.retrievers import (
    RetrieverConfig,
    retriever_hash,
    save_retriever_config,
    set_host_default_retriever,
)
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import BUILTIN_HOSTS, get_host_config, save_host_config, save_host_prices
from forge_core.jobs import job_for_process, log_tail, start_enumeration_job
from forge_core.precompute.view_cache import precompute_views, view_name, view_steps
from forge_core.records import HostPrices
from forge_core.reports import action_map as action_map_module
from forge_core.reports.checkpoint_views import checkpoint_names, short_id
from forge_core.store import Store

from support.answering_server import AnsweringServer
from support.app_store import FAKE_HOST, PAGE_RUN_TIMEOUT_S, build_app_store
from support.lazy_sections import (
    HOST_DEPTHS,
    HOST_EDIT,
    HOST_PRICES,
    HOST_TEST,
    MAP_CLUSTERS,
    MAP_CROSSFIT,
    TRAIN_COMPARISON,
    TRAIN_REWARDS,
    opened,
)
from support.pareto_page import points_table
from support.stores import copy_store
from support.vega_charts import layer_drawing, vega_charts

PAGES = PROJECT_ROOT / "pages"


@pytest.fixture(scope="module")
def fake_host() -> Iterator[AnsweringServer]:
    with AnsweringServer() as server:
        yield server


@pytest.fixture(scope="module")
def app_store_path(tmp_path_factory: pytest.TempPathFactory, benchmarks_root: Path,
                   fake_host: AnsweringServer) -> Path:
    path = tmp_path_factory.mktemp("app") / "store.duckdb"
    build_app_store(path, benchmarks_root, fake_host.base_url)
    return path


@pytest.fixture
def app_store(app_store_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    """The small store, as the dashboard's store for this test."""
    monkeypatch.setenv("FORGE_STORE", str(app_store_path))
    return Store(app_store_path)


def page(name: str) -> AppTest:
    """A page script, run once on fresh query results (the tests change the store between runs)."""
    st.cache_data.clear()
    return AppTest.from_file(str(PAGES / name), default_timeout=PAGE_RUN_TIMEOUT_S).run()


def by_label(widgets, label: str):
    """The one widget with this label."""
    matches = [widget for widget in widgets if widget.label == label]
    assert len(matches) == 1, f"{label!r}: {[w.label for w in widgets]}"
    return matches[0]


def texts(elements) -> str:
    """All the text of a sequence of message elements."""
    return "\n".join(element.value for element in elements)


def test_navigation_runs_every_page(app_store: Store) -> None:
    app = AppTest.from_file(str(PROJECT_ROOT / "app" / "main.py"), default_timeout=PAGE_RUN_TIMEOUT_S).run()
    assert not app.exception and app.title[0].value == "Overview"
    for script, title in [("enumerate.py", "Enumerate"), ("hosts.py", "Hosts"), ("live_query.py", "Live query"),
                          ("train.py", "Train"), ("pareto.py", "Pareto"), ("action_map.py", "Action map"),
                          ("queries.py", "Queries"), ("transfer.py", "Transfer")]:
        app.switch_page(f"../pages/{script}").run()
        assert not app.exception, script
        assert app.title[0].value == title


def test_a_page_run_drops_the_pareto_step_waiting_to_be_computed(app_store: Store) -> None:
    ran = []  # the next Pareto step, asked for after the page's first run (it waits for the browser to draw)
    waiting = prefetch(lambda: ran.append("computed"), after_s=30.0)  # longer than the page's run, as a rule
    app = AppTest.from_file(str(PROJECT_ROOT / "app" / "main.py"), default_timeout=PAGE_RUN_TIMEOUT_S).run()
    waiting.result(PAGE_RUN_TIMEOUT_S)  # given way (done without running), or run once its wait ends
    assert not app.exception and ran == []


@pytest.mark.parametrize("script", ["overview.py", "enumerate.py", "live_query.py", "train.py", "pareto.py",
                                    "action_map.py", "queries.py", "transfer.py"])
def test_empty_store_says_what_to_do(script: str) -> None:
    app = page(script)
    assert not app.exception
    assert "The store is empty: run `forge data import`" in texts(app.info)


def test_overview_without_outcomes_points_to_enumeration(benchmarks_root: Path) -> None:
    import_benchmarks(Store(os.environ["FORGE_STORE"]), benchmarks_root, ["2wikimultihopqa"])
    app = page("overview.py")
    assert not app.exception
    assert "No outcomes yet" in texts(app.info)
    assert len(app.dataframe) == 2  # benchmarks, coverage


def test_overview_shows_store_arms_and_oracle(app_store: Store) -> None:
    app = page("overview.py")
    assert not app.exception
    assert [m.label for m in app.metric] == ["Benchmarks", "Examples", "Hosts with outcomes",
                                             "Complete queries (all hosts)"]
    intro = texts(app.markdown)
    assert "FORGE routes a frozen LLM per query" in intro and "complete queries)" in intro  # each host, its count
    assert app.metric[0].value == "2" and app.metric[3].value == "10"
    assert len(app.dataframe) == 6  # benchmarks, coverage, summary, regret per arm, reasoning per arm, gold recall
    assert list(app.dataframe[1].value.columns) == ["host", "arms", "benchmark", "complete", "probes"]  # fits
    regret = app.dataframe[3].value
    assert list(regret.columns) == ["policy", "regret", "oracle_agreement"] and (regret["regret"] >= 0).all()
    assert (regret["oracle_agreement"] > 0).any()  # every query has at least one oracle arm
    recall = app.dataframe[5].value
    assert list(recall["support"]) == ["direct", "summary", "raw"] and (recall.drop(columns="support") >= 0).all().all()
    assert (recall.set_index("support").loc["direct"] == 0).all()
    charts = vega_charts(app)
    assert len(charts) == 4  # cost/quality, F1 per arm, tokens per arm, reasoning per arm
    reasoning = app.dataframe[4].value
    assert list(reasoning["arm"]) == ["direct:no_think", "direct:cot", "summary:no_think", "summary:cot",
                                      "raw:no_think", "raw:cot"]
    assert {"oracle", "raw:cot"} <= set(charts[0][1]["policy"])
    assert not app.info  # train outcomes exist, so the oracle is drawn
    by_label(app.selectbox, "Split").set_value("test").run()
    assert not app.exception and "4 complete test queries" in texts(app.caption)


def test_hosts_lists_adds_and_tests(app_store: Store) -> None:
    app = page("hosts.py")
    assert not app.exception
    assert set(app.dataframe[0].value["name"]) >= {"embedded", "embedded-tiny", FAKE_HOST}

    opened(app, HOST_EDIT)
    by_label(app.text_input, "Name").set_value("remote")
    by_label(app.text_area, "Base URLs").set_value("http://127.0.0.1:9/v1\n\nhttp://127.0.0.1:10/v1\n")
    by_label(app.text_input, "Model").set_value("qwen3")
    by_label(app.selectbox, "Thinking control").set_value("vllm-qwen3")
    by_label(app.text_input, "API key environment variable").set_value("FORGE_TEST_KEY")
    by_label(app.button, "Save").click().run()
    assert not app.exception and "Host 'remote' saved." in texts(app.success)
    row = app.dataframe[0].value.set_index("name").loc["remote"]
    assert (row["thinking"], row["API key variable"], row["key"]) == ("vllm-qwen3", "FORGE_TEST_KEY", "missing")
    assert get_host_config(app_store, "remote").base_urls == ("http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1")

    by_label(app.text_input, "Name").set_value("broken")
    by_label(app.text_input, "Model").set_value("")
    by_label(app.button, "Save").click().run()
    assert "a host needs a name and a model" in texts(app.error)

    opened(app, HOST_TEST)
    by_label(app.selectbox, "Host to test").set_value(FAKE_HOST)
    by_label(app.button, "Test").click().run()
    assert not app.exception and not app.error
    assert texts(app.success).startswith("**Answer:** answer ")
    assert [m.label for m in app.metric] == ["Tokens in", "Tokens out", "Latency"]
    assert int(app.metric[1].value) == 2
    app_store.delete_host_config("remote")


def test_the_hosts_page_draws_its_forms_and_checks_only_while_open(app_store: Store) -> None:
    app = page("hosts.py")
    assert not app.exception and [frame.value.columns[0] for frame in app.dataframe] == ["name", "name"]
    assert not app.text_input and not app.number_input and not app.button  # the hosts and retrievers listed only
    assert "Save prices" in [button.label for button in opened(app, HOST_PRICES).button]


def test_hosts_adds_and_edits_an_embedded_host(app_store: Store) -> None:
    app = opened(page("hosts.py"), HOST_EDIT)
    by_label(app.text_input, "Name").set_value("tiny-apart")
    by_label(app.selectbox, "Kind").set_value("embedded")
    by_label(app.text_input, "Model").set_value("smollm2-135m")
    by_label(app.button, "Save").click().run()
    assert not app.exception and "Host 'tiny-apart' saved." in texts(app.success)
    added = get_host_config(app_store, "tiny-apart")  # the built-in embedded host's timeout and concurrency
    assert (added.timeout_s, added.max_concurrency) == (BUILTIN_HOSTS["embedded"].timeout_s,
                                                        BUILTIN_HOSTS["embedded"].max_concurrency)

    by_label(app.selectbox, "Host to edit").set_value("tiny-apart").run()
    assert not app.exception and by_label(app.selectbox, "Kind").value == "embedded"
    by_label(app.number_input, "Requests in flight per URL").set_value(1)
    by_label(app.button, "Save").click().run()
    assert not app.exception and get_host_config(app_store, "tiny-apart").max_concurrency == 1
    app_store.delete_host_config("tiny-apart")


def test_hosts_edits_a_depth_map_and_checks_depths(app_store: Store) -> None:
    app = opened(page("hosts.py"), HOST_EDIT)
    by_label(app.text_input, "Name").set_value("mapped")
    by_label(app.text_area, "Base URLs").set_value("http://127.0.0.1:9/v1")
    by_label(app.text_input, "Model").set_value("qwen3")
    shown = by_label(app.text_area, "Depth map (JSON)").value
    by_label(app.text_area, "Depth map (JSON)").set_value(shown.replace('"$cap"', '"$cap", "n": 1', 1))
    by_label(app.button, "Save").click().run()
    assert not app.exception and "Host 'mapped' saved." in texts(app.success)
    saved = get_host_config(app_store, "mapped")
    assert saved.thinking == "custom" and saved.depth_map.depths["no_think"].fields["n"] == 1
    app_store.delete_host_config("mapped")

    app = opened(page("hosts.py"), HOST_DEPTHS)
    by_label(app.selectbox, "Host to check").set_value(FAKE_HOST)
    assert f"'{FAKE_HOST}' has no depth check" in texts(app.run().info)
    by_label(app.number_input, "Questions per depth").set_value(1)
    by_label(app.button, "Check depths").click().run()
    assert not app.exception and not app.error and "stored: all 2 honoured" in texts(app.success)
    checked = next(frame.value for frame in app.dataframe if "verdict" in frame.value.columns)
    assert list(checked["depth"]) == ["no_think", "cot"] and set(checked["verdict"]) == {"honoured"}
    assert app.dataframe[0].value.set_index("name").loc[FAKE_HOST, "depth check"] == "all 2 honoured"


def test_hosts_page_edits_a_stored_host_as_forge_host_edit_does(app_store: Store) -> None:
    save_host_config(app_store, HostConfig(name="edited", kind="openai", model="m", base_url="http://127.0.0.1:9/v1"))
    app = opened(page("hosts.py"), HOST_EDIT)
    by_label(app.selectbox, "Host to edit").set_value("edited").run()
    assert by_label(app.text_input, "Model").disabled and by_label(app.selectbox, "Thinking control").disabled
    by_label(app.number_input, "Requests in flight per URL").set_value(3)
    by_label(app.text_area, "Base URLs").set_value("http://127.0.0.1:9/v1\nhttp://127.0.0.1:10/v1")
    by_label(app.button, "Save").click().run()
    assert not app.exception and "Host 'edited' saved." in texts(app.success)
    saved = get_host_config(app_store, "edited")
    assert (saved.model, saved.max_concurrency, saved.base_urls) == ("m", 3, ("http://127.0.0.1:9/v1",
                                                                          "http://127.0.0.1:10/v1"))
    app_store.delete_host_config("edited")


def test_host_failure_is_one_message(app_store: Store) -> None:
    save_host_config(app_store, HostConfig(name="dead", kind="openai", model="m", base_url="http://127.0.0.1:9/v1",
                                           max_retries=0, timeout_s=5.0))
    app = opened(page("hosts.py"), HOST_TEST)
    by_label(app.selectbox, "Host to test").set_value("dead")
    by_label(app.button, "Test").click().run()
    assert not app.exception and len(app.error) == 1 and "\n" not in app.error[0].value
    app_store.delete_host_config("dead")


def test_live_query_without_a_router_asks_by_hand(app_store: Store) -> None:
    app = page("live_query.py")
    assert not app.exception
    assert "No trained router yet" in texts(app.info)
    by_label(app.selectbox, "Host").set_value(FAKE_HOST)
    by_label(app.selectbox, "Benchmark (corpus to retrieve from)").set_value("musique")
    by_label(app.text_area, "Your question").set_value("   ")
    by_label(app.button, "Route and answer").click().run()
    assert not app.exception and texts(app.error) == "the question is empty: type a question"

    by_label(app.text_area, "Your question").set_value("Who founded the city?")
    by_label(app.button, "Route and answer").click().run()
    assert not app.exception and not app.error
    assert not app.success  # a typed question has no gold answers: its answers are shown, unscored
    assert len([i for i in app.info if i.value.startswith("answer ")]) == 2  # routed and Always-Raw
    assert card_values(app)["Arm (picked by hand)"] == "summary:no_think"
    assert "extra call" in card_help(app, "Saved vs Always-Raw")
    assert "Always-Raw: raw:no_think (an extra call that routing does not need)" in [h.value for h in app.subheader]
    assert card_values(app)["Mean F1 (routed)"] == "–"

    by_label(app.radio, "Question").set_value("Pick one from the benchmark").run()
    by_label(app.selectbox, "Split").set_value("train").run()
    toggle = "Answer with Always-Raw too (raw:no_think), side by side: an extra call that routing does not need"
    assert by_label(app.toggle, toggle).value  # on by default
    by_label(app.button, "Route and answer").click().run()
    assert not app.exception and not app.success
    f1s = [m.value for m in app.metric if m.label == "F1"]
    assert f1s == ["0.00", "0.00"]  # both answers scored against the gold answers: wrong
    assert [e.value.startswith("answer ") for e in app.error] == [True, True]  # wrong: never a success box
    assert "No token overlap with the gold answer (F1 0.00)." in texts(app.caption)

    by_label(app.toggle, toggle).set_value(False)
    by_label(app.button, "Route and answer").click().run()
    assert not app.exception and len(app.error) == 1  # the routed answer, wrong
    assert "240 in + 5 out tokens (stored outcome)" in card_help(app, "Saved vs Always-Raw")  # in and out apart
    assert "Not asked" in texts(app.info)
    history = app.dataframe[-1].value
    assert history["arm"].tolist() == ["summary:no_think"] * 3
    assert history["raw tokens"].iloc[-1] == 245
    totals = card_values(app)  # the session's cards, shown whole
    assert totals["Questions"] == "3"
    assert totals["Saved in the session"] == f"{(history['raw tokens'] - history['tokens']).sum():,} tokens"
    assert len(app.get("download_button")) == 1


def test_enumerate_starts_watches_and_resumes_a_job(app_store: Store) -> None:
    app = page("enumerate.py")
    assert not app.exception and app.header[0].value == "Jobs"
    assert "No enumeration jobs yet" in texts(app.info)
    by_label(app.selectbox, "Host").set_value(FAKE_HOST)
    by_label(app.selectbox, "Split").set_value("dev")
    by_label(app.selectbox, "Alphabet").set_value(3)
    by_label(app.multiselect, "Benchmarks").set_value(["musique"])
    by_label(app.number_input, "Queries per benchmark").set_value(2)
    by_label(app.button, "Start job").click().run()
    assert not app.exception and not app.error
    assert "Job started: 6 missing calls planned." in texts(app.success)

    # waits end on what the job does, not on a clock (a hang ends at pytest's --timeout)
    while not (len(jobs := app_store.jobs("enumerate")) and jobs["status"][0] != "running"):
        time.sleep(0.2)
    st.cache_data.clear()  # the jobs panel keeps its rows 2 s: a job that ended within them would show running
    app.run()
    table = app.dataframe[0].value
    assert (table["status"][0], table["done"][0], table["planned"][0]) == ("finished", 6, 6)

    by_label(app.button, "Start job").click().run()
    assert "Nothing to do: every planned call is already stored." in texts(app.success)
    by_label(app.button, "Resume").click().run()
    assert not app.exception


def test_enumerate_runs_a_plan_under_the_chosen_retriever(
        app_store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = copy_store(Store(app_store_path), tmp_path)
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    four_passages = RetrieverConfig("bm25-k4", k=4)
    save_retriever_config(store, four_passages)
    jobs_before = len(store.jobs("enumerate"))
    app = page("enumerate.py")
    by_label(app.selectbox, "Host").set_value(FAKE_HOST)
    by_label(app.selectbox, "Retriever").set_value("bm25-k4")  # no outcomes yet: enumerating makes them
    by_label(app.selectbox, "Split").set_value("dev")
    by_label(app.multiselect, "Benchmarks").set_value(["musique"])
    by_label(app.number_input, "Queries per benchmark").set_value(1)
    by_label(app.button, "Start job").click().run()
    assert not app.exception and not app.error, texts(app.error)
    while not (len(jobs := store.jobs("enumerate")) > jobs_before and jobs["status"][0] != "running"):
        time.sleep(0.2)  # until the job stopped (a hang ends at pytest's --timeout)
    assert jobs["status"][0] == "finished"
    under = store.arm_outcomes(FAKE_HOST, retriever_hash=retriever_hash(four_passages))
    evidence_rows = under[~under["arm"].str.startswith("direct:")]
    assert sorted(evidence_rows["retriever_hash"].unique()) == [retriever_hash(four_passages)]
    assert len(evidence_rows) == 4  # one query's Summary and Raw arms, under bm25-k4's evidence


def test_enumerate_prices_the_selected_plan_before_it_starts(app_store: Store) -> None:
    save_host_prices(app_store, HostPrices(FAKE_HOST, 1.0, 2.0))
    jobs_before = len(app_store.jobs("enumerate"))
    app = page("enumerate.py")
    by_label(app.selectbox, "Host").set_value(FAKE_HOST)
    by_label(app.selectbox, "Split").set_value("dev")
    by_label(app.multiselect, "Benchmarks").set_value(["musique"])
    by_label(app.number_input, "Queries per benchmark").set_value(2).run()
    assert not app.exception and not app.error
    metrics = {m.label: m.value for m in app.metric}
    plan = EnumerationPlan(host=FAKE_HOST, split="dev", benchmarks=("musique",), per_benchmark=2, concurrency=4)
    expected = estimate_plan(app_store, plan)
    assert expected.calls > 0 and metrics["Missing calls"] == f"{expected.calls:,}"
    assert metrics["Input tokens"] == f"{expected.tokens_in:,}"
    assert metrics["Price"] == f"{expected.usd:,.2f} USD" and metrics["Batch price"] == f"{expected.batch_usd:,.2f} USD"
    by_label(app.number_input, "Queries per benchmark").set_value(3).run()
    larger = estimate_plan(app_store, dataclasses.replace(plan, per_benchmark=3))
    assert larger.calls > expected.calls
    assert {m.label: m.value for m in app.metric}["Missing calls"] == f"{larger.calls:,}"  # follows the selection
    by_label(app.number_input, "Budget (USD)").set_value(0.0)
    by_label(app.button, "Start job").click().run()
    assert not app.exception and "above --budget-usd 0" in texts(app.error)
    assert len(app_store.jobs("enumerate")) == jobs_before
    app_store.delete_host_prices(FAKE_HOST)


def test_hosts_page_sets_prices_of_a_built_in_host(app_store: Store) -> None:
    app = opened(page("hosts.py"), HOST_PRICES)
    by_label(app.selectbox, "Host to price").set_value("embedded-tiny")
    by_label(app.number_input, "USD per million input tokens").set_value(0.5)
    by_label(app.number_input, "USD per million output tokens").set_value(1.5)
    by_label(app.button, "Save prices").click().run()
    assert not app.exception and "Prices of 'embedded-tiny' saved." in texts(app.success)
    assert app_store.host_prices("embedded-tiny") == HostPrices("embedded-tiny", 0.5, 1.5)
    row = app.dataframe[0].value.set_index("name").loc["embedded-tiny"]
    assert (row["USD / 1M in"], row["USD / 1M out"]) == (0.5, 1.5)
    app_store.delete_host_prices("embedded-tiny")


def test_enumerate_refuses_twelve_arms_on_a_plain_host(app_store: Store) -> None:
    app = page("enumerate.py")
    by_label(app.selectbox, "Host").set_value(FAKE_HOST)
    by_label(app.selectbox, "Alphabet").set_value(12)
    by_label(app.button, "Start job").click().run()
    assert not app.exception
    assert "has no reasoning budget" in texts(app.error)


def test_enumerate_cancels_a_running_job(app_store: Store) -> None:
    # 4 s a call, so the 60 calls outlast the page's run on a busy machine (at 0.5 s a call, at load 8-33, the job
    # had finished, its progress bar gone, before the page read it)
    with AnsweringServer(delay_s=4.0) as slow:
        save_host_config(app_store, HostConfig(name="slow", kind="openai", model="m", base_url=slow.base_url,
                                               max_retries=0, timeout_s=10.0))
        plan = EnumerationPlan(host="slow", split="dev", n_arms=6, benchmarks=("musique",), per_benchmark=10,
                               concurrency=1)
        started = start_enumeration_job(plan, app_store.path, app_store.path.parent / "jobs")
        # waits end on what the job does, not on a clock (a hang ends at pytest's --timeout)
        while (job := job_for_process(app_store, started) or {}).get("done", 0) < 1:
            assert job.get("status", "running") == "running", log_tail(started.log_path)
            time.sleep(0.5)
        app = page("enumerate.py")
        assert not app.exception
        assert "of 60 calls" in app.get("progress")[0].proto.text
        by_label(app.button, "Cancel").click().run()
        job_id = job_for_process(app_store, started)["job_id"]
        while app_store.job(job_id)["status"] in ("running", "cancelling"):
            time.sleep(0.5)
    assert app_store.job(job_id)["status"] == "stopped: cancelled"
    app_store.delete_host_config("slow")


# ---------------------------------------------------------------- Train, Pareto, Action map

SYNTHETIC_HOST = "synthetic-host"


@pytest.fixture
def trained_app(tmp_path: Path, trained_store: tuple[Store, str], monkeypatch: pytest.MonkeyPatch) -> tuple[Store, str]:
    """A private copy of the synthetic-outcome store with its Lite Stage-1 checkpoint, as the
    dashboard's store, and that checkpoint's id."""
    store = copy_store(trained_store[0], tmp_path / "trained-app")
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    return store, trained_store[1]


def test_live_query_opens_on_the_hosts_default_retriever_and_keeps_it_with_the_question(
        app_store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = copy_store(Store(app_store_path), tmp_path)
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    four_passages = RetrieverConfig("bm25-k4", k=4)
    save_retriever_config(store, four_passages)
    set_host_default_retriever(store, FAKE_HOST, "bm25-k4")
    app = page("live_query.py")
    by_label(app.selectbox, "Host").set_value(FAKE_HOST).run()
    assert by_label(app.selectbox, "Retriever").value == "bm25-k4"  # the host's default
    by_label(app.selectbox, "Benchmark (corpus to retrieve from)").set_value("musique")
    by_label(app.text_area, "Your question").set_value("Who founded the city?")
    by_label(app.selectbox, "Arm").set_value("raw:no_think")
    by_label(app.button, "Route and answer").click().run()
    assert not app.exception and not app.error, texts(app.error)
    assert "\n\n[4] " in app.session_state["live_history"][-1].answer.support_text  # bm25-k4's four passages
    trace = store.live_traces(FAKE_HOST).iloc[0]
    assert (trace["retriever"], trace["retriever_hash"]) == ("bm25-k4", retriever_hash(four_passages))
    by_label(app.selectbox, "Retriever").set_value("bm25").run()
    assert "This answer is for other inputs (the retriever changed since)" in texts(app.warning)


def test_live_query_routes_and_answers_in_one_click(trained_app: tuple[Store, str], fake_host: AnsweringServer) -> None:
    store, checkpoint_id = trained_app
    save_host_config(store, HostConfig(name=FAKE_HOST, kind="openai", model="m", base_url=fake_host.base_url,
                                       max_retries=0, timeout_s=10.0))
    app = page("live_query.py")
    assert not app.exception
    by_label(app.selectbox, "Host").set_value(FAKE_HOST).run()
    assert by_label(app.selectbox, "Router").value == checkpoint_id  # the only checkpoint
    assert f"was trained on host '{SYNTHETIC_HOST}', not '{FAKE_HOST}'" in texts(app.warning)
    by_label(app.text_area, "Your question").set_value("Who founded the city of Rome and when?")
    by_label(app.button, "Route and answer").click().run()
    assert not app.exception and not app.error, texts(app.error)
    result = app.session_state["live_history"][-1]
    assert result.checkpoint_id == checkpoint_id
    assert result.arm == max(result.probabilities, key=result.probabilities.get)
    assert abs(sum(result.probabilities.values()) - 1) < 1e-5
    assert card_values(app)["Chosen arm"] == result.arm  # a card: the arm's name shown whole
    assert "probability" in next(m for m in app.markdown if m.value == ":small[Chosen arm]").proto.help
    margin = f"{result.confidence.margin:+.3f} utility over {result.confidence.runner_up}"  # in utility units
    assert any(caption.value.startswith(margin) for caption in app.caption)
    assert len(app.get("vega_lite_chart")) == 1  # each arm's implied utility (the probabilities on request)
    name = checkpoint_names(store.checkpoints())[checkpoint_id]  # every page's name, the full id beside it
    assert app.dataframe[-1].value[["router", "router id"]].values.tolist() == [[name, checkpoint_id]]
    trace = store.live_traces(FAKE_HOST).iloc[0]  # kept in the store for the Queries page
    assert (trace["question"], trace["router"], trace["arm"]) == ("Who founded the city of Rome and when?",
                                                                  checkpoint_id, result.arm)
    assert trace["margin"] == pytest.approx(result.confidence.margin)
    assert trace["tokens_in"] > 0 and trace["tokens_out"] > 0
    assert (trace["retriever"], trace["retriever_hash"]) == ("bm25", "")  # the evidence it was answered under

    by_label(app.text_area, "Your question").set_value("A new question?").run()  # the answer shown is marked
    assert "This answer is for other inputs (the question changed since)" in texts(app.warning)
    by_label(app.text_area, "Your question").set_value("").run()
    by_label(app.button, "Route and answer").click().run()  # an error leaves no earlier answer under it
    assert app.error and "Chosen arm" not in card_values(app)
    by_label(app.text_area, "Your question").set_value("Who founded the city of Rome and when?")

    by_label(app.selectbox, "Arm").set_value("direct:cot")  # the override, secondary
    by_label(app.button, "Route and answer").click().run()
    assert not app.exception and card_values(app)["Arm (picked by hand)"] == "direct:cot"
    assert app.dataframe[-1].value["router id"].tolist() == [checkpoint_id, "override"]

    by_label(app.selectbox, "Arm").set_value("raw:no_think")  # Always-Raw's own arm: one call, one column
    by_label(app.button, "Route and answer").click().run()
    assert not app.exception and card_values(app)["Saved vs Always-Raw"] == "same arm"
    assert [h.value for h in app.subheader if h.value.startswith(("Routed", "Always-Raw"))] == [
        "Routed: raw:no_think (Always-Raw's own arm: nothing to compare, one call)"]


def metric_values(app: AppTest) -> dict[str, str]:
    return {metric.label: metric.value for metric in app.metric}


def card_values(app: AppTest) -> dict[str, str]:
    """The cards `ui.name_metric` shows whole: label -> value (a small label, then the value's block)."""
    texts = [element.value for element in app.markdown]
    return {re.fullmatch(r":small\[(.*)\]", label).group(1): re.sub(r"<[^>]+>", "", value)
            for label, value in zip(texts, texts[1:]) if re.fullmatch(r":small\[.*\]", label)}


def card_help(app: AppTest, label: str) -> str:
    """The help of a card `ui.name_metric` shows (on its label)."""
    return next(element for element in app.markdown if element.value == f":small[{label}]").proto.help


def second_training_job_done(store: Store) -> pd.DataFrame:
    """The store's training jobs, newest first, once a second one has stopped running (a hang ends at
    pytest's --timeout)."""
    while not (len(jobs := store.jobs("train")) == 2 and jobs["status"][0] not in ("running", "cancelling")):
        time.sleep(0.2)
    return jobs


def frame_with(app: AppTest, column: str) -> pd.DataFrame:
    """The one dataframe on the page with this column."""
    frames = [frame.value for frame in app.dataframe if column in frame.value.columns]
    assert len(frames) == 1, [list(frame.value.columns) for frame in app.dataframe]
    return frames[0]


def test_training_pages_without_dev_queries_or_checkpoints_say_what_to_do(app_store: Store) -> None:
    pareto = page("pareto.py")
    assert not pareto.exception
    assert "no complete dev queries" in texts(pareto.error)
    assert "`forge enumerate --host fake --split dev`" in texts(pareto.error)
    assert "No router checkpoints for host 'fake' yet: train one on the Train page" in texts(pareto.info)

    action_map = page("action_map.py")
    assert not action_map.exception
    assert "`forge train --stage 1 --host fake`" in texts(action_map.info)

    train = page("train.py")
    assert not train.exception
    assert "No training runs in this store's jobs yet" in texts(train.info)
    assert "No router checkpoints for host" in texts(train.info)
    by_label(train.selectbox, "Host").set_value(FAKE_HOST)
    by_label(train.selectbox, "Features").set_value("lite")
    by_label(train.button, "Start training").click().run()
    assert not train.exception and "`forge enumerate --host fake --split dev`" in texts(train.error)
    train.segmented_control[0].set_value(2).run()
    by_label(train.button, "Start training").click().run()
    assert not train.exception and train.error


@pytest.mark.e2e  # end to end: a Stage 2 job trained from the page (about 20 s)
def test_train_page_runs_a_stage2_job_and_compares_checkpoints(trained_app: tuple[Store, str]) -> None:
    store, parent = trained_app
    app = opened(page("train.py"), TRAIN_COMPARISON)
    assert not app.exception, app.exception
    assert f"checkpoint `{parent}`" in texts(app.success)  # the fixture's run, finished
    assert {"train loss", "dev loss", "dev target agreement (trained arms)", "dev oracle agreement"} <= set(
        card_values(app))
    assert frame_with(app, "checkpoint")["checkpoint"].tolist() == [parent]
    # one definition: the run panel's dev oracle agreement is the checkpoint's, as in the comparison
    compared = frame_with(app, "metric").set_index("metric").loc["dev oracle agreement", "b"]
    assert card_values(app)["dev oracle agreement"] == f"{compared:.4g}"

    by_label(app.selectbox, "Features").set_value("lite")
    app.segmented_control[0].set_value(2).run()
    assert f" · {short_id(parent)} · " in by_label(app.selectbox, "Parent checkpoint").options[1]  # name · id · ...
    by_label(app.selectbox, "Algorithm").set_value("rloo")
    by_label(app.number_input, "Steps").set_value(20)
    by_label(app.button, "Start training").click().run()
    assert not app.exception and not app.error, texts(app.error)
    assert "Training started: Stage 2, lite, 6 arms on synthetic-host." in texts(app.success)

    jobs = second_training_job_done(store)
    assert jobs["status"][0] == "finished", jobs["message"][0]
    child = jobs["message"][0]
    app = opened(page("train.py"), TRAIN_COMPARISON)
    assert not app.exception
    assert frame_with(app, "checkpoint")["checkpoint"].tolist() == [child, parent]
    assert f"Finished after 20 steps: checkpoint `{child}`." in texts(app.success)
    assert {"reward", "KL to Stage 1", "entropy", "beta"} <= set(card_values(app))
    assert by_label(app.selectbox, "Checkpoint A").value == parent  # the newest and its parent
    assert by_label(app.selectbox, "Checkpoint B").value == child
    diff = frame_with(app, "field").set_index("field")
    assert diff.loc["stage", "a"] == "1" and diff.loc["stage", "b"] == "2"
    assert diff.loc["parent", "b"] == parent and diff.loc["config.loss_type", "b"] == "rloo"
    metrics = frame_with(app, "metric").set_index("metric")
    assert metrics.loc["dev queries", "a"] == metrics.loc["dev queries", "b"] == 60
    charts = vega_charts(app)
    assert len(charts) == 2  # the run's curves, the comparison's overlay
    panels = set(charts[1][1]["panel"])
    assert "KL to Stage 1" in panels and any(panel.startswith("dev target agreement") for panel in panels)

    assert "No default router is marked" in texts(app.caption)
    by_label(app.selectbox, "Default router").set_value(parent)  # the older one: a newer run must not displace it
    by_label(app.button, "Mark as default").click().run()
    assert not app.exception and store.marked_default_router("synthetic-host") == parent
    assert "is now the default router of 'synthetic-host'" in texts(app.success)
    table = frame_with(app, "checkpoint").set_index("checkpoint")
    assert table.loc[parent, "default"] and not table.loc[child, "default"]


def test_train_pages_reward_audit_and_comparison_are_drawn_only_while_open(
        trained_app: tuple[Store, str], monkeypatch: pytest.MonkeyPatch) -> None:
    from app import data

    audited = []
    reward_audit = data.reward_audit
    monkeypatch.setattr(data, "reward_audit", lambda *args, **kwargs: audited.append(args[2:4]) or
                        reward_audit(*args, **kwargs))
    app = page("train.py")
    assert not app.exception, app.exception
    shown = [column for frame in app.dataframe for column in frame.value.columns]
    assert audited == [] and "spearman with gold F1" not in shown  # closed: no audit computed, no table
    assert "Checkpoint A" not in [box.label for box in app.selectbox] and "metric" not in shown
    opened(app, TRAIN_REWARDS)
    assert audited == [("synthetic-host", "consensus")] and len(frame_with(app, "spearman with gold F1")) == 6
    opened(app, TRAIN_COMPARISON)
    assert not app.exception, app.exception
    assert "Checkpoint A" in [box.label for box in app.selectbox] and len(frame_with(app, "metric"))


def test_train_page_audits_a_proxy_and_trains_on_it(trained_app: tuple[Store, str]) -> None:
    store, gold_checkpoint = trained_app
    app = opened(page("train.py"), TRAIN_REWARDS)
    assert not app.exception, app.exception
    audit = frame_with(app, "spearman with gold F1")
    assert len(audit) == 6 and audit["mean gold F1"].between(0, 1).all()
    assert "Proxy-best arm is a gold-best arm by F1" in texts(app.markdown)

    by_label(app.selectbox, "Features").set_value("lite")
    by_label(app.segmented_control, "Reward").set_value("consensus")
    by_label(app.number_input, "Max epochs").set_value(3)
    by_label(app.button, "Start training").click().run()
    assert not app.exception and not app.error, texts(app.error)
    jobs = second_training_job_done(store)
    assert jobs["status"][0] == "finished", jobs["message"][0]
    assert store.checkpoint(jobs["message"][0])[0]["lineage"]["reward"] == "consensus"


def test_train_page_says_whether_the_proxy_is_good_enough_after_a_crossfit(trained_app: tuple[Store, str]) -> None:
    app = opened(page("train.py"), TRAIN_REWARDS)
    assert "regret_vs_gold" not in texts(app.markdown)
    next(b for b in app.button if b.label.startswith("Cross-fit a Lite router")).click().run(timeout=300)
    assert not app.exception, app.exception
    assert "regret_vs_gold" in texts(app.markdown)
    verdict = texts(app.success) + texts(app.error)
    assert "Consensus is " in verdict and "good enough at these weights" in verdict
    # the verdict the page states, from the interval it shows: the Lite router trained on consensus
    # loses utility against gold training only when the whole interval lies below zero
    interval = re.search(r"Lite router trained on consensus: .*\(95% interval ([-+][0-9.]+) to ([-+][0-9.]+)\)",
                         texts(app.markdown))
    assert interval, texts(app.markdown)
    high = float(interval.group(2))
    assert abs(high) >= 1e-4, "the rounded interval must decide the verdict"
    if high < 0:
        assert ("Consensus is not good enough at these weights: forge_lite (consensus) lose utility against gold "
                "training (interval below zero).") in texts(app.error)
        assert "good enough at these weights" not in texts(app.success)
    else:
        assert ("Consensus is good enough at these weights: routers trained on consensus lose no significant "
                "utility against gold.") in texts(app.success)
        assert "not good enough" not in verdict


def test_train_page_starts_a_support_run(trained_app: tuple[Store, str], monkeypatch: pytest.MonkeyPatch) -> None:
    from app import train_view

    started = []
    monkeypatch.setattr(train_view.jobs, "start_judge_job", lambda request, *paths: started.append(request))
    app = opened(page("train.py"), TRAIN_REWARDS)
    by_label(app.radio, "The judge host says").set_value("support")
    by_label(app.button, "Start judging").click().run()
    assert not app.exception and not app.error, texts(app.error)
    assert [request.kind for request in started] == ["support"]
    assert started[0].host == "synthetic-host" and "Judging started (support)" in texts(app.success)


def test_pareto_page_follows_the_weights(trained_app: tuple[Store, str]) -> None:
    _, checkpoint_id = trained_app
    app = page("pareto.py")
    assert not app.exception, app.exception
    assert by_label(app.multiselect, "Router checkpoints").value == [checkpoint_id]
    before = metric_values(app)
    ((spec, points),) = vega_charts(app)
    drawn = {policy for merged in points["policy"] for policy in merged.split(" = ")}  # identical points merged
    assert {"oracle", checkpoint_id} <= drawn and layer_drawing(spec, "on_frontier")
    by_label(app.slider, "lambda_in").set_value(1.0)
    by_label(app.slider, "lambda_out").set_value(1.0).run()
    assert not app.exception
    after = metric_values(app)
    assert float(after["Oracle utility"]) < float(before["Oracle utility"])
    assert after["Oracle cost"] != before["Oracle cost"]

    by_label(app.toggle, "One chart per benchmark").set_value(True).run()
    assert not app.exception
    table = points_table(app)
    assert set(table["benchmark"]) == {"musique", "popqa", "2wikimultihopqa"} and len(table) == 42  # 14 policies x 3
    by_label(app.segmented_control, "Colour by").set_value("utility").run()
    ((spec, _),) = vega_charts(app)
    assert not app.exception and spec["spec"]["layer"][0]["encoding"]["color"]["field"] == "macro_utility"


def test_pareto_and_overview_show_support_rates_and_their_evaluator(trained_app: tuple[Store, str]) -> None:
    from support.judging import write_support_verdicts

    store, _ = trained_app
    write_support_verdicts(store, "synthetic-host", {"raw:no_think": 1.0, "direct:no_think": 0.0})
    app = page("pareto.py")
    assert not app.exception, app.exception
    table = points_table(app).set_index("policy")
    assert (table.loc["always_raw", "support_rate"], table.loc["always_direct", "support_rate"]) == (1.0, 0.0)
    assert "by judge:double@cfg1" in texts(app.caption)
    app = page("overview.py")
    assert not app.exception, app.exception
    by_label(app.selectbox, "Split").set_value("test").run()
    support = app.dataframe[-1].value
    assert set(support["arm"]) == {"raw:no_think", "direct:no_think"} and "Evaluator: judge:double@cfg1" in \
        texts(app.caption)


@pytest.mark.e2e  # end to end: three crossfit runs trained, then the page (about 70 s)
def test_pareto_page_reads_stored_crossfit_runs(trained_app: tuple[Store, str]) -> None:
    from forge_core.evaluation.crossfit import CrossfitSettings, run_crossfit
    from forge_core.training.settings import Stage1Config

    store, _ = trained_app
    app = page("pareto.py")
    app.segmented_control[0].set_value("crossfit").run()
    assert not app.exception, app.exception
    assert "No finished crossfit run for host 'synthetic-host' yet" in texts(app.info)
    for weight in (0.1, 0.6):
        run_crossfit(store, CrossfitSettings("synthetic-host", lambda_in=weight, lambda_out=weight, folds=2,
                                             stage1=Stage1Config(max_epochs=5)))
    # the newest run repeats the 0.1 run's settings without the conditioned routers and with another
    # training seed (without the conditioned routers alone it would be the same run, not a second one)
    run_crossfit(store, CrossfitSettings("synthetic-host", lambda_in=0.1, lambda_out=0.1, folds=2,
                                         stage1=Stage1Config(max_epochs=5), conditioning=None, seed=1))
    app = page("pareto.py")
    app.segmented_control[0].set_value("crossfit").run()
    assert not app.exception, app.exception
    runs = by_label(app.selectbox, "Crossfit run")
    assert len(runs.options) == len(set(runs.options)) == 3  # the two 0.1 runs are told apart
    assert "are not this run's" in texts(app.caption)  # no run at the session's weights (0.1 / 0.2)
    with_conditioned = next(label for label in runs.options if "cost-conditioned" in label and "0.1" in label)
    runs.select_index(runs.options.index(with_conditioned)).run()
    assert not app.exception, app.exception
    assert "forge_lite_cond" in set(app.dataframe[0].value["policy"])
    shares = [line for line in texts(app.markdown).split("\n") if "share of the oracle's gain" in line]
    assert len(shares) == 2  # one line per cost weight, though two runs share 0.1 / 0.1
    runs.select_index(0).run()
    assert "forge_lite_cond" not in set(app.dataframe[0].value["policy"])  # the newest: no conditioned routers
    cards = card_values(app)  # shown whole, not cut as st.metric would
    assert cards["Best fixed arm"] in ("direct:no_think", "summary:no_think", "raw:no_think")
    table = app.dataframe[0].value
    assert not table.loc[table["policy"] == "oracle", "decidable"].any()
    stated = [str(element.value) for element in [*app.success, *app.info]
              if "Deploy " in str(element.value) or "deploy the fixed arm" in str(element.value)]
    assert len(stated) == 1 and "λ_in 0.1 / λ_out 0.2" in stated[0]  # one recommendation: the session weights'
    if "Deploy forge" in stated[0]:  # a router is deployed only where this run's column says it decidably pays
        assert table.loc[table["policy"] == stated[0].split()[1], "decidable"].all()
    assert not table.loc[table["policy"] == "oracle", "on_frontier"].any()  # a reference, not a frontier point
    assert (table["f1_low"] <= table["macro_f1"]).all() and (table["macro_f1"] <= table["f1_high"]).all()
    (pareto_spec, points), (gain_spec, gains) = vega_charts(app)
    assert layer_drawing(pareto_spec, "on_frontier")  # the deployable policies' frontier, their intervals as bars:
    assert pareto_spec["layer"][0]["encoding"]["y2"] == {"field": "f1_high"}
    assert (points["f1_low"] <= points["macro_f1"]).all()
    assert "oracle" not in set(points.loc[points["on_frontier"], "policy"])
    assert {"ridge_utility", "forge_lite"} <= set(gains["policy"])
    assert gain_spec["spec"]["layer"][0]["mark"]["type"] == "area"  # each gain's interval, a band
    assert "share of the oracle's gain" in texts(app.markdown)

    at_weights = page("pareto.py")  # the crossfit view opens on the run at the session's weights
    at_weights.session_state["weights_lambda_in"] = at_weights.session_state["weights_lambda_out"] = 0.6
    at_weights.segmented_control[0].set_value("crossfit").run()
    assert by_label(at_weights.selectbox, "Crossfit run").value["lambda_in"] == 0.6
    assert "are not this run's" not in texts(at_weights.caption)

    split_view = page("pareto.py")  # the split's view states `forge decide`'s decision and where it comes from
    by_label(split_view.slider, "lambda_in").set_value(0.6)
    by_label(split_view.slider, "lambda_out").set_value(0.6).run()
    assert not split_view.exception, split_view.exception
    assert "`forge decide --host synthetic-host --lambda-in 0.6 --lambda-out 0.6` gives the same" in texts(
        split_view.caption)
    assert "not a second recommendation" in texts(split_view.caption)  # the split's points: no interval

    action_map = opened(opened(page("action_map.py"), MAP_CLUSTERS), MAP_CROSSFIT)
    assert not action_map.exception, action_map.exception
    by_label(action_map.selectbox, "Policy").set_value("ridge_utility").run()
    assert not action_map.exception, action_map.exception
    assert len(vega_charts(action_map)) == 5  # router, oracle, agreement, cluster mix, crossfit decisions
    assert "ridge_utility's out-of-fold arm" in texts(action_map.caption)


def test_action_map_page_shows_router_and_oracle(trained_app: tuple[Store, str]) -> None:
    _, checkpoint_id = trained_app
    app = page("action_map.py")
    assert not app.exception, app.exception
    assert by_label(app.selectbox, "Checkpoint").value == checkpoint_id
    metrics = metric_values(app)
    assert metrics["Queries"] == "60"
    cards = card_values(app)  # the router and the references, same weights, labels shown whole
    regret, agreement = cards["Router regret · oracle agreement"].split(" · ")
    assert float(regret) >= 0 and agreement.endswith("%")
    assert cards["Regret · agreement of Always-Direct (direct:no_think)"].endswith("%")
    assert any(label.startswith("Regret · agreement of best fixed arm (") and value.endswith("%")
               for label, value in cards.items())
    assert "a tie (e.g. every arm scoring F1 0) agrees with every policy" in texts(app.caption)
    charts = vega_charts(app)
    assert len(charts) == 3  # router map, oracle map, agree / disagree map (the cluster mix drawn once opened)
    (router_spec, router_points), (_, agreement_points) = charts[0], charts[2]
    assert router_points["raw:no_think"].str.startswith("F1 ").all()  # tooltip: every arm's outcome
    assert {"field": "raw:no_think", "type": "nominal"} in router_spec["layer"][0]["encoding"]["tooltip"]
    assert set(agreement_points["agreement"]) <= {"agree", "disagree"}
    assert "Click a point on a map to open its query here." in texts(app.caption)
    app.session_state["action_map_query"] = 0  # what a click on the first query leaves
    app.run()
    assert not app.exception, app.exception
    outcomes = frame_with(app, "router's implied utility vs its pick")  # utility units; probabilities on request
    assert len(outcomes) == 6 and outcomes["router's implied utility vs its pick"].max() == 0.0
    assert outcomes["answer"].ne("–").all()  # every arm's stored answer
    assert [tab.label for tab in app.tabs] == ["Direct", "Summary", "Raw"]
    summary = frame_with(opened(app, MAP_CLUSTERS), "queries")
    assert len(summary) == 6 and summary["queries"].sum() == 60
    by_label(app.selectbox, "Split").set_value("all").run()
    assert not app.exception and metric_values(app)["Queries"] == "240"


def test_the_action_map_page_opens_on_the_map_the_background_views_kept(trained_app: tuple[Store, str],
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    store, checkpoint_id = trained_app
    wanted = view_name("action_map", SYNTHETIC_HOST)
    steps = [step for step in view_steps(store, config.cache_dir()) if step.name == wanted]
    assert precompute_views(store, config.cache_dir(), steps=steps) == [
        f"{SYNTHETIC_HOST}: the Action map of the default router: ready"]

    def not_computed(*arguments, **options):  # a test double: the page must read the kept map
        raise AssertionError("the action map was computed again")

    monkeypatch.setattr(action_map_module, "compute_action_map", not_computed)
    app = page("action_map.py")
    assert not app.exception, app.exception
    assert by_label(app.selectbox, "Checkpoint").value == checkpoint_id and metric_values(app)["Queries"] == "60"
    assert len(vega_charts(app)) == 3


def test_queries_page_sorts_filters_and_opens_a_query_by_its_url(trained_app: tuple[Store, str]) -> None:
    _, checkpoint_id = trained_app
    app = page("queries.py")
    assert not app.exception, app.exception
    assert by_label(app.selectbox, "Router").value == checkpoint_id  # the host's default router
    table = frame_with(app, "regret")
    assert len(table) == 60 and table["regret"].is_monotonic_decreasing and (table["regret"] >= 0).all()
    assert {"oracle", "cluster", "F1 raw:no_think", "in raw:no_think", "out raw:no_think"} <= set(table.columns)
    assert (table["regret"] == 0).eq(table["router_in_oracle"]).all()  # no regret exactly when in the oracle set
    assert "Select a row of the table to open its query here." in texts(app.caption)

    compared = table["router"].mode()[0]  # the router's commonest arm: the filter must drop its queries
    by_label(app.selectbox, "Compare with").set_value(compared).run()
    by_label(app.toggle, "Only where the router's arm differs from the compared one").set_value(True).run()
    assert not app.exception, app.exception
    shown = frame_with(app, "regret")
    assert len(shown) == (table["router"] != compared).sum() < 60
    assert (shown["router"] != compared).all() and shown["compared"].eq(compared).all()

    linked = AppTest.from_file(str(PAGES / "queries.py"), default_timeout=PAGE_RUN_TIMEOUT_S)
    linked.query_params["host"], linked.query_params["query"] = SYNTHETIC_HOST, table["query"].iloc[0]
    linked.run()
    assert not linked.exception, linked.exception
    outcomes = frame_with(linked, "router's implied utility vs its pick")  # the worst-regret query, from its URL
    assert len(outcomes) == 6 and outcomes["router's implied utility vs its pick"].max() == 0.0
    assert table["question"].iloc[0] in texts(linked.markdown)


def test_overview_shows_stored_evidence_without_outcomes(benchmarks_root: Path) -> None:
    store = Store(os.environ["FORGE_STORE"])
    import_benchmarks(store, benchmarks_root, ["2wikimultihopqa"])
    measured = {"name": "d", "kind": "dense", "config_hash": "abc123def456",
                "recall_at_k": {"mean": 0.667, "ci95": [0.626, 0.709]}, "recall_vs_first_ci95": [0.026, 0.101],
                "summary_tokens_in": {"mean": 266.4, "ci95": [260.0, 272.0]},
                "raw_tokens_in": {"mean": 404.2, "ci95": [379.0, 429.0]}, "latency_ms": {"p50": 83.7, "p95": 121.8}}
    store.save_evidence_results("2wikimultihopqa", 3, 153, None, [measured])
    app = page("overview.py")
    assert not app.exception
    assert len(app.dataframe) == 4  # benchmarks, coverage, evidence by retriever: recall, then tokens and latency
    recall, cost = app.dataframe[2].value.iloc[0], app.dataframe[3].value.iloc[0]
    assert (recall["retriever"], recall["gold recall@k"], recall["minus the run's first"]) == (
        "d", "0.667 [0.626, 0.709]", "[+0.026, +0.101]")
    assert (cost["retriever"], cost["Raw tokens in"], cost["latency p50 / p95 ms"]) == ("d", "404 [379, 429]",
                                                                                         "83.7 / 121.8")
