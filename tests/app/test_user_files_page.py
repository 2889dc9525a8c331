"""The Overview page imports a user's own file: a good one lands (and shows up as a benchmark), a
bad one gives one message on the page and writes nothing; `import_uploaded` underneath."""

from __future__ import annotations

import json
import os

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from forge_core.config import PROJECT_ROOT
from forge_core.data.importers import ImportFormatError
from forge_core.data.importing import Upload, import_uploaded
from forge_core.store import Store

from support.user_files import city_records

OVERVIEW = PROJECT_ROOT / "pages" / "overview.py"
TIMEOUT_S = 120


def jsonl(records: list) -> bytes:
    return "".join(json.dumps(record) + "\n" for record in records).encode()


def by_label(widgets, label: str):
    matches = [widget for widget in widgets if widget.label == label]
    assert len(matches) == 1, f"{label!r}: {[w.label for w in widgets]}"
    return matches[0]


def submit(app: AppTest, name: str, questions: tuple[str, bytes] | None) -> AppTest:
    if questions is not None:
        by_label(app.file_uploader, "Questions (JSON lines, CSV or Parquet)").set_value((*questions, "text/plain"))
    by_label(app.text_input, "Benchmark name").set_value(name)
    return by_label(app.button, "Import").click().run()


def test_upload_imports_and_a_bad_file_is_one_message() -> None:
    store = Store(os.environ["FORGE_STORE"])
    st.cache_data.clear()
    app = AppTest.from_file(str(OVERVIEW), default_timeout=TIMEOUT_S).run()
    assert not app.exception and "The store is empty" in app.info[0].value

    submit(app, "capitals", None)
    assert [e.value for e in app.error] == ["Choose a question file to import."]

    bad = city_records()
    bad[5]["answers"] = []
    before = store.table_counts()
    submit(app, "capitals", ("capitals.jsonl", jsonl(bad)))
    assert not app.exception
    assert [e.value for e in app.error] == ["capitals.jsonl:6: missing answer: field 'answers' is empty"]
    assert store.table_counts() == before

    submit(app, "capitals", ("capitals.jsonl", jsonl(city_records())))
    assert not app.exception and not app.error
    assert "capitals: 12 examples, 12 documents (imported)." in [s.value for s in app.success]
    assert app.metric[0].label == "Benchmarks" and app.metric[0].value == "1"
    assert list(app.dataframe[0].value["benchmark"]) == ["capitals"]


def test_import_uploaded_names_the_uploaded_file_and_records_it(tmp_path) -> None:
    store = Store(tmp_path / "store.duckdb")
    corpus = Upload("atlas.jsonl", jsonl([{"title": "T", "text": ""}]))
    questions = Upload("../../capitals.jsonl", jsonl(city_records()))
    with pytest.raises(ImportFormatError, match=r"^atlas\.jsonl:1: field 'record\.text' must be a non-empty string$"):
        import_uploaded(store, "capitals", questions, corpus)
    assert store.imported_benchmarks() == []
    result = import_uploaded(store, "capitals", questions)
    assert (result.added, result.examples) == (True, 12)
    assert import_uploaded(store, "capitals", questions).added is False
    assert [(row["benchmark"], row["n_train"]) for row in store.split_manifests()][:1] == [("capitals", 7)]
