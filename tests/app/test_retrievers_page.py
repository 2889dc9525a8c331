"""The Hosts page's Retrievers section: list, add, check against a local
retrieval-service test double, and remove; on real 2Wiki and MuSiQue records."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from forge_core.data.importing import import_benchmarks
from forge_core.evidence.retrievers import get_retriever_config
from forge_core.store import Store

from support.lazy_sections import RETRIEVER_CHECK, RETRIEVER_DEFAULT, RETRIEVER_EDIT, opened
from support.retrieval_server import RetrievalServer

PAGE = Path(__file__).resolve().parents[2] / "pages" / "hosts.py"
TIMEOUT_S = 120


def by_label(widgets, label: str):
    matches = [widget for widget in widgets if widget.label == label]
    assert len(matches) == 1, f"{label!r}: {[w.label for w in widgets]}"
    return matches[0]


def texts(elements) -> str:
    return "\n".join(element.value for element in elements)


def run_page() -> AppTest:
    st.cache_data.clear()
    return AppTest.from_file(str(PAGE), default_timeout=TIMEOUT_S).run()


def test_retrievers_are_listed_added_checked_and_removed(
        tmp_path: Path, benchmarks_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(tmp_path / "store.duckdb")
    import_benchmarks(store, benchmarks_root, ["2wikimultihopqa"])
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    app = run_page()
    assert not app.exception
    listed = app.dataframe[1].value  # the hosts first, then the retrievers
    assert list(listed["name"]) == ["bm25"] and list(listed["config hash"]) == ["(default)"]

    opened(opened(app, RETRIEVER_EDIT), RETRIEVER_CHECK)
    with RetrievalServer(delay_s=0.02) as service:
        by_label(app.text_input, "Retriever name").set_value("svc")
        by_label(app.selectbox, "Retriever kind").set_value("http")
        by_label(app.text_input, "Service URL (http)").set_value(service.url)
        by_label(app.number_input, "Passages (k)").set_value(2)
        by_label(app.button, "Save retriever").click().run()
        assert not app.exception and "Retriever 'svc' saved." in texts(app.success)
        assert get_retriever_config(store, "svc").k == 2
        assert list(app.dataframe[1].value["name"]) == ["bm25", "svc"]
        by_label(app.selectbox, "Retriever to check").set_value("svc")
        by_label(app.button, "Check retriever").click().run()
        assert not app.exception and not app.error
        assert texts(app.success).startswith("2 passages in ")
        shown = [frame.value for frame in app.dataframe if "title" in frame.value.columns][0]
        assert list(shown["title"]) == ["Service passage one", "Service passage two"]
    by_label(app.button, "Check retriever").click().run()  # the service is gone: one message
    assert len(app.error) == 1 and "retriever 'svc'" in app.error[0].value and "\n" not in app.error[0].value

    by_label(app.selectbox, "Retriever to edit").set_value("svc").run()
    by_label(app.button, "Remove retriever 'svc'").click().run()
    assert not app.exception and store.retriever_names() == []


def test_a_hosts_default_retriever_is_set_listed_and_kept_from_removal(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from forge_core.evidence.retrievers import RetrieverConfig, host_default_retriever, save_retriever_config

    store = Store(tmp_path / "store.duckdb")
    save_retriever_config(store, RetrieverConfig("k4", k=4))
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    app = opened(opened(run_page(), RETRIEVER_DEFAULT), RETRIEVER_EDIT)
    assert by_label(app.selectbox, "Its default retriever").value == "bm25"
    by_label(app.selectbox, "Host to set a default for").set_value("embedded-tiny").run()
    by_label(app.selectbox, "Its default retriever").set_value("k4")
    by_label(app.button, "Set default").click().run()
    assert not app.exception and "Host 'embedded-tiny' now uses retriever 'k4'" in texts(app.success)
    assert (host_default_retriever(store, "embedded-tiny"), host_default_retriever(store, "embedded")) == ("k4", "bm25")
    listed = app.dataframe[1].value.set_index("name")["default of"]
    assert (listed["k4"], listed["bm25"]) == ("embedded-tiny", "every other host")
    by_label(app.selectbox, "Retriever to edit").set_value("k4").run()
    by_label(app.button, "Remove retriever 'k4'").click().run()
    assert texts(app.error) == ("retriever 'k4' is the default of host embedded-tiny: `forge retriever use bm25 --host "
                                "embedded-tiny` first")
    assert store.retriever_names() == ["k4"]


@pytest.mark.slow  # about 45 s on a busy machine (the Live query page's first run imports the router stack)
def test_live_query_answers_with_the_chosen_retrievers_passages(
        tmp_path: Path, benchmarks_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from forge_core.evidence.retrievers import RetrieverConfig, save_retriever_config
    from forge_core.hosts.base import HostConfig
    from forge_core.hosts.registry import save_host_config

    from support.answering_server import AnsweringServer

    store = Store(tmp_path / "store.duckdb")
    import_benchmarks(store, benchmarks_root, ["2wikimultihopqa"])
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    with RetrievalServer() as service, AnsweringServer() as host:
        save_host_config(store, HostConfig(name="double", kind="openai", model="m", base_url=host.base_url,
                                           max_retries=0))
        save_retriever_config(store, RetrieverConfig("svc", kind="http", url=service.url))
        st.cache_data.clear()
        app = AppTest.from_file(str(PAGE.parent / "live_query.py"), default_timeout=TIMEOUT_S).run()
        by_label(app.selectbox, "Host").set_value("double")
        by_label(app.selectbox, "Retriever").set_value("svc")
        by_label(app.selectbox, "Arm").set_value("raw:no_think")
        by_label(app.text_area, "Your question").set_value("Where is the answer?")
        by_label(app.button, "Route and answer").click().run()
        assert not app.exception and not app.error, [e.value for e in app.error]
        assert "The service says the answer is Kathmandu." in host.received[-1][1]["messages"][1]["content"]
        assert service.received and service.received[-1][0]["query"] == "Where is the answer?"
