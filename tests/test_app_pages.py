"""A Streamlit AppTest per dashboard page, on a small store, an empty store, and a fake host."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from answering_server import AnsweringServer
from app_store import FAKE_HOST, build_app_store
from forge_core.config import PROJECT_ROOT
from forge_core.data_import import import_benchmarks
from forge_core.enumeration import EnumerationPlan
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.jobs import job_for_process, log_tail, start_enumeration_job
from forge_core.store import Store

PAGES = PROJECT_ROOT / "pages"
TIMEOUT_S = 120  # the machine may be busy: page runs that call a host or a job are generous


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
    return AppTest.from_file(str(PAGES / name), default_timeout=TIMEOUT_S).run()


def by_label(widgets, label: str):
    """The one widget with this label."""
    matches = [widget for widget in widgets if widget.label == label]
    assert len(matches) == 1, f"{label!r}: {[w.label for w in widgets]}"
    return matches[0]


def texts(elements) -> str:
    """All the text of a sequence of message elements."""
    return "\n".join(element.value for element in elements)


def test_navigation_runs_every_page(app_store: Store) -> None:
    app = AppTest.from_file(str(PROJECT_ROOT / "app" / "main.py"), default_timeout=TIMEOUT_S).run()
    assert not app.exception and app.title[0].value == "Overview"
    for script, title in [("enumerate.py", "Enumerate"), ("hosts.py", "Hosts"), ("live_query.py", "Live query"),
                          ("train.py", "Train"), ("pareto.py", "Pareto"), ("action_map.py", "Action map")]:
        app.switch_page(f"../pages/{script}").run()
        assert not app.exception, script
        assert app.title[0].value == title


@pytest.mark.parametrize("script", ["overview.py", "enumerate.py", "live_query.py"])
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
    assert [m.label for m in app.metric] == ["Benchmarks", "Examples", "Hosts with outcomes", "Complete queries"]
    assert app.metric[0].value == "2" and app.metric[3].value == "10"
    assert len(app.dataframe) == 3  # benchmarks, coverage, the summary table
    charts = app.get("plotly_chart")
    assert len(charts) == 3  # cost/quality, F1 per arm, tokens per arm
    assert "oracle" in charts[0].proto.spec and "raw:cot" in charts[0].proto.spec
    assert not app.info  # train outcomes exist, so the oracle is drawn
    by_label(app.selectbox, "Split").set_value("test").run()
    assert not app.exception and "4 complete queries" in texts(app.caption)


def test_hosts_lists_adds_and_tests(app_store: Store) -> None:
    app = page("hosts.py")
    assert not app.exception
    assert set(app.dataframe[0].value["name"]) >= {"embedded", "embedded-tiny", FAKE_HOST}

    by_label(app.text_input, "Name").set_value("remote")
    by_label(app.text_input, "Base URL").set_value("http://127.0.0.1:9/v1")
    by_label(app.text_input, "Model").set_value("qwen3")
    by_label(app.selectbox, "Thinking control").set_value("vllm-qwen3")
    by_label(app.text_input, "API key environment variable").set_value("FORGE_TEST_KEY")
    by_label(app.button, "Save").click().run()
    assert not app.exception and "Host 'remote' saved." in texts(app.success)
    row = app.dataframe[0].value.set_index("name").loc["remote"]
    assert (row["thinking"], row["API key variable"], row["key"]) == ("vllm-qwen3", "FORGE_TEST_KEY", "missing")

    by_label(app.text_input, "Name").set_value("broken")
    by_label(app.text_input, "Model").set_value("")
    by_label(app.button, "Save").click().run()
    assert "a host needs a name and a model" in texts(app.error)

    by_label(app.selectbox, "Host to test").set_value(FAKE_HOST)
    by_label(app.button, "Test").click().run()
    assert not app.exception and not app.error
    assert texts(app.success).startswith("**Answer:** answer ")
    assert [m.label for m in app.metric] == ["Tokens in", "Tokens out", "Latency"]
    assert int(app.metric[1].value) == 2
    app_store.delete_host_config("remote")


def test_host_failure_is_one_message(app_store: Store) -> None:
    save_host_config(app_store, HostConfig(name="dead", kind="openai", model="m", base_url="http://127.0.0.1:9/v1",
                                           max_retries=0, timeout_s=5.0))
    app = page("hosts.py")
    by_label(app.selectbox, "Host to test").set_value("dead")
    by_label(app.button, "Test").click().run()
    assert not app.exception and len(app.error) == 1 and "\n" not in app.error[0].value
    app_store.delete_host_config("dead")


def test_live_query_typed_and_picked(app_store: Store) -> None:
    app = page("live_query.py")
    assert not app.exception
    assert "No trained router yet" in texts(app.info)
    by_label(app.selectbox, "Host").set_value(FAKE_HOST)
    by_label(app.selectbox, "Benchmark (corpus to retrieve from)").set_value("musique")
    by_label(app.text_area, "Your question").set_value("Who founded the city?")
    by_label(app.button, "Ask").click().run()
    assert not app.exception and not app.error
    assert app.success[0].value.startswith("answer ")
    metrics = {m.label: m for m in app.metric}
    assert set(metrics) == {"Tokens in", "Tokens out", "Latency", "F1", "Always-Raw would cost"}
    assert metrics["F1"].value == "–" and "extra call" in metrics["Always-Raw would cost"].proto.help
    assert len(app.dataframe) == 1  # the retrieved passages

    by_label(app.radio, "Question").set_value("Pick one from the benchmark").run()
    by_label(app.selectbox, "Split").set_value("train").run()
    by_label(app.button, "Ask").click().run()
    assert not app.exception and not app.error
    metrics = {m.label: m for m in app.metric}
    assert "stored outcome" in metrics["Always-Raw would cost"].proto.help
    assert metrics["Always-Raw would cost"].value == "245 tokens"  # 240 in + 5 out, as stored
    assert metrics["F1"].value != "–"


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

    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        jobs = app_store.jobs("enumerate")
        if len(jobs) and jobs["status"][0] == "finished":
            break
        time.sleep(1)
    app.run()
    table = app.dataframe[0].value
    assert (table["status"][0], table["done"][0], table["planned"][0]) == ("finished", 6, 6)

    by_label(app.button, "Start job").click().run()
    assert "Nothing to do: every planned call is already stored." in texts(app.success)
    by_label(app.button, "Resume").click().run()
    assert not app.exception


def test_enumerate_refuses_twelve_arms_on_a_plain_host(app_store: Store) -> None:
    app = page("enumerate.py")
    by_label(app.selectbox, "Host").set_value(FAKE_HOST)
    by_label(app.selectbox, "Alphabet").set_value(12)
    by_label(app.button, "Start job").click().run()
    assert not app.exception
    assert "has no reasoning budget" in texts(app.error)


def test_enumerate_cancels_a_running_job(app_store: Store) -> None:
    with AnsweringServer(delay_s=0.5) as slow:
        save_host_config(app_store, HostConfig(name="slow", kind="openai", model="m", base_url=slow.base_url,
                                               max_retries=0, timeout_s=10.0))
        plan = EnumerationPlan(host="slow", split="dev", n_arms=6, benchmarks=("musique",), per_benchmark=10,
                               concurrency=1)
        started = start_enumeration_job(plan, app_store.path, app_store.path.parent / "jobs")
        deadline = time.monotonic() + TIMEOUT_S
        while (job_for_process(app_store, started) or {}).get("done", 0) < 1:
            assert time.monotonic() < deadline, log_tail(started.log_path)
            time.sleep(0.5)
        app = page("enumerate.py")
        assert not app.exception
        assert "of 60 calls" in app.get("progress")[0].proto.text
        by_label(app.button, "Cancel").click().run()
        job_id = job_for_process(app_store, started)["job_id"]
        while app_store.job(job_id)["status"] in ("running", "cancelling"):
            assert time.monotonic() < deadline, log_tail(started.log_path)
            time.sleep(0.5)
    assert app_store.job(job_id)["status"] == "stopped: cancelled"
    app_store.delete_host_config("slow")


def test_live_query_router_hook(app_store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Router section against the routing contract: a checkpoint list and a decision with
    `.probabilities` and `.chosen_arm` (the trained router itself is tested with training)."""
    import app.data
    import app.router_view

    checkpoint = pd.DataFrame([{"checkpoint_id": "ckpt-1", "created_at": pd.Timestamp("2026-01-01"), "stage": 1,
                                "host": FAKE_HOST, "variant": "lite", "n_arms": 6}])
    decision = SimpleNamespace(probabilities={"direct:no_think": 0.1, "raw:no_think": 0.9}, chosen_arm="raw:no_think",
                               routing_ms=12.0, probe_tokens=0)
    calls = []
    monkeypatch.setattr(app.data, "checkpoints", lambda store: checkpoint)
    monkeypatch.setattr(app.router_view, "route_live", lambda *args: calls.append(args) or decision)
    live = page("live_query.py")
    by_label(live.text_area, "Your question").set_value("Who founded the city?")
    by_label(live.button, "Route this question").click().run()
    assert not live.exception and calls[0][1:4] == ("ckpt-1", "Who founded the city?", "2wikimultihopqa")
    assert calls[0][4] is None  # a Lite router needs no host
    assert {m.label: m.value for m in live.metric}["Chosen arm"] == "raw:no_think"
    assert len(live.get("plotly_chart")) == 1
    by_label(live.button, "Answer with this arm").click().run()
    assert by_label(live.selectbox, "Arm").value == "raw:no_think"
